/**
 * Reading the stream's last leg from its end (CONTRACT §2.5): the answer
 * every status is derived from, at a cost that does not follow the length of
 * the run's history, and that, inside a long last leg, is a byte search
 * rather than a JSON parse of every line.
 *
 * It works in two steps, so that the leg rules stay in the one fold:
 * 1. Walk backward over *candidate lines* only, found by a byte search for
 *    `n_st`, `n_fi`, `te_pa`, `\u005`, `\u006` and `\u007`. A line that holds
 *    none of them cannot be a `run_started`, `run_finished` or `gate_paused`
 *    event: those words are letters and `_`, which JSON can spell only
 *    literally or as a `\u` escape of U+005F–U+0075 (NEEDLES, below). Each
 *    candidate line is parsed; the walk stops at the restart
 *    point: the last `run_started` when a `run_finished` follows it (the leg
 *    is closed); while the last leg is open, the nearest earlier
 *    `run_started` whose leg was closed (its outcome is the run's
 *    `lastOutcome`), or the file's start.
 * 2. Fold forward with the same {@link StreamFold} the whole-file reader
 *    uses: the leg events the walk found, in file order, and then every line
 *    of the *dense region* at the end, parsed one by one.
 *
 * Why this equals the whole-file fold: the last-leg facts other than the
 * paused gates depend only on the `run_started` and `run_finished` events
 * from the restart point on, and a fold started at any `run_started` reaches
 * the same state for them; the walk finds every such event (step 1's
 * argument). The paused gates depend on the node events after the last
 * start; the dense region begins no later than the earliest `gate_paused`
 * after that start, so every node event that can decide a gate is folded.
 * The dense region is also at least the lines from the restart point when
 * those lie within the last {@link DENSE_BYTES} of the file, so a short last
 * leg is parsed whole; only a longer one is searched instead of parsed. A leg closed `passed` or `failed` is not searched for past the last
 * {@link CLOSED_LEG_BYTES} (CONTRACT §2.5 rule 7): those bytes are folded
 * inside a leg taken as opened before them, which equals the forward fold
 * unless the last finish closes nothing (a duplicate or lone finish). The
 * readers can differ otherwise only where the forward fold refuses the
 * stream for a line the tail did not parse (over the cap, newer schema), and
 * in the skipped-line count, which covers the dense region only
 * (`from`..`size`). test/stream-property.test.ts checks all of this over
 * generated streams, long legs included.
 */
import { lineTooLong, MAX_LINE_BYTES, parseLine, type StreamEvent } from '../contract/events.js';
import { StreamFold, type LastLeg } from '../contract/fold.js';
import { lastMatch } from '../kernel/bytesearch.js';
import { closeQuietly, type OpenFile } from '../kernel/open.js';
import type { RunFileFacts } from '../kernel/runfiles.js';
import { foldRangeSteps, openStream, readStreamBytes, shrank, type Steps } from './stream.js';
import { foldLines, LineSplitter, type FoldHooks } from './lines.js';

const NL = 0x0a;
const FIRST_TAIL_CHUNK = 16 * 1024;
const MAX_TAIL_CHUNK = 1024 * 1024;
const FOLD_CHUNK = 64 * 1024;
/**
 * The dense region is never shorter than the lines from the restart point
 * that start within this many bytes of the end (or from the line holding
 * that byte). A constant, not a chunk size, so the answer never depends on
 * how the file was read.
 */
export const DENSE_BYTES = 16 * 1024;
/**
 * How far back from the end the walk searches for the `run_started` of a
 * closed last leg (CONTRACT §2.5 rule 7): past it, a leg closed by a
 * `run_finished` (outcome not `paused`) is taken as started before these
 * bytes, so a closed leg costs the same whatever its length. The only streams
 * this answers differently from the whole-file fold are those whose last
 * `run_finished` closes nothing (a duplicate or lone finish) with no leg event
 * in its last 32 KiB before it; a leg it closes reads the same. A constant,
 * not a chunk size, so the answer never depends on how the file was read.
 */
