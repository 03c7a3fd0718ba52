/**
 * What the dashboard's models (model.ts) are given and what they hand to
 * /metrics (serve/metrics.ts): their options, the observer told of each
 * probe and derivation, and the reports list.
 */
import type { Liveness, RunReport } from '../contract/types.js';
import type { SkippedEntry } from '../status/list.js';

export interface ModelOptions {
  /** Streams above this many bytes are not folded for cards (default CARD_STREAM_MAX, serve/cards.ts). */
  cardStreamMax?: number;
  /** A report taking at least this many ms makes a run expensive (default EXPENSIVE_MS, serve/oneshot.ts). */
  expensiveMs?: number;
  /** An expensive run waits this many times its cost before it is re-derived (default EXPENSIVE_FACTOR, serve/oneshot.ts). */
  expensiveFactor?: number;
  /** Cards sent for each of the Settled and No status sections (default SECTION_PAGE, serve/cards.ts). */
  sectionPage?: number;
  /** Told of every lock probe and every derivation the model makes (for /metrics); see {@link ModelObserver}. */
  observer?: ModelObserver;
  /**
   * Follow the root with the live engine (src/live/engine.ts) and keep the
   * dashboard as an index of what it reports (serve/liveindex.ts): the
   * engine alone lists the root, names and reads the runs, and tells the
   * index of every change, a death announced by the kernel included, and
   * `DashboardModel.subscribe` tells the hub at once. Default false
   * (every run inspected on every call: serve/oneshot.ts).
   */
  live?: boolean;
  /**
   * With `live`: threads that share the first listing's inspections, the
   * model's own included (status/list-threads.ts threadsFor; default its
   * default: two from 20,000 runs on two cores or more, else one). A test
   * seam: test roots are small.
   */
  listThreads?: number;
  /**
   * With `live`: the first this many starts of the index fail, as a start
   * whose engine threw would (a test seam: such a failure cannot be made on
   * purpose with real files once the defects that caused one are fixed).
   */
  failStarts?: number;
}

/**
 * What the model tells an observer (serve/metrics.ts) as it works, so that
 * counting probes and scan errors costs nothing beyond the work already done.
 */
export interface ModelObserver {
  /** One lock probe: how long probeLock took (monotonic seconds) and what the kernel answered. */
  probed(seconds: number, liveness: Liveness): void;
  /** One derivation of the root: how many entries could not be read (a root that cannot be listed counts 1). */
  scanned(errors: number): void;
}

/**
 * The model's latest reports list: what `runs --json` would print for the
 * root (the same reports in the same order), or why the root could not be
 * listed. `skipped` keeps each entry's kind so that stray files can be told
 * from runs that could not be read.
 */
export interface ReportsList {
  root: string;
  /** The root does not exist (an empty list, as `runs --json` says). */
  missing: boolean;
  /** Newest first; empty when `error` is set. */
  runs: readonly RunReport[];
  skipped: readonly SkippedEntry[];
  /** Set when the root exists but could not be listed (EACCES, ENOTDIR, EIO…). */
  error?: string;
  /** The live view's runs without a change watch, polled instead (past the notifier's budget); absent for a one-shot derivation. */
  unwatched?: number;
  /** The live view's held runs whose holder has no exit watch (past the budget of exit watches), re-probed instead; absent for a one-shot derivation. */
  holdersUnwatched?: number;
}

/** Skips that are not runs at all (a stray file, a symlink): counted, not drawn as cards. */
export const NOT_RUNS: ReadonlySet<SkippedEntry['kind']> = new Set(['not-a-directory', 'symlink']);
