/**
 * The addon's backward byte search, for the tail reader: the greatest index
 * below `end` in `haystack` where one of the packed needles starts, or -1.
 *
 * Why in the addon: one vectorised pass per window over a long stream costs
 * about what reading the window costs; the same search in JavaScript costs
 * several times that (docs/benchmarks.md, the open leg's search).
 */
import { native } from './native.js';

/** Last start of any needle of `needles` (packed as the addon's `lastMatch` takes them) in `haystack[0, end)`, or -1. */
export function lastMatch(haystack: Uint8Array, end: number, needles: Uint8Array): number {
  return native().lastMatch(haystack, end, needles);
}