export const CLOSED_LEG_BYTES = 32 * 1024;
/** {@link BackScan.prevCandidate}'s answer when no needle lies between its floor and its limit. */
const BOUND = -2;
/**
 * Byte strings one of which every candidate line holds (CONTRACT §2.5 rule
 * 2): `run_started`, `run_finished`, `gate_paused` spelled literally contain
 * the first three, and any other spelling escapes one of their letters or
 * `_` (U+005F–U+0075), which JSON writes `\u005X`, `\u006X` or `\u007X`.
 * Other escapes (a terminal's `\u001b`, a `\u2019` from an ASCII-only
 * encoder) make no candidate, so prose full of them costs a search, not a
 * parse per line. Searched all at once by the addon's `lastMatch` (one pass,
 * several GB/s), packed as [length][bytes]….
 */
const NEEDLES = ['n_st', 'n_fi', 'te_pa', '\\u005', '\\u006', '\\u007'].map((s) => Buffer.from(s, 'latin1'));
const PACKED = Buffer.concat(NEEDLES.flatMap((n) => [Buffer.from([n.length]), n]));
/**
 * A search for the newline that ends or begins a line outside the windows
 * reads {@link NL_STEP_FIRST} bytes, doubling up to {@link NL_STEP_MAX}: a
 * line is usually a few hundred bytes, and may be up to the line cap.
 */
const NL_STEP_FIRST = 4 * 1024;
const NL_STEP_MAX = 64 * 1024;
/** Bytes a window keeps beyond its chunk, so a needle that crosses a chunk boundary is still seen. */
const CARRY = Math.max(...NEEDLES.map((n) => n.length)) - 1;
/**
 * Read buffers: one for the file's last chunk, one for the line ends looked
 * for outside the windows, and one for the windows of a long walk, each read into the buffer the last one was (one buffer the
 * size of the largest window stays in the CPU's cache between reads; two
 * taking turns would not), with the few bytes it keeps of the last saved
 * aside first (`carry`). The synchronous readers share one set: they run to
 * the end without yielding, call nothing that could re-enter them, and no
 * result refers to the buffers.
 */
class Buffers {
  private tail = Buffer.alloc(0);
  private window = Buffer.alloc(0);
  private steps = Buffer.alloc(0);
  readonly carry = Buffer.alloc(CARRY);

  /** The buffer a search for a line's end reads into ({@link NL_STEP_MAX} bytes), made once: memory the kernel has mapped already. */
  step(): Buffer {
    if (this.steps.length === 0) this.steps = Buffer.allocUnsafe(NL_STEP_MAX);
    return this.steps;
  }

  get(which: 'tail' | 'window', len: number): Buffer {
    const cur = which === 'tail' ? this.tail : this.window;
    if (cur.length >= len) return cur.subarray(0, len);
    const grown = Buffer.allocUnsafe(which === 'tail' ? Math.max(len, FIRST_TAIL_CHUNK) : MAX_TAIL_CHUNK + CARRY);
    if (which === 'tail') this.tail = grown;
    else this.window = grown;
    return grown.subarray(0, len);
  }
}
/** The synchronous readers' buffers (a {@link TailStepper}, which pauses between reads, has its own). */
const shared = new Buffers();
/** Leg events kept from the walk; beyond this the tail folds every line from the restart point instead. */
const MAX_KEPT = 1024;

/** What {@link readLastLeg} found, and how much of the file it consulted. */
export interface TailFacts {
  /** The last leg, folded by the same rules as a whole-file read (they agree by construction). */
  leg: LastLeg;
  /** Lines skipped among those parsed from `from` to `size` (not the whole file's count). */
  skippedLines: number;
  /**
   * Byte offset where the dense region begins: every line from here to
   * `size` was parsed. Before it, only lines a byte search marked as
   * possible leg events were.
   */
  from: number;
  /** The stream's size when it was opened. */
  size: number;
}

/** Options for {@link readLastLeg}. */
export interface ReadLastLegOptions {
  /** First read size from the end (default 16 KiB; later reads double up to 1 MiB). A test seam. */
  chunkBytes?: number;
  /** A descriptor of the run directory: the stream is opened relative to it (kernel/dirfd.ts). */
  at?: number;
}

