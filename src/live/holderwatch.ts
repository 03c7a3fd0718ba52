/**
 * The live engine's watch on the holders of held locks (engine.ts): a death
 * that closes no writable descriptor is announced too.
 *
 * Invariants, and why:
 * - A held lock's holder is watched for its exit (kernel/notify.ts
 *   ExitWatcher: a pidfd on linux, kqueue EVFILT_PROC on darwin), so a death
 *   that closes no writable descriptor (a holder that opened the lock
 *   read-only, as `flock -x resume.lock cmd` does; every death on darwin,
 *   where kqueue has no close-after-write) is announced too (CONTRACT §5.5
 *   rule 4).
 * - The pid is the kernel's lock table's (linux) or the file's label (where
 *   there is no table; kernel/holders.ts likelyHolder); when no live process
 *   is named (the taker exited and handed its descriptor on, to a child or
 *   to the shell it took the lock for), a process that has the file open
 *   (kernel/holders.ts descriptorHolders): one whose descriptor holds the
 *   flock (linux: its fdinfo lists the lock) or is open for writing (darwin:
 *   libproc) before one that merely has the file open. Only one process is
 *   watched at a time, and a reader watched in the holder's place would
 *   leave the holder's death to the re-probe interval.
 * - An exit is only a reason to probe again, never a verdict: a wrong or
 *   recycled pid costs one probe; a pid whose exit was already told is not
 *   watched again; with nothing left to watch after an exit the run gets a
 *   few follow-up probes ({@link HOLDER_FOLLOW_UP_MS}); a holder that cannot
 *   be seen (another pid namespace) or past the watch budget
 *   (`holderWatches`, never above what RLIMIT_NOFILE leaves: kernel/notify.ts
 *   watchBudgets) is found by the engine's `openRecheckMs` re-probe; passing
 *   the budget is said once, and such runs are counted
 *   ({@link HolderWatch.unwatchedHolders}).
 * - Once a holder is watched, or none could be found, the lock is probed
 *   once more, so a death between the probe that found it held and the
 *   watch (or the search that found nobody) is not missed.
 * - Every watch is closed when its run settles, is dropped, or the engine
 *   closes.
 */
import { descriptorHolders, likelyHolder } from '../kernel/holders.js';
import { descriptorLimit } from '../kernel/limits.js';
import { openExitWatcher, sharedExitWatcher, type DirWatch, type ExitWatcher } from '../kernel/notify.js';
import { systemFacts } from '../kernel/system.js';
import { probeLock } from '../lock/probe.js';
import type { EngineCore } from './core.js';
import { lockOf, type RunState } from './runstate.js';
import { HOLDER_FOLLOW_UP_MS } from './types.js';

/** Watches the holders of the engine's held locks (see the module comment). */
export class HolderWatch {
  /** Watches holders' exits; undefined without notification, or where there is none. */
  private exits: ExitWatcher | undefined;
  /** Passing the budget was said ({@link pastBudget}: once per engine). */
  private saidBudget = false;

  constructor(
    private readonly core: EngineCore,
    /** Holders watched at once, at most (LiveEngineOptions.holderWatches, within kernel/notify.ts watchBudgets). */
    private readonly budget: number,
    /** The re-probe interval of held runs whose holder is not watched (ms; the engine's `openRecheckMs`). */
    private readonly recheckMs: number,
  ) {}

  /** Opens the exit watcher (none with `notify: false` or a zero budget; none where the platform has none). */
  open(): void {
    if (this.core.options.notify === false) return;
    if (this.budget === 0) {
      // None asked for is not news; none for want of descriptors is (the limit leaves no share).
      if (this.core.options.holderWatches !== 0) this.pastBudget(0);
      return;
    }
    if (this.core.borrowed) {
      this.exits = sharedExitWatcher();
      return;
    }
    const opened = openExitWatcher({ max: this.budget, ref: false, onBroken: () => this.broken() });
    if (typeof opened !== 'string') this.exits = opened;
  }

  /** Closes every holder watch, and the watcher when it is the engine's own. */
  close(): void {
    for (const r of this.core.runsByDir.values()) this.unwatch(r);
    if (!this.core.borrowed) this.exits?.close();
    this.exits = undefined;
  }

  /** The exit watcher failed: every run keeps its re-probe interval. */
  private broken(): void {
    for (const r of this.core.runsByDir.values()) r.holder = undefined;
    if (!this.core.borrowed) this.exits?.close();
    this.exits = undefined;
    this.core.stats.holderWatches = 0;
  }

