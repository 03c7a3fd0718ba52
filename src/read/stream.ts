/**
 * The reader of `events.jsonl` (SPEC A.2): one fold that yields the last leg
 * and the per-node states, under every reading rule of the contract.
 *
 * Two readers share one set of rules:
 * - {@link readStream} folds the whole file forward, in bounded chunks. It is
 *   the reference: the last leg, every node's state, every skipped line.
 * - {@link readLastLeg} answers only "what is the last leg?" by reading from
 *   the END of the file, so its cost is the size of the tail it must consult
 *   (the last leg, and the one before it when the last is still open), not the
 *   size of the stream. Every status in runwarden comes from it.
 *
 * The invariant that lets the backward reader stand in for the forward one:
 * the last-leg facts depend only on the lines from the last `run_started`
 * (or the one before it, for `lastOutcome` while a leg is open) to the end.
 * The backward reader applies every rule (line cap, schema, shape) to each
 * line it consults, so on any stream both readers give the same leg facts;
 * they can differ only when the forward fold refuses the stream because of a
 * line the backward reader never needed to read (a corrupt or newer-schema
 * line before the tail). test/feed-property.test.ts checks exactly this over
 * generated streams, at many chunk sizes.
 *
 * Neither reader ever holds more than one line (at most 1 MiB) plus one read
 * chunk in memory, and both open the file read-only, non-blocking, without
 * following a symlink, and read only a regular file.
 */
import type { LegFacts, NodeState, StreamFacts } from '../contract/types.js';
import { closeQuietly, FileReadError, openForRead, readAt } from '../kernel/open.js';

/** The stream schema this version reads; a line with a greater `schema` makes the stream unreadable. */
export const STREAM_SCHEMA = 3;
/** The longest line content (bytes, excluding `\n` and one trailing `\r`) a stream may hold. */
export const MAX_LINE_BYTES = 1_048_576;

const NL = 0x0a;
const CR = 0x0d;
const DEFAULT_CHUNK = 64 * 1024;
const FIRST_TAIL_CHUNK = 16 * 1024;
const MAX_TAIL_CHUNK = 1024 * 1024;

/**
 * Why a stream cannot be read at all.
 * - `ELINETOOLONG`: a line longer than {@link MAX_LINE_BYTES} ("corrupt or foreign").
 * - `ENEWERSCHEMA`: a line whose `schema` is greater than {@link STREAM_SCHEMA}.
 * - `ENOTREGULAR`: the path is a FIFO, directory, symlink, socket or device.
 * - `EREAD`: the kernel refused to open or read it (EACCES, EIO, …).
 */
export type StreamErrorCode = 'ELINETOOLONG' | 'ENEWERSCHEMA' | 'ENOTREGULAR' | 'EREAD';

/** The stream exists but cannot be read; nothing about the run may be derived from it. */
export class StreamError extends Error {
  readonly code: StreamErrorCode;
  readonly path: string;
  /** A byte offset inside the offending line, when a line is to blame. */
  readonly offset: number | undefined;
  constructor(message: string, code: StreamErrorCode, path: string, offset?: number) {
    super(message);
    this.name = 'StreamError';
    this.code = code;
    this.path = path;
    this.offset = offset;
  }
}

/**
 * One event line that has the right shape: an object with an integer
 * `schema` and a string `event`; `ts`, `run_id`, `phase`, `outcome` and
 * `node_id`, when present, are strings; node events carry a non-empty
 * `node_id`. Every other field is passed through untouched.
 */
export type FeedEvent = Record<string, unknown> & {
  schema: number;
  event: string;
  ts?: string;
  run_id?: string;
  phase?: string;
  outcome?: string;
  node_id?: string;
};

/** Events that name a node and therefore must carry a `node_id`. */
const NODE_EVENTS: ReadonlySet<string> = new Set([
  'node_started',
  'node_retried',
  'node_passed',
  'node_failed',
  'gate_paused',
  'gate_approved',
  'gate_rejected',
]);

const OPTIONAL_STRINGS = ['ts', 'run_id', 'phase', 'outcome', 'node_id'] as const;

