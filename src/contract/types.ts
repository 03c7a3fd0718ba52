/**
 * The shapes every surface shares (CONTRACT §2, §3.1, §4.3, §5.1, §5.2). One
 * definition, so `runs`, `status`, `watch`, `exec` and `serve` cannot drift.
 */

/** Status words (CONTRACT §4.3). `null` in a report means "no status yet". */
export type Status = 'ABANDONED' | 'PLANNING' | 'RUNNING' | 'PAUSED' | 'PASS' | 'FAIL';

/** Every status word, in the order tables and tallies list them. */
export const STATUSES: readonly Status[] = ['PLANNING', 'RUNNING', 'ABANDONED', 'PAUSED', 'PASS', 'FAIL'];

/** The lower-case word for each status, as the table's counts and the dashboard's card states use it. */
export const STATUS_WORD = {
  PLANNING: 'planning',
  RUNNING: 'running',
  ABANDONED: 'abandoned',
  PAUSED: 'paused',
  PASS: 'passed',
  FAIL: 'failed',
} as const satisfies Record<Status, string>;

/** Statuses that mean a leg is working right now (CONTRACT §4.3). */
export const IN_FLIGHT: ReadonlySet<Status> = new Set(['PLANNING', 'RUNNING']);
/** Statuses that mean the run has settled: its last leg closed (CONTRACT §4.3). */
export const SETTLED: ReadonlySet<Status> = new Set(['PAUSED', 'PASS', 'FAIL']);

/** The three-valued answer. */
export type Liveness = 'held' | 'free' | 'unknown';

/**
 * Why the probe answered as it did; a closed set.
 * - held: `flock-held` (a leg holds the exclusive lock).
 * - free: `flock-free` (the shared lock was granted on a marked file),
 *   `legacy-pid-gone` (pre-flock file whose pid kill(2) says is gone).
 * - unknown: `legacy-pid-alive` (pre-flock file, pid exists or EPERM),
 *   `legacy-pid-unknown` (kill failed otherwise), `legacy-unparsable`
 *   (pre-flock file that is not exactly one pid), `empty-file`,
 *   `future-marker` (a newer version's format), `missing` (no lock file or
 *   no run directory), `not-regular-file` (directory, FIFO, symlink, socket,
 *   device), `open-error`, `read-error`, `flock-error`, `fs-not-local`
 *   (filesystem not on the known-local list; file not opened), `fs-error`
 *   (statfs failed), `unsupported-platform` (no flock(2) here),
 *   `unlabeled-lock` (Windows: a free lock whose file does not say its
 *   writer took a Windows lock, as oh-my-graph's Windows build takes none),
 *   `lock-replaced` (the lock at the path was free, but a live process
 *   holds the file that was there before it was replaced; given by the
 *   status layer, never by probeLock itself), `record-lock` (darwin: another
 *   process's fcntl/lockf record lock keeps the shared flock out, since
 *   flock and record locks are one list there; no leg's flock can be
 *   beside it).
 */
export type ProbeReason =
  | 'flock-held'
  | 'flock-free'
  | 'legacy-pid-gone'
  | 'legacy-pid-alive'
  | 'legacy-pid-unknown'
  | 'legacy-unparsable'
  | 'empty-file'
  | 'future-marker'
  | 'missing'
  | 'not-regular-file'
  | 'open-error'
  | 'read-error'
  | 'flock-error'
  | 'fs-not-local'
  | 'fs-error'
  | 'unsupported-platform'
  | 'unlabeled-lock'
  | 'lock-replaced'
  | 'record-lock';

/** The reason a `held` answer gives. */
export type HeldReason = 'flock-held';
/** The reasons a `free` answer gives: a granted shared lock on a marked file, or a pre-flock file whose pid is gone. */
export type FreeReason = 'flock-free' | 'legacy-pid-gone';
/** The reasons an `unknown` answer gives: every other one. */
export type UnknownReason = Exclude<ProbeReason, HeldReason | FreeReason>;

