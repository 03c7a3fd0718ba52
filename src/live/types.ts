/**
 * The live engine's vocabulary (engine.ts): what it tells subscribers, what
 * it is given, what it counts, and the bounds it keeps. Types and constants
 * only, so that every part of the engine (runstate.ts, watching.ts,
 * streamread.ts, holderwatch.ts, safety.ts) can name them without importing
 * the engine itself: no file of live/ imports one that imports it back.
 */
import type { StreamError } from '../contract/errors.js';
import type { StreamEvent } from '../contract/events.js';
import type { RunReport } from '../contract/types.js';
import { DENSE_BYTES } from '../read/tail.js';

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
  /**
   * With a root: what its listing found changed: the root went missing or
   * came back, could not be listed or can again, or the number of its
   * entries that are not run directories changed (see {@link LiveRootFacts}).
   */
  | ({
      /** The root's facts changed. */
      type: 'root';
    } & LiveRootFacts)
  /** Something a person should know once (notification unavailable, so polling). */
  | {
      /** A notice. */
      type: 'notice';
      /** One line for a person. */
      message: string;
    };

/** What the engine's last look at its root found (`LiveEngine.rootFacts`). */
export interface LiveRootFacts {
  /** No directory is at the root's path (an empty list, as `runs --json` says). */
  missing: boolean;
  /** Why the root could not be listed (the listing's own words), or null when it could (or is missing). */
  error: string | null;
  /** Entries of the root that are not run directories (stray files, symlinks, sockets): counted, never followed. */
  strays: number;
}

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
   * `EXIT_WATCH_BUDGET` = 1024; on linux each is a descriptor, and the budget
   * is never above what RLIMIT_NOFILE leaves: kernel/notify.ts watchBudgets,
   * CONTRACT §5.7). 0 watches
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
  /** Settled runs whose stream and lock identities the settled sweep compared (live/sweep.ts; none where appends are told). */
  swept: number;
  /** Runs the settled sweep found changed and marked to be read again. */
  sweepChanges: number;
}
