/**
 * The live engine: the status of every run under a root (or of the runs it
 * is given), kept current by the kernel's change notification, at a cost
 * that follows what changes, not what exists. `watch`-style followers, the
 * dashboard and library callers can all sit on it.
 *
 * Invariants, and why:
 * - Told, not looking (kernel/notify.ts). Each run directory has one watch.
 *   A leg's `resume.lock` closing its last writable descriptor (the leg died
 *   or released, CONTRACT §4.1) makes the engine probe that run at once; an
 *   append to `events.jsonl` is read at once; a rewritten `state.json` is
 *   re-read; runs appearing in or vanishing from the root are tracked. A
 *   reader's read-only probe closes without writing and is never asked for,
 *   so engines and other readers never wake each other.
 * - Read only what changed. Each run keeps its fold (contract/fold.ts, the
 *   one home of the leg rules, applied through read/lines.ts exactly as the
 *   other readers apply it) and the byte offset it has read; an append is
 *   folded from that offset. A long stream is first read by the tail reader
 *   the listing uses, not forward ({@link LIVE_FIRST_READ_WHOLE_MAX}), and
 *   every read goes a step at a time ({@link LIVE_STEP_BYTES} per run and per
 *   turn of the event loop), so no stream's length holds the loop. A stream
 *   that shrank, was replaced (another inode) or rewritten (the bytes just
 *   before the offset differ) is read again from scratch. A partial last
 *   line is held back until its newline arrives.
 * - Settled runs cost nothing: a run whose last leg is closed is not probed
 *   and not read until one of its files changes. With `settledForget` it
 *   keeps no more than its report, identities and watch (its stream is read
 *   again from the start when it changes), and with `seed` its first report
 *   may be the caller's own inspection, made after its watch was set, so a
 *   caller that lists every run anyway does not make the engine read them
 *   all a second time.
 * - The same answers as every other surface: a report is built by the same
 *   derivation (status/report.ts buildReport) from the same last-leg facts
 *   the tail reader would find (the restart point and the skipped lines from
 *   it are kept as the tail defines them). Whenever a probe answers `free`,
 *   and whenever the engine's own fold cannot be trusted (a stream error, a
 *   held-back partial line), the run is derived by the reference path
 *   (status/inspect.ts inspectRun: read, probe, confirm, the replaced-lock
 *   check), so ABANDONED is never concluded from cached state.
 * - When notification is missing (no inotify, `ENOSPC` at
 *   `max_user_watches`, a notifier that failed), it says so once and polls
 *   the open legs of the runs it could not watch (every `pollMs`). A slow
 *   safety re-check (`safetyMs`) stays in every mode, so a missed event
 *   cannot freeze a run's status forever: it lists the root again (when its
 *   mtime moved, and every 120th pass, once an hour, anyway), compares the file identities
 *   of every open or unwatched run and of a bounded share of the settled
 *   ones (all of them up to 10,000 runs; beyond that they take turns, so the
 *   backstop costs the same at any size), and re-probes open legs; open legs are also
 *   re-probed every `openRecheckMs`.
 * - A held lock's holder is watched for its exit (kernel/notify.ts
 *   ExitWatcher: a pidfd on linux, kqueue EVFILT_PROC on darwin), so a death
 *   that closes no writable descriptor (a holder that opened the lock
 *   read-only, as `flock -x resume.lock cmd` does; every death on darwin,
 *   where kqueue has no close-after-write) is announced too. The pid is the
 *   kernel's lock table's (linux) or the file's label (where there is no
 *   table; kernel/holders.ts likelyHolder); when no live process is named
 *   (the taker exited and handed its descriptor on, to a child or to the
 *   shell it took the lock for), a process that has the file open
 *   (kernel/holders.ts descriptorHolders). An exit is only a reason to
 *   probe again, never a verdict: a wrong or recycled pid costs one probe;
 *   a pid whose exit was already told is not watched again; with nothing
 *   left to watch after an exit the run gets a few follow-up probes
 *   ({@link HOLDER_FOLLOW_UP_MS}); a holder that cannot be seen (another
 *   pid namespace) or past the watch budget (`holderWatches`) is found by
 *   the `openRecheckMs` re-probe.
 * - Reads only: files are opened read-only (kernel/open.ts), the probe takes
 *   only a shared lock, and watches only observe. Nothing is created,
 *   written or removed under the root.
 * - With `lines` (a follower, live/follow.ts): each line is told as it is
 *   folded, in file order, and a run is never derived ahead of the lines
 *   told, so a subscriber sees a leg's `run_finished` before the status it
 *   leads to. A run reads no further than one chunk past what its
 *   subscriber has taken (`more`), so a long replay never piles up. A
 *   newer-schema line is skipped and told (once) instead of failing the
 *   read, and the run is then derived by the reference path, like every
 *   other reader; a stream that shrank, was replaced, rewritten or removed
 *   is told once as a `stream-error`, since lines already told cannot be
 *   taken back.
 */
import { basename, join, resolve } from 'node:path';
import { RunUnreadableError, StreamError } from '../contract/errors.js';
import type { StreamEvent } from '../contract/events.js';
import { EVENTS_FILE, LOCK_FILE, STATE_FILE } from '../contract/files.js';
import { StreamFold } from '../contract/fold.js';
import { compareNewestFirst } from '../contract/runid.js';
import type { RunReport } from '../contract/types.js';
import { identityStride, readIdentities } from '../kernel/identity.js';
import { closeQuietly } from '../kernel/open.js';
import { native } from '../kernel/native.js';
import { descriptorHolders, likelyHolder } from '../kernel/holders.js';
import {
  EXIT_WATCH_BUDGET,
  notifyBackend,
  openDirWatcher,
  openExitWatcher,
  sharedDirWatcher,
  sharedExitWatcher,
  type DirEvent,
  type DirWatch,
  type DirWatcher,
  type ExitWatcher,
} from '../kernel/notify.js';
import { probeLock, type ProbeResult } from '../lock/probe.js';
import { foldLines, LineSplitter } from '../read/lines.js';
import { readSnapshot, type SnapshotRead } from '../read/snapshot.js';
import { openStream, readStreamBytes, shrank } from '../read/stream.js';
import { DENSE_BYTES, TailStepper, type TailFacts } from '../read/tail.js';
import { inspectRun } from '../status/inspect.js';
import { buildReport } from '../status/report.js';
import { compactReport } from '../status/compact.js';
import { RootRelistGate } from './relist.js';
import { FORGOTTEN, NO_BYTES, NO_EVENTS, NO_LINES, RunState, SigSlots } from './runstate.js';
import { RootFollower, rootIdentity } from './rootwatch.js';

/** Runs the safety re-check compares per turn of the event loop (two lstats each, one native call per slice). */
const SAFETY_SLICE = 1000;

/**
 * Settled, watched runs the safety re-check compares per pass, at most.
 * Runs with an open leg or without a watch are compared on every pass; the
 * settled runs of a watched root are the kernel's to announce, so the pass
 * is only their backstop, and a pass over 100,000 of them cost about
 * 1.9 s of CPU every 30 s with lstatSync, and still about 1 s natively
 * (two lstats per run, ~5 µs each on the test VM).
 * Beyond this many runs, they take turns (a rotating range of the runs):
 * at 100,000 runs each settled run is compared every tenth pass (5 min).
 */
export const LIVE_SAFETY_SETTLED_PER_PASS = 10_000;

/**
 * Runs the engine derives per turn of the event loop, at most: what was
 * marked since the last turn first, then the backlog of a large batch (an
 * overflow of the kernel's event queue marks every run). At 100,000 runs one
 * synchronous batch would hold the event loop for seconds; 256 runs are
 * milliseconds (a settled run costs tens of microseconds).
 */
export const LIVE_RUNS_PER_TURN = 256;

/** Default interval of the safety re-check (ms). */
export const LIVE_SAFETY_MS = 30_000;
/** Default interval at which open legs are re-probed even when watched (ms). */
export const LIVE_OPEN_RECHECK_MS = 5_000;
/**
 * After a watched holder's exit, while the lock is still found held and no
 * other process with the file open can be watched, the run is probed again
 * after these delays (ms), then left to the `openRecheckMs` re-probe. A
 * holder's process group killed at once (`flock -x resume.lock cmd`:
 * flock(1) took the lock and its child shares it) exits one process at a
 * time, and the table still names the first one; a few probes find the rest
 * gone without a wait of seconds, and cost a handful of probes otherwise.
 */
export const HOLDER_FOLLOW_UP_MS: readonly number[] = [10, 50, 250, 1000];

/** Default interval at which open legs without a watch are polled (ms). */
export const LIVE_POLL_MS = 100;

const CHUNK = 64 * 1024;
const PRINT = 64; // bytes before the offset kept to recognise a rewritten stream

