/**
 * The one encoder of events.jsonl lines for the tests (CONTRACT §2): one JSON
 * object per line, ended by "\n", with `schema`, `ts` and `run_id` first, as
 * a leg writes them. A field given overrides the default of the same name
 * (a test's `schema: 4`, say) and keeps its place.
 */

/** The timestamp lines get unless a test gives one (readers never order by it). */
export const EVENT_TS = '2026-12-01T08:00:00Z';

export interface LineDefaults {
  runId?: string;
  ts?: string;
}

/** One line: `{ schema: 3, ts, run_id, ...fields }` and "\n". */
export function eventLine(fields: Record<string, unknown>, defaults: LineDefaults = {}): string {
  return encodeEvents([eventObject(fields, defaults)]);
}

/** The same line's content, without its "\n" (for a test that joins or cuts lines itself). */
export function eventJson(fields: Record<string, unknown>, defaults: LineDefaults = {}): string {
  return JSON.stringify(eventObject(fields, defaults));
}

/** The line's object, for a test that keeps events as objects until encodeEvents writes them. */
export function eventObject(fields: Record<string, unknown>, defaults: LineDefaults = {}): Record<string, unknown> {
  return { schema: 3, ts: defaults.ts ?? EVENT_TS, run_id: defaults.runId ?? 'r', ...fields };
}

/** Lines from whole event objects (written as given) or raw text (a hostile line, written as is). */
export function encodeEvents(events: readonly (object | string)[]): string {
  return events.map((e) => (typeof e === 'string' ? e : JSON.stringify(e)) + '\n').join('');
}

/**
 * A line's content (no "\n") of exactly `bytes` UTF-8 bytes: `fields` with
 * `padField` filled with "a"s to the length (one ASCII byte each, never
 * escaped), for a test that sits a line on a byte bound.
 */
export function eventJsonOfBytes(fields: Record<string, unknown>, bytes: number, padField = 'pad', defaults: LineDefaults = {}): string {
  const bare = Buffer.byteLength(eventJson({ ...fields, [padField]: '' }, defaults));
  if (bytes < bare) throw new RangeError(`a line of these fields has at least ${bare} bytes, not ${bytes}`);
  return eventJson({ ...fields, [padField]: 'a'.repeat(bytes - bare) }, defaults);
}
