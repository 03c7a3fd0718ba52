/**
 * Following a live events.jsonl (for `watch`): replay what is there, then
 * deliver each line appended after it, with the same line rules as the
 * other readers (contract/events.ts parseLine, read/lines.ts) and the same fold (StreamFold).
 *
 * Invariants:
 * - Read-only, like every reader: the file is opened O_RDONLY, non-blocking,
 *   no-follow, regular files only, and never created; a missing file is
 *   waited for, not made.
 * - An unterminated final line is held back until its newline arrives, so a
 *   line is never delivered half-written by a live writer.
 * - A line over the 1 MiB cap, or a file that shrinks or is replaced, ends
 *   the follow with a StreamError: nothing read after that can be trusted.
 * - It never blocks the event loop. It looks for appended bytes when told
 *   (`options.wakeups`: the caller's change notification) and otherwise on
 *   a timer (`pollMs`); a wake-up that arrives while it is reading is kept,
 *   never lost.
 */
import { fstatSync, lstatSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { runFilePath } from '../kernel/dirfd.js';
import { StreamError } from '../contract/errors.js';
import { parseLine, type StreamEvent } from '../contract/events.js';
import { StreamFold } from '../contract/fold.js';
import { monotonicMs } from '../kernel/clock.js';
import { closeQuietly } from '../kernel/open.js';
import { LineSplitter } from './lines.js';
import { openStream, readStreamBytes } from './stream.js';

export interface FollowHandlers {
  /** A line of the right shape, after it was folded into `fold`. */
  onEvent(ev: StreamEvent, offset: number, fold: StreamFold): void;
  /** A malformed line that was skipped. */
  onSkip?(offset: number): void;
  /** A line with a newer schema (skipped); reported once per follow. */
  onNewerSchema?(err: StreamError): void;
  /**
   * Called after each pass that reached the end of the file. Return true to
   * stop following. `idleMs` is how long no new line has arrived.
   */
  onCaughtUp(fold: StreamFold, idleMs: number): boolean | Promise<boolean>;
  /**
   * Awaited after each chunk (up to 64 KiB) of lines was delivered, so a
   * consumer slower than the file can hold the reader back instead of
   * letting a long replay pile up in memory.
   */
  onChunk?(): void | Promise<void>;
}

export interface FollowOptions {
  /** How often to look for appended bytes (default 100 ms). */
  pollMs?: number;
  /** Stops the follow when aborted. */
  signal?: AbortSignal;
  /**
   * Lets the caller wake the follower at once (an append announced by the
   * kernel): called once with the function that wakes it; returns the
   * function that stops the caller's wake-ups (called when the follow
   * ends), or undefined when it cannot give any (then `pollMs` applies).
   */
  wakeups?: (wake: () => void) => (() => void) | undefined;
  /** With wake-ups, how often to look anyway, as a safety net (ms, default `pollMs`). */
  toldPollMs?: number;
}

const CHUNK = 64 * 1024;

/** A sleep that a wake-up ends early; a wake-up while awake makes the next sleep return at once. */
class Sleeper {
  private pending = false;
  private wakeNow: (() => void) | undefined;

  wake = (): void => {
    this.pending = true;
    this.wakeNow?.();
  };

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted || this.pending) {
        this.pending = false;
        return resolve();
      }
      const done = (): void => {
        clearTimeout(t);
        this.wakeNow = undefined;
        this.pending = false;
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const t = setTimeout(done, ms);
      this.wakeNow = done;
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}

/**
 * Replays and follows `eventsPath` until `onCaughtUp` returns true or the
 * signal aborts. Resolves with the fold. Rejects with StreamError when the
 * stream becomes unreadable.
 */
export async function followStream(eventsPath: string, handlers: FollowHandlers, options: FollowOptions = {}): Promise<StreamFold> {
  const pollMs = options.pollMs ?? 100;
  const fold = new StreamFold();
  let file: { fd: number; ino: number; dev: number } | undefined;
  let pos = 0;
  // Monotonic (kernel/clock.ts): idle time must grow even when the wall clock is stepped back.
  let lastLineAt = monotonicMs();
  let warnedNewer = false;
  const chunk = Buffer.allocUnsafe(CHUNK);
  const sleeper = new Sleeper();
  const stopWakeups = options.wakeups?.(sleeper.wake);
  const interval = stopWakeups !== undefined ? Math.max(pollMs, options.toldPollMs ?? pollMs) : pollMs;

  const lines = new LineSplitter(eventsPath, (buf, start, end, offset) => {
    lastLineAt = monotonicMs();
    let ev: StreamEvent | null;
    try {
      ev = parseLine(buf, start, end, eventsPath, offset);
    } catch (err) {
      // A follower keeps going past a newer line (and says so once); a line over the cap still ends it.
      if (err instanceof StreamError && err.code === 'ENEWERSCHEMA') {
        fold.skip();
        if (!warnedNewer) {
          warnedNewer = true;
          handlers.onNewerSchema?.(err);
        }
        return;
      }
      throw err;
    }
    if (ev === null) {
      fold.skip();
      handlers.onSkip?.(offset);
      return;
    }
    fold.apply(ev, offset);
    handlers.onEvent(ev, offset, fold);
  });

  try {
    for (;;) {
      if (options.signal?.aborted) return fold;
      if (file === undefined) {
        const opened = openStream(eventsPath);
        if (opened !== undefined) file = { fd: opened.fd, ino: opened.stats.ino, dev: opened.stats.dev };
      }
      if (file !== undefined) {
        const size = fstatSync(file.fd).size;
        if (size < pos) throw new StreamError('events.jsonl shrank while it was followed (it should only ever grow)', 'EREAD', eventsPath);
        while (pos < size) {
          const n = readStreamBytes(file.fd, chunk, Math.min(CHUNK, size - pos), pos, eventsPath);
          if (n === 0) break;
          lines.push(chunk.subarray(0, n), pos);
          pos += n;
          if (handlers.onChunk !== undefined) await handlers.onChunk();
        }
        // The path must still name the file being followed.
        try {
          const now = lstatSync(runFilePath(dirname(eventsPath), basename(eventsPath)));
          if (now.ino !== file.ino || now.dev !== file.dev) throw new StreamError('events.jsonl was replaced while it was followed', 'EREAD', eventsPath);
        } catch (err) {
          if (err instanceof StreamError) throw err;
          throw new StreamError('events.jsonl was removed while it was followed', 'EREAD', eventsPath);
        }
      }
      if (await handlers.onCaughtUp(fold, monotonicMs() - lastLineAt)) return fold;
      await sleeper.sleep(interval, options.signal);
    }
  } finally {
    stopWakeups?.();
    if (file !== undefined) closeQuietly(file.fd);
  }
}