/** True when `v` is an event line of the right shape (see {@link FeedEvent}). */
function hasEventShape(v: unknown): v is FeedEvent {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const o = v as Record<string, unknown>;
  if (!Number.isInteger(o['schema'])) return false;
  const event = o['event'];
  if (typeof event !== 'string') return false;
  for (const f of OPTIONAL_STRINGS) {
    const x = o[f];
    if (x !== undefined && x !== null && typeof x !== 'string') return false;
  }
  if (NODE_EVENTS.has(event)) {
    const id = o['node_id'];
    if (typeof id !== 'string' || id.length === 0) return false;
  }
  return true;
}

/** Sentinel for a line of the right shape whose schema is newer than ours. */
const NEWER = Symbol('newer');

/** Parses one line's content (no `\n`, no trailing `\r`). Returns null to skip it. */
function parseContent(buf: Buffer, start: number, end: number): FeedEvent | null | typeof NEWER {
  // Cheap rejection of garbage: a JSON object starts with '{' after optional whitespace.
  let i = start;
  while (i < end) {
    const c = buf[i] as number;
    if (c !== 0x20 && c !== 0x09 && c !== CR && c !== NL) break;
    i++;
  }
  if (i >= end || buf[i] !== 0x7b) return null;
  let value: unknown;
  try {
    value = JSON.parse(buf.toString('utf8', start, end));
  } catch {
    return null;
  }
  if (!hasEventShape(value)) return null;
  if (value.schema > STREAM_SCHEMA) return NEWER;
  return value;
}

function tooLong(path: string, offset: number): StreamError {
  return new StreamError(
    `events.jsonl is corrupt or foreign: a line longer than 1 MiB (near byte ${offset})`,
    'ELINETOOLONG',
    path,
    offset,
  );
}

function newer(path: string, offset: number, schema: number): StreamError {
  return new StreamError(
    `events.jsonl was written by a newer version (schema ${schema} at byte ${offset}; this version reads up to ${STREAM_SCHEMA})`,
    'ENEWERSCHEMA',
    path,
    offset,
  );
}

/**
 * Parses one line of a stream under SPEC A.2's rules, for callers that read
 * lines themselves (a follower tailing a live stream). `line` excludes the
 * `\n`; one trailing `\r` is dropped here. Returns the event, or null when the
 * line is to be skipped. Throws StreamError for a line over the cap or a
 * newer schema (`path` and `offset` only label the error).
 */
export function parseEventLine(line: string | Buffer, path = 'events.jsonl', offset = 0): FeedEvent | null {
  const buf = typeof line === 'string' ? Buffer.from(line, 'utf8') : line;
  let end = buf.length;
  if (end > 0 && buf[end - 1] === CR) end--;
  if (end > MAX_LINE_BYTES) throw tooLong(path, offset);
  const r = parseContent(buf, 0, end);
  if (r === NEWER) {
    const schema = (JSON.parse(buf.toString('utf8', 0, end)) as { schema: number }).schema;
    throw newer(path, offset, schema);
  }
  return r;
}

/** A `command` array as a `runwarden exec` leg writes it, or undefined. */
function commandOf(ev: FeedEvent): string[] | undefined {
  const c = ev['command'];
  if (!Array.isArray(c) || c.length === 0) return undefined;
  for (const x of c) if (typeof x !== 'string') return undefined;
  return c as string[];
}

function stringOr(v: unknown, dflt: string): string {
  return typeof v === 'string' ? v : dflt;
}

/**
 * The last-leg facts both readers agree on: {@link LegFacts} without the leg
 * count (which only a whole-file read can know), with `gates` always set.
 */
export type LastLeg = Omit<LegFacts, 'legs' | 'gates'> & { gates: string[] };

/**
 * The forward fold of SPEC A.2, one event at a time, in file order. Exposed
 * so a follower (watch) can keep folding a live stream with the very same
 * rules. State: the last leg (`open`, `started`, `phase`, `lastOutcome`,
 * `legOffset`, `legs`, `command`), node states, and which gates are paused.
 */
export class StreamFold {
  open = false;
  started = false;
  phase = '';
  lastOutcome = '';
  legOffset = -1;
  legs = 0;
  command: string[] | undefined = undefined;
  skippedLines = 0;
  /** Node id → state, in first-seen order. */
  readonly nodes = new Map<string, NodeState>();
  /** Node id → its latest node event, for the paused-gate list. */
  private readonly latest = new Map<string, { event: string; offset: number }>();

