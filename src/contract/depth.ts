/**
 * The nesting bound on JSON that runwarden parses (CONTRACT §2.2 rule 3,
 * §3.1): stream lines and `state.json` nested deeper than
 * {@link MAX_JSON_DEPTH} are malformed, and this is decided by a byte scan
 * BEFORE `JSON.parse` runs.
 *
 * Why before: the size caps bound bytes, not the cost of parsing them. A
 * 16 MiB `state.json` of nested arrays parses into millions of tiny objects
 * (hundreds of MB); a scan over the bytes costs one pass and no allocation.
 * Real events and snapshots nest a handful of levels, so 64 leaves ample room.
 *
 * The scan counts `{` and `[` outside strings (a string's bytes, escapes
 * included, are skipped), so it is exact for valid JSON; for invalid JSON
 * its answer does not matter, because `JSON.parse` refuses that anyway.
 */

/** The deepest nesting of objects and arrays accepted in a stream line or a snapshot. */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJ = 0x7b;
const OPEN_ARR = 0x5b;
const CLOSE_OBJ = 0x7d;
const CLOSE_ARR = 0x5d;

/**
 * True when the JSON text in `buf[start, end)` opens more than `max` nested
 * objects/arrays at some point. Stops at the first byte past the bound, so a
 * hostile document costs at most one pass.
 */
export function jsonDeeperThan(buf: Uint8Array, start: number, end: number, max: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = start; i < end; i++) {
    const c = buf[i] as number;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
      continue;
    }
    if (c === QUOTE) inString = true;
    else if (c === OPEN_OBJ || c === OPEN_ARR) {
      if (++depth > max) return true;
    } else if (c === CLOSE_OBJ || c === CLOSE_ARR) depth--;
  }
  return false;
}