/** The file's identity and size when a tail was read: unchanged means not one byte was written since. */
interface Identity {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

/** Facts → the identity of the file they were read from (none for a missing stream). */
const identities = new WeakMap<TailFacts, Identity | null>();

function identityOf(file: OpenFile): Identity {
  const st = file.stats;
  return { dev: st.dev, ino: st.ino, size: file.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs };
}

function sameIdentity(a: Identity, b: Identity): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs;
}

/**
 * A backward walk over a file of `size` bytes in windows: a chunk plus
 * {@link CARRY} bytes of the chunk after it. The first window (the file's
 * last bytes) is kept for the dense fold.
 */
class BackScan {
  /** The current window holds bytes [winStart, winEnd) of the file; a needle may start below `chunkEnd`. */
  win: Buffer;
  winStart: number;
  winEnd: number;
  chunkEnd: number;
  /** The first window, [tailStart, size). */
  readonly tail: Buffer;
  readonly tailStart: number;
  /** Bytes read from the file so far (not counting `pre`). */
  bytesRead = 0;
  private chunk: number;

  /** `pre`, when given, holds the file's last min(size, firstChunk) bytes already (kernel/runfiles.ts). */
  constructor(
    private readonly fd: number,
    private readonly size: number,
    private readonly path: string,
    firstChunk: number,
    private readonly bufs: Buffers,
    pre?: Buffer,
  ) {
    this.chunk = firstChunk;
    const len = Math.min(size, firstChunk);
    this.tailStart = size - len;
    if (pre === undefined) {
      this.tail = bufs.get('tail', len);
      this.read(this.tail, len, this.tailStart);
    } else {
      this.tail = pre;
    }
    this.win = this.tail;
    this.winStart = this.tailStart;
    this.winEnd = size;
    this.chunkEnd = size;
  }

  private read(buf: Buffer, len: number, at: number): void {
    if (readStreamBytes(this.fd, buf, len, at, this.path) !== len) throw shrank(this.path);
    this.bytesRead += len;
  }

  /** Moves the window to the chunk before it, reading nothing below `floor`; false at the file's start or the floor. */
  private back(floor: number): boolean {
    if (this.winStart <= floor) return false;
    this.chunk = Math.min(this.chunk * 2, MAX_TAIL_CHUNK);
    const add = Math.min(this.winStart - floor, this.chunk);
    const keep = Math.min(CARRY, this.winEnd - this.winStart);
    // The window's first bytes end the next one; it is read into the same buffer, so they are saved first.
    const carry = this.bufs.carry;
    this.win.copy(carry, 0, 0, keep);
    const next = this.bufs.get('window', add + keep);
    this.read(next, add, this.winStart - add);
    carry.copy(next, add, 0, keep);
    this.chunkEnd = this.winStart;
    this.winStart -= add;
    this.winEnd = this.chunkEnd + keep;
    this.win = next;
    return true;
  }

  /**
   * The greatest file offset below `limit` where a needle starts, or -1 (none
   * in the file). With a `floor` above 0, a needle below it is not looked
   * for, nor any byte below it read: {@link BOUND} when none lies in
   * [floor, limit). Pauses after each window read.
   */
  *prevCandidate(limit: number, floor = 0): Steps<number> {
    for (;;) {
      const end = Math.min(limit, this.chunkEnd) - this.winStart;
      if (end > 0) {
        const i = lastMatch(this.win, end, PACKED);
        if (i >= 0) return this.winStart + i >= floor ? this.winStart + i : BOUND;
      }
      if (!this.back(floor)) return floor > 0 ? BOUND : -1;
      yield;
    }
  }

  /** Offset of the last `\n` below `pos` (-1: none, the line starts the file). Throws past the line cap. Pauses after each read. */
  *nlBefore(pos: number): Steps<number> {
    let at = pos;
    // The current window, then the first one, when they hold the byte before `pos`.
    for (const [buf, start] of [[this.win, this.winStart], [this.tail, this.tailStart]] as const) {
      if (pos - 1 >= start && pos - 1 < start + buf.length) {
        const i = buf.lastIndexOf(NL, pos - 1 - start);
        if (i >= 0) return start + i;
        at = start;
        break;
      }
    }
    const step = this.bufs.step();
    for (let want = NL_STEP_FIRST; at > 0; want = Math.min(want * 2, step.length)) {
      if (pos - at > MAX_LINE_BYTES + 1) throw lineTooLong(this.path, at);
      const len = Math.min(at, want);
      this.read(step, len, at - len);
      const i = step.subarray(0, len).lastIndexOf(NL);
      if (i >= 0) return at - len + i;
      at -= len;
      yield;
    }
    return -1;
  }

