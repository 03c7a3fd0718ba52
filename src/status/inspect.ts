/**
 * The derivation (SPEC B.3) and the one function every surface asks:
 * {@link runStatus}. `runs`, `status`, `watch`, `exec` and `serve` all get a
 * run's status, liveness, probe reason and hint from it, so no two surfaces
 * can disagree about the same run.
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
 * - An unreadable snapshot does not hide liveness: rows 1–4 of B.3 need only
 *   the stream and the lock; only rows 5–7 need the snapshot.
 * - Readers write nothing: every file is opened read-only (see safefile.ts),
 *   and the probe takes only a shared, non-blocking lock.
 */
import { readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { readLastLeg, readStream, StreamError, type FeedEvent, type LastLeg, type TailFacts } from '../read/stream.js';
import { abandonedHint, orphanEvidence, pausedHint } from './hints.js';
import { LOCK_FILE } from '../contract/marker.js';
import { probeLock, type Liveness, type ProbeResult } from '../lock/probe.js';
import { readSnapshot, STATE_FILE, type SnapshotRead } from '../read/snapshot.js';
import type { NodeState, RunReport, SkippedRun, Status } from '../contract/types.js';

const EVENTS = 'events.jsonl';

/** The facts the derivation reads: the stream's last leg and the snapshot. */
export interface RunFacts {
  leg: LastLeg;
  snapshot: SnapshotRead;
}

/** What {@link deriveStatus} concludes. */
export interface Derivation {
  /** The status word, or null when the run has no status yet (no leg, no snapshot) or is unreadable. */
  status: Status | null;
  /** Set when the answer needs the snapshot (B.3 rows 5–7) and it cannot be read: the reason. */
  unreadable: string | null;
}

/** The lower-case word for each status, as the table's counts and the dashboard's card states use it. */
export const STATUS_WORD = {
  PLANNING: 'planning',
  RUNNING: 'running',
  ABANDONED: 'abandoned',
  PAUSED: 'paused',
  PASS: 'passed',
  FAIL: 'failed',
} as const satisfies Record<Status, string>;

/** Statuses that mean a leg is working right now. */
export const IN_FLIGHT: ReadonlySet<Status> = new Set(['PLANNING', 'RUNNING']);
/** Statuses that mean the run has settled (its last leg closed). */
export const SETTLED: ReadonlySet<Status> = new Set(['PAUSED', 'PASS', 'FAIL']);

/**
 * SPEC B.3, first match wins. `liveness` is the probe's answer for an open
 * leg (null or anything but `free` reads as alive: every doubt is in flight).
 * Pure: the same facts always give the same answer. Callers that want the
 * read-probe-confirm guarantee use {@link runStatus}, which calls this.
 */
export function deriveStatus(facts: RunFacts, liveness: Liveness | null): Derivation {
  const { leg, snapshot } = facts;
  if (leg.open) {
    if (liveness === 'free') return { status: 'ABANDONED', unreadable: null };
    if (leg.phase === 'planning') return { status: 'PLANNING', unreadable: null };
    return { status: 'RUNNING', unreadable: null };
  }
  if (leg.lastOutcome === 'paused') return { status: 'PAUSED', unreadable: null };
  if (snapshot.kind === 'error') return { status: null, unreadable: snapshot.error };
  if (!leg.started && snapshot.kind === 'missing') return { status: null, unreadable: null };
  if (snapshot.kind === 'ok' && snapshot.snapshot.all_passed) return { status: 'PASS', unreadable: null };
  if (snapshot.kind === 'missing' && leg.lastOutcome === 'passed') return { status: 'PASS', unreadable: null };
  return { status: 'FAIL', unreadable: null };
}

/** Why a run could not be reported, grouped for the listing's closing line. */
export type SkipKind = 'unreadable-stream' | 'unreadable-snapshot' | 'permission-denied' | 'not-a-directory' | 'symlink' | 'error';

/** A run directory exists but no truthful report can be made for it. */
export class RunUnreadableError extends Error {
  readonly code = 'ERUNUNREADABLE' as const;
  readonly runId: string;
  readonly kind: SkipKind;
  constructor(runId: string, message: string, kind: SkipKind) {
    super(message);
    this.name = 'RunUnreadableError';
    this.runId = runId;
    this.kind = kind;
  }
}

/** A run id or runs root that cannot be used (empty, `.`, `..`, escaping the root, …). */
export class RunIdError extends Error {
  readonly code = 'EBADRUNID' as const;
  constructor(message: string) {
    super(message);
    this.name = 'RunIdError';
  }
}

/** Test seams for {@link runStatus}. */
export interface RunStatusOptions {
  /**
   * Replaces the probe. Exists so a test can act between the first read and
   * the probe (finish a leg, start another) and still ask the real kernel:
   * the replacement must call `probeLock` itself. Defaults to `probeLock`.
   */
  probe?: (lockPath: string) => ProbeResult;
}

/** Everything {@link runStatus} learned, for callers that need more than the report. */
interface Inspection {
  report: RunReport;
  tail: TailFacts;
  snapshot: SnapshotRead;
}

function streamUnreadable(runId: string, err: StreamError): RunUnreadableError {
  const denied = err.code === 'EREAD' && /EACCES|EPERM/.test(err.message);
  return new RunUnreadableError(runId, err.message, denied ? 'permission-denied' : 'unreadable-stream');
}

function readTail(runId: string, eventsPath: string): TailFacts {
  try {
    return readLastLeg(eventsPath);
  } catch (err) {
    if (err instanceof StreamError) throw streamUnreadable(runId, err);
    throw err;
  }
}

/** How many times a probe that answered free may be followed by a changed leg before giving up. */
const CONFIRM_ROUNDS = 5;

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function buildReport(runId: string, runDir: string, tail: TailFacts, snapshot: SnapshotRead, probe: ProbeResult | null, extra: string[]): RunReport {
  const derived = deriveStatus({ leg: tail.leg, snapshot }, probe?.liveness ?? null);
  if (derived.unreadable !== null) {
    const denied = /EACCES|EPERM/.test(derived.unreadable);
    throw new RunUnreadableError(runId, derived.unreadable, denied ? 'permission-denied' : 'unreadable-snapshot');
  }
  const status = derived.status;
  const warnings = [...extra];
  if (tail.skippedLines > 0) warnings.push(`events.jsonl: skipped ${plural(tail.skippedLines, 'malformed line')}`);
  if (snapshot.kind === 'error') warnings.push(snapshot.error);
  const snap = snapshot.kind === 'ok' ? snapshot.snapshot : null;
  if (snap !== null) {
    if (snap.stray_ids.length > 0) {
      const shown = snap.stray_ids.slice(0, 5).join(', ') + (snap.stray_ids.length > 5 ? ', …' : '');
      warnings.push(`state.json: ${plural(snap.stray_ids.length, 'node record')} for ids not in graph.nodes (${shown}), not counted`);
    }
    if (snap.run_id !== null && snap.run_id !== runId) warnings.push(`state.json: records run_id ${JSON.stringify(snap.run_id)}, not this directory's name`);
  }
  let hint: string | null = null;
  if (status === 'ABANDONED') {
    const command = tail.leg.command;
    hint = abandonedHint(runId, {
      hasSnapshot: snap !== null,
      command,
      orphan: command !== undefined ? orphanEvidence(runDir) : undefined,
    });
  } else if (status === 'PAUSED') {
    hint = pausedHint(runId, tail.leg.gates);
  }
  return {
    run_id: runId,
    status,
    liveness: probe?.liveness ?? null,
    reason: probe?.reason ?? null,
    has_snapshot: snap !== null,
    graph: snap?.graph ?? null,
    nodes_total: snap?.nodes_total ?? null,
    nodes_passed: snap?.nodes_passed ?? null,
    cost_usd: snap?.cost_usd ?? null,
    cost_unknown: snap?.cost_unknown ?? false,
    hint,
    warnings,
  };
}

function inspect(runDir: string, options: RunStatusOptions): Inspection {
  const dir = resolve(runDir);
  const runId = basename(dir);
  const eventsPath = join(dir, EVENTS);
  const statePath = join(dir, STATE_FILE);
  const lockPath = join(dir, LOCK_FILE);
  const probe = options.probe ?? probeLock;

  let tail = readTail(runId, eventsPath);
  let snapshot = readSnapshot(statePath);
  for (let round = 0; ; round++) {
    if (!tail.leg.open) return { report: buildReport(runId, dir, tail, snapshot, null, []), tail, snapshot };
    const answer = probe(lockPath);
    if (answer.liveness !== 'free') return { report: buildReport(runId, dir, tail, snapshot, answer, []), tail, snapshot };
    // Read, probe, confirm: free counts only if the same leg is still open now.
    const again = readTail(runId, eventsPath);
    if (again.leg.open && again.leg.legOffset === tail.leg.legOffset) {
      return { report: buildReport(runId, dir, again, snapshot, answer, []), tail: again, snapshot };
    }
    // The leg ended, or a new one began, between the read and the probe: derive again.
    tail = again;
    snapshot = readSnapshot(statePath);
    if (round + 1 >= CONFIRM_ROUNDS && tail.leg.open) {
      const doubt: ProbeResult = { liveness: 'unknown', reason: 'flock-error', detail: 'legs kept changing while the run was read' };
      const note = `legs kept starting and ending while this run was read (${CONFIRM_ROUNDS} rounds); its liveness is reported unknown`;
      return { report: buildReport(runId, dir, tail, snapshot, doubt, [note]), tail, snapshot };
    }
  }
}

/**
 * The report for the run directory `runDir` (SPEC C.2): status, liveness,
 * probe reason, snapshot facts, hint and warnings, by read-probe-confirm.
 * The run id is the directory's name. Writes nothing. Throws
 * {@link RunUnreadableError} when no truthful report can be made (the stream
 * cannot be read, or the status needs a snapshot that cannot be read).
 */
export function runStatus(runDir: string, options: RunStatusOptions = {}): RunReport {
  return inspect(runDir, options).report;
}

/** A node on a run's page: its id, its state, and its dependencies when the snapshot lists them. */
export interface DetailNode {
  id: string;
  state: NodeState | 'pending';
  depends_on: string[];
}

/**
 * One leg of a run, from the stream: where it starts, how it began and
 * ended. `state` is `closed` (a `run_finished` closed it), `open` (the last
 * leg, still running), or `abandoned` (it never reported an end: an earlier
 * leg a later one superseded, or the last leg of an ABANDONED run).
 */
export interface DetailLeg {
  offset: number;
  phase: string;
  outcome: string | null;
  started_ts: string | null;
  finished_ts: string | null;
  command: string[] | null;
  state: 'open' | 'closed' | 'abandoned';
}

/** Everything a run page shows: the shared report plus the stream's details. */
export interface RunDetail {
  report: RunReport;
  /** Graph nodes in graph order (state `pending` when the stream has not named them), then nodes only the stream names. */
  nodes: DetailNode[];
  legs: DetailLeg[];
  /** The last events of the stream (at most `events` of them), oldest first, with their byte offsets. */
  events: { offset: number; event: FeedEvent }[];
  /** Lines skipped in the whole stream. */
  skipped_lines: number;
  /** Why the whole stream could not be folded (the report may still stand on its tail), else null. */
  stream_error: string | null;
}

/** Options for {@link runDetail}. */
export interface RunDetailOptions extends RunStatusOptions {
  /** How many of the latest events to return (default 200). */
  events?: number;
}

/**
 * The report plus node states and leg history for one run: what the
 * dashboard's run page draws. The report is {@link runStatus}'s, so it agrees
 * with every other surface; the node states come from one forward fold of the
 * whole stream (in an ABANDONED run, nodes still running are abandoned).
 * Throws {@link RunUnreadableError} like runStatus.
 */
export function runDetail(runDir: string, options: RunDetailOptions = {}): RunDetail {
  const keep = Math.max(0, options.events ?? 200);
  const { report, snapshot } = inspect(runDir, options);
  const legs: DetailLeg[] = [];
  const ring: { offset: number; event: FeedEvent }[] = [];
  let nodes = new Map<string, NodeState>();
  let skipped = 0;
  let streamError: string | null = null;
  try {
    const facts = readStream(join(resolve(runDir), EVENTS), {
      onEvent(ev, offset) {
        if (keep > 0) {
          ring.push({ offset, event: ev });
          if (ring.length > keep) ring.shift();
        }
        const ts = typeof ev.ts === 'string' ? ev.ts : null;
        const last = legs[legs.length - 1];
        if (ev.event === 'run_started') {
          const cmd = ev['command'];
          const command = Array.isArray(cmd) && cmd.length > 0 && cmd.every((c) => typeof c === 'string') ? (cmd as string[]) : null;
          const phase = typeof ev.phase === 'string' ? ev.phase : '';
          if (last !== undefined && last.state === 'open' && last.phase === 'planning' && phase !== 'planning') {
            // An auto run's planner start and the untagged start after it are one leg (SPEC A.2).
            last.phase = phase;
            last.command = command ?? last.command;
            return;
          }
          if (last !== undefined && last.state === 'open') last.state = 'abandoned';
          legs.push({ offset, phase, outcome: null, started_ts: ts, finished_ts: null, command, state: 'open' });
        } else if (ev.event === 'run_finished' && last !== undefined && last.state === 'open') {
          last.state = 'closed';
          last.outcome = typeof ev.outcome === 'string' ? ev.outcome : '';
          last.finished_ts = ts;
        }
      },
    });
    nodes = facts.nodes;
    skipped = facts.skippedLines;
  } catch (err) {
    if (!(err instanceof StreamError)) throw err;
    streamError = err.message;
    legs.length = 0;
    ring.length = 0;
  }
  const abandoned = report.status === 'ABANDONED';
  if (abandoned) {
    for (const [id, s] of nodes) if (s === 'running') nodes.set(id, 'abandoned');
    const last = legs[legs.length - 1];
    if (last !== undefined && last.state === 'open') last.state = 'abandoned';
  }
  const out: DetailNode[] = [];
  const listed = new Set<string>();
  if (snapshot.kind === 'ok') {
    for (const n of snapshot.snapshot.graphNodes) {
      out.push({ id: n.id, state: nodes.get(n.id) ?? 'pending', depends_on: n.depends_on });
      listed.add(n.id);
    }
  }
  for (const [id, state] of nodes) if (!listed.has(id)) out.push({ id, state, depends_on: [] });
  return { report, nodes: out, legs, events: ring, skipped_lines: skipped, stream_error: streamError };
}

/** A run listing entry that could not be reported: the C.2 shape plus a kind for grouping. */
export interface SkippedEntry extends SkippedRun {
  kind: SkipKind;
}

/** What {@link listRuns} returns. */
export interface RunList {
  /** The root, as an absolute path. */
  root: string;
  /** The root does not exist (an empty list, not an error). */
  missing: boolean;
  /** Reports, newest first (run ids in descending byte order). */
  runs: RunReport[];
  /** Entries that could not be reported, newest first, each with its reason. */
  skipped: SkippedEntry[];
}

/** Descending byte order of names (SPEC A.1 "newest first"). */
export function compareNewestFirst(a: string, b: string): number {
  return Buffer.compare(Buffer.from(b), Buffer.from(a));
}

/** Options for {@link listRuns}. */
export interface ListRunsOptions extends RunStatusOptions {
  /**
   * Replaces {@link runStatus} for each run directory (default: runStatus
   * with these options). For a caller that schedules per-run work, such as
   * `serve` re-deriving a run whose stream is costly to read less often than
   * the rest; it must return what runStatus returned for that directory, or
   * throw as runStatus throws.
   */
  report?: (runDir: string) => RunReport;
}

/**
 * Reports every run directory under `root`, newest first. Each entry ends as
 * a report or a named skip: a symlink (never followed: nothing outside the
 * root is read), a non-directory, or a run that cannot be read. One bad run
 * never costs another its row. A missing root is an empty list with
 * `missing: true`. Throws RunIdError only if the root exists but is not a
 * readable directory.
 */
export function listRuns(root: string, options: ListRunsOptions = {}): RunList {
  const abs = resolve(root);
  let entries;
  try {
    entries = readdirSync(abs, { withFileTypes: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { root: abs, missing: true, runs: [], skipped: [] };
    if (code === 'ENOTDIR') throw new RunIdError(`runs root "${abs}" is not a directory`);
    throw new RunIdError(`cannot read runs root "${abs}": ${code ?? String(err)}`);
  }
  entries.sort((a, b) => compareNewestFirst(a.name, b.name));
  const runs: RunReport[] = [];
  const skipped: SkippedEntry[] = [];
  for (const e of entries) {
    const name = e.name;
    if (e.isSymbolicLink()) {
      skipped.push({ run_id: name, error: 'is a symlink; links under the runs root are not followed', kind: 'symlink' });
      continue;
    }
    if (!e.isDirectory()) {
      const what = e.isFile() ? 'a regular file' : e.isFIFO() ? 'a fifo' : e.isSocket() ? 'a socket' : 'not a directory';
      skipped.push({ run_id: name, error: `is ${what}, not a run directory`, kind: 'not-a-directory' });
      continue;
    }
    try {
      runs.push(options.report ? options.report(join(abs, name)) : runStatus(join(abs, name), options));
    } catch (err) {
      if (err instanceof RunUnreadableError) skipped.push({ run_id: name, error: err.message, kind: err.kind });
      else skipped.push({ run_id: name, error: err instanceof Error ? err.message : String(err), kind: 'error' });
    }
  }
  return { root: abs, missing: false, runs, skipped };
}

/**
 * The runs root (SPEC A.1), first match wins: `rootOption` (the `--root`
 * option); `$OMG_HOME/runs` when OMG_HOME is set and non-empty;
 * `$HOME/.oh-my-graph/runs`. Always absolute.
 */
export function resolveRoot(rootOption?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (rootOption !== undefined) {
    if (rootOption === '') throw new RunIdError('--root must not be empty');
    return resolve(rootOption);
  }
  const omg = env['OMG_HOME'];
  if (omg !== undefined && omg !== '') return resolve(omg, 'runs');
  const home = env['HOME'] !== undefined && env['HOME'] !== '' ? env['HOME'] : homedir();
  return resolve(home, '.oh-my-graph', 'runs');
}

/** Why `id` is not a usable run id, or undefined when it is one. */
export function runIdProblem(id: string): string | undefined {
  if (typeof id !== 'string' || id === '') return 'a run id must not be empty';
  if (id === '.' || id === '..') return `"${id}" is not a run id`;
  if (id.includes('/')) return `a run id cannot contain "/" (got "${id}")`;
  if (id.includes('\0')) return 'a run id cannot contain a NUL byte';
  return undefined;
}

/** True when `id` names a directory directly under a root (SPEC A.1). */
export function isValidRunId(id: string): boolean {
  return runIdProblem(id) === undefined;
}

/**
 * The directory of run `id` under `root`. Refuses anything that is not a
 * plain run id, and checks the joined path is directly inside the root, so
 * no id can reach outside it (the rule `serve` relies on).
 */
export function runDirForId(root: string, id: string): string {
  const problem = runIdProblem(id);
  if (problem !== undefined) throw new RunIdError(problem);
  const base = resolve(root);
  const dir = join(base, id);
  if (dirname(dir) !== base || basename(dir) !== id) throw new RunIdError(`run id "${id}" does not name a directory inside the runs root`);
  return dir;
}

/**
 * The run directory a command-line RUN names (SPEC A.1): containing "/", an
 * explicit path used as given (made absolute); otherwise a run id under
 * `root`. Throws RunIdError for an empty id, `.`, `..` or a NUL byte.
 */
export function resolveRunArg(run: string, root: string): string {
  if (run.includes('\0')) throw new RunIdError('RUN cannot contain a NUL byte');
  if (run.includes('/')) return resolve(run);
  return runDirForId(root, run);
}

/**
 * "The run happening now" (SPEC C.2 `status` with no RUN): the newest run in
 * flight (PLANNING or RUNNING), never an abandoned one; else the newest run.
 * `runs` must be newest first, as {@link listRuns} returns them.
 */
export function pickCurrentRun(runs: readonly RunReport[]): RunReport | undefined {
  return runs.find((r) => r.status !== null && IN_FLIGHT.has(r.status)) ?? runs[0];
}
