/**
 * The benchmark headlines, kept in one file (bench/headlines.json) from which
 * docs/benchmarks.md's headline list and bench/RESULTS.md's "Headlines"
 * section are generated, so a number a reader sees always carries the date, commit and
 * command of the run that measured it, and cannot drift from the record
 * (test/headlines.test.ts compares the documents with this rendering).
 *
 * An entry: `id`; `what` (markdown); `kind` — `ratio` (a number, shown as
 * "N×") or `fact` (a markdown statement of absolute times, counts or
 * outcomes); for a ratio `value`, `spread` ([lo, hi] of the measuring run, or
 * null when that run did not keep one) and `spread_of` (what the spread is);
 * optional `note`; `measured` = { date (YYYY-MM-DD), commit, command }; `check`:
 * the name of the bench/check.mjs measurement that re-derives it by the
 * entry's own command (a ratio's repetitions, or a fact's claim judged on a
 * fresh run). Every entry has one: a headline nothing can re-derive is not
 * kept (validate refuses a missing or null `check`). A time is recorded as a
 * ratio to a reference measured in the same run wherever the bench has one;
 * a fact is left only where the product's target is itself absolute (a p99
 * in ms, a memory size), and its judge states the target and the spread it
 * is held to.
 *
 * Staleness (bench/check.mjs): a check run measures R interleaved repetitions
 * and takes each repetition's ratio; its spread is [min, max] of those R
 * ratios, rounded to the stored value's two decimals. The stored value is
 * STALE when it lies outside that spread (stored < min or stored > max),
 * FRESH otherwise. A run's own spread is the only yardstick that moves with
 * the machine's noise: a noisy run widens it and calls less stale. No entry
 * states a tolerance of its own: a quantity that barely varies (a peak RSS)
 * is measured in enough repetitions for its spread to be its own. A fact's
 * times are judged the same way by bench/check.mjs: a stored time within the
 * fresh repetitions' [min, max], a stored p99 within the fresh run's median
 * to its slowest, both sides.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
export const HEADLINES_PATH = join(repo, 'bench', 'headlines.json');
export const BENCHMARKS_PATH = join(repo, 'docs', 'benchmarks.md');
export const RESULTS_PATH = join(repo, 'bench', 'RESULTS.md');

/** The markers around each generated block; the text between them is rendered, never edited by hand. */
export const BEGIN = '<!-- headlines: generated from bench/headlines.json by `node bench/headlines.mjs --write`; edit that file, not these lines -->';
export const END = '<!-- /headlines -->';

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const COMMIT = /^[0-9a-f]{7,40}$/;

/** Throws with every problem of `doc` named; returns its headlines. */
export function validate(doc) {
  const problems = [];
  const list = doc?.headlines;
  if (!Array.isArray(list) || list.length === 0) throw new Error('headlines.json: "headlines" must be a non-empty array');
  const ids = new Set();
  for (const [i, h] of list.entries()) {
    const at = `headlines[${i}]${typeof h?.id === 'string' ? ` (${h.id})` : ''}`;
    if (typeof h?.id !== 'string' || !/^[a-z0-9-]+$/.test(h.id)) problems.push(`${at}: id must be lower-case words joined by -`);
    else if (ids.has(h.id)) problems.push(`${at}: duplicate id`);
    else ids.add(h.id);
    if (typeof h?.what !== 'string' || h.what === '') problems.push(`${at}: what must be a non-empty string`);
    if (h?.kind === 'ratio') {
      if (typeof h.value !== 'number' || !(h.value > 0)) problems.push(`${at}: a ratio's value must be a positive number`);
      if (h.spread !== null && !(Array.isArray(h.spread) && h.spread.length === 2 && h.spread.every((x) => typeof x === 'number') && h.spread[0] <= h.spread[1])) {
        problems.push(`${at}: spread must be null or [lo, hi] with lo ≤ hi`);
      }
      if (Array.isArray(h.spread) && typeof h.spread_of !== 'string') problems.push(`${at}: a spread needs spread_of`);
    } else if (h?.kind === 'fact') {
      if (typeof h.value !== 'string' || h.value === '') problems.push(`${at}: a fact's value must be a non-empty string`);
    } else problems.push(`${at}: kind must be "ratio" or "fact"`);
    const m = h?.measured;
    if (typeof m?.date !== 'string' || !DATE.test(m.date)) problems.push(`${at}: measured.date must be YYYY-MM-DD`);
    if (typeof m?.commit !== 'string' || !COMMIT.test(m.commit)) problems.push(`${at}: measured.commit must be a hex commit id`);
    if (typeof m?.command !== 'string' || m.command === '') problems.push(`${at}: measured.command must name the command`);
    if (typeof h?.check !== 'string' || h.check === '') problems.push(`${at}: check must name the bench/check.mjs measurement that re-derives it (every headline has one)`);
    if (h !== null && typeof h === 'object' && 'unchecked' in h) problems.push(`${at}: "unchecked" is not a field: every headline is re-derived by its check`);
    if (h !== null && typeof h === 'object' && 'tolerance' in h) problems.push(`${at}: "tolerance" is not a field: a headline is judged by its fresh run's own spread (a fact's judge in bench/check.mjs states it)`);
  }
  if (problems.length > 0) throw new Error(`headlines.json:\n  ${problems.join('\n  ')}`);
  return list;
}

