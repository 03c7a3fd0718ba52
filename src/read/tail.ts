/**
 * Reading the stream's last leg from its end (CONTRACT §2.3): the answer
 * every status is derived from, at a cost that follows the size of the last
 * leg, not of the stream.
 *
 * It works in two steps, so that the leg rules stay in the one fold:
 * 1. Search backward, line by line, for the restart point: the last
 *    `run_started` when a `run_finished` follows it (the leg is closed);
 *    while the last leg is open, the nearest earlier `run_started` whose leg
 *    was closed (its outcome is the run's `lastOutcome`), or the first start
 *    of all. This step only recognises starts and finishes; a line that
 *    holds no backslash and neither word cannot be one, so it is not parsed.
 * 2. Fold forward from the restart point to the end, with the same
 *    {@link StreamFold} the whole-file reader uses.
 *
 * Why this equals the whole-file fold: the last-leg facts depend only on
 * the events from the last `run_started` on, plus, while that leg is open,
 * the outcome of the nearest earlier closed leg; a fold started at any
 * `run_started` reaches the same state for those facts. The two readers can
 * differ only when the whole-file fold refuses the stream because of a line
 * before the restart point (over the cap, newer schema), which the tail
 * never reads. test/stream-property.test.ts checks this over generated streams.
 */
import { EVENT_KEY, lineTooLong, MAX_LINE_BYTES, mayBeEvent, parseLine } from '../contract/events.js';
import { StreamFold, type LastLeg } from '../contract/fold.js';
import { closeQuietly } from '../kernel/open.js';
import { countNewlines } from './lines.js';
import { foldRange, openStream, readStreamBytes, shrank } from './stream.js';

const NL = 0x0a;
const CR = 0x0d;
const BACKSLASH = 0x5c;
const FIRST_TAIL_CHUNK = 16 * 1024;
const MAX_TAIL_CHUNK = 1024 * 1024;
const FOLD_CHUNK = 64 * 1024;
const STARTED = Buffer.from('run_started');
const FINISHED = Buffer.from('run_finished');

/** What {@link readLastLeg} found, and how much of the file it consulted. */
export interface TailFacts {
  leg: LastLeg;
  /** Lines skipped among those consulted (not the whole file's count). */
  skippedLines: number;
  /** Byte offset of the earliest line consulted: everything from here to `size` was read. */
  from: number;
  /** The stream's size when it was opened. */
  size: number;
  /**
   * False only when the whole file was consulted (`from` 0) and no byte of
   * it could belong to an event (CONTRACT §2.2 rule 3): every line is then
   * skipped, so a whole-file fold would find no legs, no nodes and exactly
   * `skippedLines` skips. True otherwise.
   */
  mayHoldEvents: boolean;
}

/** Options for {@link readLastLeg}. */
export interface ReadLastLegOptions {
  /** First read size from the end (default 16 KiB; later reads double up to 1 MiB). A test seam. */
  chunkBytes?: number;
  /** A descriptor of the run directory: the stream is opened relative to it (kernel/dirfd.ts). */
  at?: number;
}

/** Could `buf[s, e)` be a `run_started` or `run_finished` line? False only when it certainly is not. */
function maybeLegEvent(buf: Buffer, s: number, e: number): boolean {
  const line = buf.subarray(s, e);
  return line.includes(STARTED) || line.includes(FINISHED) || line.includes(BACKSLASH);
}

/**
 * The last occurrence of one pattern before a point, remembered across the
 * backward walk so that each byte is searched once per pattern: the walk
 * only moves down, so an answer stays right until the walk passes it (or,
 * when nothing was found, until the window grows further down).
 */
class LastMatch {
  /** Absolute offset of the match found, or -1. */
  private at = -1;
  /** Window start when it was searched (Infinity: never). */
  private lo = Infinity;

  constructor(private readonly pattern: Buffer) {}

  /** Absolute offset of the last match lying wholly before `end`, or -1; `win` holds bytes from `winStart`. */
  before(win: Buffer, winStart: number, end: number): number {
    if (this.lo !== Infinity && this.at < end && (this.at >= 0 || this.lo <= winStart)) return this.at;
    const from = end - winStart - this.pattern.length;
    const idx = from < 0 ? -1 : win.lastIndexOf(this.pattern, from);
    this.at = idx < 0 ? -1 : winStart + idx;
    this.lo = winStart;
    return this.at;
  }
}

/**
 * Where step 2 starts: `from`, or, when the walk reached the start of a
 * file in which no byte could belong to any event (no `"event"`, no
 * backslash: contract/events.ts EVENT_KEY), the number of lines in it —
 * folding such a file would only skip every line, so it is not read again.
 */
type Restart = { from: number; allJunkLines?: number };

/**
 * Step 1: the offset to fold from. Walks lines from the end of a file of
 * `size` bytes (size > 0).
 */