  /** Folds one event that starts at byte `offset`. */
  apply(ev: FeedEvent, offset: number): void {
    switch (ev.event) {
      case 'run_started': {
        const phase = stringOr(ev.phase, '');
        // An auto run writes a planning start, then an untagged start in the
        // same leg (SPEC A.2): that second start does not count as a new leg.
        const sameLeg = this.open && this.phase === 'planning' && phase !== 'planning';
        this.open = true;
        this.started = true;
        this.phase = phase;
        this.legOffset = offset;
        if (!sameLeg) this.legs++;
        this.command = commandOf(ev);
        // The earlier leg ended without these nodes: they will never finish.
        for (const [id, state] of this.nodes) if (state === 'running') this.nodes.set(id, 'abandoned');
        return;
      }
      case 'run_finished':
        // A lone or duplicate finish changes nothing.
        if (!this.open) return;
        this.open = false;
        this.lastOutcome = stringOr(ev.outcome, '');
        return;
      case 'node_started':
      case 'node_retried':
        this.node(ev, offset, 'running');
        return;
      case 'node_passed':
        this.node(ev, offset, 'passed');
        return;
      case 'node_failed':
        this.node(ev, offset, 'failed');
        return;
      case 'gate_paused':
        this.node(ev, offset, 'gate-paused');
        return;
      case 'gate_approved':
      case 'gate_rejected':
        // Not a node state of its own (SPEC A.2); it does end the pause.
        this.latest.set(ev.node_id as string, { event: ev.event, offset });
        return;
      default:
        return; // unknown event types are ignored
    }
  }

  /** Counts one skipped line. */
  skip(): void {
    this.skippedLines++;
  }

  private node(ev: FeedEvent, offset: number, state: NodeState): void {
    const id = ev.node_id as string;
    this.nodes.set(id, state);
    this.latest.set(id, { event: ev.event, offset });
  }

  /** Gates whose latest event is a `gate_paused` inside the last leg, oldest first. */
  gates(): string[] {
    const out: { id: string; offset: number }[] = [];
    for (const [id, e] of this.latest) {
      if (e.event === 'gate_paused' && e.offset > this.legOffset) out.push({ id, offset: e.offset });
    }
    return out.sort((a, b) => a.offset - b.offset).map((g) => g.id);
  }

  /** The last leg so far. */
  leg(): LegFacts {
    const leg: LegFacts = {
      open: this.open,
      started: this.started,
      phase: this.phase,
      lastOutcome: this.lastOutcome,
      legOffset: this.legOffset,
      legs: this.legs,
      gates: this.gates(),
    };
    if (this.command !== undefined) leg.command = this.command;
    return leg;
  }

  /** Everything folded so far. */
  facts(): StreamFacts {
    return { leg: this.leg(), nodes: new Map(this.nodes), skippedLines: this.skippedLines };
  }
}

/** Options for {@link readStream}. */
export interface ReadStreamOptions {
  /** Read size in bytes (default 64 KiB). A test seam for chunk boundaries. */
  chunkBytes?: number;
  /** Called with every event of the right shape, in file order, after it is folded. */
  onEvent?: (ev: FeedEvent, offset: number) => void;
  /** Called with the start offset of every skipped line. */
  onSkip?: (offset: number) => void;
}

function openStream(path: string): { fd: number; size: number } | undefined {
  try {
    return openForRead(path, 'events.jsonl');
  } catch (err) {
    if (err instanceof FileReadError) {
      throw new StreamError(err.message, err.problem === 'not-regular' ? 'ENOTREGULAR' : 'EREAD', path);
    }
    throw err;
  }
}

function readChunk(fd: number, buf: Buffer, length: number, position: number, path: string): number {
  try {
    return readAt(fd, buf, 0, length, position, 'events.jsonl');
  } catch (err) {
    if (err instanceof FileReadError) throw new StreamError(err.message, 'EREAD', path);
    throw err;
  }
}

/** An append-only file cannot shrink; if it did, nothing read from it can be trusted. */
function shrank(path: string): StreamError {
  return new StreamError('events.jsonl shrank while it was being read (it should only ever grow)', 'EREAD', path);
}

function emptyFacts(): StreamFacts {
  return new StreamFold().facts();
}

