/**
 * What every part of the live engine shares (engine.ts): the runs followed,
 * the runs marked to be derived, the counters, the subscribers, and the
 * turn of the event loop that derives what was marked.
 *
 * Invariants, and why:
 * - One owner per piece of state: the runs followed live here and nowhere
 *   else; the parts (watching.ts, streamread.ts, holderwatch.ts, safety.ts)
 *   each keep only their own state and reach the runs through this object,
 *   so no two parts can disagree on which runs exist.
 * - A run is followed while `runsByDir` maps its directory to that very
 *   RunState ({@link EngineCore.follows}); anything told about a run that is
 *   no longer followed (a late event, a timer) is dropped.
 * - Marking is cheap and idempotent: a run marked many times in one turn is
 *   derived once, in the next turn (the engine's flush).
 */
import { identityStride } from '../kernel/identity.js';
import { RUN_FILES, SigSlots, type RunState } from './runstate.js';
import type { LiveChange, LiveEngineOptions, LiveStats } from './types.js';

export class EngineCore {
  /** The runs followed, by directory (absolute; the last component the run's shown name). */
  readonly runsByDir = new Map<string, RunState>();
  /** Runs to derive at the next turn. */
  readonly dirty = new Set<RunState>();
  /** Runs whose fold ended with an open leg when last processed (the ones re-probed and always re-checked). */
  readonly open = new Set<RunState>();
  /** Runs whose last derivation could not read them (their `error` is set): derived again on every safety pass. */
  readonly failed = new Set<RunState>();
  /** Where the runs' identity buffers come from. */
  readonly sigs = new SigSlots(RUN_FILES.length * identityStride());
  readonly stats: LiveStats;
  /** Keep the process alive while the engine runs. */
  readonly ref: boolean;
  /** Announce a run whose files changed even when its report did not (LiveEngineOptions.announceFiles). */
  readonly announceFiles: boolean;
  /** Tell each appended event (LiveEngineOptions.events). */
  readonly emitEvents: boolean;
  /** Tell each line read (LiveEngineOptions.lines). */
  readonly emitLines: boolean;
  /** The process's shared notifier is used, not owned (LiveEngineOptions.shared). */
  readonly borrowed: boolean;
  /** `settledForget`, when it applies (neither `events` nor `lines`). */
  readonly forget: boolean;
  /** Poll interval of open legs that have no watch (ms). */
  readonly pollMs: number;
  closed = false;
  started = false;
  /** Derives what was marked; the engine's (set once, by the engine). */
  flush: () => void = () => undefined;
  private readonly listeners = new Set<(c: LiveChange) => void>();
  private timers: NodeJS.Timeout[] = [];
  private flushQueued = false;
  /** The topics already told ({@link say}). */
  private readonly noticed = new Set<string>();

  constructor(
    readonly options: LiveEngineOptions,
    pollMs: number,
  ) {
    this.pollMs = pollMs;
    this.ref = options.ref !== false;
    this.announceFiles = options.announceFiles === true;
    this.emitEvents = options.events === true;
    this.emitLines = options.lines === true;
    this.borrowed = options.shared === true;
    this.forget = options.settledForget === true && !this.emitEvents && !this.emitLines;
    this.stats = { backend: 'polling', runs: 0, unwatched: 0, derivations: 0, referenceDerivations: 0, probes: 0, lockWakeups: 0, polledProbes: 0, bytesRead: 0, maxStepBytes: 0, readSteps: 0, tailReads: 0, rereads: 0, batches: 0, safetyPasses: 0, rootListings: 0, safetyCompared: 0, overflows: 0, holderWatches: 0, exitWakeups: 0, swept: 0, sweepChanges: 0 };
  }

  /** Whether `r` is still the run followed at its directory. */
  follows(r: RunState): boolean {
    return this.runsByDir.get(r.dir) === r;
  }

  subscribe(listener: (change: LiveChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(c: LiveChange): void {
    for (const l of [...this.listeners]) l(c);
  }

  /** Tells subscribers something a person should know, once per engine and topic (the change notifier's; the exit watches'). */
  say(message: string, topic: 'notify' | 'exits' = 'notify'): void {
    if (this.noticed.has(topic)) return;
    this.noticed.add(topic);
    this.emit({ type: 'notice', message });
  }

  /** An interval the engine clears when it closes. */
  timer(fn: () => void, ms: number): void {
    const t = setInterval(fn, ms);
    if (!this.ref) t.unref();
    this.timers.push(t);
  }

  /** Marks a run to be derived at the next turn. */
  mark(r: RunState): void {
    this.dirty.add(r);
    this.queueFlush();
  }

  queueFlush(): void {
    if (this.flushQueued || this.closed) return;
    this.flushQueued = true;
    setImmediate(() => {
      this.flushQueued = false;
      this.flush();
    });
  }

  /** Stops the timers and forgets the subscribers. */
  close(): void {
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    this.listeners.clear();
  }
}