function restartPoint(fd: number, size: number, path: string, firstChunk: number): Restart {
  let chunk = firstChunk;
  let len = Math.min(size, chunk);
  // The window holds bytes [winStart, winStart + win.length) of the file.
  let winStart = size - len;
  let win = Buffer.allocUnsafe(len);
  let backing = win; // the whole buffer `win` is a view of
  let spare = Buffer.allocUnsafe(0);
  if (readStreamBytes(fd, win, len, winStart, path) !== len) throw shrank(path);
  // Newlines among the bytes read so far (each byte is read once), and whether any could belong to an event.
  let newlines = countNewlines(win, 0, len);
  let mayHoldEvent = false;
  const keyMark = new LastMatch(EVENT_KEY);
  // A file ending in '\n' has no final partial line.
  const lastByte = win[len - 1];
  let lineEnd = lastByte === NL ? size - 1 : size;
  let finishAfter = false; // a run_finished lies between this point and the start found after it
  const marks = [new LastMatch(STARTED), new LastMatch(FINISHED), new LastMatch(Buffer.from([BACKSLASH]))];
  for (;;) {
    // Lines after the last byte that could belong to a start or finish (the
    // three patterns of maybeLegEvent) cannot be either: step over them in
    // one move, never over more than MAX_LINE_BYTES at once, so a line over
    // the cap among them is still met and refused.
    let cand = -1;
    for (const m of marks) cand = Math.max(cand, m.before(win, winStart, lineEnd));
    if (!mayHoldEvent) mayHoldEvent = keyMark.before(win, winStart, lineEnd) >= 0 || (marks[2] as LastMatch).before(win, winStart, lineEnd) >= 0;
    const from = Math.max(cand, winStart, lineEnd - MAX_LINE_BYTES - 1);
    const jumpTo = win.indexOf(NL, from - winStart);
    if (jumpTo >= 0 && winStart + jumpTo < lineEnd) lineEnd = winStart + jumpTo;
    let nlAt: number;
    for (;;) {
      const rel = lineEnd - winStart;
      const idx = rel > 0 ? win.lastIndexOf(NL, rel - 1) : -1;
      if (idx >= 0) {
        nlAt = winStart + idx;
        break;
      }
      if (winStart === 0) {
        nlAt = -1;
        break;
      }
      // The line continues before the window. Content plus one '\r' may not exceed the cap.
      if (rel > MAX_LINE_BYTES + 1) throw lineTooLong(path, lineEnd);
      chunk = Math.min(chunk * 2, MAX_TAIL_CHUNK);
      const add = Math.min(winStart, chunk);
      // Two buffers in turn (the window and the spare), reused as the walk goes down, so
      // a long walk does not allocate (and fault in) fresh memory for every block.
      if (spare.length < add + rel) spare = Buffer.allocUnsafe(Math.max(add + rel, 2 * spare.length));
      const nextBacking = spare;
      const next = nextBacking.subarray(0, add + rel);
      if (readStreamBytes(fd, next, add, winStart - add, path) !== add) throw shrank(path);
      newlines += countNewlines(next, 0, add);
      win.copy(next, add, 0, rel);
      spare = backing;
      backing = nextBacking;
      win = next;
      winStart -= add;
    }
    const lineStart = nlAt + 1;
    const s = lineStart - winStart;
    let e = lineEnd - winStart;
    if (e > s && win[e - 1] === CR) e--;
    if (e - s > MAX_LINE_BYTES) throw lineTooLong(path, lineStart);
    // The searches above ran before this line was read whole; it is checked here.
    if (!mayHoldEvent) mayHoldEvent = mayBeEvent(win, s, e);
    if (maybeLegEvent(win, s, e)) {
      const ev = parseLine(win, s, e, path, lineStart);
      if (ev?.event === 'run_finished') {
        finishAfter = true;
      } else if (ev?.event === 'run_started') {
        // Closed last leg, or the nearest closed leg before an open one: fold from here.
        if (finishAfter) return { from: lineStart };
      }
    }
    // Reached the start: the whole file was consulted, and is folded.
    if (nlAt < 0) {
      if (mayHoldEvent) return { from: 0 };
      // Every line is one the fold would skip: each newline ends one, and a final partial line is one more.
      return { from: 0, allJunkLines: newlines + (size > 0 && lastByte !== NL ? 1 : 0) };
    }
    lineEnd = nlAt;
    // Keep the window from growing without bound: drop what lies after the next line.
    if (win.length > 4 * MAX_TAIL_CHUNK && lineEnd - winStart < win.length / 2) {
      win = Buffer.from(win.subarray(0, lineEnd - winStart));
      backing = win;
    }
  }
}

/**
 * Finds the last leg by reading `eventsPath` from its end. Equal to the
 * whole-file fold's leg facts (without `legs`) whenever that fold can read
 * the stream. A missing file means "no legs". Throws StreamError if a line it
 * consults is over the cap or of a newer schema, or the file is not a
 * readable regular file.
 */
export function readLastLeg(eventsPath: string, options: ReadLastLegOptions = {}): TailFacts {
  const firstChunk = Math.max(1, Math.floor(options.chunkBytes ?? FIRST_TAIL_CHUNK));
  const fold = new StreamFold();
  const file = openStream(eventsPath, options.at);
  if (file === undefined) return { leg: fold.lastLeg(), skippedLines: 0, from: 0, size: 0, mayHoldEvents: false };
  const { fd, size } = file;
  try {
    if (size === 0) return { leg: fold.lastLeg(), skippedLines: 0, from: 0, size: 0, mayHoldEvents: false };
    const { from, allJunkLines } = restartPoint(fd, size, eventsPath, firstChunk);
    if (allJunkLines !== undefined) fold.skip(allJunkLines);
    else foldRange(fd, eventsPath, fold, from, size, Math.min(FOLD_CHUNK, Math.max(firstChunk, 4096)), {});
    return { leg: fold.lastLeg(), skippedLines: fold.skippedLines, from, size, mayHoldEvents: allJunkLines === undefined };
  } finally {
    closeQuietly(fd);
  }
}
