/**
 * The settled sweep: where the change notifier does not tell a write to a
 * file by its directory's watch (kernel/system.ts `entryWrites` false:
 * kqueue, whose directory NOTE_WRITE fires only when an entry is created,
 * removed or renamed, kqueue(2)), the identity of every settled run's
 * `events.jsonl` is looked at again in rotation, so that an append to a
 * settled run (a resume by another process takes the lock, may rewrite the
 * lock's label in place and appends `run_started`, CONTRACT §4.1, none of
 * which changes an entry) is found within a rotation rather than at the
 * safety pass.
 *
 * Invariants, and why:
 * - One file per run: every change the sweep exists for ends in an append
 *   to the stream (a resume appends `run_started` once it holds the lock;
 *   §4.1), and a run found changed is read and probed again whole, lock
 *   included. A label rewritten without an append (a leg between its lock
 *   and its first event, or one that died there) shows in the stream's next
 *   append, or in the probe of the next read.
 * - Bounded: one tick every {@link SWEEP_TICK_MS} at most looks at no more
 *   than {@link SWEEP_RUNS_PER_TICK} runs (one `fstatat` each, in one native
 *   call, kernel/identity.ts) and at most once at each run per tick: at most
 *   20,000 `fstatat` a second whatever the number of runs.
 * - No faster than needed: ticks are spaced so that each settled run is
 *   looked at about once every {@link SWEEP_ROTATION_MS} and no more often
 *   (a root of 1,000 runs or fewer: one tick of all of them every
 *   {@link SWEEP_ROTATION_MS}); 10,000 runs take the full rate, and a larger
 *   root is covered more slowly (100,000 runs: 5 s), never at more cost.
 * - Only where it is needed: the engine makes a sweep only where
 *   `entryWrites` is false. Where inotify tells every append and rewrite by
 *   name (linux), nothing is swept, and the cost follows what changes.
 * - Settled runs only, watched or not: a run whose last leg is open is
 *   followed file by file (live/watching.ts followStream) or, without a
 *   watch, polled every `pollMs` (live/safety.ts recheckOpen). `state.json`
 *   is not swept: the reference replaces it by temp file and rename (§3.1),
 *   which a watched directory tells, and a leg that writes it appends to the
 *   stream as well.
 * - Compared with what the engine read: the identity kept here is taken by
 *   the engine in the same native call as those it reads a run after
 *   ({@link SettledSweep.noteRead}: the first of RUN_FILES), or, for a
 *   seeded start, before the seed is asked for
 *   ({@link SettledSweep.baseline}), so a change made after the engine's
 *   read is never taken as the state it read. A run not read yet (no
 *   identity kept) is left to its first read.
 * - A run whose identity moved is marked to be read, probed and derived
 *   again the normal way (engine.ts process), and announced with
 *   `announceFiles`; the sweep concludes nothing itself.
 * - The rotation follows the engine's runs in tracking order through one
 *   live iterator, so a tick costs its runs and no walk of the rest, and
 *   runs tracked or dropped meanwhile are taken or passed over.
 * - Reads only: `fstatat` of one name per run; nothing is opened.
 */
import { EVENTS_FILE } from '../contract/files.js';
import { identityStride, readIdentities } from '../kernel/identity.js';
import type { EngineCore } from './core.js';
import { SigSlots, type RunState } from './runstate.js';

/** Shortest interval of the sweep's ticks (ms). */
export const SWEEP_TICK_MS = 50;

/** Settled runs one tick looks at, at most (one `fstatat` each). */
export const SWEEP_RUNS_PER_TICK = 1000;

/** How often each settled run is looked at, at most (ms): the rotation's period while the root allows it. */
export const SWEEP_ROTATION_MS = 500;

/** The file the sweep compares, per run: the first of RUN_FILES, whose identity the engine takes with each read. */
export const SWEEP_FILES: readonly string[] = [EVENTS_FILE];

/** The sweep (see the module comment). */
export class SettledSweep {
  /** Per run, by the engine's identity slot (RunState.sig): the identities of {@link SWEEP_FILES}. */
  private readonly prints: SigSlots;
  /** One tick's runs and identities, reused. */
  private readonly fresh: Float64Array;
  private readonly runs: RunState[] = [];
  private readonly dirs: string[] = [];
  /** Where the rotation stands. */
  private at: IterableIterator<RunState> | undefined;
  private readonly stride = identityStride();
  /** When the next tick is due (the timer's clock, ms). */
  private due = 0;

