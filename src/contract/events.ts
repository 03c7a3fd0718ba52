/**
 * One line of the stream (CONTRACT §2.2): its shape, and the rules that turn
 * its bytes into an event, a skip, or a reason the whole stream is
 * unreadable. Pure functions over bytes; every reader (forward, from the end,
 * following) parses lines here and nowhere else.
 */
import { jsonDeeperThan } from './depth.js';
import { StreamError } from './errors.js';

/** The stream schema this version reads; a line with a greater `schema` makes the stream unreadable. */
export const STREAM_SCHEMA = 3;
/** The longest line content (bytes, excluding `\n` and one trailing `\r`) a stream may hold. */
export const MAX_LINE_BYTES = 1_048_576;

const NL = 0x0a;
const CR = 0x0d;
const BACKSLASH = 0x5c;
/**
 * Every event has an `"event"` key. JSON can spell that key only as these
 * seven bytes or with a `\` escape, so a line holding neither cannot be an
 * event and is skipped without being parsed (read/lines.ts skips whole runs
 * of such lines in bulk on the same rule).
 */
export const EVENT_KEY: Buffer = Buffer.from('"event"');

/** Could the line `buf[start, end)` be an event? False only when it certainly is not (see {@link EVENT_KEY}). */
export function mayBeEvent(buf: Buffer, start: number, end: number): boolean {
  const line = buf.subarray(start, end);
  return line.indexOf(EVENT_KEY) >= 0 || line.indexOf(BACKSLASH) >= 0;
}

/**
 * One event line that has the right shape: an object with an integer
 * `schema` and a string `event`; `ts`, `run_id`, `phase`, `outcome` and
 * `node_id`, when present, are strings; node events carry a non-empty
 * `node_id`. Every other field is passed through untouched.
 */
export type StreamEvent = Record<string, unknown> & {
  /** The stream's schema version; a reader stops at a higher one than {@link STREAM_SCHEMA} rather than guess. */
  schema: number;
  /** The event's name (`run_started`, `node_passed`, ...); an unknown name is kept and ignored by the fold. */
  event: string;
  /** When the writer wrote it (ISO 8601); only shown, never used to judge liveness. */
  ts?: string;
  /** The run's id, as the writer saw it. */
  run_id?: string;
  /** On `run_started`: absent, or `planning` while an auto run's planner runs. */
  phase?: string;
  /** On `run_finished`: `passed`, `failed` or `paused`. */
  outcome?: string;
  /** On node events: the node it is about (never empty there). */
  node_id?: string;
};

/** Events that name a node and therefore must carry a `node_id`. */
export const NODE_EVENTS: ReadonlySet<string> = new Set([
  'node_started',
  'node_retried',
  'node_passed',
  'node_failed',
  'gate_paused',
  'gate_approved',
  'gate_rejected',
]);

const OPTIONAL_STRINGS = ['ts', 'run_id', 'phase', 'outcome', 'node_id'] as const;

/** True when `v` is an event line of the right shape (see {@link StreamEvent}). */
function hasEventShape(v: unknown): v is StreamEvent {
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

/** The stream error for a line over the cap. */
export function lineTooLong(path: string, offset: number): StreamError {
  return new StreamError(`events.jsonl is corrupt or foreign: a line longer than 1 MiB (near byte ${offset})`, 'ELINETOOLONG', path, offset);
}

function newerSchema(path: string, offset: number, schema: number): StreamError {
  return new StreamError(
    `events.jsonl was written by a newer version (schema ${schema} at byte ${offset}; this version reads up to ${STREAM_SCHEMA})`,
    'ENEWERSCHEMA',
    path,
    offset,
  );
}

/**
 * Parses the line whose bytes are `buf[start, end)` (no `\n`; one trailing
 * `\r` is dropped here) and that starts at byte `offset` of the stream at
 * `path`. Returns the event, or null when the line is to be skipped. Throws
 * StreamError for a line over the cap (`ELINETOOLONG`) or of a newer schema
 * (`ENEWERSCHEMA`): after either, nothing about the stream can be trusted.
 * A line nested deeper than MAX_JSON_DEPTH (contract/depth.ts) is skipped
 * without being parsed, so no line costs more than one pass over its bytes
 * plus a parse of bounded depth.
 */
export function parseLine(buf: Buffer, start: number, end: number, path: string, offset: number): StreamEvent | null {
  if (end > start && buf[end - 1] === CR) end--;
  if (end - start > MAX_LINE_BYTES) throw lineTooLong(path, offset);
  // Cheap rejection of garbage: a JSON object starts with '{' after optional whitespace.
  let i = start;
  while (i < end) {
    const c = buf[i] as number;
    if (c !== 0x20 && c !== 0x09 && c !== CR && c !== NL) break;
    i++;
  }
  if (i >= end || buf[i] !== 0x7b) return null;
  if (!mayBeEvent(buf, i, end)) return null;
  // Nesting is bounded before parsing (contract/depth.ts): a deeper line is malformed.
  if (jsonDeeperThan(buf, i, end)) return null;
  let value: unknown;
  try {
    value = JSON.parse(buf.toString('utf8', start, end));
  } catch {
    return null;
  }
  if (!hasEventShape(value)) return null;
  if (value.schema > STREAM_SCHEMA) throw newerSchema(path, offset, value.schema);
  return value;
}

/**
 * Parses one line of a stream (CONTRACT §2.2), for callers that read lines
 * themselves. `line` excludes the `\n`. Returns the event, or null when the
 * line is to be skipped. Throws StreamError for a line over the cap or a
 * newer schema (`path` and `offset` only label the error).
 */
export function parseEventLine(line: string | Buffer, path = 'events.jsonl', offset = 0): StreamEvent | null {
  const buf = typeof line === 'string' ? Buffer.from(line, 'utf8') : line;
  return parseLine(buf, 0, buf.length, path, offset);
}

/** A `command` array as a `runwarden exec` leg writes it (non-empty, strings only), or undefined. */
export function commandOf(ev: StreamEvent): string[] | undefined {
  const c = ev['command'];
  if (!Array.isArray(c) || c.length === 0) return undefined;
  for (const x of c) if (typeof x !== 'string') return undefined;
  return c as string[];
}