/**
 * Stream bytes one step of one run reads, at least (a step ends at the first
 * read that reaches it, so at most this plus one read: 64 KiB forward, up to
 * 1 MiB and a few bytes in the tail reader), and bytes one turn of the event
 * loop reads before it leaves the remaining runs to the next turn. A stream
 * of any length is read a step per turn, so no read holds the loop (CONTRACT
 * §5.5): a 100 MB stream is a hundred turns, not one of several seconds.
 */
export const LIVE_STEP_BYTES = 1024 * 1024;

/**
 * A stream up to this long is first read forward, whole (one step; its
 * events are told with `events`); a longer one is first read by the tail
 * reader (read/tail.ts TailStepper), in steps, as `runs` and `status` read
 * it, so the first read costs what the listing's does, not the stream's
 * length, and the first report is the listing's. Appends are then read
 * forward from where that read ended. The tail reader's dense region
 * (read/tail.ts DENSE_BYTES): up to there both reads fold the same lines
 * and count the same skipped ones; beyond it only the tail reader's count
 * is the listing's.
 */
export const LIVE_FIRST_READ_WHOLE_MAX = DENSE_BYTES;

/** One run as the engine knows it. */
export interface LiveRun {
  /** The run's id: its directory's name. */
  runId: string;
  /** Absolute. */
  runDir: string;
  /** The report (CONTRACT §5.2), or null when the run cannot be read (then `error` says why). */
  report: RunReport | null;
  /** Why the run cannot be reported, when `report` is null; else null. */
  error: string | null;
}

/** One line of a run's stream as the engine read it (`lines: true`), in file order. */
export type LiveLine =
  /** A line of the right shape (CONTRACT §2.2), after it was folded. */
  | {
      /** An event line. */
      kind: 'event';
      /** The event, as read and folded. */
      event: StreamEvent;
      /** Byte offset of the line in `events.jsonl`. */
      offset: number;
    }
  /** A malformed line that was skipped (CONTRACT §2.2 rule 3). */
  | {
      /** A skipped line. */
      kind: 'skipped';
      /** Byte offset of the line in `events.jsonl`. */
      offset: number;
    }
  /** The first line of the run written by a newer version (skipped, like every later one). */
  | {
      /** Told once per run. */
      kind: 'newer-schema';
      /** `ENEWERSCHEMA`, naming the stream. */
      error: StreamError;
      /** Byte offset of the line in `events.jsonl`. */
      offset: number;
    };

/** What a subscriber is told. */
export type LiveChange =
  /** A run was first derived, or its report (or error) changed. */
  | ({
      /** A run's report or error is new or changed (or, with `announceFiles`, its files changed). */
      type: 'run';
    } & LiveRun)
  /** A run directory went away. */
  | {
      /** The run is no longer followed. */
      type: 'removed';
      /** The run's id. */
      runId: string;
      /** Its directory (absolute), as it was followed. */
      runDir: string;
    }
  /** With `events: true`: lines appended to a run's stream, in order, as folded. */
  | {
      /** New event lines. */
      type: 'events';
      /** The run's id. */
      runId: string;
      /** Its directory (absolute). */
      runDir: string;
      /** The events, in file order. */
      events: {
        /** The event, as read and folded. */
        event: StreamEvent;
        /** Byte offset of the line in `events.jsonl`. */
        offset: number;
      }[];
    }
  /**
   * With `lines: true`: the lines just read from a run's stream, in file
   * order. `behind`: more bytes are known to be there, to be read after
   * `more(runDir)`; the run is derived only once it has caught up.
   */
  | {
      /** Lines read. */
      type: 'lines';
      /** The run's id. */
      runId: string;
      /** Its directory (absolute). */
      runDir: string;
      /** The lines, in file order. */
      lines: LiveLine[];
      /** More bytes are known to be there; call `more(runDir)` to read them. */
      behind: boolean;
    }
  /**
   * With `lines: true`, once per run: its stream can no longer be followed
   * line by line (it shrank, was replaced, rewritten in place or removed,
   * or a line is over the cap): lines already told may not hold any more.
   */
  | {
      /** The stream cannot be followed line by line any more. */
      type: 'stream-error';
      /** The run's id. */
      runId: string;
      /** Its directory (absolute). */
      runDir: string;
      /** What went wrong (`EREAD`, `ELINETOOLONG`). */
      error: StreamError;
    }
  /** Something a person should know once (notification unavailable, so polling). */
  | {
      /** A notice. */
      type: 'notice';
      /** One line for a person. */
      message: string;
    };

/** Options for {@link LiveEngine}. */
export interface LiveEngineOptions {
  /** A runs root to follow: every directory in it is a run, and runs appearing later are added. */
  root?: string;
  /** Safety re-check interval (ms, default {@link LIVE_SAFETY_MS}). */
  safetyMs?: number;
  /**
   * Settled, watched runs the safety re-check compares per pass, at most
   * (default {@link LIVE_SAFETY_SETTLED_PER_PASS}); beyond that they take turns.
   */
  safetySettledPerPass?: number;
  /** Runs derived per turn of the event loop, at most (default {@link LIVE_RUNS_PER_TURN}). */
  runsPerTurn?: number;
  /** Re-probe interval of watched open legs (ms, default {@link LIVE_OPEN_RECHECK_MS}). */
  openRecheckMs?: number;
  /** Poll interval of open legs that have no watch (ms, default {@link LIVE_POLL_MS}). */
  pollMs?: number;
  /** false: use no change notification at all, poll (for comparison). Default true. */
  notify?: boolean;
  /**
   * Also tell subscribers each appended event (`events` changes). The first
   * read of a stream longer than `LIVE_FIRST_READ_WHOLE_MAX` (16 KiB) is the
   * tail reader's and tells none; every event appended after it is told.
   * Default false.
   */
  events?: boolean;
  /**
   * A test seam: behave as if the kernel refused watches beyond this many
   * (`ENOSPC`, as at `fs.inotify.max_user_watches`).
   */
  maxWatches?: number;
  /** Keep the process alive while the engine runs (default true, like fs.watch). */
  ref?: boolean;
  /**
   * Tell subscribers each line read, paced by `more` (`lines` and
   * `stream-error` changes; see the module comment). For followers of a
   * few runs (followRun); default false.
   */
  lines?: boolean;
  /**
   * Use the process's shared notifier (kernel/notify.ts sharedDirWatcher)
   * instead of opening one: one kernel notifier for many engines that each
   * follow a run or two (followRun), since `max_user_instances` is small.
   * The engine closes its own watches on it, never the notifier; the shared
   * notifier never keeps the process alive. Default false.
   */
  shared?: boolean;
  /**
   * Also announce a run (a `run` change) whose stream or snapshot changed
   * (told by the kernel, or found by the safety re-check) when its report
   * did not: for a subscriber that keeps more of a run than its report (the
   * dashboard's node strips and times). Default false.
   */
  announceFiles?: boolean;
  /**
   * Holders of held locks watched for their exit at once, at most (default
   * `EXIT_WATCH_BUDGET` = 1024; on linux each is a descriptor). 0 watches
   * none: every death that closes no writable descriptor then waits for the
   * `openRecheckMs` re-probe.
   */
  holderWatches?: number;
  /**
   * Keep nothing of a settled run's stream: once a run whose last leg is
   * closed is derived, its fold, offset and print are let go, and its
   * stream is read again from the start (the tail reader for a long one)
   * when one of its files next changes. For a follower of very many runs
   * that are mostly settled (the dashboard): about 700 bytes less per run,
   * for one read of the stream per change of a settled run. Ignored with
   * `events` or `lines`, which tell each line once. Default false.
   */
  settledForget?: boolean;
  /**
   * With `settledForget`: the caller's own first reports, asked for once by
   * `start()` after every run of the root is tracked and watched (run id,
   * the directory's name → its report, as `inspectRun` or `listRuns` made
   * it; keyed by name, so a caller need not build a path per run). A
   * settled, watched run of the root whose report is given is taken as is instead of
   * being read: one inspection per run at start for a caller that inspects
   * every run anyway (the dashboard's first listing). Its file identities
   * are taken when it is taken; a change between the caller's read and then
   * is one the run's watch, already there, announces. Such a run is not
   * announced (the report is the caller's own); every other run is read and
   * announced as without a seed. Anything with `get(runId)` will do (a Map,
   * or a search of a sorted list that a caller keeps anyway); a name it
   * does not find is read. It may answer with a promise (a caller whose
   * listing shares its inspections with worker threads): the engine awaits
   * it, following events meanwhile; a run an event marks or reads before it
   * resolves is read, never taken.
   */
  seed?: () =>
    | {
        /** The caller's report of the run named `runId`, or undefined to have it read. */
        get(runId: string): RunReport | undefined;
      }
    | undefined
    | Promise<
        | {
            /** The caller's report of the run named `runId`, or undefined to have it read. */
            get(runId: string): RunReport | undefined;
          }
        | undefined
      >;
}