/**
 * A liveness and its reason, paired, so that checking one narrows the
 * other: after `if (a.liveness === 'held')`, `a.reason` is a {@link HeldReason}.
 */
export type LivenessAnswer =
  | {
      /** A leg holds the lock: its process is alive (or stopped, which is not dead). */
      liveness: 'held';
      /** The one way to be sure of it: the kernel refused a shared lock. */
      reason: HeldReason;
    }
  | {
      /** Nothing holds the lock: the leg's process is gone. The only answer that can make a run ABANDONED. */
      liveness: 'free';
      /** What proved it: a granted shared lock on a marked file, or a pre-flock file's pid gone. */
      reason: FreeReason;
    }
  | {
      /** The probe could not tell; readers keep the answer they had (never ABANDONED on a doubt). */
      liveness: 'unknown';
      /** Why it could not tell (a missing or foreign file, a remote filesystem, an error, ...). */
      reason: UnknownReason;
    };

/** Every reason, in documentation order. */
export const PROBE_REASONS: readonly ProbeReason[] = [
  'flock-held',
  'flock-free',
  'legacy-pid-gone',
  'legacy-pid-alive',
  'legacy-pid-unknown',
  'legacy-unparsable',
  'empty-file',
  'future-marker',
  'missing',
  'not-regular-file',
  'open-error',
  'read-error',
  'flock-error',
  'fs-not-local',
  'fs-error',
  'unsupported-platform',
  'unlabeled-lock',
  'lock-replaced',
  'record-lock',
];


/** Per-node state from the stream fold (CONTRACT §2.4). */
export type NodeState = 'running' | 'passed' | 'failed' | 'gate-paused' | 'abandoned';

/** The last leg, from the stream fold (CONTRACT §2.3). */
export interface LegFacts {
  /** The last leg is open: a run_started with no closing run_finished after it. */
  open: boolean;
  /** At least one run_started was seen. */
  started: boolean;
  /** The phase of the last run_started ("" or "planning"). */
  phase: string;
  /** The outcome of the run_finished that closed the last closed leg ("" if none). */
  // eslint-disable-next-line @typescript-eslint/no-redundant-type-constituents -- the known outcomes, named for the reader; any other word is kept as written
  lastOutcome: '' | 'passed' | 'failed' | 'paused' | string;
  /**
   * Byte offset in events.jsonl of the run_started that opened the last leg
   * (-1 if none, or, with `started` true, not known: a closed leg the tail
   * reader did not search back to, CONTRACT §2.5 rule 7). "Same position in
   * the file" for CONTRACT §4.3's read-probe-confirm, which needs it only for
   * an open leg.
   */
  legOffset: number;
  /** How many run_started lines the stream holds (legs, counted). */
  legs: number;
  /** The `command` array of the last run_started, when a `runwarden exec` leg wrote one. */
  command?: string[];
  /**
   * Gates paused in the last leg and not approved, rejected or re-run since:
   * node ids whose latest node event is a `gate_paused` after `legOffset`,
   * oldest first. Named in a PAUSED run's hint. Always set by runwarden's readers.
   */
  gates?: string[];
}

/** The whole result of reading events.jsonl. */
export interface StreamFacts {
  /** The last leg, as the fold left it: what decides whether the lock is probed at all. */
  leg: LegFacts;
  /** Node id -> state, in first-seen order. */
  nodes: Map<string, NodeState>;
  /** Lines skipped as malformed (CONTRACT §2.2, counted by runwarden). */
  skippedLines: number;
}

/**
 * How a report's status, liveness and reason go together (CONTRACT §4.3):
 * the lock is probed only while the last leg is open, so a run is
 * ABANDONED only with a `free` answer, PLANNING or RUNNING only with `held`
 * or `unknown`, and a settled run (or one with no status yet) was not
 * probed: liveness and reason are both null. Checking `status` or
 * `liveness` narrows the others.
 */
