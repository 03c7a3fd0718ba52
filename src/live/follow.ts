/**
 * Following a run as an async iterator, for library users and for
 * `runwarden watch`: the run's stream replayed and then each line as it is
 * appended, and the run's status whenever it changes, all from one
 * {@link LiveEngine} (live/engine.ts) tracking that run, the engine the
 * dashboard sits on. So the three surfaces read lines by the same rules,
 * fold them by the same fold and derive the status by the same derivation,
 * woken by the same kernel events.
 *
 * Invariants, and why:
 * - Lines and statuses in causal order: the engine never derives a run
 *   ahead of the lines it has told (engine `lines` mode), so a leg's
 *   `run_finished` is yielded before the PASS it leads to, and the status
 *   items a consumer sees always describe the stream it has seen.
 * - A status item only when the status word or the liveness changes (the
 *   first derivation counts as a change): counters and cost moving are not
 *   status changes.
 * - `until: 'leg-end'` always ends with a `final` status item (the status
 *   after the last leg closed, or ABANDONED when its leg died: never
 *   waiting on a corpse), or with `vanished` when the run's directory went
 *   away before any leg, or with a throw.
 * - Read-only, like every reader: it opens nothing for writing, creates
 *   nothing; its only lock operation is the engine's shared probe.
 * - It never blocks the event loop, and reads no further than one chunk
 *   (64 KiB) past what its consumer has taken (engine `more`).
 * - Leaving the loop (`break`, `return`, a throw) or aborting the signal
 *   closes the engine (its watches, timers and any open descriptor) before
 *   the iterator settles. The process is kept alive only while the
 *   consumer waits for the next item, never by an iterator left unfinished.
 */
import { lstatSync } from 'node:fs';
import { resolve } from 'node:path';
import { AbortError, StreamError } from '../contract/errors.js';
import type { StreamEvent } from '../contract/events.js';
import { StreamFold } from '../contract/fold.js';
import type { RunReport } from '../contract/types.js';
import { runDirPath } from '../kernel/dirfd.js';
import { LiveEngine, type LiveChange } from './engine.js';

/** One thing {@link followRun} yields: a union on `kind`. */
export type FollowItem =
  /** A line of the right shape (CONTRACT §2.2), and the byte offset it starts at. */
  | {
      /** An event line. */
      kind: 'event';
      /** The event, as read. */
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
  /** The first line written by a newer version; it and every later one like it are skipped. */
  | {
      /** Told once per follower. */
      kind: 'newer-schema';
      /** `ENEWERSCHEMA`, with the path and the offending line's offset. */
      error: StreamError;
    }
  /**
   * The run's derived status (CONTRACT §5.2): first when the follower has
   * caught up with the stream, then whenever `report.status` or
   * `report.liveness` changes. `final`: `until: 'leg-end'` only, the last
   * item: the status the run ended in (PASS, FAIL, PAUSED, ABANDONED, or
   * null for a run settled without a status).
   */
  | {
      /** A status item. */
      kind: 'status';
      /** The report, derived from the lines already yielded and no others. */
      report: RunReport;
      /** True on the last item of `until: 'leg-end'`; never with `forever`. */
      final: boolean;
    }
  /**
   * The last item: the run had no leg yet and its directory was removed (or
   * is not there, or was replaced by a non-directory), so no leg can ever
   * start there.
   */
  | {
      /** The follower ends after it. */
      kind: 'vanished';
    };

/** Options for {@link followRun}. */
export interface FollowRunOptions {
  /**
   * `leg-end` (default): end after the `run_finished` that closes the last
   * leg (at once, after the replay, for a run that is already settled), or
   * when the run is found ABANDONED, with a `final` status item.
   * `forever`: follow until the signal aborts or the loop is left.
   */
  until?: 'leg-end' | 'forever';
  /** Stops the follow: the iterator then rejects with `AbortError` (`ABORT_ERR`). */
  signal?: AbortSignal;
  /** Where the run directory cannot be watched: how often its open leg is polled (ms, default 100). */
  pollMs?: number;
  /**
   * The safety net where the kernel tells: how often an open leg is probed
   * again and the stream looked at anyway (ms, default
   * {@link FOLLOW_RECHECK_MS}). A death is normally told at once by the
   * lock file's close after writing.
   */
  recheckMs?: number;
}

/**
 * Counters across every follower in this process, for tests and
 * benchmarks: derivations started by a lock file's close after writing,
 * and stream bytes read.
 */
export const FOLLOW_STATS = { lockWakeups: 0, bytesRead: 0 };

/** The default safety re-check interval of a follower (ms). */
export const FOLLOW_RECHECK_MS = 1000;

/**
 * Whether the run directory is affirmatively gone (removed, or no longer a
 * directory). Any other doubt (a permission error) is not "gone".
 */
function runDirGone(runDir: string): boolean {
  try {
    return !lstatSync(runDirPath(runDir)).isDirectory();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR';
  }
}

function validMs(name: string, v: unknown, min: number): void {
  if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v < min)) throw new RangeError(`${name} must be a finite number of at least ${min}`);
}

const settledWithoutLeg = (r: RunReport | null): boolean => r !== null && (r.status === 'PAUSED' || r.status === 'PASS' || r.status === 'FAIL');

/**
 * Replays and follows the run in `runDir` (a missing stream is waited for,
 * never created), yielding {@link FollowItem}s.
 *
 * ```ts
 * for await (const item of followRun(dir, { signal })) {
 *   if (item.kind === 'event') console.log(item.event.event, item.event.node_id ?? '');
 *   else if (item.kind === 'status') console.log(item.report.status, item.report.liveness, item.final ? '(final)' : '');
 * }
 * ```
 *
 * @throws StreamError when the stream can no longer be followed (a line over 1 MiB; the file shrank, was replaced, rewritten or removed).
 * @throws AbortError (`ABORT_ERR`) when `signal` aborts.
 */
