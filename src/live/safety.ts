/**
 * The live engine's safety pass and its re-probe of open legs (engine.ts): a
 * lost change notification delays a status but never freezes it (CONTRACT
 * §5.3 rule 6, §5.5 rule 5).
 *
 * Invariants, and why:
 * - Every `safetyMs` the root is listed again when its identity or mtime
 *   moved (and every 120th pass anyway: live/relist.ts), and the file
 *   identities of every run with an open leg or without a watch are
 *   compared, with those of a bounded share of the settled, watched runs
 *   (all of them up to {@link LIVE_SAFETY_SETTLED_PER_PASS}; beyond that
 *   they take turns, so the backstop costs the same at any size). A run
 *   whose identities moved is marked, and announced with `announceFiles`
 *   even when its report stays the same.
 * - Runs that could not be read are derived again on every pass: a
 *   permission fixed changes no identity the pass compares.
 * - A pass runs in slices of {@link SAFETY_SLICE} runs per turn of the
 *   event loop, so a death the kernel announces meanwhile never waits for
 *   it; one pass at a time; nothing copies the whole set of runs.
 * - Open legs are probed again every `openRecheckMs` (and those without a
 *   watch every `pollMs`): a holder this process cannot see, or could not
 *   watch, is found that way. Free is never concluded here: a changed
 *   answer only marks the run for the engine's derivation.
 */
import { identityStride, readIdentities } from '../kernel/identity.js';
import { probeLock } from '../lock/probe.js';
import type { EngineCore } from './core.js';
import { lockOf, RUN_FILES, type RunState } from './runstate.js';
import { LIVE_SAFETY_SETTLED_PER_PASS } from './types.js';

/** Runs the safety pass compares per turn of the event loop (two lstats each, one native call per slice). */
const SAFETY_SLICE = 1000;

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

/** What the safety pass asks of the rest of the engine. */
export interface SafetyHost {
  /** Lists the root again when live/relist.ts says it is due. */
  relistIfDue(): void;
  /** Whether runs have watches (a notifier is open). */
  watching(): boolean;
  /** Reads and derives a run now. */
  process(r: RunState): void;
}

/** The safety pass and the open legs' re-probe (see the module comment). */
export class SafetyPass {
  /** The identities of one slice, reused. */
  private fresh: Float64Array | undefined;
  /** Where the share of settled, watched runs resumes. */
  private settledCursor = 0;
  /** A pass is under way (it runs in slices). */
  private running = false;

  constructor(
    private readonly core: EngineCore,
    private readonly host: SafetyHost,
    private readonly settledPerPass: number = LIVE_SAFETY_SETTLED_PER_PASS,
  ) {}

  /**
   * Re-probes open legs: with `polled`, those of runs without a watch (every
   * `pollMs`); otherwise every open leg (every `openRecheckMs`). A run
   * already ABANDONED costs one probe, and is derived again only if its lock
   * is no longer free; a watched run whose lock was held costs one probe,
   * and is derived again only if it no longer is.
   */
  recheckOpen(polled: boolean): void {
    const core = this.core;
    // Every run watched: nothing to poll (this runs every pollMs, and a walk of every run for nothing would cost a few % of a core at 10,000 runs).
    if (polled && this.host.watching() && core.stats.unwatched === 0) return;
    for (const r of [...core.open]) {
      if (!r.fold.open || !core.follows(r)) continue;
      if (polled && r.watch !== undefined) continue;
      if (polled) core.stats.polledProbes++;
      if (r.report?.status === 'ABANDONED') {
        // Only the probe: a holder that took the lock again without writing
        // (not a §4.1 leg) is found this way; a free answer changes nothing.
        core.stats.probes++;
        if (probeLock(lockOf(r)).liveness === 'free') continue;
      }
      if (!polled && r.watch !== undefined && r.report?.liveness === 'held') {
        // Watched and held: an append or a new snapshot would have been told,
        // so only the lock can have changed unseen. One probe; still held
        // changes nothing, and the run's files are not read again for it.
        core.stats.probes++;
        if (probeLock(lockOf(r)).liveness === 'held') continue;
      }
      r.dirtyStream = r.dirtyProbe = true;
      this.host.process(r);
    }
  }

  /** One safety pass (see the module comment); a pass still under way is not doubled. */
  run(): void {
    if (this.running) return;
    const core = this.core;
    this.host.relistIfDue();
    // Open legs, then unwatched runs (a walk of every run only when there are
    // some), then the settled, watched runs of this pass's turn: a range of
    // the runs in tracking order, taken without a walk of the rest. Nothing
    // here copies the whole set of runs: at 100,000 runs such copies would
    // outlive a scavenge and pile up in the old generation.
    const runs: RunState[] = [];
    for (const r of core.open) if (r.fold.open) runs.push(r);
    if (core.stats.unwatched > 0) for (const r of core.runsByDir.values()) if (r.watch === undefined && !r.fold.open) runs.push(r);
    const share = takeTurns(core.runsByDir.size, this.settledCursor, this.settledPerPass);
    // At most two ranges: [from, to), and [0, wrap) when the turn wraps around.
    const [from, to] = share.ranges[0] ?? [0, 0];
    const wrap = share.ranges[1]?.[1] ?? 0;
    let k = 0;
    for (const r of core.runsByDir.values()) {
      if ((k >= from && k < to) || k < wrap) {
        if (!r.fold.open && r.watch !== undefined) runs.push(r);
      } else if (k >= to) {
        break;
      }
      k++;
    }
    this.settledCursor = share.next;
    // Runs that could not be read: derived again whatever their identities say.
    for (const r of [...core.failed]) {
      if (!core.follows(r)) continue;
      r.dirtyStream = r.dirtySnapshot = r.dirtyProbe = true;
      core.mark(r);
    }
    core.stats.safetyPasses++;
    core.stats.safetyCompared += runs.length;
    let i = 0;
    this.running = true;
    // One native call per slice takes the identities of the slice's files (kernel/identity.ts).
    const stride = identityStride();
    this.fresh ??= new Float64Array(SAFETY_SLICE * RUN_FILES.length * stride);
    const fresh = this.fresh;
    const dirs: string[] = [];
    const slice = (): void => {
      if (core.closed) return;
      const end = Math.min(runs.length, i + SAFETY_SLICE);
      dirs.length = 0;
      for (let k = i; k < end; k++) dirs.push((runs[k] as RunState).dir);
      readIdentities(dirs, RUN_FILES, fresh);
      for (let at = 0; i < end; i++, at += RUN_FILES.length * stride) {
        const r = runs[i] as RunState;
        if (!core.follows(r)) continue; // untracked or replaced since the pass began
        const moved = core.sigs.takeIfChanged(r.sig, fresh, at);
        if (moved || r.fold.open) {
          if (moved && core.announceFiles) r.announce = true;
          r.dirtyStream = r.dirtySnapshot = true;
          r.dirtyProbe = true;
          core.mark(r);
        }
      }
      if (i < runs.length) {
        const next = setImmediate(slice);
        if (!core.ref) next.unref();
      } else {
        this.running = false;
      }
    };
    slice();
  }
}