  /** Offset of the first `\n` at or after `pos` (`size`: none). Throws past the line cap from `lineStart`. Pauses after each read. */
  *nlFrom(pos: number, lineStart: number): Steps<number> {
    let at = pos;
    if (pos >= this.winStart && pos < this.winEnd) {
      const i = this.win.indexOf(NL, pos - this.winStart);
      if (i >= 0) return this.winStart + i;
      at = this.winEnd;
    }
    const step = this.bufs.step();
    for (let want = NL_STEP_FIRST; at < this.size; want = Math.min(want * 2, step.length)) {
      if (at - lineStart > MAX_LINE_BYTES + 1) throw lineTooLong(this.path, lineStart);
      const len = Math.min(this.size - at, want);
      this.read(step, len, at);
      const i = step.subarray(0, len).indexOf(NL);
      if (i >= 0) return at + i;
      at += len;
      yield;
    }
    return this.size;
  }

  /** The bytes [s, e) of the file, from the window when it holds them. */
  bytes(s: number, e: number): { buf: Buffer; start: number } {
    if (s >= this.winStart && e <= this.winEnd) return { buf: this.win, start: s - this.winStart };
    if (s >= this.tailStart) return { buf: this.tail, start: s - this.tailStart };
    const buf = Buffer.allocUnsafe(e - s);
    this.read(buf, e - s, s);
    return { buf, start: 0 };
  }
}

/** What the backward walk found. */
interface Walk {
  /** Where folding may start: a `run_started` (or 0). */
  restart: number;
  /** The earliest `gate_paused` after the last `run_started`, else the size. */
  firstGate: number;
  /** `run_started`/`run_finished` events from the restart point on, newest first; null if there were too many to keep. */
  legEvents: { offset: number; ev: StreamEvent }[] | null;
  /** Every line the walk parsed, by its start offset, with what parseLine answered (the dense fold does not parse them again). */
  parsed: Map<number, StreamEvent | null>;
  /**
   * The walk stopped at {@link CLOSED_LEG_BYTES}: the last leg event is a
   * `run_finished` (outcome not `paused`), no `run_started` follows the
   * bound, and the leg it closes is taken as started before it.
   */
  bounded: boolean;
  /** Where the earliest line the walk parsed starts (the size when it parsed none). */
  lowest: number;
}

function* walk(scan: BackScan, size: number, path: string): Steps<Walk> {
  let legEvents: Walk['legEvents'] = [];
  const parsed = new Map<number, StreamEvent | null>();
  let firstGate = size;
  let sawStart = false;
  let finishAfter = false; // a run_finished lies between this point and the start found after it
  let closing = ''; // the outcome of the earliest run_finished met while no run_started was
  let limit = size;
  let lowest = size;
  const floor = size - CLOSED_LEG_BYTES;
  const done = (restart: number, bounded = false): Walk => ({ restart, firstGate, legEvents, parsed, bounded, lowest });
  // A closed last leg whose start is not in the last CLOSED_LEG_BYTES is not searched for (§2.5 rule 7).
  const bounding = (): boolean => floor > 0 && finishAfter && !sawStart && closing !== 'paused';
  for (;;) {
    const bound = bounding() ? floor : 0;
    const hit = yield* scan.prevCandidate(limit, bound);
    if (hit === BOUND) return done(-1, true);
    if (hit < 0) return done(0);
    const nl = yield* scan.nlBefore(hit);
    const ls = nl + 1;
    const le = yield* scan.nlFrom(hit, ls);
    if (le - ls > MAX_LINE_BYTES + 1) throw lineTooLong(path, ls);
    const { buf, start } = scan.bytes(ls, le);
    const ev = parseLine(buf, start, start + (le - ls), path, ls);
    lowest = ls;
    // Kept only for lines the dense fold could meet again; a long leg's walk may parse many more.
    if (parsed.size < MAX_KEPT) parsed.set(ls, ev);
    if (ev?.event === 'run_finished') {
      finishAfter = true;
      if (!sawStart) closing = typeof ev.outcome === 'string' ? ev.outcome : '';
      if (legEvents !== null && legEvents.push({ offset: ls, ev }) > MAX_KEPT) legEvents = null;
    } else if (ev?.event === 'run_started') {
      sawStart = true;
      if (legEvents !== null && legEvents.push({ offset: ls, ev }) > MAX_KEPT) legEvents = null;
      // Closed last leg, or the nearest closed leg before an open one: fold from here.
      if (finishAfter) return done(ls);
    } else if (ev?.event === 'gate_paused' && !sawStart) {
      firstGate = ls;
    }
    // The file's first line, and no candidate before it: under the bound, as when none is left above it.
    if (ls === 0) return bounding() ? done(-1, true) : done(0);
    limit = ls;
  }
}

