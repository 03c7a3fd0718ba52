/**
 * Splitting the stream's bytes into lines (CONTRACT §2.2), for every reader
 * that reads forward: the whole-file reader, the tail reader once it has
 * found where the last leg starts, and the follower.
 *
 * Invariants:
 * - A line ends at `\n`; its start offset in the file is reported with it.
 * - No more than one line (content plus one `\r`, at most 1 MiB + 1 byte)
 *   is ever held; a longer one throws `ELINETOOLONG` as soon as it is seen,
 *   before it is ever joined.
 * - An unterminated final line is held back until {@link LineSplitter.end}:
 *   the whole-file reader counts it (a writer that crashed mid-line leaves
 *   one); the follower never calls `end`, so it waits for the newline.
 * - With a `junk` callback, complete lines that hold neither `"event"` nor a
 *   backslash — lines that cannot be events (contract/events.ts EVENT_KEY) —
 *   are counted in bulk and reported to it instead of the sink, one count
 *   per run of them; this is what keeps 200 MB of junk lines a byte scan
 *   rather than tens of millions of calls. Every other line reaches the sink
 *   whole, in order.
 */
import { EVENT_KEY, lineTooLong, MAX_LINE_BYTES, parseLine, type StreamEvent } from '../contract/events.js';
import type { StreamFold } from '../contract/fold.js';

const NL = 0x0a;
const BACKSLASH = 0x5c;

/** Receives each complete line: its bytes are `buf[start, end)` and it starts at `offset` in the file. */
export type LineSink = (buf: Buffer, start: number, end: number, offset: number) => void;

/** Cuts chunks of a file, read in order, into lines. */
export class LineSplitter {
  private pending: Buffer[] = [];
  private pendingLen = 0;
  private lineStart: number;

  /** `from` is the file offset of the first byte that will be pushed. */
  /**
   * `junk`, when given, receives the number of lines skipped in bulk (see
   * the module comment); it is called in order with the sink's lines.
   */
  constructor(
    private readonly path: string,
    private readonly sink: LineSink,
    from = 0,
    private readonly junk?: (count: number) => void,
  ) {
    this.lineStart = from;
  }

  /** Offset of the first byte not yet delivered as part of a line. */
  get undelivered(): number {
    return this.lineStart;
  }

  /** Takes the next `chunk`, which starts at file offset `pos`. */
  push(chunk: Buffer, pos: number): void {
    const n = chunk.length;
    let i = 0;
    // Bulk skipping needs every line inside the chunk to be under the cap, which a chunk no longer than the cap ensures.
    const bulk = this.junk !== undefined && n <= MAX_LINE_BYTES;
    // Next position at or after which `"event"` / a backslash occurs (n: none), found lazily and reused.
    let nextKey = -1;
    let nextEsc = -1;
    for (;;) {
      if (bulk && this.pendingLen === 0) {
        if (nextKey < i) nextKey = indexOrEnd(chunk, EVENT_KEY, i);
        if (nextEsc < i) nextEsc = indexOrEnd(chunk, BACKSLASH, i);
        const cand = Math.min(nextKey, nextEsc);
        // Complete lines wholly before the first candidate cannot be events: count them.
        const lastNl = cand > i ? chunk.lastIndexOf(NL, cand - 1) : -1;
        if (lastNl >= i) {
          this.junk(countNewlines(chunk, i, lastNl + 1));
          i = lastNl + 1;
          this.lineStart = pos + i;
        }
      }
      const nl = chunk.indexOf(NL, i);
      if (nl < 0) {
        if (i < n) {
          this.pending.push(Buffer.from(chunk.subarray(i, n)));
          this.pendingLen += n - i;
          // Content plus at most one '\r' may not exceed the cap.
          if (this.pendingLen > MAX_LINE_BYTES + 1) throw lineTooLong(this.path, this.lineStart);
        }
        return;
      }
      if (this.pendingLen === 0) {
        this.sink(chunk, i, nl, this.lineStart);
      } else {
        this.pending.push(chunk.subarray(i, nl));
        const whole = Buffer.concat(this.pending, this.pendingLen + (nl - i));
        this.pending = [];
        this.pendingLen = 0;
        this.sink(whole, 0, whole.length, this.lineStart);
      }
      i = nl + 1;
      this.lineStart = pos + i;
    }
  }

  /** The file ended: a final line without `\n` is delivered too. */
  end(): void {
    if (this.pendingLen === 0) return;
    const whole = Buffer.concat(this.pending, this.pendingLen);
    this.pending = [];
    this.pendingLen = 0;
    this.sink(whole, 0, whole.length, this.lineStart);
  }
}

/**
 * The number of `\n` bytes in `buf[start, end)`. Four bytes per step
 * (a zero-byte test on the word XOR "\n\n\n\n"), since it runs over every
 * byte of a junk stream.
 */
export function countNewlines(buf: Buffer, start: number, end: number): number {
  let count = 0;
  let k = start;
  while (k < end && ((buf.byteOffset + k) & 3) !== 0) if (buf[k++] === NL) count++;
  const words = (end - k) >> 2;
  if (words > 0) {
    const u = new Uint32Array(buf.buffer, buf.byteOffset + k, words);
    for (let j = 0; j < words; j++) {
      const x = (u[j] as number) ^ 0x0a0a0a0a;
      // High bit of each byte set exactly where that byte of x is zero.
      const zero = ~(((x & 0x7f7f7f7f) + 0x7f7f7f7f) | x | 0x7f7f7f7f);
      count += Math.imul((zero >>> 7) & 0x01010101, 0x01010101) >>> 24;
    }
    k += words * 4;
  }
  while (k < end) if (buf[k++] === NL) count++;
  return count;
}

/** First index of `what` in `buf` at or after `from`, or `buf.length` when there is none. */
function indexOrEnd(buf: Buffer, what: Buffer | number, from: number): number {
  const at = buf.indexOf(what, from);
  return at < 0 ? buf.length : at;
}

/** Callbacks around the fold, for readers that show more than its result. */
export interface FoldHooks {
  /** Called with every event of the right shape, in file order, after it is folded. */
  onEvent?: (ev: StreamEvent, offset: number) => void;
  /** Called with the start offset of every skipped line. */
  onSkip?: (offset: number) => void;
}

/**
 * A {@link LineSink} that parses each line under CONTRACT §2.2 and applies
 * it to `fold` — the one path from bytes to fold state.
 */
export function foldLines(fold: StreamFold, path: string, hooks: FoldHooks = {}): LineSink {
  const { onEvent, onSkip } = hooks;
  return (buf, start, end, offset) => {
    const ev = parseLine(buf, start, end, path, offset);
    if (ev === null) {
      fold.skip();
      onSkip?.(offset);
      return;
    }
    fold.apply(ev, offset);
    onEvent?.(ev, offset);
  };
}