  /**
   * Watches the likely holder of `r`'s held lock for its exit (module
   * comment). Without a pid, past the budget, or for the pid whose exit was
   * already told, nothing: the re-probe interval stays. A holder already
   * gone (ESRCH: it exited since the probe, or is not visible from here)
   * costs one more probe, once per pid.
   */
  watch(r: RunState): void {
    const exits = this.exits;
    if (exits === undefined || r.holder !== undefined || r.sought) return;
    if (exits.full) {
      r.sought = true; // past the budget: not even the lock table is read for it
      this.pastBudget(exits.budget);
      return;
    }
    const lock = lockOf(r);
    const named = likelyHolder(lock)?.pid;
    if (named !== undefined && named !== r.exitedPid) {
      const a = exits.watch(named, () => this.exited(r, named));
      if (a.ok) return this.watched(r, a.watch);
      if (a.code !== 'ESRCH') {
        r.sought = true; // the budget, or a refusal: the re-probe interval
        if (a.code === 'EMFILE') this.pastBudget(exits.budget);
        return;
      }
      r.exitedPid = named; // gone already
    }
    // No live process named (the taker handed its descriptor on: a shell's
    // `flock -x 3`, a fork; or the rest of its group is exiting; or the table
    // hides a reaped taker): watch a process that still has the file open, the
    // one whose descriptor holds the flock first (descriptorHolders orders them).
    // Just after an exit, one follow-up probe first: a group killed at once
    // is found gone by it, without a scan of every process's descriptors.
    if (r.exitedPid === undefined || r.followUps > 0) {
      for (const pid of descriptorHolders(lock, named ?? 0)) {
        const a = exits.watch(pid, () => this.exited(r, pid));
        if (a.ok) return this.watched(r, a.watch);
      }
    }
    // None. Never an exit told: nothing to follow (a holder this process
    // cannot see, or one that died between the probe that found the lock
    // held and this search, which the table then no longer names: one more
    // probe tells them apart). After one: a few follow-up probes, then the
    // re-probe interval.
    if (r.exitedPid === undefined || r.followUps >= HOLDER_FOLLOW_UP_MS.length) {
      r.sought = true;
      if (r.exitedPid === undefined) this.probeAgain(r);
      return;
    }
    if (r.followUp !== undefined) return;
    const t = setTimeout(() => {
      r.followUp = undefined;
      if (this.core.closed || !this.core.follows(r)) return;
      r.dirtyProbe = true;
      this.core.mark(r);
    }, HOLDER_FOLLOW_UP_MS[r.followUps++]);
    if (!this.core.ref) t.unref();
    r.followUp = t;
  }

  /**
   * Says once that holders go unwatched past the budget (an exit watch holds
   * a descriptor where the budget follows RLIMIT_NOFILE, kernel/limits.ts),
   * naming the limit and the re-probe interval that finds their deaths.
   */
  private pastBudget(budget: number): void {
    if (this.saidBudget) return;
    this.saidBudget = true;
    const limit = descriptorLimit()?.soft;
    const why = systemFacts().exitWatchHoldsDescriptor ? `each holds a descriptor; RLIMIT_NOFILE is ${limit === undefined ? 'unknown' : String(limit)}` : 'the engine\'s own';
    this.core.say(`past the budget of exit watches (${budget}: ${why}); held runs whose holder is not watched are re-probed every ${this.recheckMs} ms`, 'exits');
  }

  /** How many held runs have no exit watch on their holder (past the budget, a holder not found or not visible): re-probed every `openRecheckMs`. */
  unwatchedHolders(): number {
    let n = 0;
    for (const r of this.core.open) if (r.fold.open && r.holder === undefined && r.report?.liveness === 'held' && this.core.follows(r)) n++;
    return n;
  }

  /** Stops watching `r`'s holder, if it is watched, and any follow-up probe. */
  unwatch(r: RunState): void {
    r.sought = false;
    if (r.followUp !== undefined) clearTimeout(r.followUp);
    r.followUp = undefined;
    if (r.holder === undefined) return;
    r.holder.close();
    r.holder = undefined;
    this.core.stats.holderWatches--;
  }

  /**
   * A holder is watched. The lock is probed once more: a holder that died
   * between the probe that found it held and the watch (the pid then named
   * another process, or a label's) would otherwise wait for the interval.
   */
  private watched(r: RunState, watch: DirWatch): void {
    r.holder = watch;
    this.core.stats.holderWatches++;
    this.probeAgain(r);
  }

  /** Probes `r`'s lock once more; a lock no longer held marks the run to be derived again now. */
  private probeAgain(r: RunState): void {
    this.core.stats.probes++;
    if (probeLock(lockOf(r)).liveness !== 'held') {
      r.dirtyProbe = true;
      this.core.mark(r);
    }
  }

  /** A watched holder exited (or was gone already): probe again now, and tell subscribers as for a lock's close-write. */
  private exited(r: RunState, pid: number): void {
    if (r.holder !== undefined) {
      r.holder = undefined; // the exit ended the watch
      this.core.stats.holderWatches--;
    }
    if (this.core.closed || !this.core.follows(r)) return;
    r.exitedPid = pid;
    r.followUps = 0;
    this.core.stats.exitWakeups++;
    r.announce = true;
    r.dirtyProbe = true;
    this.core.mark(r);
  }
}