/**
 * Folds lines [from, size) of the stream, from the first window when it
 * holds them. A line the walk already parsed (`parsed`, by start offset) is
 * folded from that answer: parseLine is a function of the line's bytes, and
 * the walk's lines and the splitter's have the same bounds (one `\n` to the
 * next).
 */
function* foldDense(scan: BackScan, fd: number, path: string, fold: StreamFold, from: number, size: number, chunkBytes: number, parsed: Map<number, StreamEvent | null>, hooks: FoldHooks): Steps<void> {
  // The current window and the first one hold every byte from `from` when the window ends where the first begins.
  const inWindows = from >= scan.tailStart || (from >= scan.winStart && scan.chunkEnd === scan.tailStart);
  if (inWindows) {
    const parse = foldLines(fold, path, hooks);
    const sink = (buf: Buffer, start: number, end: number, offset: number): void => {
      const known = parsed.get(offset);
      if (known === undefined) {
        parse(buf, start, end, offset);
      } else if (known === null) {
        fold.skip();
      } else {
        fold.apply(known, offset);
        hooks.onEvent?.(known, offset);
      }
    };
    const lines = new LineSplitter(path, sink, from);
    if (from < scan.tailStart) lines.push(scan.win.subarray(from - scan.winStart, scan.tailStart - scan.winStart), from);
    const at = Math.max(from, scan.tailStart);
    lines.push(scan.tail.subarray(at - scan.tailStart), at);
    lines.end();
    return;
  }
  yield* foldRangeSteps(fd, path, fold, from, size, chunkBytes, hooks, (n) => {
    scan.bytesRead += n;
  });
}

/** Start offsets and parse answers of the lines {@link tailOfWhole} visits, newest first; reused (it is synchronous and not re-entered). */
const wholeStarts: number[] = [];
const wholeEvents: (StreamEvent | null)[] = [];

/** Whether line `buf[s, e)` holds a needle: the lines the backward walk parses. */
function isCandidate(buf: Buffer, s: number, e: number): boolean {
  for (const needle of NEEDLES) {
    const i = buf.indexOf(needle, s);
    if (i >= 0 && i < e) return true;
  }
  return false;
}

/**
 * {@link tailOf} for a stream whose `size` bytes are all in `buf` and no
 * more than {@link DENSE_BYTES}: then the dense region is every line from
 * the restart point, so every line the walk would consult is parsed anyway,
 * and the same answer comes from one pass without the byte search. Lines
 * are parsed newest first until the restart point (the same rule as
 * {@link walk}: only `run_started` and `run_finished` decide it, and a line
 * without a needle cannot be either), then folded oldest first. The same
 * error, too: the walk parses the candidate lines first, so a candidate that
 * throws is thrown at once; a non-candidate line's error is what the dense
 * fold would have met first, the oldest of them, thrown after the walk.
 * The answer is the general path's (test/stream-property.test.ts compares
 * them over generated streams).
 */
