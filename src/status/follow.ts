/**
 * Following a run as an async iterator: the follower behind `runwarden
 * watch`, for library users. It replays the run's stream and then yields
 * each event appended after it, by the same line rules and the same fold as
 * every other reader (read/follow.ts); with `until: 'leg-end'` it also ends
 * the way watch does, at the `run_finished` that closes the last leg, or
 * with an `abandoned` item when the run is found dead (never waiting on a
 * corpse).
 *
 * Invariants:
 * - Read-only, like every reader: it opens nothing for writing, creates
 *   nothing, and its only lock operation is runStatus's shared probe.
 * - It never blocks the event loop, and it reads no further than its
 *   consumer has taken (one chunk of up to 64 KiB ahead at most).
 * - Leaving the loop early (`break`, `return`, a throw) or aborting the
 *   signal stops the follower and closes the file before the iterator
 *   settles.
 * - Told, not looking, where the kernel can tell (kernel/notify.ts): the
 *   run directory is watched, so an append wakes the follower at once, and
 *   the lock file's close after writing (the leg holding it exited, was
 *   killed or released: CONTRACT §4.1 holds it read-write) makes it derive
 *   the run at once instead of after `recheckMs` of silence. With a watch
 *   the timers are only a safety net (`recheckMs`); without one (no
 *   inotify, the watch limit reached) it polls every `pollMs`, as before.
 */
import { lstatSync } from 'node:fs';
import { runDirPath } from '../kernel/dirfd.js';
import { join } from 'node:path';
import { AbortError, RunUnreadableError, type StreamError } from '../contract/errors.js';
import type { StreamEvent } from '../contract/events.js';
import { EVENTS_FILE, LOCK_FILE } from '../contract/files.js';
import type { StreamFold } from '../contract/fold.js';
import type { RunReport } from '../contract/types.js';
import { monotonicMs } from '../kernel/clock.js';
import { sharedDirWatcher, type DirWatch } from '../kernel/notify.js';
import { followStream } from '../read/follow.js';
import { runStatus } from './inspect.js';

/** One thing {@link followRun} yields. */
export type FollowItem =
  /** A line of the right shape (CONTRACT §2.2), and the byte offset it starts at. */
  | { kind: 'event'; event: StreamEvent; offset: number }
  /** A malformed line that was skipped (CONTRACT §2.2 rule 3). */
  | { kind: 'skipped'; offset: number }
  /** The first line written by a newer version; it and every later one like it are skipped. */
  | { kind: 'newer-schema'; error: StreamError }
  /** `until: 'leg-end'` only, and always last: the run was derived ABANDONED while its stream was idle. */
  | { kind: 'abandoned'; report: RunReport }
  /**
   * `until: 'leg-end'` only, and always last: the run had no leg yet and its
   * directory was removed (or replaced by a non-directory) while the
   * follower waited for one, so no leg can ever start there.
   */
  | { kind: 'vanished' };

/** Options for {@link followRun}. */
export interface FollowRunOptions {
  /**
   * `leg-end` (default): end after the `run_finished` that closes the last
   * leg (at once, after the replay, for a run that is already settled), or
   * with an `abandoned` item when the run is found dead. `forever`: follow
   * until the signal aborts or the loop is left.
   */
  until?: 'leg-end' | 'forever';
  /** Stops the follow: the iterator then rejects with `AbortError` (`ABORT_ERR`). */
  signal?: AbortSignal;
  /** How often to look for appended bytes (ms, default 100). */
  pollMs?: number;
  /**
   * `leg-end` only: how long the stream may stay silent before the run is
   * derived again to see whether its leg died (ms, default 1000). It is
   * also derived once when the replay has caught up.
   */
  recheckMs?: number;
}

/**
 * Counters across every follower in this process: how many derivations were
 * started by a lock file's close after writing. For tests and benchmarks.
 */
export const FOLLOW_STATS = { lockWakeups: 0 };

/** The default idle time before a followed run is derived again (ms). */
export const FOLLOW_RECHECK_MS = 1000;

function derive(runDir: string): RunReport | undefined {
  try {
    return runStatus(runDir);
  } catch (e) {
    if (e instanceof RunUnreadableError) return undefined;
    throw e;
  }
}

/**
 * Whether the run directory is affirmatively gone (removed, or no longer a
 * directory). Any other doubt (a permission error) is not "gone": the
 * follower keeps waiting.
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

/**
 * Replays and follows the run in `runDir` (its `events.jsonl`; a missing
 * stream is waited for, never created), yielding {@link FollowItem}s.
 *
 * ```ts
 * for await (const item of followRun(dir, { signal })) {
 *   if (item.kind === 'event') console.log(item.event.event, item.event.node_id ?? '');
 *   if (item.kind === 'abandoned') console.error(item.report.hint);
 * }
 * ```
 *
 * @throws StreamError when the stream becomes unreadable (a line over 1 MiB; the file shrank, was replaced or removed).
 * @throws AbortError (`ABORT_ERR`) when `signal` aborts.
 */