/**
 * Reads `eventsPath` forward, in chunks, and folds every line: the reference
 * reader. A missing file means "no legs". Throws StreamError when the stream
 * cannot be read (over-long line, newer schema, not a regular file, I/O).
 * Reads up to the end of file as it is while reading (a live stream may grow).
 */
export function readStream(eventsPath: string, options: ReadStreamOptions = {}): StreamFacts {
  const chunkBytes = Math.max(1, Math.floor(options.chunkBytes ?? DEFAULT_CHUNK));
  const file = openStream(eventsPath);
  if (file === undefined) return emptyFacts();
  const fold = new StreamFold();
  const { onEvent, onSkip } = options;

  const line = (buf: Buffer, start: number, end: number, offset: number): void => {
    if (end > start && buf[end - 1] === CR) end--;
    if (end - start > MAX_LINE_BYTES) throw tooLong(eventsPath, offset);
    const r = parseContent(buf, start, end);
    if (r === null) {
      fold.skip();
      onSkip?.(offset);
    } else if (r === NEWER) {
      throw newer(eventsPath, offset, (JSON.parse(buf.toString('utf8', start, end)) as { schema: number }).schema);
    } else {
      fold.apply(r, offset);
      onEvent?.(r, offset);
    }
  };

  try {
    const chunk = Buffer.allocUnsafe(chunkBytes);
    let pending: Buffer[] = [];
    let pendingLen = 0;
    let lineStart = 0;
    let pos = 0;
    for (;;) {
      const n = readChunk(file.fd, chunk, chunkBytes, pos, eventsPath);
      if (n === 0) break;
      const view = chunk.subarray(0, n);
      let i = 0;
      for (;;) {
        const nl = view.indexOf(NL, i);
        if (nl < 0) {
          if (i < n) {
            pending.push(Buffer.from(view.subarray(i, n)));
            pendingLen += n - i;
            // Content plus at most one '\r' may not exceed the cap.
            if (pendingLen > MAX_LINE_BYTES + 1) throw tooLong(eventsPath, lineStart);
          }
          break;
        }
        if (pendingLen === 0) {
          line(view, i, nl, lineStart);
        } else {
          pending.push(view.subarray(i, nl));
          const whole = Buffer.concat(pending, pendingLen + (nl - i));
          pending = [];
          pendingLen = 0;
          line(whole, 0, whole.length, lineStart);
        }
        i = nl + 1;
        lineStart = pos + i;
      }
      pos += n;
    }
    if (pendingLen > 0) {
      // A final line without '\n' counts if it parses.
      const whole = Buffer.concat(pending, pendingLen);
      line(whole, 0, whole.length, lineStart);
    }
  } finally {
    closeQuietly(file.fd);
  }
  return fold.facts();
}

/** What {@link readLastLeg} found, and how much of the file it consulted. */
export interface TailFacts {
  leg: LastLeg;
  /** Lines skipped among those consulted (not the whole file's count). */
  skippedLines: number;
  /** Byte offset of the earliest line consulted: everything from here to `size` was read. */
  from: number;
  /** The stream's size when it was opened. */
  size: number;
}

/** Options for {@link readLastLeg}. */
export interface ReadLastLegOptions {
  /** First read size from the end (default 16 KiB; later reads double up to 1 MiB). A test seam. */
  chunkBytes?: number;
}

/**
 * The backward half of the fold. Fed events newest first, it decides the last
 * leg as soon as the lines it has seen determine it:
 * - until the last `run_started` is found, it remembers the earliest
 *   `run_finished` after it (the one that closed the leg) and each node's
 *   latest event (for paused gates);
 * - if that leg is open, `lastOutcome` is the closing outcome of the nearest
 *   earlier leg that was closed, so it keeps going back until it finds one.
 * Lone finishes before the first `run_started` close nothing, exactly as in
 * the forward fold.
 */
class TailFold {
  leg: LastLeg = { open: false, started: false, phase: '', lastOutcome: '', legOffset: -1, gates: [] };
  done = false;
  private seekingLast = true;
  private segFinish: FeedEvent | undefined;
  private readonly latest = new Map<string, { event: string; offset: number }>();

