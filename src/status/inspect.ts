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
 * - One directory per inspection, never left: the run directory is opened
 *   once, without following a link (a symlink is refused), and the stream,
 *   the snapshot and the lock file are all opened relative to that
 *   descriptor, so a directory renamed or swapped for a symlink while it is
 *   read cannot make the report mix two directories or read outside the root.
 *   The descriptor is closed before the inspection returns, however it ends.
 * - The first read is one crossing into the addon (kernel/runfiles.ts): the
 *   directory opened as above and both files read relative to it, with the
 *   same flags and calls. A file it did not plainly read or find absent is
 *   read again call by call, which words its error as every reader does; a listing
 *   pays the call-by-call cost only for such runs.
 * - A listing may inspect a batch of runs together ({@link inspectBatch}):
 *   each is read and probed as alone, and those whose probe said free share
 *   one read of the kernel's lock table made after all of them, then each
 *   confirms alone. No answer can differ from one inspection at a time
 *   except through what changed meanwhile, which the confirmation sees.
 */
import { fstatSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { isPermissionErrno, RunUnreadableError, StreamError } from '../contract/errors.js';
import { EVENTS_FILE, LOCK_FILE, STATE_FILE } from '../contract/files.js';
import { classifyHead, HEAD_BYTES, markedPid } from '../contract/marker.js';
import type { RunReport } from '../contract/types.js';
import { monotonicMs } from '../kernel/clock.js';
import { foreignHolder, readLockTable } from '../kernel/holders.js';
import { descriptorLimit, OWN_DESCRIPTORS } from '../kernel/limits.js';
import { closeFd, errnoCode, kindOfEntry, openDirNoFollow, runDirPath } from '../kernel/dirfd.js';
import { closeQuietly, openForReadAt, readAt } from '../kernel/open.js';
import { RunFilesReader, type RunDirFacts } from '../kernel/runfiles.js';
import { probeLockAt, type ProbeResult } from '../lock/probe.js';
import { readSnapshot, snapshotFromRead, type SnapshotRead } from '../read/snapshot.js';
import { FIRST_TAIL_BYTES, noStreamFacts, readLastLeg, readLastLegFrom, rereadLastLeg, type TailFacts } from '../read/tail.js';
import { buildReport } from './report.js';

/** Test seams for {@link runStatus}. */
export interface RunStatusOptions {
  /**
   * Replaces the probe. Exists so a test can act between the first read and
   * the probe (finish a leg, start another) and still ask the real kernel:
   * the replacement must call `probeLock` itself. Defaults to `probeLock`.
   */
  probe?: (lockPath: string) => ProbeResult;
  /**
   * Told of each probe the inspection makes: how long it took (monotonic
   * seconds) and what it answered. For counting (serve's /metrics); it
   * changes nothing about the probe itself.
   */
  onProbe?: (seconds: number, answer: ProbeResult) => void;
  /**
   * The stream's last leg as the caller has just read it (the live engine's
   * stepped tail read, read/tail.ts TailStepper), used as the first read
   * when the stream is still the very file it was read from with not a byte
   * written since (rereadLastLeg: device, inode, size, modification and
   * change times); otherwise the stream is read afresh.
   */
  first?: TailFacts;
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
 * evidence of such a holder, or doubt about it, the answer is unknown. The
 * file is looked at through the run directory's descriptor `dirfd`.
 */
function unlessReplaced(dirfd: number, lockPath: string, free: ProbeResult, table?: string): ProbeResult {
  let file;
  try {
    file = openForReadAt(dirfd, LOCK_FILE, LOCK_FILE, lockPath);
  } catch {
    return free;
  }
  if (file === undefined) return free;
  let dev: bigint;
  let ino: bigint;
  let label: number | undefined;
  try {
    const st = fstatSync(file.fd, { bigint: true });
    dev = st.dev;
    ino = st.ino;
    label = lockLabel(file.fd, lockPath);
  } catch {
    return free;
  } finally {
    closeQuietly(file.fd);
  }
  const evidence = foreignHolder(table === undefined ? { lockPath, dev, currentIno: ino, labelPid: label, exceptPid: -1 } : { lockPath, dev, currentIno: ino, labelPid: label, exceptPid: -1, table });
  if (evidence.kind === 'none-known') return free;
  const detail = evidence.kind === 'held-elsewhere' ? `pid ${evidence.holder.pid} holds the lock file that was at this path before it was replaced` : evidence.detail;
  return { liveness: 'unknown', reason: 'lock-replaced', detail };
}

/** The pid label of the marked lock file open as `fd`, if it has one. */
function lockLabel(fd: number, lockPath: string): number | undefined {
  try {
    const head = Buffer.alloc(HEAD_BYTES);
    const len = readAt(fd, head, 0, HEAD_BYTES, 0, LOCK_FILE, lockPath);
    return classifyHead(head, len) === 'marked' ? markedPid(head, len) : undefined;
  } catch {
    return undefined;
  }
}

/** How many times a probe that answered free may be followed by a changed leg before giving up. */
const CONFIRM_ROUNDS = 5;

/** The last leg, afresh, or (with `previous`) again: unchanged bytes are not read twice. */
function readTail(runId: string, eventsPath: string, at: number | undefined, previous?: TailFacts): TailFacts {
  try {
    return previous === undefined ? readLastLeg(eventsPath, at === undefined ? {} : { at }) : rereadLastLeg(eventsPath, previous, at);
  } catch (err) {
    throw unreadableStream(runId, err);
  }
}

/** A stream error as the run's unreadable error; anything else as it is. */
function unreadableStream(runId: string, err: unknown): unknown {
  if (err instanceof StreamError) {
    const denied = err.code === 'EREAD' && isPermissionErrno(err.errno);
    return new RunUnreadableError(runId, err.message, denied ? 'permission-denied' : 'unreadable-stream');
  }
  return err;
}

/**
 * The first read of the stream and the snapshot, from what the one-crossing
 * read found (kernel/runfiles.ts), each file that was not plainly there or
 * absent read again call by call (which words its error as every reader does).
 */
function firstRead(runId: string, eventsPath: string, statePath: string, at: number, pre: RunDirFacts): { tail: TailFacts; snapshot: SnapshotRead } {
  let tail: TailFacts;
  const ev = pre.events;
  if (ev.kind === 'read') {
    try {
      tail = readLastLegFrom(eventsPath, ev);
    } catch (err) {
      throw unreadableStream(runId, err);
    }
  } else if (ev.kind === 'absent') {
    tail = noStreamFacts();
  } else {
    tail = readTail(runId, eventsPath, at);
  }
  const st = pre.state;
  const snapshot = st.kind === 'read' ? snapshotFromRead(st.buf, st.bytes, st.size) : st.kind === 'absent' ? MISSING : readSnapshot(statePath, { at });
  return { tail, snapshot };
}

const MISSING: SnapshotRead = Object.freeze({ kind: 'missing' });

/**
 * The snapshot buffer of the one-crossing read: a snapshot up to 64 KiB
 * (a few hundred nodes) is read in it; a larger one is read call by call.
 */
const SNAPSHOT_BUFFER = 64 * 1024;
/** The one-crossing reader of this thread, made at first use; null when the addon has none (built from older sources). */
let reader: RunFilesReader | null | undefined;

function runFilesReader(): RunFilesReader | null {
  if (reader === undefined) reader = RunFilesReader.available() ? new RunFilesReader(EVENTS_FILE, STATE_FILE, FIRST_TAIL_BYTES, SNAPSHOT_BUFFER) : null;
  return reader;
}

/**
 * Opens the run directory `dir` for one inspection (kernel/dirfd.ts), or
 * undefined when there is none (its files then read as absent, as for a run
 * with no leg yet). Throws RunUnreadableError for a symlink or a directory that cannot
 * be opened.
 */
function openRunDir(runId: string, dir: string): number | undefined {
  try {
    return openDirNoFollow(runDirPath(dir));
  } catch (err) {
    const code = errnoCode(err);
    if ((code === 'ENOTDIR' || code === 'ELOOP') && kindOfEntry(runDirPath(dir)) === 'symlink') {
      throw new RunUnreadableError(runId, 'is a symlink; links under the runs root are not followed', 'symlink');
    }
    if (code === 'ENOENT') return undefined;
    if (code === 'ENOTDIR') throw new RunUnreadableError(runId, 'is not a directory', 'not-a-directory');
    throw new RunUnreadableError(runId, `cannot open the run directory: ${code}`, isPermissionErrno(code) ? 'permission-denied' : 'unreadable-stream');
  }
}

/**
 * Reads, probes and confirms run `runDir` once. Throws RunUnreadableError
 * when no truthful report can be made. The last component of `runDir` is a
 * shown name (contract/names.ts): `\xHH` stands for a byte that is not
 * UTF-8, `\\` for a backslash.
 */
export function inspectRun(runDir: string, options: RunStatusOptions = {}): Inspection {
  const { steps, close } = openInspection(runDir, options);
  try {
    let step = steps.next();
    // Asked for the lock table: this inspection reads its own, after its probe.
    while (step.done !== true) step = steps.next(undefined);
    return step.value;
  } finally {
    close();
  }
}

/** One run's inspection, or what it threw (as {@link inspectRun} would have). */
export type BatchResult = { ok: true; inspection: Inspection } | { ok: false; error: unknown };

/**
 * {@link inspectRun} for each of `runDirs`, in order, with one read of the
 * kernel's lock table for all the probes that answered free, instead of one
 * each. Each inspection reads and probes as inspectRun does; those whose
 * probe said free wait (their run directory still open) until every run of
 * the batch has been probed, then one table read after all those probes
 * serves every search for a holder of a replaced lock file, and each
 * confirms as one inspection does (re-read, probe again). Sound for the same reason as
 * one at a time: the table is read after the probe it qualifies, and the
 * final probe after the table (CONTRACT §4.5); only the gaps are longer.
 * Why: reading /proc/locks takes the kernel's global lock-table semaphore
 * for writing (milliseconds on a busy machine, and every flock(2) on the
 * machine waits meanwhile); a listing with thousands of free locks read it
 * thousands of times.
 */
export function inspectBatch(runDirs: readonly string[], options: RunStatusOptions = {}): BatchResult[] {
  const results: BatchResult[] = new Array<BatchResult>(runDirs.length);
  // Which run is being stepped, and the runs whose probe met the descriptor limit (an unknown that a retry can settle).
  let current = -1;
  const probeLacked = new Set<number>();
  const onProbe = options.onProbe;
  const batchOptions: RunStatusOptions = {
    ...options,
    onProbe: (seconds, answer) => {
      if (answer.liveness === 'unknown' && answer.detail !== undefined && OUT_OF_DESCRIPTORS.test(answer.detail)) probeLacked.add(current);
      onProbe?.(seconds, answer);
    },
  };
  const held = heldInspections();
  let waiting: { i: number; steps: Steps; close: () => void }[] = [];
  /** Reads the lock table once for every inspection waiting, and finishes each (closing what it holds). */
  const finishWaiting = (): void => {
    if (waiting.length === 0) return;
    let table: string | undefined;
    try {
      table = readLockTable();
    } catch {
      // Each inspection then reads it itself, and says why it could not.
      table = undefined;
    }
    for (const w of waiting) {
      current = w.i;
      try {
        let step = w.steps.next(table);
        while (step.done !== true) step = w.steps.next(undefined);
        results[w.i] = { ok: true, inspection: step.value };
      } catch (error) {
        results[w.i] = { ok: false, error };
      } finally {
        w.close();
      }
    }
    waiting = [];
  };
  const begin = (i: number): void => {
    current = i;
    let opened: { steps: Steps; close: () => void } | undefined;
    try {
      opened = openInspection(runDirs[i] as string, batchOptions);
      const step = opened.steps.next();
      if (step.done === true) {
        results[i] = { ok: true, inspection: step.value };
      } else {
        waiting.push({ i, steps: opened.steps, close: opened.close });
        opened = undefined;
      }
    } catch (error) {
      results[i] = { ok: false, error };
    } finally {
      opened?.close();
    }
  };
  for (let i = 0; i < runDirs.length; i++) {
    // Never more descriptors held open than the limit leaves room for.
    if (waiting.length >= held) finishWaiting();
    begin(i);
  }
  finishWaiting();
  // A run that met the descriptor limit is read again, alone, now that the batch holds nothing; one that meets
  // it again is reported as such, never as an unreadable run or an unknown lock of its own.
  for (let i = 0; i < runDirs.length; i++) {
    if (!lackedDescriptors(results[i] as BatchResult) && !probeLacked.has(i)) continue;
    probeLacked.delete(i);
    begin(i);
    finishWaiting();
    if (lackedDescriptors(results[i] as BatchResult) || probeLacked.has(i)) {
      const runId = basename(resolve(runDirs[i] as string));
      results[i] = { ok: false, error: new RunUnreadableError(runId, 'cannot be read now: this process has no file descriptor to spare (EMFILE); raise its limit (ulimit -n)', 'no-descriptors') };
    }
  }
  return results;
}

/** An errno name that says the process (EMFILE) or the system (ENFILE) has no descriptor to give. */
const OUT_OF_DESCRIPTORS = /\b(EMFILE|ENFILE)\b/;

/** Whether a result failed for want of descriptors: by the kernel's code, or a message that carries it. */
function lackedDescriptors(r: BatchResult): boolean {
  if (r.ok) return false;
  const e = r.error as { code?: unknown; errno?: unknown; message?: unknown } | null;
  if (e === null || typeof e !== 'object') return false;
  if (e.code === 'EMFILE' || e.code === 'ENFILE' || e.errno === 'EMFILE' || e.errno === 'ENFILE') return true;
  return e instanceof RunUnreadableError && e.kind !== 'no-descriptors' && OUT_OF_DESCRIPTORS.test(e.message);
}

/**
 * How many inspections a batch keeps waiting at once (each holds its run
 * directory and its stream open: two descriptors): a quarter of what the soft
 * RLIMIT_NOFILE leaves after the process's own (kernel/limits.ts
 * OWN_DESCRIPTORS), so a listing on two threads, with its probes and reads,
 * stays within the limit; at least one.
 */
function heldInspections(): number {
  const soft = descriptorLimit()?.soft;
  if (soft === undefined || !Number.isFinite(soft)) return Infinity;
  return Math.max(1, Math.floor((soft - OWN_DESCRIPTORS) / 8));
}

/**
 * An inspection's steps: it yields (at most once, after the first probe that
 * answered free) to be handed the lock table read after that probe, or
 * undefined to read it itself.
 */
type Steps = Generator<'lock-table', Inspection, string | undefined>;

/** Opens run `runDir` for inspection: its steps, and how to close what they read through (call once, however they end). */
function openInspection(runDir: string, options: RunStatusOptions): { steps: Steps; close: () => void } {
  const dir = resolve(runDir);
  const runId = basename(dir);
  // One crossing opens the directory and reads both files (kernel/runfiles.ts); a directory it
  // could not open is opened again by openRunDir, which words why (or finds it there by now).
  const fast = runFilesReader();
  let pre: RunDirFacts | undefined;
  try {
    pre = fast === null ? undefined : fast.read(runDirPath(dir));
  } catch {
    // A path the addon refuses before any syscall (too long, a NUL): openRunDir words why.
    pre = undefined;
  }
  if (pre !== undefined && pre.dirfd >= 0) {
    const close = (): void => {
      if (pre.events.kind === 'read' && pre.events.fd >= 0) closeQuietly(pre.events.fd);
      closeFd(pre.dirfd);
    };
    return { steps: inspectAt(dir, runId, pre.dirfd, options, pre), close };
  }
  const at = openRunDir(runId, dir);
  return { steps: inspectAt(dir, runId, at, options), close: () => (at === undefined ? undefined : closeFd(at)) };
}

function* inspectAt(dir: string, runId: string, at: number | undefined, options: RunStatusOptions, pre?: RunDirFacts): Steps {
  const eventsPath = join(dir, EVENTS_FILE);
  const statePath = join(dir, STATE_FILE);
  const lockPath = join(dir, LOCK_FILE);
  const snapshotOptions = at === undefined ? {} : { at };
  const kernelProbe = options.probe ?? ((path: string): ProbeResult => (at === undefined ? { liveness: 'unknown', reason: 'missing', detail: 'no run directory' } : probeLockAt(at, LOCK_FILE, path)));
  const onProbe = options.onProbe;
  const probe =
    onProbe === undefined
      ? kernelProbe
      : (path: string): ProbeResult => {
          const t0 = monotonicMs();
          const answer = kernelProbe(path);
          onProbe((monotonicMs() - t0) / 1000, answer);
          return answer;
        };
  const done = (tail: TailFacts, snapshot: SnapshotRead, answer: ProbeResult | null, extra: string[] = []): Inspection => ({
    runDir: dir,
    report: buildReport(runId, dir, tail, snapshot, answer, extra),
    tail,
    snapshot,
  });

  // With the caller's own read (`first`), the one-crossing read's tail is not wanted: the snapshot is read call by call.
  const first = pre !== undefined && at !== undefined && options.first === undefined ? firstRead(runId, eventsPath, statePath, at, pre) : undefined;
  // A caller's own read counts only while the stream is still the file it was read from, unwritten since.
  let tail = options.first !== undefined ? readTail(runId, eventsPath, at, options.first) : (first?.tail ?? readTail(runId, eventsPath, at));
  let snapshot = first?.snapshot ?? readSnapshot(statePath, snapshotOptions);
  for (let round = 0; ; round++) {
    if (!tail.leg.open) return done(tail, snapshot, null);
    let answer = probe(lockPath);
    if (answer.liveness === 'free' && at !== undefined) {
      // The lock table for the search below, read after this probe: by a batch (inspectBatch) or here.
      const table = round === 0 ? yield 'lock-table' : undefined;
      answer = unlessReplaced(at, lockPath, answer, table);
    }
    if (answer.liveness !== 'free') return done(tail, snapshot, answer);
    // Read, probe, confirm: free counts only if the same leg is still open now.
    const again = readTail(runId, eventsPath, at, tail);
    if (again.leg.open && again.leg.legOffset === tail.leg.legOffset) {
      // A live leg may have taken the lock on a replaced file between the probe
      // and the search for a holder of the old one (its lock is then on the
      // inode at the path, which the search does not count, and the old one is
      // let go): probe the path once more. A leg retakes without a gap (the new
      // file locked before the old is released), so a leg alive throughout is
      // seen by the search or by this probe (CONTRACT §4.5). The kernel's own
      // probe, not the test seam, which stands in for the first one.
      const last = at === undefined ? answer : probeLockAt(at, LOCK_FILE, lockPath);
      return done(again, snapshot, last.liveness === 'free' ? answer : last);
    }
    // The leg ended, or a new one began, between the read and the probe: derive again.
    tail = again;
    snapshot = readSnapshot(statePath, snapshotOptions);
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
