/**
 * Cases for the addon's `lastMatch` (native/scan.cc), each with the answer a
 * byte-by-byte search gives. Long enough for every stride of the vector
 * searches (64-byte steps, four per branch) and their edges; the haystack
 * starts at any offset of a larger buffer whose bytes around it spell
 * needles, so a search that reads past either end of it finds what is not
 * there. High bytes share their low seven bits with needle bytes (`n` | 0x80,
 * `_` | 0x80, …), and some needles are made of high bytes, so a search that
 * looks at seven bits only must still check.
 */
import { mulberry32 } from './random.js';

export interface SearchCase {
  /** The buffer the haystack lies in: `outer[off, off + len)`. */
  outer: Buffer;
  off: number;
  len: number;
  end: number;
  /** The needles packed as `lastMatch` takes them: [length][bytes]…. */
  packed: Buffer;
  /** What a byte-by-byte search answers: the greatest i < end where a needle lies wholly inside the haystack, or -1. */
  want: number;
  /** Which needle set, and which case of it, for messages. */
  label: string;
}

/** The needle sets: the tail reader's, an older one, and sets that share first bytes, are short, long or high. */
export const NEEDLE_SETS: Buffer[][] = [
  ['n_st', 'n_fi', 'te_pa', '\\u'].map((x) => Buffer.from(x, 'latin1')),
  // The tail reader's set: three needles alike in their first four bytes, told apart by their fifth.
  ['n_st', 'n_fi', 'te_pa', '\\u005', '\\u006', '\\u007'].map((x) => Buffer.from(x, 'latin1')),
  // Shared first three bytes, a fifth byte that differs, and short needles with any byte there.
  ['abcde', 'abcdf', 'abcxg', 'ab', 'xbc'].map((x) => Buffer.from(x, 'latin1')),
  [Buffer.from([0xee, 0x5f])],
  [Buffer.from('x'), Buffer.from([0xf8, 0x6e]), Buffer.from('abcdefghijklmnopqrstuvwxyz0123456789')],
  ['a', 'ab', 'abc', 'abcd', 'ba', 'bab', 'c', 'dcba'].map((x) => Buffer.from(x, 'latin1')),
];

/** The greatest i < end at which one of `needles` lies wholly inside `hay`, byte by byte; -1 if none. */
export function byteByByte(hay: Buffer, end: number, needles: Buffer[]): number {
  for (let i = end - 1; i >= 0; i--) if (needles.some((x) => i + x.length <= hay.length && hay.subarray(i, i + x.length).equals(x))) return i;
  return -1;
}

/** `perSet` cases for each needle set, from `seed`. */
export function searchCases(seed: number, perSet: number): SearchCase[] {
  const rand = mulberry32(seed);
  const pick = (k: number): number => Math.floor(rand() * k);
  const out: SearchCase[] = [];
  NEEDLE_SETS.forEach((needles, s) => {
    const packed = Buffer.concat(needles.flatMap((x) => [Buffer.from([x.length]), x]));
    const alphabet = Buffer.from([...new Set(needles.flatMap((x) => [...x, x[0] ^ 0x80, x[x.length - 1] | 0x80])), 0x20, 0x79]);
    for (let t = 0; t < perSet; t++) {
      const len = pick(3000);
      const off = pick(64);
      const outer = Buffer.alloc(off + len + 128);
      for (let at = 0; at < outer.length; at += 8) outer.set(needles[pick(needles.length)].subarray(0, Math.min(8, outer.length - at)), at);
      const hay = outer.subarray(off, off + len).fill(0x20);
      // Mostly filler, with needle pieces, whole needles and alphabet bytes sprinkled at random.
      for (let k = pick(8); k-- > 0; ) hay.set(needles[pick(needles.length)].subarray(0, Math.max(0, len - 64)), pick(Math.max(1, len - 64)));
      for (let k = pick(40); k-- > 0; ) if (len > 0) hay[pick(len)] = alphabet[pick(alphabet.length)]!;
      const end = t % 4 === 0 ? len : pick(len + 1);
      out.push({ outer, off, len, end, packed, want: byteByByte(hay, end, needles), label: `set ${s} case ${t} len ${len} off ${off} end ${end}` });
    }
  });
  return out;
}
