/**
 * The live engine: the status of every run under a root (or of the runs it
 * is given), kept current by the kernel's change notification, at a cost
 * that follows what changes, not what exists. `watch`-style followers, the
 * dashboard and library callers can all sit on it.
 *
 * Its parts, each with its own invariants:
 * - live/watching.ts: which runs exist and by which id (the one listing of
 *   the root, the contract's shown name), and what the kernel says changed.
 * - live/streamread.ts: reading each stream from where it was left, a
 *   bounded step at a time.
 * - live/holderwatch.ts: the holders of held locks, watched for their exit.
 * - live/safety.ts: the safety pass and the re-probe of open legs.
 * - live/sweep.ts: where appends are not told by directory watches
 *   (kqueue), the bounded rotation over settled runs' identities.
 * - live/core.ts: what they share; live/runstate.ts: what is kept per run.
 *
 * Invariants of this file, and why:
 * - A marked run is derived in a later turn of the event loop, at most
 *   {@link LIVE_RUNS_PER_TURN} runs and {@link LIVE_STEP_BYTES} stream bytes
 *   per turn: those marked since the last turn first, then the backlog, then
 *   a step of each long read, so a death told by the kernel never waits
 *   behind a batch or a long stream.
 * - The same answers as every other surface: a report is built by the same
 *   derivation (status/report.ts buildReport) from the same last-leg facts
 *   the tail reader would find. Whenever a probe answers `free`, and
 *   whenever the engine's own fold cannot be trusted (a stream error, a
 *   held-back partial line, a newer-schema line), the run is derived by the
 *   reference path (status/inspect.ts inspectRun: read, probe, confirm, the
 *   replaced-lock check), so ABANDONED is never concluded from cached state.
 * - A report is told when it (or the error) changed, or when the run was
 *   told to be announced (a lock's close-write, a holder's exit, a file
 *   change with `announceFiles`); the same report keeps its object, so a
 *   subscriber may hold it shared rather than copied.
 * - Settled runs cost nothing: a run whose last leg is closed is not probed
 *   and not read until one of its files changes. With `settledForget` it
 *   keeps no more than its report, identities and watch, and with `seed` its
 *   first report may be the caller's own inspection, made after its watch
 *   was set, so a caller that lists every run anyway does not make the
 *   engine read them all a second time.
 * - With `lines` (a follower, live/follow.ts): each line is told as it is
 *   folded, in file order, and a run is never derived ahead of the lines
 *   told, so a subscriber sees a leg's `run_finished` before the status it
 *   leads to. A run reads no further than one chunk past what its
 *   subscriber has taken (`more`). A newer-schema line is skipped and told
 *   (once) instead of failing the read; a stream that shrank, was replaced,
 *   rewritten or removed is told once as a `stream-error`, since lines
 *   already told cannot be taken back.
 * - Reads only: files are opened read-only (kernel/open.ts), the probe takes
 *   only a shared lock, and watches only observe. Nothing is created,
 *   written or removed under the root. Every descriptor is closed when its
 *   run settles, is dropped, or the engine closes.
 */
import { basename, join, resolve } from 'node:path';
import { compareNewestFirst } from '../contract/runid.js';
import type { RunReport } from '../contract/types.js';
import { identityStride, readIdentities } from '../kernel/identity.js';
import { watchBudgets } from '../kernel/notify.js';
import { systemFacts } from '../kernel/system.js';
import { probeLock, type ProbeResult } from '../lock/probe.js';
import { readSnapshot, type SnapshotRead } from '../read/snapshot.js';
import type { TailFacts } from '../read/tail.js';
import { inspectRun } from '../status/inspect.js';
import { buildReport } from '../status/report.js';
import { compactReport } from '../status/compact.js';
import { EngineCore } from './core.js';
import { HolderWatch } from './holderwatch.js';
import { FORGOTTEN, lockOf, NO_EVENTS, NO_LINES, RUN_FILES, RunState, stateOf } from './runstate.js';
import { SafetyPass } from './safety.js';
import { StreamReader } from './streamread.js';
import { SettledSweep } from './sweep.js';
import {
  LIVE_OPEN_RECHECK_MS,
  LIVE_POLL_MS,
  LIVE_RUNS_PER_TURN,
  LIVE_SAFETY_MS,
  LIVE_SAFETY_SETTLED_PER_PASS,
  LIVE_STEP_BYTES,
  type LiveChange,
  type LiveEngineOptions,
  type LiveRootFacts,
  type LiveRun,
  type LiveStats,
} from './types.js';
import { Watching } from './watching.js';

