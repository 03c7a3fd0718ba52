/**
 * Inspecting one run (CONTRACT §4.3): read the stream's last leg and the
 * snapshot, probe the lock when the leg is open, confirm, and report. Every
 * surface (`runs`, `status`, `watch`, `exec`, `serve`) gets a run's status,
 * liveness, probe reason and hint from here, so no two can disagree.
 *
 * Invariants this module keeps, and why:
 * - ABANDONED needs two affirmative facts, confirmed: an open last leg, a
 *   probe that answered `free`, and a re-read after that probe finding the
 *   SAME leg (same byte offset) still open. A leg may end and release its
 *   lock between the first read and the probe; the re-read turns that
 *   instant into "derive again" instead of a false "dead".
 * - The lock is probed only when the last leg is open.
 * - Every doubt is the pre-existing answer: an unknown probe reads as in
 *   flight, and a stream that cannot be read yields no status at all (the
 *   run is reported unreadable) rather than a guess.
 * - An unreadable snapshot does not hide liveness: rows 1–4 of the table
 *   need only the stream and the lock; only rows 5–7 need the snapshot.
 * - Readers write nothing: every file is opened read-only (kernel/open.ts),
 *   and the probe takes only a shared, non-blocking lock.
 */
import { lstatSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { isPermissionErrno, RunUnreadableError, StreamError } from '../contract/errors.js';
import { EVENTS_FILE, LOCK_FILE, STATE_FILE } from '../contract/files.js';
import { classifyHead, HEAD_BYTES, markedPid } from '../contract/marker.js';
import type { RunReport } from '../contract/types.js';
import { foreignHolder } from '../kernel/holders.js';
import { closeQuietly, openForRead, readAt } from '../kernel/open.js';
import { probeLock, type ProbeResult } from '../lock/probe.js';
import { readSnapshot, type SnapshotRead } from '../read/snapshot.js';
import { readLastLeg, rereadLastLeg, type TailFacts } from '../read/tail.js';
import { buildReport } from './report.js';

/** Test seams for {@link runStatus}. */
export interface RunStatusOptions {
  /**
   * Replaces the probe. Exists so a test can act between the first read and
   * the probe (finish a leg, start another) and still ask the real kernel:
   * the replacement must call `probeLock` itself. Defaults to `probeLock`.
   */
  probe?: (lockPath: string) => ProbeResult;
}

/** Everything one inspection learned: the report, and the facts it stands on. */
export interface Inspection {
  /** The run directory, absolute. */
  runDir: string;
  report: RunReport;
  tail: TailFacts;
  snapshot: SnapshotRead;
}

/**
 * A free lock at the path is not yet a dead leg: a restore or sync may have
 * replaced the file while a live leg holds the old one (CONTRACT §4.5). With
 * evidence of such a holder, or doubt about it, the answer is unknown.
 */
function unlessReplaced(lockPath: string, free: ProbeResult): ProbeResult {
  let st;
  try {
    st = lstatSync(lockPath, { bigint: true });
  } catch {
    return free;
  }
  const evidence = foreignHolder({ lockPath, dev: st.dev, currentIno: st.ino, labelPid: lockLabel(lockPath), exceptPid: -1 });
  if (evidence.kind === 'none-known') return free;
  const detail = evidence.kind === 'held-elsewhere' ? `pid ${evidence.holder.pid} holds the lock file that was at this path before it was replaced` : evidence.detail;
  return { liveness: 'unknown', reason: 'lock-replaced', detail };
}

/** The pid label of the marked lock file at `lockPath`, if it has one. */
function lockLabel(lockPath: string): number | undefined {
  let file;
  try {
    file = openForRead(lockPath, LOCK_FILE);
  } catch {
    return undefined;
  }
  if (file === undefined) return undefined;
  try {
    const head = Buffer.alloc(HEAD_BYTES);
    const len = readAt(file.fd, head, 0, HEAD_BYTES, 0, LOCK_FILE, lockPath);
    return classifyHead(head, len) === 'marked' ? markedPid(head, len) : undefined;
  } catch {
    return undefined;
  } finally {
    closeQuietly(file.fd);
  }
}

/** How many times a probe that answered free may be followed by a changed leg before giving up. */
const CONFIRM_ROUNDS = 5;

/** The last leg, afresh, or (with `previous`) again: unchanged bytes are not read twice. */
function readTail(runId: string, eventsPath: string, previous?: TailFacts): TailFacts {
  try {
    return previous === undefined ? readLastLeg(eventsPath) : rereadLastLeg(eventsPath, previous);
  } catch (err) {
    if (err instanceof StreamError) {
      const denied = err.code === 'EREAD' && isPermissionErrno(err.errno);
      throw new RunUnreadableError(runId, err.message, denied ? 'permission-denied' : 'unreadable-stream');
    }
    throw err;
  }
}

/**
 * Reads, probes and confirms run `runDir` once. Throws RunUnreadableError
 * when no truthful report can be made.
 */
export function inspectRun(runDir: string, options: RunStatusOptions = {}): Inspection {
  const dir = resolve(runDir);
  const runId = basename(dir);
  const eventsPath = join(dir, EVENTS_FILE);
  const statePath = join(dir, STATE_FILE);
  const lockPath = join(dir, LOCK_FILE);
  const probe = options.probe ?? probeLock;
  const done = (tail: TailFacts, snapshot: SnapshotRead, answer: ProbeResult | null, extra: string[] = []): Inspection => ({
    runDir: dir,
    report: buildReport(runId, dir, tail, snapshot, answer, extra),
    tail,
    snapshot,
  });

  let tail = readTail(runId, eventsPath);
  let snapshot = readSnapshot(statePath);
  for (let round = 0; ; round++) {
    if (!tail.leg.open) return done(tail, snapshot, null);
    let answer = probe(lockPath);
    if (answer.liveness === 'free') answer = unlessReplaced(lockPath, answer);
    if (answer.liveness !== 'free') return done(tail, snapshot, answer);
    // Read, probe, confirm: free counts only if the same leg is still open now.
    const again = readTail(runId, eventsPath, tail);
    if (again.leg.open && again.leg.legOffset === tail.leg.legOffset) return done(again, snapshot, answer);
    // The leg ended, or a new one began, between the read and the probe: derive again.
    tail = again;
    snapshot = readSnapshot(statePath);
    if (round + 1 >= CONFIRM_ROUNDS && tail.leg.open) {
      const doubt: ProbeResult = { liveness: 'unknown', reason: 'flock-error', detail: 'legs kept changing while the run was read' };
      const note = `legs kept starting and ending while this run was read (${CONFIRM_ROUNDS} rounds); its liveness is reported unknown`;
      return done(tail, snapshot, doubt, [note]);
    }
  }
}

/**
 * The report for the run directory `runDir`: status, liveness, probe
 * reason, snapshot facts, hint and warnings, by read-probe-confirm. The run
 * id is the directory's name. Writes nothing. Throws
 * {@link RunUnreadableError} when no truthful report can be made (the stream
 * cannot be read, or the status needs a snapshot that cannot be read).
 */
export function runStatus(runDir: string, options: RunStatusOptions = {}): RunReport {
  return inspectRun(runDir, options).report;
}