function tailOfWhole(buf: Buffer, size: number, path: string): Tailed {
  const starts = wholeStarts;
  const events = wholeEvents;
  let n = 0;
  let deferred: { error: unknown } | undefined;
  let finishAfter = false;
  // The last line ends at the final '\n', or at the end of the file when it has none.
  let end = buf[size - 1] === NL ? size - 1 : size;
  try {
    for (;;) {
      const ls = end > 0 ? buf.lastIndexOf(NL, end - 1) + 1 : 0;
      let ev: StreamEvent | null;
      try {
        ev = parseLine(buf, ls, end, path, ls);
      } catch (err) {
        if (isCandidate(buf, ls, end)) throw err;
        deferred = { error: err };
        ev = null;
      }
      starts[n] = ls;
      events[n] = ev;
      n++;
      if (ev?.event === 'run_finished') finishAfter = true;
      else if (ev?.event === 'run_started' && finishAfter) break;
      if (ls === 0) break;
      end = ls - 1;
    }
    if (deferred !== undefined) throw deferred.error;
    const fold = new StreamFold();
    let atStart = 0;
    for (let k = n - 1; k >= 0; k--) {
      const ev = events[k] as StreamEvent | null;
      if (ev === null) {
        fold.skip();
      } else {
        if (ev.event === 'run_started') atStart = fold.skippedLines;
        fold.apply(ev, starts[k] as number);
      }
    }
    return { facts: { leg: fold.lastLeg(), skippedLines: fold.skippedLines, from: starts[n - 1] as number, size }, fold, skipsAfterStart: fold.skippedLines - atStart };
  } finally {
    // Keep no event alive past this call.
    events.length = 0;
  }
}

/**
 * What a tail read ends with: the facts, the fold they came from, and the
 * skipped lines counted after the last `run_started` it folded (all of
 * `skippedLines` when it folded none). The fold is exact for the last leg
 * and the paused gates, and for whatever is appended later; its node map
 * and leg count cover only what it folded (live/engine.ts folds appends into
 * it).
 */
interface Tailed {
  facts: TailFacts;
  fold: StreamFold;
  skipsAfterStart: number;
}

/**
 * The tail read of CONTRACT §2.5 as a sequence of steps: it pauses (yields)
 * after every read from the file, so that a caller can bound the bytes read
 * per turn of its event loop ({@link TailStepper}); {@link drain} runs it to
 * the end at once for the synchronous readers. One code path for both.
 */
function* tailSteps(scan: BackScan, fd: number, size: number, path: string, firstChunk: number): Steps<Tailed> {
  const fold = new StreamFold();
  if (scan.tailStart === 0 && size <= DENSE_BYTES) return tailOfWhole(scan.tail, size, path);
  const { restart, firstGate, legEvents, parsed, bounded, lowest } = yield* walk(scan, size, path);
  let atStart = 0;
  const hooks: FoldHooks = {
    onEvent: (ev) => {
      if (ev.event === 'run_started') atStart = fold.skippedLines;
    },
  };
  let from = restart;
  if (bounded) {
    // A closed leg that started before the last CLOSED_LEG_BYTES: every line from the first one that
    // starts past the bound (or from the earliest line the walk parsed, when that one crosses it) is
    // folded, inside a leg opened before them (§2.5 rule 7).
    const bound = size - CLOSED_LEG_BYTES;
    from = Math.min(lowest, (yield* scan.nlFrom(bound, bound)) + 1);
    fold.openedBefore();
  } else if (legEvents !== null && restart < size - DENSE_BYTES) {
    // A long last leg: parse densely only the last lines and what the gates need.
    const edge = (yield* scan.nlBefore(size - DENSE_BYTES)) + 1;
    from = Math.min(firstGate, Math.max(restart, edge));
    for (let i = legEvents.length - 1; i >= 0; i--) {
      const { offset, ev } = legEvents[i] as { offset: number; ev: StreamEvent };
      if (offset >= restart && offset < from) fold.apply(ev, offset);
    }
  }
  yield* foldDense(scan, fd, path, fold, from, size, Math.min(FOLD_CHUNK, Math.max(firstChunk, 4096)), parsed, hooks);
  return { facts: { leg: fold.lastLeg(), skippedLines: fold.skippedLines, from, size }, fold, skipsAfterStart: fold.skippedLines - atStart };
}