export {
  HOLDER_FOLLOW_UP_MS,
  LIVE_FIRST_READ_WHOLE_MAX,
  LIVE_OPEN_RECHECK_MS,
  LIVE_POLL_MS,
  LIVE_RUNS_PER_TURN,
  LIVE_SAFETY_MS,
  LIVE_SAFETY_SETTLED_PER_PASS,
  LIVE_STEP_BYTES,
  type LiveChange,
  type LiveEngineOptions,
  type LiveLine,
  type LiveRootFacts,
  type LiveRun,
  type LiveStats,
} from './types.js';
export { takeTurns } from './safety.js';

/** Seeded runs taken per turn of the event loop in start(), their identities read in one native call (two lstats each). */
const ADOPT_SLICE = 1024;

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
  private readonly core: EngineCore;
  private readonly watching: Watching;
  private readonly reader: StreamReader;
  private readonly holders: HolderWatch;
  private readonly safety: SafetyPass;
  /** The settled sweep, where appends are not told (live/sweep.ts); undefined where they are. */
  private readonly sweep: SettledSweep | undefined;
  /** The files process() takes the identities of (the sweep keeps the first: live/sweep.ts). */
  private readonly readFiles: readonly string[] = RUN_FILES;
  private readonly safetyMs: number;
  private readonly runsPerTurn: number;
  private readonly openRecheckMs: number;
  /** Marked runs a turn could not take, in order (each once: `waiting`), and how far the turns have come through them. */
  private backlog: RunState[] = [];
  private backlogAt = 0;
  private readonly waiting = new Set<RunState>();
  /** Where process() takes one run's identities before they go to its slot (and the sweep's). */
  private readonly oneSig: Float64Array;

  constructor(private readonly options: LiveEngineOptions = {}) {
    this.root = options.root === undefined ? undefined : resolve(options.root);
    this.safetyMs = positive('safetyMs', options.safetyMs, LIVE_SAFETY_MS);
    const settledPerPass = Math.floor(positive('safetySettledPerPass', options.safetySettledPerPass, LIVE_SAFETY_SETTLED_PER_PASS));
    this.runsPerTurn = Math.max(1, Math.floor(positive('runsPerTurn', options.runsPerTurn, LIVE_RUNS_PER_TURN)));
    this.openRecheckMs = positive('openRecheckMs', options.openRecheckMs, LIVE_OPEN_RECHECK_MS);
    const pollMs = positive('pollMs', options.pollMs, LIVE_POLL_MS);
    const asked = options.holderWatches ?? Infinity;
    if (options.holderWatches !== undefined && (typeof asked !== 'number' || !Number.isFinite(asked) || asked < 0)) throw new RangeError('holderWatches must be a finite number of at least 0');
    // Never above the budget the descriptor limit leaves (CONTRACT §5.7).
    const budget = Math.min(asked, watchBudgets().exits);
    const core = new EngineCore(options, pollMs);
    core.flush = () => this.flush();
    this.core = core;
    this.stats = core.stats;
    this.reader = new StreamReader(core);
    this.holders = new HolderWatch(core, Math.floor(budget), this.openRecheckMs);
    this.watching = new Watching(core, { trackAt: (dir, id) => this.trackAt(dir, id), drop: (r, announce) => this.drop(r, announce) }, this.root);
    this.safety = new SafetyPass(
      core,
      { relistIfDue: () => this.watching.relistIfDue(), watching: () => this.watching.watcher !== undefined, process: (r) => this.process(r) },
      settledPerPass,
    );
    this.sweep = systemFacts().entryWrites ? undefined : new SettledSweep(core);
    this.oneSig = new Float64Array(this.readFiles.length * identityStride());
  }

  /**
   * Held runs whose holder has no exit watch (past the budget of exit watches, or a holder not
   * found or not visible from here): their deaths are found by the `openRecheckMs` re-probe.
   * Counted when asked, over the open runs only.
   */
  unwatchedHolders(): number {
    return this.holders.unwatchedHolders();
  }

  /** Listens for changes; returns the function that stops listening. */
  subscribe(listener: (change: LiveChange) => void): () => void {
    return this.core.subscribe(listener);
  }

  /**
   * Opens the notifier, lists the root (when there is one) and derives every
   * run once, yielding to the event loop between runs. Resolves when every
   * run known at the start has a report or an error.
   */
  async start(): Promise<void> {
    const core = this.core;
    if (core.started) return;
    core.started = true;
    this.watching.open();
    this.holders.open();
    core.timer(() => this.safety.run(), this.safetyMs);
    core.timer(() => this.safety.recheckOpen(false), this.openRecheckMs);
    core.timer(() => this.safety.recheckOpen(true), core.pollMs);
    this.sweep?.start();
    const initial = [...core.runsByDir.values()];
    // The loop below derives each of these, yielding as it goes; the flush
    // queued when the root's listing marked them must not derive them a
    // second time meanwhile. A run marked again by an event is still flushed.
    for (const r of initial) core.dirty.delete(r);
    // The caller's own first reports (seed), asked for now that every run is watched, and taken in a
    // method of its own: a closure made here (the timers above) keeps this function's scope, and the
    // seed's map with it, for the engine's life.
    const runs = core.forget && this.options.seed !== undefined ? await this.adoptSeeded(initial) : initial;
    if (runs === undefined) return;
    let n = 0;
    this.reader.turnBytes = 0;
    for (const r of runs) {
      if (core.closed) return;
      if (!core.follows(r)) continue;
      core.dirty.delete(r); // derived here, not again by the flush
      this.process(r);
      if (++n % 64 === 0 || this.reader.turnBytes >= LIVE_STEP_BYTES) {
        await new Promise((res) => setImmediate(res));
        this.reader.turnBytes = 0;
      }
    }
    // Long streams are read a step per turn by the flush: wait until each has its first report.
    while (!core.closed && this.reader.firstReads.size > 0) await new Promise((res) => setImmediate(res));
  }

  /**
   * start()'s seeded runs (LiveEngineOptions.seed), ADOPT_SLICE at a time,
   * one native call taking the identities of a slice. Answers the runs left
   * to read, or undefined when the engine was closed meanwhile.
   */
  private async adoptSeeded(initial: RunState[]): Promise<RunState[] | undefined> {
    const core = this.core;
    // Where a sweep runs, what the seed will have read is compared with later (live/sweep.ts): taken before it is asked for.
    await this.sweep?.baseline(initial);
    if (core.closed) return undefined;
    const seeded = await this.options.seed?.();
    if (core.closed) return undefined;
    if (seeded === undefined) return initial;
    const runs: RunState[] = [];
    const stride = this.readFiles.length * identityStride();
    const scratch = new Float64Array(ADOPT_SLICE * stride);
    const batch: RunState[] = [];
    // Each run's seeded report, as found once: the seed is asked for a name once (a lookup may cost a search).
    const reports: RunReport[] = [];
    const dirs: string[] = [];
    const take = (): void => {
      readIdentities(dirs, this.readFiles, scratch);
      for (let k = 0; k < batch.length; k++) {
        const r = batch[k] as RunState;
        core.sigs.takeIfChanged(r.sig, scratch, k * stride);
        // Changed since the seed was asked for (and not yet found by the sweep): read, never taken.
        if (this.sweep?.noteRead(r, scratch, k * stride) === true) runs.push(r);
        else this.adopt(r, reports[k] as RunReport);
      }
      batch.length = 0;
      reports.length = 0;
      dirs.length = 0;
    };
    for (const r of initial) {
      if (core.closed) return undefined;
      if (!core.follows(r) || r.reported) continue; // gone, or derived already (an event's flush)
      const report = seeded.get(r.id);
      // A run an event marked since the listing may have changed after it: read, never taken.
      if (report === undefined || core.dirty.has(r) || !this.adoptable(r, report)) {
        runs.push(r);
        continue;
      }
      batch.push(r);
      reports.push(report);
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
    const core = this.core;
    if (core.runsByDir.has(dir) || core.closed) return;
    // No fold until the run is first read (process() makes it): at 100,000 runs folds made
    // here, most of them let go or replaced at once, would be tens of MB of start-up garbage.
    const r = new RunState(id, dir, core.sigs.take());
    core.runsByDir.set(dir, r);
    core.stats.runs = core.runsByDir.size;
    this.watching.watchRun(r);
    if (core.started) core.mark(r);
  }

  /** Stops following a run directory. */
  untrack(runDir: string): void {
    const r = this.core.runsByDir.get(resolve(runDir));
    if (r === undefined) return;
    this.drop(r, false);
  }

  /** Every run known, newest first. */
  runs(): LiveRun[] {
    return [...this.core.runsByDir.values()].sort((a, b) => compareNewestFirst(a.id, b.id)).map((r) => this.view(r));
  }

  /**
   * Calls `fn` with every run known, in the order the root listed them
   * (newest first at the first listing; runs that appeared later after
   * them), without building a list: for a caller that indexes every run.
   */
  forEachRun(fn: (runId: string, runDir: string, report: RunReport | null, error: string | null) => void): void {
    for (const r of this.core.runsByDir.values()) fn(r.id, r.dir, r.report, r.error);
  }

  /** One run, by its directory. */
  get(runDir: string): LiveRun | undefined {
    const r = this.core.runsByDir.get(resolve(runDir));
    return r === undefined ? undefined : this.view(r);
  }

  /**
   * The snapshot of a followed run as the engine reads it: the one it holds
   * for an open leg, else read now (a settled run keeps none). Undefined for
   * a run it does not follow.
   */
  snapshot(runDir: string): SnapshotRead | undefined {
    const r = this.core.runsByDir.get(resolve(runDir));
    if (r === undefined) return undefined;
    return r.snapshot ?? readSnapshot(stateOf(r));
  }

  /**
   * With `lines`: the subscriber has taken the lines told so far; read on
   * (at most one more chunk's worth before the next `lines` change).
   */
  more(runDir: string): void {
    const r = this.core.runsByDir.get(resolve(runDir));
    if (r === undefined || !r.held) return;
    r.held = false;
    r.dirtyStream = true;
    this.core.mark(r);
  }

  /** Whether the root was missing, or could not be listed, at the last look. */
  get missing(): boolean {
    const f = this.watching.rootFacts;
    return f.missing || f.error !== null;
  }

  /** What the last look at the root found: missing, unlistable (and why), and how many entries are not runs. */
  get rootFacts(): LiveRootFacts {
    return this.watching.rootFacts;
  }

  /** Stops every watch and timer. */
  close(): void {
    const core = this.core;
    if (core.closed) return;
    core.close();
    this.watching.close();
    // Holder watches: every descriptor goes with the engine (the shared watcher keeps only others' watches).
    this.holders.close();
    for (const r of core.runsByDir.values()) this.reader.endTail(r);
    this.reader.firstReads.clear();
    this.reader.stepping.clear();
    core.runsByDir.clear();
    this.backlog = [];
    this.backlogAt = 0;
    this.waiting.clear();
    core.open.clear();
    core.failed.clear();
  }

  // --- internals -----------------------------------------------------------

  private view(r: RunState): LiveRun {
    return { runId: r.id, runDir: r.dir, report: r.report, error: r.error };
  }

  private drop(r: RunState, announce: boolean): void {
    const core = this.core;
    if (!core.follows(r)) return;
    core.runsByDir.delete(r.dir);
    core.dirty.delete(r);
    core.open.delete(r);
    core.failed.delete(r);
    this.reader.drop(r);
    if (r.watch === undefined) core.stats.unwatched = Math.max(0, core.stats.unwatched - 1);
    r.watch?.close();
    r.watch = undefined;
    this.watching.unfollowStream(r);
    this.holders.unwatch(r);
    // Its identity slot goes to the next run; a late look at this one (none should come) finds it changed and keeps nothing.
    this.sweep?.forget(r);
    core.sigs.give(r.sig);
    r.sig = -1;
    core.stats.runs = core.runsByDir.size;
    if (announce) core.emit({ type: 'removed', runId: r.id, runDir: r.dir });
  }

  /**
   * Derives up to {@link LIVE_RUNS_PER_TURN} marked runs, those marked since
   * the last turn first (a death told by the kernel is not kept waiting
   * behind a backlog), then the backlog; the rest waits for the next turn.
   */
  private flush(): void {
    const core = this.core;
    if (core.closed) return;
    const reader = this.reader;
    let budget = this.runsPerTurn;
    reader.turnBytes = 0;
    if (core.dirty.size > 0) {
      const fresh = [...core.dirty];
      core.dirty.clear();
      for (const r of fresh) {
        if (budget > 0 && reader.turnBytes < LIVE_STEP_BYTES) {
          budget--;
          if (core.follows(r)) this.process(r);
        } else if (!this.waiting.has(r)) {
          this.waiting.add(r);
          this.backlog.push(r);
        }
      }
    }
    while (budget > 0 && reader.turnBytes < LIVE_STEP_BYTES && this.backlogAt < this.backlog.length) {
      budget--;
      const r = this.backlog[this.backlogAt++] as RunState;
      this.waiting.delete(r);
      if (core.follows(r)) this.process(r);
    }
    if (this.backlogAt >= this.backlog.length) {
      this.backlog = [];
      this.backlogAt = 0;
    }
    // Then long reads, a step each in turn, while the turn's bytes allow.
    for (const r of [...reader.stepping]) {
      if (reader.turnBytes >= LIVE_STEP_BYTES || core.closed) break;
      reader.stepping.delete(r);
      if (!core.follows(r)) continue;
      r.dirtyStream = true;
      this.process(r);
    }
    if (this.backlog.length > 0 || core.dirty.size > 0 || reader.stepping.size > 0) core.queueFlush();
  }

  private process(r: RunState): void {
    const core = this.core;
    if (r.fold === FORGOTTEN) {
      // A settled run let go (settledForget): its stream is read again from the start.
      this.reader.resetFold(r);
      r.ident = undefined;
      r.dirtyStream = true;
    }
    // Taken before reading, so what is read is at least as new as the identities kept.
    readIdentities([r.dir], this.readFiles, this.oneSig);
    this.sweep?.noteRead(r, this.oneSig, 0);
    // A change found here instead of told (a run without a watch, polled) is
    // announced as its watch would have announced it (announceFiles).
    if (core.sigs.takeIfChanged(r.sig, this.oneSig, 0) && r.watch === undefined && r.reported && core.announceFiles) r.announce = true;
    if (r.dirtyStream) {
      r.dirtyStream = false;
      this.reader.catchUp(r);
      if (r.fold.open) core.open.add(r);
      else core.open.delete(r);
      this.watching.followStream(r);
    }
    if (r.dirtySnapshot || r.snapshot === undefined) {
      r.dirtySnapshot = false;
      r.snapshot = readSnapshot(stateOf(r));
    }
    if (core.emitEvents && r.newEvents.length > 0) {
      const events = r.newEvents;
      r.newEvents = NO_EVENTS;
      core.emit({ type: 'events', runId: r.id, runDir: r.dir, events });
    }
    if (core.emitLines && r.newLines.length > 0) {
      const lines = r.newLines;
      r.newLines = NO_LINES;
      core.emit({ type: 'lines', runId: r.id, runDir: r.dir, lines, behind: r.behind });
    }
    // Never derived ahead of the lines told: it is, once the follower has read the rest.
    if (r.behind) return;
    r.dirtyProbe = false;
    this.derive(r);
    this.reader.firstReads.delete(r);
    // A settled run keeps no snapshot: it is read again when one of its files changes (the only time it is derived again).
    if (!r.fold.open && r.tail === undefined) r.snapshot = undefined;
    if (core.forget && !r.fold.open && r.tail === undefined && r.splitter === undefined && r.streamError === null && !r.newer) this.reader.letGo(r);
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
    // the name made the engine's own string: the caller's may be a slice of a path that then stays alive.
    report.run_id = r.id;
    r.report = report;
    r.error = null;
    r.reported = true;
    r.dirtyStream = r.dirtySnapshot = r.dirtyProbe = false;
    r.snapshot = undefined;
    this.core.open.delete(r);
    this.reader.letGo(r);
  }

  private derive(r: RunState): void {
    const core = this.core;
    core.stats.derivations++;
    let report: RunReport | null;
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
          core.stats.probes++;
          const answer: ProbeResult = probeLock(lockOf(r));
          // Free is never concluded from cached state: read, probe, confirm, by the reference path.
          report = answer.liveness === 'free' ? this.reference(r) : buildReport(r.id, r.dir, tail, snapshot, answer, []);
        }
      }
    } catch (e) {
      // A run that cannot be read (RunUnreadableError, or anything else a read throws) is told with the reason.
      error = e instanceof Error ? e.message : String(e);
      report = null;
    }
    // Compared with the last one told by their JSON, made again here rather
    // than kept: at 100,000 runs kept strings would be a tenth of the heap.
    if (report !== null) report = compactReport(report, r.id);
    const same = r.reported && JSON.stringify([report, error]) === JSON.stringify([r.report, r.error]);
    // The same report keeps its object: a subscriber (the dashboard's model) may hold it, shared rather than copied.
    if (!same) r.report = report;
    r.error = error;
    if (error !== null) core.failed.add(r);
    else core.failed.delete(r);
    if (r.fold.open && report?.liveness === 'held') this.holders.watch(r);
    else this.holders.unwatch(r);
    const announce = r.announce;
    r.announce = false;
    if (same && !announce) return;
    r.reported = true;
    core.emit({ type: 'run', ...this.view(r) });
  }

  private reference(r: RunState): RunReport {
    this.core.stats.referenceDerivations++;
    // Right after a stepped first read, its facts are the first read: the stream is not searched again in one turn.
    return inspectRun(r.dir, r.tailFacts === undefined ? {} : { first: r.tailFacts }).report;
  }
}