/** Counters, for tests and benchmarks. */
export interface LiveStats {
  /** `inotify`, `kqueue`, or `polling` (no notifier at all). */
  backend: 'inotify' | 'kqueue' | 'polling';
  /** Runs followed now. */
  runs: number;
  /** Runs without a watch (their open legs are polled). */
  unwatched: number;
  /** Reports built. */
  derivations: number;
  /** Reports built by the reference path (inspectRun). */
  referenceDerivations: number;
  /** Lock probes taken. */
  probes: number;
  /** Probes started because a lock file was closed after writing (a leg's death or release). */
  lockWakeups: number;
  /** Probes started by polling an unwatched open leg. */
  polledProbes: number;
  /** Stream bytes read. */
  bytesRead: number;
  /** The most stream bytes one step of one run read (see `LIVE_STEP_BYTES`, 1 MiB). */
  maxStepBytes: number;
  /** Steps that read stream bytes. */
  readSteps: number;
  /** First reads of a stream made by the tail reader (streams over `LIVE_FIRST_READ_WHOLE_MAX`, 16 KiB). */
  tailReads: number;
  /** Streams re-read whole (shrunk, replaced or rewritten). */
  rereads: number;
  /** Kernel event batches received. */
  batches: number;
  /** Safety re-check passes begun. */
  safetyPasses: number;
  /**
   * Listings of the root: the first, and one per change of the root, lost
   * events or due safety pass (an unchanged root is listed again once an
   * hour: live/relist.ts).
   */
  rootListings: number;
  /** Runs whose file identities the safety re-check compared, over every pass. */
  safetyCompared: number;
  /** Times the kernel's event queue overflowed (events were lost): each marks every run to be looked at again. */
  overflows: number;
  /** Holders of held locks watched for their exit now (pidfd / EVFILT_PROC). */
  holderWatches: number;
  /** Probes started because a watched holder exited. */
  exitWakeups: number;
}

/**
 * One turn of a rotation: which of `total` items (as index ranges) to take
 * when at most `budget` may be taken per turn, starting at `cursor`, and
 * where the next turn starts. Every item is taken once in each
 * ceil(total / budget) consecutive turns while `total` stays the same.
 */
export function takeTurns(total: number, cursor: number, budget: number): { ranges: [number, number][]; next: number } {
  if (total <= budget) return { ranges: total > 0 ? [[0, total]] : [], next: 0 };
  const from = cursor % total;
  const upto = from + budget;
  if (upto <= total) return { ranges: [[from, upto]], next: upto % total };
  return { ranges: [[from, total], [0, upto - total]], next: upto - total };
}

/** Bytes that decode to themselves as UTF-8: ASCII. */
const ASCII = /^[\x00-\x7f]*$/;

/**
 * The names of the directories in `root`, as readdirSync gives them (UTF-8,
 * an invalid sequence replaced), newest first (descending byte order, as
 * the listing), in one native call (kernel readDirSorted): readdirSync's
 * Dirent per entry was ~10 MB of start-up garbage at 100,000 runs. Newest
 * first, because runs are watched in this order: when the kernel's watch
 * budget runs out (`max_user_watches`), the runs left to polling are the
 * oldest, not the live ones. Throws as the listing does (ENOENT, ENOTDIR,
 * EACCES…).
 */
function directoryNames(root: string): string[] {
  const { names, kinds } = native().readDirSorted(root);
  const out: string[] = [];
  for (let i = names.length - 1; i >= 0; i--) {
    if (kinds[i] !== 'd') continue;
    const raw = names[i] as string;
    out.push(ASCII.test(raw) ? raw : Buffer.from(raw, 'latin1').toString('utf8'));
  }
  return out;
}

/** The files whose identities tell that a run changed (RunState.sig). */
const RUN_FILES: readonly string[] = [EVENTS_FILE, STATE_FILE];


function pushEvent(r: RunState, e: { event: StreamEvent; offset: number }): void {
  if (r.newEvents === NO_EVENTS) r.newEvents = [];
  r.newEvents.push(e);
}
function pushLine(r: RunState, l: LiveLine): void {
  if (r.newLines === NO_LINES) r.newLines = [];
  r.newLines.push(l);
}


/** Seeded runs taken per turn of the event loop in start(), their identities read in one native call (two lstats each). */
const ADOPT_SLICE = 1024;


// The run's stream, snapshot and lock paths, made when needed: kept per run, they cost ~200 bytes each at 100,000 runs.
function eventsOf(r: RunState): string {
  return join(r.dir, EVENTS_FILE);
}
function stateOf(r: RunState): string {
  return join(r.dir, STATE_FILE);
}
function lockOf(r: RunState): string {
  return join(r.dir, LOCK_FILE);
}

function positive(name: string, v: number | undefined, dflt: number): number {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 1) throw new RangeError(`${name} must be a finite number of at least 1`);
  return v;
}

/**
 * Follows runs and keeps each one's report current, as the module comment
 * describes. Create it, `subscribe`, then `start()`; `close()` when done.
 *
 * ```ts
 * const engine = new LiveEngine({ root });
 * engine.subscribe((c) => { if (c.type === 'run' && c.report?.status === 'ABANDONED') console.log(c.runId, 'died'); });
 * await engine.start();
 * ```
 */
export class LiveEngine {
  /** The runs root it follows (absolute), or undefined when it follows single runs only. */
  readonly root: string | undefined;
  /** Its counters, updated in place as it works. */
  readonly stats: LiveStats;
  private readonly runsByDir = new Map<string, RunState>();
  private readonly listeners = new Set<(c: LiveChange) => void>();
  private readonly dirty = new Set<RunState>();
  /** Runs whose fold ended with an open leg when last processed (the ones re-probed and always re-checked). */
  private readonly open = new Set<RunState>();
  /** The safety re-check's identities, one slice's worth, reused. */
  private fresh: Float64Array | undefined;
  /** Where the safety re-check's share of settled, watched runs resumes. */
  private settledCursor = 0;
  private readonly safetyMs: number;
  private readonly settledPerPass: number;
  private readonly runsPerTurn: number;
  /** Marked runs a turn could not take, in order (each once: `waiting`), and how far the turns have come through them. */
  private backlog: RunState[] = [];
  private backlogAt = 0;
  private readonly waiting = new Set<RunState>();
  private readonly openRecheckMs: number;
  private readonly pollMs: number;
  private readonly emitEvents: boolean;
  private readonly emitLines: boolean;
  private readonly borrowed: boolean;
  private readonly ref: boolean;
  private watcher: DirWatcher | undefined;
  /** Watches holders' exits; undefined without notification, or where there is none. */
  private exits: ExitWatcher | undefined;
  private readonly holderBudget: number;
  private rootWatch: DirWatch | undefined;
  private timers: NodeJS.Timeout[] = [];
  private flushQueued = false;
  private started = false;
  private closed = false;
  private noticed = false;
  private rootMissing = false;
  /** The identity of the directory the runs were listed from, and its follower (live/rootwatch.ts). */
  private rootId: string | undefined;
  private rootFollow: RootFollower | undefined;
  /** Whether a safety pass lists the root again (live/relist.ts). */
  private readonly rootGate = new RootRelistGate();
  /** A safety re-check is under way (it runs in slices). */
  private safetyPass = false;
  /** Stream bytes read in the current turn (flush) or start() slice. */
  private turnBytes = 0;
  /** Runs whose first read takes several steps, until they are first derived (start() waits for them). */
  private readonly firstReads = new Set<RunState>();
  /**
   * Runs with stream bytes left to read (a step per turn, `LIVE_STEP_BYTES`),
   * in turn order. Taken after the runs marked since the last turn and the
   * backlog, so a death told by the kernel never waits behind a long read.
   */
  private readonly stepping = new Set<RunState>();
  /** Every run's watch listener (the run is its context). */
  private readonly runListener = (e: DirEvent, r: RunState): void => this.onRunEvent(r, e);
  /** Where the runs' identity buffers come from. */
  private readonly sigs = new SigSlots(RUN_FILES.length * identityStride());
  /** Where process() takes one run's identities before they go to its slot. */
  private readonly oneSig = new Float64Array(RUN_FILES.length * identityStride());
  /** `settledForget`, when it applies (neither `events` nor `lines`). */
  private readonly forget: boolean;