  constructor(
    private readonly core: EngineCore,
    private readonly perTick: number = SWEEP_RUNS_PER_TICK,
  ) {
    this.prints = new SigSlots(SWEEP_FILES.length * this.stride);
    this.fresh = new Float64Array(perTick * SWEEP_FILES.length * this.stride);
  }

  /**
   * Starts the ticks (the engine's timers: cleared when it closes). The
   * timer fires every {@link SWEEP_TICK_MS}; a tick is taken when due, so
   * that a rotation of the runs there are takes about
   * {@link SWEEP_ROTATION_MS}, and never sooner.
   */
  start(): void {
    this.core.timer(() => {
      const now = performance.now();
      if (now < this.due) return;
      const size = this.core.runsByDir.size;
      // A tick's share of the rotation: ticks of `perTick` runs, `size / perTick` of them per rotation.
      const gap = size <= this.perTick ? SWEEP_ROTATION_MS : Math.max(SWEEP_TICK_MS, (SWEEP_ROTATION_MS * this.perTick) / size);
      // Due a little early (a tick's slack), so an interval that fires late does not lose a whole interval.
      this.due = now + gap - SWEEP_TICK_MS / 2;
      this.tick();
    }, SWEEP_TICK_MS);
  }

  /**
   * Keeps `r`'s stream identity from `read`, which holds those of RUN_FILES
   * from `from` (taken before the engine read `r`; events.jsonl first).
   * Answers whether the stream moved since the identity kept.
   */
  noteRead(r: RunState, read: Float64Array, from: number): boolean {
    return this.prints.takeIfChanged(r.sig, read, from);
  }

  /** Forgets what was kept for a run that is dropped (its slot goes to another run). */
  forget(r: RunState): void {
    this.prints.clear(r.sig);
  }

  /**
   * Takes the identities of `runs` to compare with later, before the
   * engine's first reports of them come from elsewhere (a seed): a run
   * changed after this is found by the next rotation. A slice of at most
   * the tick's size per native call and per turn of the event loop.
   */
  async baseline(runs: readonly RunState[]): Promise<void> {
    const core = this.core;
    const per = SWEEP_FILES.length * this.stride;
    const dirs: string[] = [];
    for (let i = 0; i < runs.length; i += this.perTick) {
      if (i > 0) await new Promise((res) => setImmediate(res));
      if (core.closed) return;
      dirs.length = 0;
      const end = Math.min(runs.length, i + this.perTick);
      for (let k = i; k < end; k++) dirs.push((runs[k] as RunState).dir);
      // Its own buffer: a tick may run between two slices.
      const fresh = new Float64Array(dirs.length * per);
      readIdentities(dirs, SWEEP_FILES, fresh);
      for (let k = i; k < end; k++) {
        const r = runs[k] as RunState;
        // A run read meanwhile keeps what its read took (older than this, so nothing changed since is absorbed).
        if (core.follows(r) && !this.prints.known(r.sig)) this.prints.takeIfChanged(r.sig, fresh, (k - i) * per);
      }
    }
  }

  /** One tick: the next settled runs of the rotation, compared and, when moved, marked. */
  tick(): void {
    const core = this.core;
    if (core.closed || core.runsByDir.size === 0) return;
    const runs = this.runs;
    const dirs = this.dirs;
    runs.length = 0;
    dirs.length = 0;
    // Each run at most once per tick: at most one wrap of the rotation.
    let wrapped = false;
    let looked = 0;
    while (runs.length < this.perTick && looked < core.runsByDir.size) {
      this.at ??= core.runsByDir.values();
      const next = this.at.next();
      if (next.done === true) {
        this.at = undefined;
        if (wrapped) break;
        wrapped = true;
        continue;
      }
      looked++;
      const r = next.value;
      if (r.fold.open || !this.prints.known(r.sig)) continue;
      runs.push(r);
      dirs.push(r.dir);
    }
    if (runs.length === 0) return;
    readIdentities(dirs, SWEEP_FILES, this.fresh);
    core.stats.swept += runs.length;
    const per = SWEEP_FILES.length * this.stride;
    for (let k = 0; k < runs.length; k++) {
      const r = runs[k] as RunState;
      if (!core.follows(r) || r.fold.open) continue; // dropped, or read since the tick began
      if (!this.prints.takeIfChanged(r.sig, this.fresh, k * per)) continue;
      core.stats.sweepChanges++;
      r.dirtyStream = r.dirtySnapshot = r.dirtyProbe = true;
      if (core.announceFiles) r.announce = true;
      core.mark(r);
    }
    runs.length = 0;
    dirs.length = 0;
  }
}
