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
 */
import { lineTooLong, MAX_LINE_BYTES, parseLine, type StreamEvent } from '../contract/events.js';
import type { StreamFold } from '../contract/fold.js';

const NL = 0x0a;

/** Receives each complete line: its bytes are `buf[start, end)` and it starts at `offset` in the file. */
export type LineSink = (buf: Buffer, start: number, end: number, offset: number) => void;

/** Cuts chunks of a file, read in order, into lines. */
export class LineSplitter {
  private pending: Buffer[] = [];
  private pendingLen = 0;
  private lineStart: number;

  /** `from` is the file offset of the first byte that will be pushed. */
  constructor(
    private readonly path: string,
    private readonly sink: LineSink,
    from = 0,
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
    for (;;) {
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
