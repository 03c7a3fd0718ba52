/**
 * Small, dependency-free statistics for the bench. Every function takes plain
 * numbers and returns plain numbers; nothing here measures anything.
 */

/** The p-th percentile (0..100) of `values` by nearest rank; NaN for none. */
export function percentile(values, p) {
  if (values.length === 0) return NaN;
  const sorted = Float64Array.from(values).sort();
  return percentileSorted(sorted, p);
}

/** Nearest-rank percentile of an already ascending-sorted array. */
export function percentileSorted(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** The median (the lower middle value for an even count, so it is always a measured value). */
export function median(values) {
  if (values.length === 0) return NaN;
  const s = Float64Array.from(values).sort();
  return s[(s.length - 1) >> 1];
}

/** [p25, p75] of `values`, to show how wide the noise was. */
export function quartiles(values) {
  const s = Float64Array.from(values).sort();
  return [percentileSorted(s, 25), percentileSorted(s, 75)];
}

/** 1234567 -> "1,234,567". */
export function thousands(n) {
  return Math.round(n).toLocaleString('en-US');
}

/** A nanosecond figure for a table: "2,145 ns" below 10 µs, "12.3 µs" below 1 ms, else "4.51 ms". */
export function fmtNs(ns) {
  if (!Number.isFinite(ns)) return 'n/a';
  if (ns < 10_000) return `${thousands(ns)} ns`;
  if (ns < 1_000_000) return `${(ns / 1000).toFixed(1)} µs`;
  return `${(ns / 1e6).toFixed(ns < 10_000_000 ? 2 : 1)} ms`;
}

/** A ratio for a table: "1.18×". */
export function fmtRatio(r) {
  return Number.isFinite(r) ? `${r.toFixed(2)}×` : 'n/a';
}

/** A fraction as a percentage with enough digits to show small rates: "0.0123 %". */
export function fmtRate(num, den) {
  if (den === 0) return 'n/a';
  const pct = (100 * num) / den;
  if (pct === 0) return '0 %';
  if (pct < 0.01) return `${pct.toFixed(4)} %`;
  if (pct < 1) return `${pct.toFixed(3)} %`;
  return `${pct.toFixed(1)} %`;
}