export function loadHeadlines(path = HEADLINES_PATH) {
  const doc = JSON.parse(readFileSync(path, 'utf8'));
  validate(doc);
  return doc;
}

export function saveHeadlines(doc, path = HEADLINES_PATH) {
  validate(doc);
  writeFileSync(path, JSON.stringify(doc, null, 2) + '\n');
}

/** A ratio as the documents show it: two decimals below 10, one above. */
export function fmtX(v) {
  return `${v < 10 ? v.toFixed(2) : v.toFixed(1)}×`;
}

/** The value cell: a ratio in bold with its spread, or the fact's text. */
export function valueText(h) {
  if (h.kind === 'fact') return h.value;
  const spread = h.spread ? ` (${h.spread_of}: ${h.spread[0].toFixed(2)}–${h.spread[1].toFixed(2)})` : '';
  return `**${fmtX(h.value)}**${spread}`;
}

const when = (h) => `${h.measured.date}, ${h.measured.commit}, \`${h.measured.command}\``;

/** The widest line docs/benchmarks.md's block may have (test/docs.test.ts holds the page to 200 characters). */
export const WRAP = 116;

/**
 * `text` as lines of at most `width` characters (a word longer than that
 * stands alone), each after the first indented by `indent`. A line is never
 * started with a word markdown would read as a list item, quote, heading or
 * table row, so a wrapped entry stays one paragraph of its list item.
 */
export function wrap(text, width = WRAP, indent = '  ') {
  const words = text.split(' ').filter((w) => w !== '');
  const unsafeStart = (w) => /^(?:[-+*]|#{1,6}|\d{1,9}[.)])$|^[>|]/.test(w);
  const out = [];
  let line = '';
  for (const w of words) {
    const limit = out.length === 0 ? width : width - indent.length;
    if (line !== '' && line.length + 1 + w.length > limit && !unsafeStart(w)) {
      out.push(line);
      line = w;
    } else line = line === '' ? w : `${line} ${w}`;
  }
  if (line !== '') out.push(line);
  return out.map((l, i) => (i === 0 ? l : `${indent}${l}`)).join('\n');
}

/**
 * docs/benchmarks.md's headline list: one item per headline, its result
 * wrapped to {@link WRAP} columns, and its own last line saying when, at
 * which commit and by which command it was measured.
 */
export function docsBlock(doc) {
  return doc.headlines
    .map((h) => `${wrap(`- **${h.what}**: ${valueText(h)}${h.note ? `; ${h.note}` : ''}.`)}\n  Measured ${when(h)}.`)
    .join('\n');
}

/** RESULTS.md's headline list. */
export function resultsBlock(doc) {
  return doc.headlines.map((h) => `- **${h.what}**: ${valueText(h)}${h.note ? `; ${h.note}` : ''}. Measured ${when(h)}.`).join('\n');
}

/** The text between BEGIN and END in `text`, or undefined when the markers are not there exactly once each, in order. */
export function blockIn(text) {
  const a = text.indexOf(BEGIN);
  const b = text.indexOf(END);
  if (a < 0 || b < a || text.indexOf(BEGIN, a + 1) >= 0 || text.indexOf(END, b + 1) >= 0) return undefined;
  return text.slice(a + BEGIN.length, b).replace(/^\n/, '').replace(/\n$/, '');
}

/** `text` with its block replaced by `block`; throws when the markers are missing. */
export function withBlock(text, block, name) {
  if (blockIn(text) === undefined) throw new Error(`${name}: the headline markers are missing or repeated`);
  const a = text.indexOf(BEGIN);
  const b = text.indexOf(END);
  return `${text.slice(0, a)}${BEGIN}\n${block}\n${text.slice(b)}`;
}

/** Rewrites the generated blocks of docs/benchmarks.md and bench/RESULTS.md; returns the files that changed. */
export function writeDocs(doc = loadHeadlines(), paths = { docs: BENCHMARKS_PATH, results: RESULTS_PATH }) {
  const changed = [];
  for (const [path, block] of [
    [paths.docs, docsBlock(doc)],
    [paths.results, resultsBlock(doc)],
  ]) {
    const before = readFileSync(path, 'utf8');
    const after = withBlock(before, block, path);
    if (after !== before) {
      writeFileSync(path, after);
      changed.push(path);
    }
  }
  return changed;
}

/**
 * Judges one stored ratio against this run's repetitions (see the file's
 * comment): `now` is their median, `lo`–`hi` their min–max rounded to two
 * decimals, `stale` whether the stored value lies outside [lo, hi].
 */
export function judge(stored, ratios) {
  if (!Array.isArray(ratios) || ratios.length === 0 || !ratios.every((r) => Number.isFinite(r) && r > 0)) {
    throw new Error(`judge: no usable ratios (${JSON.stringify(ratios)})`);
  }
  const sorted = [...ratios].sort((a, b) => a - b);
  const round2 = (v) => Math.round(v * 100) / 100;
  const lo = round2(sorted[0]);
  const hi = round2(sorted[sorted.length - 1]);
  const now = round2(sorted[Math.floor((sorted.length - 1) / 2)] / 2 + sorted[Math.ceil((sorted.length - 1) / 2)] / 2);
  return { stored, now, lo, hi, reps: ratios.length, stale: stored < lo || stored > hi };
}