/** Runs steps to the end without pausing. */
function drain<T>(steps: Steps<T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done === true) return r.value;
  }
}

function tailOf(file: { fd: number; size: number }, path: string, firstChunk: number, pre?: Buffer): TailFacts {
  const { fd, size } = file;
  if (size === 0) return { leg: new StreamFold().lastLeg(), skippedLines: 0, from: 0, size: 0 };
  return drain(tailSteps(new BackScan(fd, size, path, firstChunk, shared, pre), fd, size, path, firstChunk)).facts;
}

/**
 * Finds the last leg by reading `eventsPath` from its end. Equal to the
 * whole-file fold's leg facts (without `legs`) whenever that fold can read
 * the stream, except for a closed last leg that began more than 32 KiB
 * (`CLOSED_LEG_BYTES`) before the end (CONTRACT §2.5 rule 7): its start's
 * offset, phase and command are not known (`legOffset` -1 with `started`
 * true), and a last `run_finished` there is taken as closing a leg. A
 * missing file means "no legs". Throws StreamError if a line it parses is
 * over the cap or of a newer schema, or the file is not a readable regular
 * file.
 */
export function readLastLeg(eventsPath: string, options: ReadLastLegOptions = {}): TailFacts {
  const firstChunk = Math.max(1, Math.floor(options.chunkBytes ?? FIRST_TAIL_CHUNK));
  const file = openStream(eventsPath, options.at);
  if (file === undefined) {
    const facts = { leg: new StreamFold().lastLeg(), skippedLines: 0, from: 0, size: 0 };
    identities.set(facts, null);
    return facts;
  }
  try {
    const facts = tailOf(file, eventsPath, firstChunk);
    identities.set(facts, identityOf(file));
    return facts;
  } finally {
    closeQuietly(file.fd);
  }
}

/** What a missing stream yields: no legs (and, for a re-read, the identity "no file"). */
export function noStreamFacts(): TailFacts {
  const facts = { leg: new StreamFold().lastLeg(), skippedLines: 0, from: 0, size: 0 };
  identities.set(facts, null);
  return facts;
}

/**
 * The stream as kernel/runfiles.ts read it: its last bytes (`buf[0, bytes)`
 * from offset `at`), its identity, and its descriptor when it is longer than
 * those (the caller closes it), or -1 when `buf` holds the whole file.
 */
export type PreReadStream = Omit<Extract<RunFileFacts, { kind: 'read' }>, 'kind'>;

/**
 * {@link readLastLeg} over a stream whose last {@link FIRST_TAIL_BYTES} (or
 * fewer: the whole file) were already read, in the same call that opened
 * the run directory (kernel/runfiles.ts). The same answer as readLastLeg
 * would give for the file open as `pre.fd` with that size: the first window
 * is the bytes given, and any further read goes through `pre.fd`. Does not
 * close `pre.fd`. Throws StreamError as readLastLeg does.
 */
export function readLastLegFrom(eventsPath: string, pre: PreReadStream): TailFacts {
  const len = Math.min(pre.size, FIRST_TAIL_CHUNK);
  // A short read is a stream that shrank between fstat and pread, as BackScan's own read says.
  if (pre.bytes !== len || pre.at !== pre.size - len) throw shrank(eventsPath);
  if (pre.fd < 0 && len < pre.size) throw new Error('internal error: a stream longer than its first window without a descriptor');
  const facts = tailOf({ fd: pre.fd, size: pre.size }, eventsPath, FIRST_TAIL_CHUNK, pre.buf.subarray(0, len));
  identities.set(facts, { dev: pre.dev, ino: pre.ino, size: pre.size, mtimeMs: pre.mtimeMs, ctimeMs: pre.ctimeMs });
  return facts;
}

/** How many of the stream's last bytes the first window holds (what kernel/runfiles.ts should read). */
export const FIRST_TAIL_BYTES = FIRST_TAIL_CHUNK;

/**
 * {@link readLastLeg} again, for read-probe-confirm (CONTRACT §4.3): when the
 * file at `eventsPath` is the one `previous` was read from, with the same
 * size, modification and change times, not one byte was written since, and
 * `previous` is returned without reading; anything else is read afresh.
 * `at`, as in {@link ReadLastLegOptions.at}.
 */