  /** Takes one event, newest first; sets `done` once the leg is decided. */
  take(ev: FeedEvent, offset: number): void {
    if (ev.event === 'run_finished') {
      this.segFinish = ev; // going backward, the last one kept is the earliest
      return;
    }
    if (ev.event === 'run_started') {
      if (this.seekingLast) {
        this.seekingLast = false;
        this.leg.started = true;
        this.leg.legOffset = offset;
        this.leg.phase = stringOr(ev.phase, '');
        const command = commandOf(ev);
        if (command !== undefined) this.leg.command = command;
        if (this.segFinish !== undefined) {
          this.leg.open = false;
          this.leg.lastOutcome = stringOr(this.segFinish.outcome, '');
          this.done = true;
        } else {
          this.leg.open = true;
          this.segFinish = undefined;
        }
      } else if (this.segFinish !== undefined) {
        this.leg.lastOutcome = stringOr(this.segFinish.outcome, '');
        this.done = true;
      } else {
        this.segFinish = undefined;
      }
      return;
    }
    if (this.seekingLast && NODE_EVENTS.has(ev.event)) {
      const id = ev.node_id as string;
      if (!this.latest.has(id)) this.latest.set(id, { event: ev.event, offset });
    }
  }

  /** The answer, once `done` or once the start of the file is reached. */
  result(): LastLeg {
    const gates: { id: string; offset: number }[] = [];
    for (const [id, e] of this.latest) {
      if (e.event === 'gate_paused' && e.offset > this.leg.legOffset) gates.push({ id, offset: e.offset });
    }
    this.leg.gates = gates.sort((a, b) => a.offset - b.offset).map((g) => g.id);
    return this.leg;
  }
}

/**
 * Finds the last leg by reading `eventsPath` from its end: the answer every
 * status is derived from. Equal to `readStream(eventsPath).leg` (without
 * `legs`) whenever the forward fold can read the stream; it reads only the
 * lines it needs, so its cost does not grow with the stream's length. A
 * missing file means "no legs". Throws StreamError if a line it consults is
 * over the cap or of a newer schema, or the file is not a readable regular file.
 */
export function readLastLeg(eventsPath: string, options: ReadLastLegOptions = {}): TailFacts {
  let chunk = Math.max(1, Math.floor(options.chunkBytes ?? FIRST_TAIL_CHUNK));
  const file = openStream(eventsPath);
  const fold = new TailFold();
  if (file === undefined) return { leg: fold.result(), skippedLines: 0, from: 0, size: 0 };
  const { fd, size } = file;
  let skipped = 0;
  let from = size;
  try {
    if (size === 0) return { leg: fold.result(), skippedLines: 0, from: 0, size: 0 };
    // The window holds bytes [winStart, winStart + win.length) of the file.
    let len = Math.min(size, chunk);
    let winStart = size - len;
    let win = Buffer.allocUnsafe(len);
    if (readChunk(fd, win, len, winStart, eventsPath) !== len) throw shrank(eventsPath);
    // A file ending in '\n' has no final partial line.
    let lineEnd = win[len - 1] === NL ? size - 1 : size;
    for (;;) {
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
        if (rel > MAX_LINE_BYTES + 1) throw tooLong(eventsPath, lineEnd);
        chunk = Math.min(chunk * 2, MAX_TAIL_CHUNK);
        const add = Math.min(winStart, chunk);
        const next = Buffer.allocUnsafe(add + rel);
        if (readChunk(fd, next, add, winStart - add, eventsPath) !== add) throw shrank(eventsPath);
        win.copy(next, add, 0, rel);
        win = next;
        winStart -= add;
      }
      const lineStart = nlAt + 1;
      from = lineStart;
      const s = lineStart - winStart;
      let e = lineEnd - winStart;
      if (e > s && win[e - 1] === CR) e--;
      if (e - s > MAX_LINE_BYTES) throw tooLong(eventsPath, lineStart);
      const r = parseContent(win, s, e);
      if (r === null) skipped++;
      else if (r === NEWER) {
        throw newer(eventsPath, lineStart, (JSON.parse(win.toString('utf8', s, e)) as { schema: number }).schema);
      } else {
        fold.take(r, lineStart);
        if (fold.done) break;
      }
      if (nlAt < 0) break;
      lineEnd = nlAt;
    }
  } finally {
    closeQuietly(fd);
  }
  return { leg: fold.result(), skippedLines: skipped, from, size };
}