export async function* followRun(runDir: string, options: FollowRunOptions = {}): AsyncGenerator<FollowItem, void, undefined> {
  if (typeof runDir !== 'string' || runDir.length === 0) throw new TypeError('followRun(runDir): runDir must be a non-empty string');
  const until = options.until ?? 'leg-end';
  if (until !== 'leg-end' && until !== 'forever') throw new TypeError('until must be "leg-end" or "forever"');
  validMs('pollMs', options.pollMs, 1);
  validMs('recheckMs', options.recheckMs, 0);
  const recheckMs = options.recheckMs ?? FOLLOW_RECHECK_MS;
  const outer = options.signal;
  const aborted = (): AbortError => new AbortError(`following ${runDir} was aborted`, { cause: outer?.reason });
  if (outer?.aborted) throw aborted();

  // The follower runs until the consumer stops taking items or `stop` aborts.
  const stop = new AbortController();
  const onOuterAbort = (): void => stop.abort();
  outer?.addEventListener('abort', onOuterAbort, { once: true });

  const queue: FollowItem[] = [];
  let wakeConsumer: (() => void) | undefined;
  let wakeProducer: (() => void) | undefined;
  let ended = false;
  let failure: { error: unknown } | undefined;

  const toConsumer = (): void => {
    const w = wakeConsumer;
    wakeConsumer = undefined;
    w?.();
  };
  const toProducer = (): void => {
    const w = wakeProducer;
    wakeProducer = undefined;
    w?.();
  };
  stop.signal.addEventListener('abort', toProducer, { once: true });
  const push = (item: FollowItem): void => {
    queue.push(item);
    toConsumer();
  };
  /** Holds the reader until the consumer has taken every item so far. */
  const drained = (): Promise<void> =>
    queue.length === 0 || stop.signal.aborted ? Promise.resolve() : new Promise((r) => (wakeProducer = r));

  // The kernel's word: an append wakes the reader; the lock's close after
  // writing asks for a derivation now (`lockClosed`).
  let lockClosed = false;
  let watch: DirWatch | undefined;
  const watcher = sharedDirWatcher();
  const wakeups = (wake: () => void): (() => void) | undefined => {
    const answer = watcher?.watch(runDir, (e) => {
      if (e.name === LOCK_FILE && e.kind === 'written') {
        lockClosed = true;
        FOLLOW_STATS.lockWakeups++;
        wake();
      } else if (e.name === EVENTS_FILE || e.kind === 'gone' || e.kind === 'changed') {
        wake();
      }
    });
    if (answer?.ok !== true) return undefined;
    watch = answer.watch;
    return () => watch?.close();
  };

  let checkedOnce = false;
  let lastCheck = 0;
  const shouldEnd = (fold: StreamFold, idleMs: number): boolean => {
    if (until === 'forever') return false;
    if (fold.started && !fold.open) return true;
    // Waiting for a first leg: a directory removed meanwhile will never get one.
    // (Once the stream is open, its removal ends the follow with a StreamError.)
    if (!fold.started && runDirGone(runDir)) {
      push({ kind: 'vanished' });
      return true;
    }
    const now = monotonicMs();
    const told = lockClosed;
    lockClosed = false;
    if (!told && checkedOnce && (idleMs < recheckMs || now - lastCheck < recheckMs)) return false;
    checkedOnce = true;
    lastCheck = now;
    const report = derive(runDir);
    if (report?.status === 'ABANDONED') {
      push({ kind: 'abandoned', report });
      return true;
    }
    // A run with no leg in its stream that is settled anyway (a snapshot alone says so).
    return !fold.started && report !== undefined && (report.status === 'PAUSED' || report.status === 'PASS' || report.status === 'FAIL');
  };

  const follower = followStream(
    join(runDir, EVENTS_FILE),
    {
      onEvent: (event, offset) => push({ kind: 'event', event, offset }),
      onSkip: (offset) => push({ kind: 'skipped', offset }),
      onNewerSchema: (error) => push({ kind: 'newer-schema', error }),
      onChunk: drained,
      async onCaughtUp(fold, idleMs) {
        await drained();
        if (stop.signal.aborted) return true;
        return shouldEnd(fold, idleMs);
      },
    },
    {
      signal: stop.signal,
      wakeups,
      ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
      // With a watch, the timer is only the safety net; without one, it is the poll.
      toldPollMs: Math.min(recheckMs, 1000),
    },
  ).then(
    () => {
      ended = true;
      toConsumer();
    },
    (error: unknown) => {
      failure = { error };
      ended = true;
      toConsumer();
    },
  );

  try {
    for (;;) {
      if (outer?.aborted) throw aborted();
      const item = queue.shift();
      if (item !== undefined) {
        if (queue.length === 0) toProducer();
        yield item;
        continue;
      }
      if (ended) {
        if (failure !== undefined) throw failure.error;
        return;
      }
      await new Promise<void>((r) => {
        wakeConsumer = r;
        // An abort wakes the consumer too, so it can throw at once.
        if (stop.signal.aborted) r();
      });
    }
  } finally {
    stop.abort();
    outer?.removeEventListener('abort', onOuterAbort);
    await follower; // the file is closed before the iterator settles
  }
}