export function rereadLastLeg(eventsPath: string, previous: TailFacts, at?: number): TailFacts {
  const was = identities.get(previous);
  const file = openStream(eventsPath, at);
  if (file === undefined) {
    if (was === null) return previous;
    const facts = { leg: new StreamFold().lastLeg(), skippedLines: 0, from: 0, size: 0 };
    identities.set(facts, null);
    return facts;
  }
  try {
    const now = identityOf(file);
    if (was !== undefined && was !== null && sameIdentity(was, now)) return previous;
    const facts = tailOf(file, eventsPath, FIRST_TAIL_CHUNK);
    identities.set(facts, now);
    return facts;
  } finally {
    closeQuietly(file.fd);
  }
}

/** What a {@link TailStepper} ends with. */
export interface SteppedTail {
  facts: TailFacts;
  /**
   * The fold the facts came from, for a caller that folds what is appended
   * later into it (live/engine.ts): exact for the last leg and the paused
   * gates, then and after any appended lines; its node map and leg count
   * cover only the lines it folded.
   */
  fold: StreamFold;
  /** Skipped lines it counted after the last `run_started` it folded (all of them when it folded none). */
  skipsAfterStart: number;
}

/**
 * {@link readLastLeg} in steps of bounded reads, for a reader that must not
 * hold its event loop (the live engine's first read of a run, CONTRACT
 * §5.5): each {@link step} reads about `budget` bytes and returns, and the
 * answer is the one readLastLeg gives for the same file and size. It owns
 * the descriptor it is given (closed by {@link close}, which every owner
 * calls, whether it finished or not) and its own buffers (the shared ones
 * may be used by a synchronous read between two steps).
 */
export class TailStepper {
  private readonly scan: BackScan | undefined;
  private readonly steps: Steps<Tailed> | undefined;
  private closed = false;

  constructor(
    private readonly file: OpenFile,
    path: string,
  ) {
    const { fd, size } = file;
    if (size > 0) {
      this.scan = new BackScan(fd, size, path, FIRST_TAIL_CHUNK, new Buffers());
      this.steps = tailSteps(this.scan, fd, size, path, FIRST_TAIL_CHUNK);
    }
  }

  /** The file's size when it was opened: the stepper reads nothing at or past it. */
  get size(): number {
    return this.file.size;
  }

  /** The descriptor it reads (open until {@link close}). */
  get fd(): number {
    return this.file.fd;
  }

  /** Bytes read from the file so far (the first window, read when it was made, included). */
  get bytesRead(): number {
    return this.scan?.bytesRead ?? 0;
  }

  private told = 0;

  /** Bytes read since the last call (since it was made, the first time). */
  takeBytesRead(): number {
    const n = this.bytesRead - this.told;
    this.told = this.bytesRead;
    return n;
  }

  /**
   * Reads on until at least `budget` more bytes were read, or the answer is
   * known. More than `budget` only by the last read (at most 1 MiB and a few
   * bytes: a window, a line, or a fold chunk). Throws StreamError as
   * readLastLeg does.
   */
  step(budget: number): SteppedTail | undefined {
    if (this.closed) throw new Error('internal error: a closed TailStepper was stepped');
    if (this.steps === undefined || this.scan === undefined) return this.identified({ facts: { leg: new StreamFold().lastLeg(), skippedLines: 0, from: 0, size: 0 }, fold: new StreamFold(), skipsAfterStart: 0 });
    const until = this.scan.bytesRead + budget;
    for (;;) {
      const r = this.steps.next();
      if (r.done === true) return this.identified(r.value);
      if (this.scan.bytesRead >= until) return undefined;
    }
  }

  /** The facts carry the file's identity, so that {@link rereadLastLeg} reuses them while not a byte was written. */
  private identified(done: SteppedTail): SteppedTail {
    identities.set(done.facts, identityOf(this.file));
    return done;
  }

  /** Closes the descriptor (once). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.steps?.return(undefined as unknown as Tailed);
    closeQuietly(this.file.fd);
  }
}