  constructor(private readonly options: LiveEngineOptions = {}) {
    this.root = options.root === undefined ? undefined : resolve(options.root);
    this.safetyMs = positive('safetyMs', options.safetyMs, LIVE_SAFETY_MS);
    this.settledPerPass = Math.floor(positive('safetySettledPerPass', options.safetySettledPerPass, LIVE_SAFETY_SETTLED_PER_PASS));
    this.runsPerTurn = Math.max(1, Math.floor(positive('runsPerTurn', options.runsPerTurn, LIVE_RUNS_PER_TURN)));
    this.openRecheckMs = positive('openRecheckMs', options.openRecheckMs, LIVE_OPEN_RECHECK_MS);
    this.pollMs = positive('pollMs', options.pollMs, LIVE_POLL_MS);
    this.emitEvents = options.events === true;
    this.emitLines = options.lines === true;
    this.borrowed = options.shared === true;
    this.forget = options.settledForget === true && !this.emitEvents && !this.emitLines;
    this.ref = options.ref !== false;
    const budget = options.holderWatches ?? EXIT_WATCH_BUDGET;
    if (typeof budget !== 'number' || !Number.isFinite(budget) || budget < 0) throw new RangeError('holderWatches must be a finite number of at least 0');
    this.holderBudget = Math.floor(budget);
    this.stats = { backend: 'polling', runs: 0, unwatched: 0, derivations: 0, referenceDerivations: 0, probes: 0, lockWakeups: 0, polledProbes: 0, bytesRead: 0, maxStepBytes: 0, readSteps: 0, tailReads: 0, rereads: 0, batches: 0, safetyPasses: 0, rootListings: 0, safetyCompared: 0, overflows: 0, holderWatches: 0, exitWakeups: 0 };
  }