export async function* followRun(runDir: string, options: FollowRunOptions = {}): AsyncGenerator<FollowItem, void, undefined> {
  if (typeof runDir !== 'string' || runDir.length === 0) throw new TypeError('followRun(runDir): runDir must be a non-empty string');
  const until = options.until ?? 'leg-end';
  if (until !== 'leg-end' && until !== 'forever') throw new TypeError('until must be "leg-end" or "forever"');
  validMs('pollMs', options.pollMs, 1);
  validMs('recheckMs', options.recheckMs, 0);
  const recheckMs = Math.max(1, options.recheckMs ?? FOLLOW_RECHECK_MS);
  const outer = options.signal;
  const aborted = (): AbortError => new AbortError(`following ${runDir} was aborted`, { cause: outer?.reason });
  if (outer?.aborted) throw aborted();
  const dir = resolve(runDir);

  const queue: FollowItem[] = [];
  let wakeConsumer: (() => void) | undefined;
  let ended = false;
  let failure: { error: unknown } | undefined;
  const toConsumer = (): void => {
    const w = wakeConsumer;
    wakeConsumer = undefined;
    w?.();
  };
  const push = (item: FollowItem): void => {
    queue.push(item);
    toConsumer();
  };
  const end = (error?: unknown): void => {
    if (ended) return;
    ended = true;
    if (error !== undefined) failure = { error };
    toConsumer();
  };

  const engine = new LiveEngine({
    lines: true,
    ref: false,
    shared: true, // one process-wide kernel notifier for every follower (max_user_instances is small)
    ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
    openRecheckMs: recheckMs,
    safetyMs: recheckMs,
  });
  const fold = new StreamFold(); // the lines told, folded: has a leg started, is the last one closed
  let behind = true; // until the engine has derived the run once, caught up
  let lastKey: string | undefined;
  let counted = 0;
  let countedBytes = 0;
  let checkQueued = false;

  const countWakeups = (): void => {
    FOLLOW_STATS.lockWakeups += engine.stats.lockWakeups - counted;
    counted = engine.stats.lockWakeups;
    FOLLOW_STATS.bytesRead += engine.stats.bytesRead - countedBytes;
    countedBytes = engine.stats.bytesRead;
  };

  /** Runs after each burst of changes: says a status change, or ends. */
  const check = (): void => {
    checkQueued = false;
    if (ended) return;
    countWakeups();
    const known = engine.get(dir);
    if (known === undefined) {
      // The engine dropped the run: its directory went away.
      if (fold.started) return end(new StreamError('events.jsonl was removed while it was followed', 'EREAD', dir));
      push({ kind: 'vanished' });
      return end();
    }
    if (behind) return;
    const report = known.report;
    if (until === 'leg-end') {
      let final = (fold.started && !fold.open) || report?.status === 'ABANDONED';
      if (!fold.started && !final) {
        if (runDirGone(dir)) {
          push({ kind: 'vanished' });
          return end();
        }
        // A run with no leg in its stream that is settled anyway (a snapshot alone says so).
        final = settledWithoutLeg(report);
      }
      if (final) {
        if (report !== null) push({ kind: 'status', report, final: true });
        return end();
      }
    }
    if (report === null) return; // cannot be derived now (known.error says why): no status to tell
    const key = `${report.status}|${report.liveness}`;
    if (key === lastKey) return;
    lastKey = key;
    push({ kind: 'status', report, final: false });
  };
  const later = (): void => {
    if (checkQueued || ended) return;
    checkQueued = true;
    // After the burst: the engine tells a run's lines, then its report, in one turn.
    queueMicrotask(check);
  };

  engine.subscribe((c: LiveChange) => {
    if (ended) return;
    switch (c.type) {
      case 'lines':
        for (const l of c.lines) {
          if (l.kind === 'event') {
            fold.apply(l.event, l.offset);
            push({ kind: 'event', event: l.event, offset: l.offset });
          } else if (l.kind === 'skipped') {
            fold.skip();
            push({ kind: 'skipped', offset: l.offset });
          } else {
            fold.skip();
            push({ kind: 'newer-schema', error: l.error });
          }
        }
        behind = c.behind;
        later();
        return;
      case 'run':
        behind = false;
        later();
        return;
      case 'stream-error':
        end(c.error);
        return;
      case 'removed':
        later();
        return;
      default:
        return; // notices: the follower falls back to polling without a word
    }
  });

  // The directory's removal where nothing tells it (no watch), and the
  // periodic look at a run whose report did not change.
  const tick = setInterval(later, recheckMs);
  tick.unref();
  const onAbort = (): void => toConsumer();
  outer?.addEventListener('abort', onAbort, { once: true });

  try {
    engine.track(dir);
    await engine.start();
    later();
    for (;;) {
      if (outer?.aborted) throw aborted();
      const item = queue.shift();
      if (item !== undefined) {
        yield item;
        continue;
      }
      if (ended) {
        if (failure !== undefined) throw failure.error;
        return;
      }
      // Everything told was taken: let the engine read on.
      countWakeups();
      engine.more(dir);
      // Only a consumer waiting for an item keeps the process alive.
      const alive = setInterval(() => undefined, 1 << 30);
      try {
        await new Promise<void>((r) => {
          wakeConsumer = r;
          if (outer?.aborted || queue.length > 0 || ended) r();
        });
      } finally {
        clearInterval(alive);
      }
    }
  } finally {
    clearInterval(tick);
    outer?.removeEventListener('abort', onAbort);
    countWakeups();
    engine.close();
  }
}
