/**
 * The one seeded random generator of the tests: mulberry32, small and fast,
 * so that every generated case (a stream, a cut point) is reproduced from its
 * seed, which a failing test prints. Not for anything but test data.
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
