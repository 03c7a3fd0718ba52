/**
 * The settled sweep: where the change notifier does not tell a write to a
 * file by its directory's watch (kernel/system.ts `entryWrites` false:
 * kqueue, whose directory NOTE_WRITE fires only when an entry is created,
 * removed or renamed, kqueue(2)), the identities of every settled run's
 * `events.jsonl` and `resume.lock` are looked at again in rotation, so that
 * an append to a settled run (a resume by another process: it takes the
 * lock, may rewrite the lock's label in place and appends `run_started`,
 * CONTRACT §4.1, none of which changes an entry) or a new lock label is
 * found within a rotation rather than at the safety pass.
 *
 * Invariants, and why:
 * - Bounded: one tick every {@link SWEEP_TICK_MS} looks at no more than
 *   {@link SWEEP_RUNS_PER_TICK} runs (two `fstatat` each, in one native call,
 *   kernel/identity.ts) and at most once at each run per tick. That is at
 *   most 40,000 `fstatat` a second whatever the number of runs: 10,000
 *   settled runs are each looked at within 0.5 s, and a larger root is
 *   covered more slowly (100,000 runs: 5 s), never at more cost. Measured on
 *   the 2-core test VM (XNU model, ~3 µs per `fstatat`): an idle engine over
 *   10,000 settled runs takes 13 % of a core (0.4 % on linux, where nothing
 *   is swept); proportionally less below 20,000 runs a second's worth.
 * - Only where it is needed: the engine makes a sweep only where
 *   `entryWrites` is false. Where inotify tells every append and rewrite by
 *   name (linux), nothing is swept, and the cost follows what changes.
 * - Settled runs only, watched or not: a run whose last leg is open is
 *   followed file by file (live/watching.ts followStream) or, without a
 *   watch, polled every `pollMs` (live/safety.ts recheckOpen). `state.json`
 *   is not swept: the reference replaces it by temp file and rename (§3.1),
 *   which a watched directory tells, and a leg that writes it appends to the
 *   stream as well.
 * - Compared with what the engine read: the identities kept here are taken
 *   by the engine in the same native call as those it reads a run after
 *   ({@link SettledSweep.noteRead}), or, for a seeded start, before the
 *   seed is asked for ({@link SettledSweep.baseline}), so a change made
 *   after the engine's read is never taken as the state it read. A run not
 *   read yet (no identities kept) is left to its first read.
 * - A run whose identities moved is marked to be read, probed and derived
 *   again the normal way (engine.ts process), and announced with
 *   `announceFiles`; the sweep concludes nothing itself.
 * - The rotation follows the engine's runs in tracking order through one
 *   live iterator, so a tick costs its runs and no walk of the rest, and
 *   runs tracked or dropped meanwhile are taken or passed over.
 * - Reads only: `fstatat` of two names per run; nothing is opened.
 */
import { EVENTS_FILE, LOCK_FILE } from '../contract/files.js';
import { identityStride, readIdentities } from '../kernel/identity.js';
import type { EngineCore } from './core.js';
import { RUN_FILES, SigSlots, type RunState } from './runstate.js';

/** Interval of the sweep's ticks (ms). */
export const SWEEP_TICK_MS = 50;

/** Settled runs one tick looks at, at most (two `fstatat` each). */
export const SWEEP_RUNS_PER_TICK = 1000;

/** The files the sweep compares, per run. */
export const SWEEP_FILES: readonly string[] = [EVENTS_FILE, LOCK_FILE];

/**
 * The files the engine takes the identities of before it reads a run where
 * a sweep runs: its own ({@link RUN_FILES}, first, so that its identities
 * are the first numbers) and the lock file.
 */
export const READ_FILES: readonly string[] = [...RUN_FILES, LOCK_FILE];

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
  /** Where {@link noteRead} puts one run's lock and stream identities side by side. */
  private readonly pair: Float64Array;

  constructor(
    private readonly core: EngineCore,
    private readonly perTick: number = SWEEP_RUNS_PER_TICK,
  ) {
    this.prints = new SigSlots(SWEEP_FILES.length * this.stride);
    this.fresh = new Float64Array(perTick * SWEEP_FILES.length * this.stride);
    this.pair = new Float64Array(SWEEP_FILES.length * this.stride);
  }

  /** Starts the ticks (the engine's timers: cleared when it closes). */
  start(): void {
    this.core.timer(() => this.tick(), SWEEP_TICK_MS);
  }

  /**
   * Keeps `r`'s identities from `read`, which holds those of
   * {@link READ_FILES} from `from` (taken before the engine read `r`).
   * Answers whether the swept files moved since the identities kept.
   */
  noteRead(r: RunState, read: Float64Array, from: number): boolean {
    const s = this.stride;
    // READ_FILES is [events.jsonl, state.json, resume.lock]; SWEEP_FILES is [events.jsonl, resume.lock].
    this.pair.set(read.subarray(from, from + s), 0);
    this.pair.set(read.subarray(from + 2 * s, from + 3 * s), s);
    return this.prints.takeIfChanged(r.sig, this.pair, 0);
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