  /** Listens for changes; returns the function that stops listening. */
  subscribe(listener: (change: LiveChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Opens the notifier, lists the root (when there is one) and derives every
   * run once, yielding to the event loop between runs. Resolves when every
   * run known at the start has a report or an error.
   */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    const shared = this.borrowed && this.options.notify !== false ? sharedDirWatcher() : undefined;
    if (shared !== undefined) {
      this.watcher = shared;
      this.stats.backend = notifyBackend() === 'kqueue' ? 'kqueue' : 'inotify';
    } else if (this.borrowed && this.options.notify !== false) {
      this.say(`change notification is unavailable here (${notifyBackend()}); open legs are polled every ${this.pollMs} ms`);
    } else if (this.options.notify !== false) {
      const opened = openDirWatcher({
        ref: this.ref,
        onOverflow: () => this.overflow(),
        onBroken: (code) => this.degrade(`the change notifier failed (${code})`, true),
        ...(this.options.maxWatches === undefined ? {} : { maxWatches: this.options.maxWatches }),
      });
      if (typeof opened === 'string') {
        this.say(`change notification is unavailable here (${notifyBackend()}: ${opened}); open legs are polled every ${this.pollMs} ms`);
      } else {
        this.watcher = opened;
        this.stats.backend = notifyBackend() === 'kqueue' ? 'kqueue' : 'inotify';
      }
    } else {
      this.say(`change notification is off; open legs are polled every ${this.pollMs} ms`);
    }
    this.openExits();
    // Runs tracked before the notifier was there get their watch now.
    if (this.watcher !== undefined) for (const r of this.runsByDir.values()) if (r.watch === undefined) this.rewatch(r);
    this.timer(() => this.safety(), this.safetyMs);
    this.timer(() => this.recheckOpen(false), this.openRecheckMs);
    this.timer(() => this.recheckOpen(true), this.pollMs);
    if (this.root !== undefined) {
      // A root removed, replaced or back again is listed again within ROOT_RECHECK_MS (live/rootwatch.ts).
      this.rootFollow = new RootFollower(this.root, () => this.scanRoot(), { ref: this.ref });
      this.watchRoot();
    }
    const initial = [...this.runsByDir.values()];
    // The loop below derives each of these, yielding as it goes; the flush
    // queued when the root's listing marked them must not derive them a
    // second time meanwhile. A run marked again by an event is still flushed.
    for (const r of initial) this.dirty.delete(r);
    // The caller's own first reports (seed), asked for now that every run is watched.
    // The caller's own first reports (seed), taken in a method of its own: a closure made here (the
    // timers above) keeps this function's scope, and the seed's map with it, for the engine's life.
    const runs = this.forget && this.options.seed !== undefined ? await this.adoptSeeded(initial) : initial;
    if (runs === undefined) return;
    let n = 0;
    this.turnBytes = 0;
    for (const r of runs) {
      if (this.closed) return;
      if (this.runsByDir.get(r.dir) !== r) continue;
      this.dirty.delete(r); // derived here, not again by the flush
      this.process(r);
      if (++n % 64 === 0 || this.turnBytes >= LIVE_STEP_BYTES) {
        await new Promise((res) => setImmediate(res));
        this.turnBytes = 0;
      }
    }
    // Long streams are read a step per turn by the flush: wait until each has its first report.
    while (!this.closed && this.firstReads.size > 0) await new Promise((res) => setImmediate(res));
  }

  /**
   * start()'s seeded runs (LiveEngineOptions.seed), ADOPT_SLICE at a time,
   * one native call taking the identities of a slice. Answers the runs left
   * to read, or undefined when the engine was closed meanwhile.
   */
  private async adoptSeeded(initial: RunState[]): Promise<RunState[] | undefined> {
    const seeded = await this.options.seed?.();
    if (this.closed) return undefined;
    if (seeded === undefined) return initial;
    const runs: RunState[] = [];
    const stride = RUN_FILES.length * identityStride();
    const scratch = new Float64Array(ADOPT_SLICE * stride);
    const batch: RunState[] = [];
    const dirs: string[] = [];
    const take = (): void => {
      readIdentities(dirs, RUN_FILES, scratch);
      for (let k = 0; k < batch.length; k++) {
        const r = batch[k] as RunState;
        this.sigs.takeIfChanged(r.sig, scratch, k * stride);
        this.adopt(r, seeded.get(r.id) as RunReport);
      }
      batch.length = 0;
      dirs.length = 0;
    };
    for (const r of initial) {
      if (this.closed) return undefined;
      if (this.runsByDir.get(r.dir) !== r || r.reported) continue; // gone, or derived already (an event's flush)
      const report = seeded.get(r.id);
      // A run an event marked since the listing may have changed after it: read, never taken.
      if (report === undefined || this.dirty.has(r) || !this.adoptable(r, report)) {
        runs.push(r);
        continue;
      }
      batch.push(r);
      dirs.push(r.dir);
      if (batch.length === ADOPT_SLICE) {
        take();
        await new Promise((res) => setImmediate(res));
      }
    }
    if (batch.length > 0) take();
    return runs;
  }

  /** Follows one run directory (with or without a root). Its first report comes with the next flush. */
  track(runDir: string): void {
    const dir = resolve(runDir);
    this.trackAt(dir, basename(dir));
  }

  /** track() of `dir`, already absolute and normalised, whose last component is `id`. */
  private trackAt(dir: string, id: string): void {
    if (this.runsByDir.has(dir) || this.closed) return;
    // No fold until the run is first read (process() makes it): at 100,000 runs the folds made
    // here, most of them let go or replaced at once, were ~45 MB of start-up garbage.
    const r = new RunState(id, dir, this.sigs.take());
    this.runsByDir.set(dir, r);
    this.stats.runs = this.runsByDir.size;
    this.watchRun(r);
    if (this.started) this.mark(r);
  }

  /** Stops following a run directory. */
  untrack(runDir: string): void {
    const r = this.runsByDir.get(resolve(runDir));
    if (r === undefined) return;
    this.drop(r, false);
  }

  /** Every run known, newest first. */
  runs(): LiveRun[] {
    return [...this.runsByDir.values()].sort((a, b) => compareNewestFirst(a.id, b.id)).map((r) => this.view(r));
  }

  /** One run, by its directory. */
  get(runDir: string): LiveRun | undefined {
    const r = this.runsByDir.get(resolve(runDir));
    return r === undefined ? undefined : this.view(r);
  }

  /**
   * With `lines`: the subscriber has taken the lines told so far; read on
   * (at most one more chunk's worth before the next `lines` change).
   */
  more(runDir: string): void {
    const r = this.runsByDir.get(resolve(runDir));
    if (r === undefined || !r.held) return;
    r.held = false;
    r.dirtyStream = true;
    this.mark(r);
  }

  /** Whether the root was missing at the last look. */
  get missing(): boolean {
    return this.rootMissing;
  }

  /** Stops every watch and timer. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    this.rootFollow?.close();
    if (this.borrowed) {
      // Not ours to close: release only our watches on it.
      for (const r of this.runsByDir.values()) r.watch?.close();
      this.rootWatch?.close();
    } else {
      this.watcher?.close();
    }
    // Holder watches: every descriptor goes with the engine (the shared watcher keeps only others' watches).
    for (const r of this.runsByDir.values()) this.unwatchHolder(r);
    if (!this.borrowed) this.exits?.close();
    this.exits = undefined;
    this.watcher = undefined;
    this.rootWatch = undefined;
    for (const r of this.runsByDir.values()) this.endTail(r);
    this.firstReads.clear();
    this.stepping.clear();
    this.runsByDir.clear();
    this.backlog = [];
    this.backlogAt = 0;
    this.waiting.clear();
    this.open.clear();
    this.listeners.clear();
  }

  // --- internals -----------------------------------------------------------

  private view(r: RunState): LiveRun {
    return { runId: r.id, runDir: r.dir, report: r.report, error: r.error };
  }

  private emit(c: LiveChange): void {
    for (const l of [...this.listeners]) l(c);
  }

  private say(message: string): void {
    if (this.noticed) return;
    this.noticed = true;
    this.emit({ type: 'notice', message });
  }

  private timer(fn: () => void, ms: number): void {
    const t = setInterval(fn, ms);
    if (!this.ref) t.unref();
    this.timers.push(t);
  }

  private degrade(why: string, all: boolean): void {
    this.say(`${why}; open legs of runs without a watch are polled every ${this.pollMs} ms`);
    if (!all) return;
    if (!this.borrowed) this.watcher?.close();
    this.watcher = undefined;
    this.rootWatch = undefined;
    for (const r of this.runsByDir.values()) r.watch = undefined;
    this.stats.unwatched = this.runsByDir.size;
    this.stats.backend = 'polling';
  }

  private overflow(): void {
    // Events were lost: look at everything again (a turn at a time: flush).
    this.stats.overflows++;
    if (this.root !== undefined) this.scanRoot();
    for (const r of this.runsByDir.values()) {
      r.dirtyStream = r.dirtySnapshot = r.dirtyProbe = true;
      this.mark(r);
    }
  }

  private watchRoot(): void {
    const root = this.root as string;
    if (this.watcher !== undefined && this.rootWatch === undefined) {
      const a = this.watcher.watch(root, (e) => this.onRootEvent(e));
      if (a.ok) this.rootWatch = a.watch;
      else if (a.code === 'ENOSPC') this.say(`the kernel refused more inotify watches (ENOSPC: fs.inotify.max_user_watches is reached)`);
    }
    this.scanRoot();
  }

  private onRootEvent(e: DirEvent): void {
    this.stats.batches = this.watcher?.stats.batches ?? this.stats.batches;
    const root = this.root as string;
    if (e.kind === 'gone') {
      this.rootWatch = undefined;
      this.scanRoot();
      return;
    }
    if (e.kind === 'changed') {
      this.scanRoot();
      return;
    }
    if (e.name === '') return;
    const dir = join(root, e.name);
    if (e.kind === 'appeared' && e.isDir) this.track(dir);
    else if (e.kind === 'vanished') {
      const r = this.runsByDir.get(dir);
      if (r !== undefined) this.drop(r, true);
    }
  }

  /** Lists the root: tracks new run directories, drops vanished ones. Symlinks are never followed. */
  private scanRoot(): void {
    const root = this.root as string;
    this.rootGate.listing(root);
    this.stats.rootListings++;
    const id = rootIdentity(root);
    if (id !== this.rootId) this.rootMoved(id);
    // Watched before it is listed, so an entry made in between is told, not lost.
    if (id !== undefined && this.rootWatch === undefined && this.watcher !== undefined) {
      const a = this.watcher.watch(root, (e) => this.onRootEvent(e));
      if (a.ok) this.rootWatch = a.watch;
    }
    let names: string[];
    try {
      names = directoryNames(root);
      this.rootMissing = false;
    } catch {
      names = [];
      this.rootMissing = true;
    }
    if (!this.rootMissing && this.rootWatch === undefined && this.watcher !== undefined) {
      const a = this.watcher.watch(root, (e) => this.onRootEvent(e));
      if (a.ok) this.rootWatch = a.watch;
    }
    // The first listing tracks every name (nothing to drop, no set of 100,000 paths to build).
    // The root is absolute and normalised, and an entry's name is one component (never '', '.',
    // '..' or with a '/'), so the path is their concatenation: join and resolve normalised each
    // one again, ~0.3 s at 100,000 runs.
    if (this.runsByDir.size === 0) {
      const prefix = root.endsWith('/') ? root : root + '/';
      const parts = [prefix, ''];
      for (const n of names) {
        // join(''): one flat string (a + would keep a cons of two, and a flat copy once read), the name a slice of it.
        parts[1] = n;
        const dir = parts.join('');
        this.trackAt(dir, dir.slice(prefix.length));
      }
      return;
    }
    const present = new Set(names.map((n) => join(root, n)));
    for (const r of [...this.runsByDir.values()]) if (!present.has(r.dir)) this.drop(r, true);
    for (const d of present) this.track(d);
  }

  /**
   * The directory at the root is another one, or none: every run followed
   * was under the old one (which may live on elsewhere, renamed), so each is
   * dropped and announced, and the listing that follows tracks the new
   * directory's runs afresh, a run of the same name included. The old
   * directory's watch goes too: it follows the old directory, not the path.
   */
  private rootMoved(id: string | undefined): void {
    if (this.rootId !== undefined) {
      for (const r of [...this.runsByDir.values()]) this.drop(r, true);
      this.rootWatch?.close();
      this.rootWatch = undefined;
    }
    this.rootId = id;
  }

  private watchRun(r: RunState): void {
    if (this.watcher === undefined) {
      this.stats.unwatched++;
      return;
    }
    this.stats.unwatched++;
    this.rewatch(r);
  }

  /** Watches an unwatched run (counted in `unwatched` until it is). */
  private rewatch(r: RunState): void {
    if (this.watcher === undefined) return;
    this.stats.unwatched--;
    // One listener for every run, the run as its context (no closure per run).
    const a = this.watcher.watch(r.dir, this.runListener, r);
    if (a.ok) {
      r.watch = a.watch;
      return;
    }
    this.stats.unwatched++;
    if (a.code === 'ENOSPC') this.say(`the kernel refused more inotify watches (ENOSPC: fs.inotify.max_user_watches is reached)`);
  }

  private onRunEvent(r: RunState, e: DirEvent): void {
    if (this.watcher !== undefined) this.stats.batches = this.watcher.stats.batches;
    if (e.kind === 'gone') {
      r.watch = undefined;
      if (this.runsByDir.get(r.dir) === r) {
        // Counted unwatched now, so that drop() (which un-counts a run without a watch) keeps the count exact.
        this.stats.unwatched++;
        this.drop(r, true);
      }
      return;
    }
    if (e.kind === 'changed') {
      r.dirtyStream = r.dirtySnapshot = r.dirtyProbe = true;
      if (this.options.announceFiles === true) r.announce = true;
    } else if (e.name === EVENTS_FILE) {
      r.dirtyStream = true;
      if (this.options.announceFiles === true) r.announce = true;
    } else if (e.name === STATE_FILE) {
      r.dirtySnapshot = true;
      if (this.options.announceFiles === true) r.announce = true;
    } else if (e.name === LOCK_FILE) {
      if (e.kind === 'written') {
        // The last writable descriptor of the lock file closed: the leg that
        // held it exited, was killed or released. Probe now, and tell
        // subscribers even if the report reads the same (a cache above may
        // hold an older picture than ours).
        if (!r.fold.open && r.report?.status !== 'RUNNING' && r.report?.status !== 'PLANNING') return;
        this.stats.lockWakeups++;
        r.announce = true;
      }
      // 'modified': a leg taking the lock writes its marker (§4.1 step 4).
      r.dirtyProbe = true;
      r.sought = false; // a new holder may be there to watch
    } else {
      return;
    }
    this.mark(r);
  }

  private drop(r: RunState, announce: boolean): void {
    if (this.runsByDir.get(r.dir) !== r) return;
    this.runsByDir.delete(r.dir);
    this.dirty.delete(r);
    this.open.delete(r);
    this.endTail(r);
    this.firstReads.delete(r);
    this.stepping.delete(r);
    if (r.watch === undefined) this.stats.unwatched = Math.max(0, this.stats.unwatched - 1);
    r.watch?.close();
    r.watch = undefined;
    this.unwatchHolder(r);
    // Its identity slot goes to the next run; a late look at this one (none should come) finds it changed and keeps nothing.
    this.sigs.give(r.sig);
    r.sig = -1;
    this.stats.runs = this.runsByDir.size;
    if (announce) this.emit({ type: 'removed', runId: r.id, runDir: r.dir });
  }

  private mark(r: RunState): void {
    this.dirty.add(r);
    this.queueFlush();
  }

  private queueFlush(): void {
    if (this.flushQueued || this.closed) return;
    this.flushQueued = true;
    setImmediate(() => {
      this.flushQueued = false;
      this.flush();
    });
  }

  /**
   * Derives up to {@link LIVE_RUNS_PER_TURN} marked runs, those marked since
   * the last turn first (a death told by the kernel is not kept waiting
   * behind a backlog), then the backlog; the rest waits for the next turn.
   */
  private flush(): void {
    if (this.closed) return;
    let budget = this.runsPerTurn;
    this.turnBytes = 0;
    if (this.dirty.size > 0) {
      const fresh = [...this.dirty];
      this.dirty.clear();
      for (const r of fresh) {
        if (budget > 0 && this.turnBytes < LIVE_STEP_BYTES) {
          budget--;
          if (this.runsByDir.get(r.dir) === r) this.process(r);
        } else if (!this.waiting.has(r)) {
          this.waiting.add(r);
          this.backlog.push(r);
        }
      }
    }
    while (budget > 0 && this.turnBytes < LIVE_STEP_BYTES && this.backlogAt < this.backlog.length) {
      budget--;
      const r = this.backlog[this.backlogAt++] as RunState;
      this.waiting.delete(r);
      if (this.runsByDir.get(r.dir) === r) this.process(r);
    }
    if (this.backlogAt >= this.backlog.length) {
      this.backlog = [];
      this.backlogAt = 0;
    }
    // Then long reads, a step each in turn, while the turn's bytes allow.
    for (const r of [...this.stepping]) {
      if (this.turnBytes >= LIVE_STEP_BYTES || this.closed) break;
      this.stepping.delete(r);
      if (this.runsByDir.get(r.dir) !== r) continue;
      r.dirtyStream = true;
      this.process(r);
    }
    if (this.backlog.length > 0 || this.dirty.size > 0 || this.stepping.size > 0) this.queueFlush();
  }

  /**
   * Re-probes open legs: with `polled`, those of runs without a watch (every
   * `pollMs`); otherwise every open leg (every `openRecheckMs`). A run
   * already ABANDONED costs one probe, and is derived again only if its lock
   * is no longer free; a watched run whose lock was held costs one probe,
   * and is derived again only if it no longer is.
   */
  private recheckOpen(polled: boolean): void {
    // Every run watched: nothing to poll (this runs every pollMs; walking every run for nothing cost ~3 % of a core at 10,000 runs).
    if (polled && this.watcher !== undefined && this.stats.unwatched === 0) return;
    for (const r of [...this.open]) {
      if (!r.fold.open || this.runsByDir.get(r.dir) !== r) continue;
      if (polled && r.watch !== undefined) continue;
      if (polled) this.stats.polledProbes++;
      if (r.report?.status === 'ABANDONED') {
        // Only the probe: a holder that took the lock again without writing
        // (not a §4.1 leg) is found this way; a free answer changes nothing.
        this.stats.probes++;
        if (probeLock(lockOf(r)).liveness === 'free') continue;
      }
      if (!polled && r.watch !== undefined && r.report?.liveness === 'held') {
        // Watched and held: an append or a new snapshot would have been told,
        // so only the lock can have changed unseen. One probe; still held
        // changes nothing, and the run's files are not read again for it.
        this.stats.probes++;
        if (probeLock(lockOf(r)).liveness === 'held') continue;
      }
      r.dirtyStream = r.dirtyProbe = true;
      this.process(r);
    }
  }

  /**
   * The safety re-check: the root listed again, then the file identities
   * compared of every run with an open leg or without a watch, and of up to
   * {@link LIVE_SAFETY_SETTLED_PER_PASS} settled, watched runs (taking
   * turns), `SAFETY_SLICE` runs per turn of the event loop. In slices
   * because a pass can take most of a second, and a death the kernel
   * announces meanwhile must not wait for it (the notifier's callback runs
   * between slices). One pass at a time.
   */
  private safety(): void {
    if (this.safetyPass) return;
    // The root is listed again when it changed, and once an hour anyway (live/relist.ts).
    if (this.root !== undefined && this.rootGate.due(this.root)) this.scanRoot();
    // Every run with an open leg or without a watch, and a share of the rest.
    // Open legs, then unwatched runs (a walk of every run only when there are
    // some), then the settled, watched runs of this pass's turn: a range of
    // the runs in tracking order, taken without a walk of the rest.
    // Nothing here copies the whole set of runs: at 100,000 runs each pass's
    // copies outlived a scavenge and piled up in the old generation, for a
    // full collection of the whole heap every few minutes.
    const runs: RunState[] = [];
    for (const r of this.open) if (r.fold.open) runs.push(r);
    if (this.stats.unwatched > 0) for (const r of this.runsByDir.values()) if (r.watch === undefined && !r.fold.open) runs.push(r);
    const share = takeTurns(this.runsByDir.size, this.settledCursor, this.settledPerPass);
    // At most two ranges: [from, to), and [0, wrap) when the turn wraps around.
    const [from, to] = share.ranges[0] ?? [0, 0];
    const wrap = share.ranges[1]?.[1] ?? 0;
    let k = 0;
    for (const r of this.runsByDir.values()) {
      if ((k >= from && k < to) || k < wrap) {
        if (!r.fold.open && r.watch !== undefined) runs.push(r);
      } else if (k >= to) {
        break;
      }
      k++;
    }
    this.settledCursor = share.next;
    this.stats.safetyPasses++;
    this.stats.safetyCompared += runs.length;
    let i = 0;
    this.safetyPass = true;
    // One native call per slice takes the identities of the slice's files (kernel/identity.ts).
    const stride = identityStride();
    this.fresh ??= new Float64Array(SAFETY_SLICE * RUN_FILES.length * stride);
    const fresh = this.fresh;
    const dirs: string[] = [];
    const slice = (): void => {
      if (this.closed) return;
      const end = Math.min(runs.length, i + SAFETY_SLICE);
      dirs.length = 0;
      for (let k = i; k < end; k++) dirs.push((runs[k] as RunState).dir);
      readIdentities(dirs, RUN_FILES, fresh);
      for (let at = 0; i < end; i++, at += RUN_FILES.length * stride) {
        const r = runs[i] as RunState;
        if (this.runsByDir.get(r.dir) !== r) continue; // untracked or replaced since the pass began
        const moved = this.sigs.takeIfChanged(r.sig, fresh, at);
        if (moved || r.fold.open) {
          if (moved && this.options.announceFiles === true) r.announce = true;
          r.dirtyStream = r.dirtySnapshot = true;
          r.dirtyProbe = true;
          this.mark(r);
        }
      }
      if (i < runs.length) {
        const next = setImmediate(slice);
        if (!this.ref) next.unref();
      } else {
        this.safetyPass = false;
      }
    };
    slice();
  }

  private resetFold(r: RunState): void {
    this.endTail(r);
    r.tailFacts = undefined;
    r.fold = new StreamFold();
    r.offset = 0;
    r.print = NO_BYTES;
    r.lastStart = -1;
    r.skipsSinceLastStart = 0;
    r.restart = 0;
    r.skipsSinceRestart = 0;
    r.streamError = null;
    r.newer = false;
    r.newLines = NO_LINES;
    r.splitter = undefined;
  }

  /** The run's line splitter, made at its offset when there is none (see RunState.splitter). */
  private splitterOf(r: RunState): LineSplitter {
    if (r.splitter !== undefined) return r.splitter;
    const fold = r.fold;
    const folded = foldLines(fold, eventsOf(r), {
        onEvent: (event, offset) => {
          // The tail reader's restart point (read/tail.ts): the last run_started before the last run_finished.
          if (event.event === 'run_started') {
            r.lastStart = offset;
            r.skipsSinceLastStart = 0;
          } else if (event.event === 'run_finished') {
            r.restart = r.lastStart >= 0 ? r.lastStart : 0;
            if (r.lastStart >= 0) r.skipsSinceRestart = r.skipsSinceLastStart;
          }
          if (this.emitEvents) pushEvent(r, { event, offset });
          if (this.emitLines && r.told === undefined) pushLine(r, { kind: 'event', event, offset });
        },
        onSkip: (offset) => {
          r.skipsSinceLastStart++;
          r.skipsSinceRestart++;
          if (this.emitLines && r.told === undefined) pushLine(r, { kind: 'skipped', offset });
        },
      });
    // A follower keeps going past a newer-schema line (told once); every
    // other reader fails on it, so such a run is derived by the reference path.
    const sink: typeof folded = !this.emitLines
      ? folded
      : (buf, start, end, offset) => {
          try {
            folded(buf, start, end, offset);
          } catch (e) {
            // parseLine throws before anything is folded: skip the line as the follower does.
            if (!(e instanceof StreamError) || e.code !== 'ENEWERSCHEMA') throw e;
            fold.skip();
            if (!r.newer && r.told === undefined) pushLine(r, { kind: 'newer-schema', error: e, offset });
            r.newer = true;
          }
        };
    r.splitter = new LineSplitter(eventsOf(r), sink, r.offset);
    return r.splitter;
  }

  /** `lines`: tells, once, that the run's stream can no longer be followed line by line. */
  private streamFault(r: RunState, error: StreamError): void {
    if (!this.emitLines || r.told !== undefined) return;
    // Lines read before the fault in this pass were whole and in order: tell them first.
    if (r.newLines.length > 0) {
      const lines = r.newLines;
      r.newLines = NO_LINES;
      this.emit({ type: 'lines', runId: r.id, runDir: r.dir, lines, behind: false });
    }
    r.told = error;
    this.emit({ type: 'stream-error', runId: r.id, runDir: r.dir, error });
  }

  /**
   * Reads what was appended since the last read, or the whole stream again
   * when it shrank, was replaced or was rewritten. Never throws: a stream
   * error is kept, and the run is then derived by the reference path.
   */
  private catchUp(r: RunState): void {
    r.behind = false;
    if (r.tail !== undefined) {
      this.stepTail(r);
      return;
    }
    let file;
    try {
      file = openStream(eventsOf(r));
    } catch (e) {
      r.streamError = e;
      if (e instanceof StreamError) this.streamFault(r, e);
      return;
    }
    if (file === undefined) {
      if (r.ident !== undefined) {
        this.streamFault(r, new StreamError('events.jsonl was removed while it was followed', 'EREAD', eventsOf(r)));
        r.ident = undefined;
        this.resetFold(r);
        this.stats.rereads++;
      }
      return;
    }
    const { fd, size, stats } = file;
    let handed = false; // the descriptor went to a tail stepper, which closes it
    try {
      const ident = `${stats.dev}:${stats.ino}`;
      let reread: string | undefined = r.ident !== undefined && r.ident !== ident ? 'replaced' : undefined;
      if (reread === undefined && size < r.offset) reread = 'shrank';
      if (reread === undefined && r.print.length > 0) {
        const here = Buffer.allocUnsafe(r.print.length);
        const n = readStreamBytes(fd, here, r.print.length, r.offset - r.print.length, eventsOf(r));
        if (n !== r.print.length || !here.equals(r.print)) reread = 'rewritten in place';
      }
      if (reread !== undefined) {
        const what = reread === 'shrank' ? 'shrank while it was followed (it should only ever grow)' : `was ${reread} while it was followed`;
        this.streamFault(r, new StreamError(`events.jsonl ${what}`, 'EREAD', eventsOf(r)));
        this.resetFold(r);
        this.stats.rereads++;
      } else if (r.streamError !== null) {
        return; // the same stream, still unreadable
      }
      r.ident = ident;
      if (size <= r.offset) return;
      // A follower that has not taken the last lines: read nothing more yet.
      const paced = this.emitLines && r.told === undefined;
      if (paced && r.held) {
        r.behind = true;
        return;
      }
      if (!this.emitLines && r.offset === 0 && size > LIVE_FIRST_READ_WHOLE_MAX) {
        // A long stream's first read is the tail reader's, in steps (LIVE_FIRST_READ_WHOLE_MAX).
        r.tail = new TailStepper(file, eventsOf(r));
        handed = true;
        this.stats.tailReads++;
        this.firstReads.add(r);
        this.stepTail(r);
        return;
      }
      const chunk = Buffer.allocUnsafe(CHUNK);
      let pos = r.offset;
      let step = 0;
      while (pos < size) {
        if (paced && r.newLines.length > 0) {
          r.behind = true; // one chunk with lines at a time
          break;
        }
        if (!paced && step >= LIVE_STEP_BYTES) {
          r.behind = true; // the rest in later turns
          this.later(r);
          break;
        }
        const n = readStreamBytes(fd, chunk, Math.min(CHUNK, size - pos), pos, eventsOf(r));
        if (n === 0) break;
        step += n;
        this.counted(n);
        r.tailFacts = undefined;
        this.splitterOf(r).push(chunk.subarray(0, n), pos);
        pos += n;
        r.offset = pos;
        const keep = Math.min(PRINT, pos);
        // The bytes just before the offset, to recognise a stream rewritten in place.
        r.print = n >= keep ? Buffer.from(chunk.subarray(n - keep, n)) : Buffer.concat([r.print, chunk.subarray(0, n)]).subarray(-keep);
      }
      if (paced && r.newLines.length > 0) r.held = true;
      if (step > 0) this.stepDone(step);
    } catch (e) {
      if (e instanceof StreamError) {
        r.streamError = e;
        r.behind = false;
        this.streamFault(r, e);
      } else throw e;
    } finally {
      if (!handed) closeQuietly(fd);
      if (r.splitter !== undefined && r.splitter.undelivered === r.offset) r.splitter = undefined;
    }
  }

  /** Counts stream bytes read (by the run's current step). */
  private counted(n: number): void {
    this.stats.bytesRead += n;
    this.turnBytes += n;
  }

  /** Records a step that read `bytes` stream bytes. */
  private stepDone(bytes: number): void {
    this.stats.readSteps++;
    if (bytes > this.stats.maxStepBytes) this.stats.maxStepBytes = bytes;
  }

  /** The run has stream bytes left to read: a step in a later turn. */
  private later(r: RunState): void {
    r.dirtyStream = true;
    this.stepping.add(r);
    this.queueFlush();
  }

  /** Closes a tail read under way, if any. */
  private endTail(r: RunState): void {
    r.tail?.close();
    r.tail = undefined;
  }

  /**
   * One step of a first read by the tail reader. Once it is done, the run
   * holds the tail's fold at the size the read began with, as if it had
   * read the stream forward to there (the fold is exact for the last leg
   * and the paused gates, the only facts a report takes from it), and the
   * next step reads what was appended since by the incremental rule, which
   * also checks that the file is still the one the tail read.
   */
  private stepTail(r: RunState): void {
    const t = r.tail as TailStepper;
    let done;
    let print = NO_BYTES;
    let step = 0;
    try {
      done = t.step(LIVE_STEP_BYTES);
      if (done !== undefined && t.size > 0) {
        // The bytes just before the offset, to recognise a stream rewritten in place (as the forward read keeps them).
        const keep = Math.min(PRINT, t.size);
        const buf = Buffer.allocUnsafe(keep);
        if (readStreamBytes(t.fd, buf, keep, t.size - keep, eventsOf(r)) !== keep) throw shrank(eventsOf(r));
        step += keep;
        print = buf;
      }
    } catch (e) {
      this.endTail(r);
      if (!(e instanceof StreamError)) throw e;
      r.streamError = e;
      return;
    } finally {
      step += t.takeBytesRead();
      this.counted(step);
      this.stepDone(step);
    }
    r.behind = true; // not derived until the read is over and what was appended since is read
    this.later(r);
    if (done === undefined) return;
    this.endTail(r);
    const { facts, fold, skipsAfterStart } = done;
    r.tailFacts = facts;
    r.fold = fold;
    r.offset = facts.size;
    r.print = print;
    r.splitter = undefined;
    // The tail's own counting of skipped lines: from where its dense region begins (read/tail.ts).
    r.restart = facts.from;
    r.skipsSinceRestart = facts.skippedLines;
    r.lastStart = fold.started ? fold.legOffset : -1;
    r.skipsSinceLastStart = fold.started && fold.legOffset >= facts.from ? skipsAfterStart : facts.skippedLines;
  }

  private process(r: RunState): void {
    if (r.fold === FORGOTTEN) {
      // A settled run let go (settledForget): its stream is read again from the start.
      this.resetFold(r);
      r.ident = undefined;
      r.dirtyStream = true;
    }
    // Taken before reading, so what is read is at least as new as the identities kept.
    readIdentities([r.dir], RUN_FILES, this.oneSig);
    // A change found here instead of told (a run without a watch, polled) is
    // announced as its watch would have announced it (announceFiles).
    if (this.sigs.takeIfChanged(r.sig, this.oneSig, 0) && r.watch === undefined && r.reported && this.options.announceFiles === true) r.announce = true;
    if (r.dirtyStream) {
      r.dirtyStream = false;
      this.catchUp(r);
      if (r.fold.open) this.open.add(r);
      else this.open.delete(r);
    }
    if (r.dirtySnapshot || r.snapshot === undefined) {
      r.dirtySnapshot = false;
      r.snapshot = readSnapshot(stateOf(r));
    }
    if (this.emitEvents && r.newEvents.length > 0) {
      const events = r.newEvents;
      r.newEvents = NO_EVENTS;
      this.emit({ type: 'events', runId: r.id, runDir: r.dir, events });
    }
    if (this.emitLines && r.newLines.length > 0) {
      const lines = r.newLines;
      r.newLines = NO_LINES;
      this.emit({ type: 'lines', runId: r.id, runDir: r.dir, lines, behind: r.behind });
    }
    // Never derived ahead of the lines told: it is, once the follower has read the rest.
    if (r.behind) return;
    r.dirtyProbe = false;
    this.derive(r);
    this.firstReads.delete(r);
    // A settled run keeps no snapshot: it is read again when one of its files changes (the only time it is derived again).
    if (!r.fold.open && r.tail === undefined) r.snapshot = undefined;
    if (this.forget && !r.fold.open && r.tail === undefined && r.splitter === undefined && r.streamError === null && !r.newer) this.letGo(r);
  }

  /**
   * Whether a seeded report may be taken instead of a first read
   * (LiveEngineOptions.seed): only for a watched run whose last leg is
   * closed (no probe to repeat, and any change from now on is announced).
   * Otherwise the run is read as usual.
   */
  private adoptable(r: RunState, report: RunReport): boolean {
    // Keyed by name: only the root's own runs (a run tracked from elsewhere may share a name).
    return r.watch !== undefined && report.liveness === null && report.run_id === r.id && this.root !== undefined && join(this.root, r.id) === r.dir;
  }

  /** Takes an adoptable report (its identities are already in `r.sig`, taken after the caller's read). */
  private adopt(r: RunState, report: RunReport): void {
    // Kept as given (the dashboard gives compacted ones, status/compact.ts), shared with the caller, with
    // the name made the engine's own string: the caller's was a slice of a path that then stays alive.
    report.run_id = r.id;
    r.report = report;
    r.error = null;
    r.reported = true;
    r.dirtyStream = r.dirtySnapshot = r.dirtyProbe = false;
    r.snapshot = undefined;
    this.open.delete(r);
    this.letGo(r);
  }

  /**
   * settledForget: a settled run keeps its report, its identities and its
   * watch, and nothing of its stream (the fold, the offset, the print, the
   * tail's facts); process() reads the stream again from the start when the
   * run next changes, which gives the very fold the incremental read would
   * have (a fold is a function of the stream's bytes).
   */
  private letGo(r: RunState): void {
    r.fold = FORGOTTEN;
    r.offset = 0;
    r.ident = undefined;
    r.print = NO_BYTES;
    r.tailFacts = undefined;
    r.lastStart = -1;
    r.skipsSinceLastStart = 0;
    r.restart = 0;
    r.skipsSinceRestart = 0;
    r.shed();
  }

  private derive(r: RunState): void {
    this.stats.derivations++;
    let report: RunReport | null = null;
    let error: string | null = null;
    const pending = r.splitter !== undefined && r.offset > r.splitter.undelivered;
    try {
      if (r.streamError !== null || pending || r.newer) {
        report = this.reference(r);
      } else {
        const leg = r.fold.lastLeg();
        const tail: TailFacts = { leg, skippedLines: r.skipsSinceRestart, from: r.restart, size: r.offset };
        const snapshot = r.snapshot as SnapshotRead;
        if (!leg.open) {
          report = buildReport(r.id, r.dir, tail, snapshot, null, []);
        } else {
          this.stats.probes++;
          const answer: ProbeResult = probeLock(lockOf(r));
          // Free is never concluded from cached state: read, probe, confirm, by the reference path.
          report = answer.liveness === 'free' ? this.reference(r) : buildReport(r.id, r.dir, tail, snapshot, answer, []);
        }
      }
    } catch (e) {
      if (e instanceof RunUnreadableError) error = e.message;
      else error = e instanceof Error ? e.message : String(e);
      report = null;
    }
    // Compared with the last one told by their JSON, made again here rather
    // than kept: at 100,000 runs the kept strings were a tenth of the heap.
    if (report !== null) report = compactReport(report, r.id);
    const same = r.reported && JSON.stringify([report, error]) === JSON.stringify([r.report, r.error]);
    // The same report keeps its object: a subscriber (the dashboard's model) may hold it, shared rather than copied.
    if (!same) r.report = report;
    r.error = error;
    if (r.fold.open && report?.liveness === 'held') this.watchHolder(r);
    else this.unwatchHolder(r);
    const announce = r.announce;
    r.announce = false;
    if (same && !announce) return;
    r.reported = true;
    this.emit({ type: 'run', ...this.view(r) });
  }

  // --- holders' exits ------------------------------------------------------

  /** Opens the holders' exit watcher (none with `notify: false` or a zero budget; none where the platform has none). */
  private openExits(): void {
    if (this.options.notify === false || this.holderBudget === 0) return;
    if (this.borrowed) {
      this.exits = sharedExitWatcher();
      return;
    }
    const opened = openExitWatcher({ max: this.holderBudget, ref: false, onBroken: () => this.dropExits() });
    if (typeof opened !== 'string') this.exits = opened;
  }

  /** The exit watcher failed: every run keeps its re-probe interval. */
  private dropExits(): void {
    for (const r of this.runsByDir.values()) r.holder = undefined;
    if (!this.borrowed) this.exits?.close();
    this.exits = undefined;
    this.stats.holderWatches = 0;
  }

  /**
   * Watches the likely holder of `r`'s held lock for its exit (module
   * comment). Without a pid, past the budget, or for the pid whose exit was
   * already told, nothing: the re-probe interval stays. A holder already
   * gone (ESRCH: it exited since the probe, or is not visible from here)
   * costs one more probe, once per pid.
   */
  private watchHolder(r: RunState): void {
    if (this.exits === undefined || r.holder !== undefined || r.sought) return;
    if (this.exits.full) {
      r.sought = true; // past the budget: not even the lock table is read for it
      return;
    }
    const lock = lockOf(r);
    const named = likelyHolder(lock)?.pid;
    if (named !== undefined && named !== r.exitedPid) {
      const a = this.exits.watch(named, () => this.holderExited(r, named));
      if (a.ok) return this.holderWatched(r, a.watch);
      if (a.code !== 'ESRCH') {
        r.sought = true; // the budget, or a refusal: the re-probe interval
        return;
      }
      r.exitedPid = named; // gone already
    }
    // No live process named (the taker handed its descriptor on: a shell's
    // `flock -x 3`, a fork; or the rest of its group is exiting; or the table
    // hides a reaped taker): watch a process that still has the file open.
    // Just after an exit, one follow-up probe first: a group killed at once
    // is found gone by it, without a scan of every process's descriptors.
    if (r.exitedPid === undefined || r.followUps > 0) {
      for (const pid of descriptorHolders(lock, named ?? 0)) {
        const a = this.exits.watch(pid, () => this.holderExited(r, pid));
        if (a.ok) return this.holderWatched(r, a.watch);
      }
    }
    // None. Never an exit told: nothing to follow (a holder this process
    // cannot see). After one: a few follow-up probes, then the re-probe interval.
    if (r.exitedPid === undefined || r.followUps >= HOLDER_FOLLOW_UP_MS.length) {
      r.sought = true;
      return;
    }
    if (r.followUp !== undefined) return;
    const t = setTimeout(() => {
      r.followUp = undefined;
      if (this.closed || this.runsByDir.get(r.dir) !== r) return;
      r.dirtyProbe = true;
      this.mark(r);
    }, HOLDER_FOLLOW_UP_MS[r.followUps++]);
    if (!this.ref) t.unref();
    r.followUp = t;
  }

  /**
   * A holder is watched. The lock is probed once more: a holder that died
   * between the probe that found it held and the watch (the pid then named
   * another process, or a label's) would otherwise wait for the interval.
   */
  private holderWatched(r: RunState, watch: DirWatch): void {
    r.holder = watch;
    this.stats.holderWatches++;
    this.stats.probes++;
    if (probeLock(lockOf(r)).liveness !== 'held') {
      r.dirtyProbe = true;
      this.mark(r);
    }
  }

  private unwatchHolder(r: RunState): void {
    r.sought = false;
    if (r.followUp !== undefined) clearTimeout(r.followUp);
    r.followUp = undefined;
    if (r.holder === undefined) return;
    r.holder.close();
    r.holder = undefined;
    this.stats.holderWatches--;
  }

  /** A watched holder exited (or was gone already): probe again now, and tell subscribers as for a lock's close-write. */
  private holderExited(r: RunState, pid: number): void {
    if (r.holder !== undefined) {
      r.holder = undefined; // the exit ended the watch
      this.stats.holderWatches--;
    }
    if (this.closed || this.runsByDir.get(r.dir) !== r) return;
    r.exitedPid = pid;
    r.followUps = 0;
    this.stats.exitWakeups++;
    r.announce = true;
    r.dirtyProbe = true;
    this.mark(r);
  }

  private reference(r: RunState): RunReport {
    this.stats.referenceDerivations++;
    // Right after a stepped first read, its facts are the first read: the stream is not searched again in one turn.
    return inspectRun(r.dir, r.tailFacts === undefined ? {} : { first: r.tailFacts }).report;
  }
}