export type ReportLiveness =
  | {
      /** The last leg is open and its lock was probed free: the process that ran it is gone. */
      status: 'ABANDONED';
      /** Always `free`: nothing else may make a run ABANDONED. */
      liveness: 'free';
      /** What proved the lock free. */
      reason: FreeReason;
    }
  | {
      /** The last leg is open and its process holds the lock. */
      status: 'PLANNING' | 'RUNNING';
      /** The kernel refused a shared lock: a live (or stopped) holder. */
      liveness: 'held';
      /** Always `flock-held`. */
      reason: HeldReason;
    }
  | {
      /** The last leg is open and the probe could not tell: the status stays the in-flight one. */
      status: 'PLANNING' | 'RUNNING';
      /** The probe's doubt, kept visible instead of being turned into a verdict. */
      liveness: 'unknown';
      /** Why the probe could not tell. */
      reason: UnknownReason;
    }
  | {
      /** The last leg is closed (PAUSED, PASS, FAIL), or the run has no status yet (null). */
      status: 'PAUSED' | 'PASS' | 'FAIL' | null;
      /** Null: a closed leg's lock is not probed, so there is no answer to give. */
      liveness: null;
      /** Null, with `liveness`. */
      reason: null;
    };

/** The fields of a {@link RunReport} that do not depend on its status. */
export interface RunReportFields {
  /** The run's id: its directory's name under the runs root. */
  run_id: string;
  /** Whether the run directory holds a readable `state.json` snapshot. */
  has_snapshot: boolean;
  /** The graph's name from the snapshot, or null. */
  graph: string | null;
  /** How many nodes the graph has, from the snapshot; null without one. */
  nodes_total: number | null;
  /** How many of them passed, from the snapshot; null without one. */
  nodes_passed: number | null;
  /** The run's cost in US dollars: the sum of the snapshot's finite node costs; null without a snapshot. */
  cost_usd: number | null;
  /** True when some node's cost is not known, so `cost_usd` is a lower bound. */
  cost_unknown: boolean;
  /** The recovery hint for ABANDONED and PAUSED runs, else null. */
  hint: string | null;
  /** Non-fatal problems found while reading (skipped lines, snapshot errors). */
  warnings: string[];
}

/**
 * A report on one run: the single answer every surface shows (CONTRACT
 * §5.2). `status` is the status word, or null when the run has no status
 * yet (no leg, no snapshot); `liveness` and `reason` are the probe's
 * answer, or null when the lock was not probed (the last leg is closed).
 * See {@link ReportLiveness} for how the three go together.
 */
export type RunReport = RunReportFields & ReportLiveness;

/** A run directory that could not be reported, and why. */
export interface SkippedRun {
  /** The directory's name under the runs root. */
  run_id: string;
  /** Why no report could be made, in one line. */
  error: string;
}

/** What a path turned out to be, in the words every message uses; `file` is a regular file. */
export type FileKind = 'file' | 'directory' | 'fifo' | 'symlink' | 'socket' | 'character device' | 'block device' | 'unknown';

/**
 * The version of the JSON documents runwarden prints and serves (`runs
 * --json`, `status --json`, `probe --json`, `GET /api/runs`), carried in
 * their `schema` field. It goes up only for a change that could break a
 * reader: a key removed or renamed, or a value whose type or meaning
 * changed. New keys may appear without it changing. A reader that meets a
 * higher number than it knows should stop rather than guess.
 */
export const JSON_SCHEMA = 1;

/** The `runs --json` document (CONTRACT §5.2), also `GET /api/runs`. */
export interface RunsDocument {
  /** The document's version: {@link JSON_SCHEMA} for this one. */
  schema: number;
  /** The runs root, absolute. */
  root: string;
  /** Newest first. */
  runs: RunReport[];
  /** Runs that could not be reported, newest first. */
  skipped: SkippedRun[];
  /** Whether a selection's `limit` left more selected runs after this page. */
  more: boolean;
  /** With `more`: the id to pass as `before` for the next page (this page's last run). */
  next_before?: string;
}
