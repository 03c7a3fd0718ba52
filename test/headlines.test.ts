/**
 * The benchmark headlines (issue 22 item 4): bench/headlines.json is the one
 * record; docs/benchmarks.md's headline list and RESULTS.md's Headlines are
 * its rendering (a number edited in either, or in the record alone, fails
 * here);
 * every entry names its date, commit and command; and `npm run bench --
 * --check` re-measures the ratios and judges them by the rule in
 * bench/lib/headlines.js, run here for real against a doctored copy of the
 * record (two values set to 99×, which no run can measure): it must exit 1
 * and call exactly those stale by the rule. No timing is asserted: the other
 * ratios are only checked for consistency with the verdict beside them.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
// eslint-disable-next-line @typescript-eslint/ban-ts-comment -- the module's types depend on the program: tsc (no allowJs) finds none, ESLint's allowJs program infers them
// @ts-ignore untyped JS module (bench/ is plain ESM JavaScript)
import { BEGIN, BENCHMARKS_PATH, END, blockIn, docsBlock, judge, loadHeadlines, resultsBlock, RESULTS_PATH, validate, withBlock, wrap, WRAP } from '../bench/lib/headlines.js';
import { needs } from './helpers/prereq.js';

const repo = join(import.meta.dirname, '..');

interface Headline {
  id: string;
  kind: 'ratio' | 'fact';
  value: number | string;
  measured: { date: string; commit: string; command: string };
  check: string | null;
}

describe('headlines: one record, rendered', () => {
  const doc = loadHeadlines() as { headlines: Headline[] };

  it('docs/benchmarks.md and bench/RESULTS.md show exactly what bench/headlines.json holds (regenerate with node bench/headlines.mjs --write)', () => {
    expect(blockIn(readFileSync(BENCHMARKS_PATH, 'utf8'))).toBe(docsBlock(doc));
    expect(blockIn(readFileSync(RESULTS_PATH, 'utf8'))).toBe(resultsBlock(doc));
  });

  it('a number changed in docs/benchmarks.md, or in the record alone, no longer matches (positive control of the check above)', () => {
    const page = readFileSync(BENCHMARKS_PATH, 'utf8');
    const probe = doc.headlines.find((h) => h.id === 'probe-free') as Headline;
    const shown = `**${(probe.value as number).toFixed(2)}×**`;
    const block = blockIn(page) as string;
    expect(block).toContain(shown);
    const edited = withBlock(page, block.replace(shown, '**0.99×**'), 'docs/benchmarks.md');
    expect(blockIn(edited)).not.toBe(docsBlock(doc));
    const changed = structuredClone(doc);
    (changed.headlines.find((h: Headline) => h.id === 'probe-free') as Headline).value = 0.99;
    expect(blockIn(page)).not.toBe(docsBlock(changed));
    // The markers are required exactly once.
    expect(blockIn(page.replace(BEGIN, ''))).toBeUndefined();
    expect(blockIn(`${page}\n${END}\n`)).toBeUndefined();
  });

  it('every headline carries a date, a commit of this repository and the command that measured it; every number in a block sits on a row that says so', () => {
    for (const h of doc.headlines) {
      expect(h.measured.date, h.id).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(execFileSync('git', ['cat-file', '-t', h.measured.commit], { cwd: repo, encoding: 'utf8' }).trim(), `${h.id}: ${h.measured.commit}`).toBe('commit');
      expect(h.measured.command.length).toBeGreaterThan(0);
    }
    // Each entry of the docs block: its item's lines, the last of which says when, where and how.
    const items = docsBlock(doc).split(/\n(?=- )/);
    expect(items.length).toBe(doc.headlines.length);
    for (const item of items) expect(item.split('\n').at(-1)).toMatch(/^ {2}Measured \d{4}-\d{2}-\d{2}, [0-9a-f]{7,40}, `[^`]+`\.$/);
    for (const line of resultsBlock(doc).split('\n')) expect(line).toMatch(/Measured \d{4}-\d{2}-\d{2}, [0-9a-f]{7,40}, `[^`]+`\.$/);
  });

  it('a malformed record is refused with every problem named', () => {
    const bad = structuredClone(doc);
    bad.headlines[0].measured.commit = 'HEAD';
    bad.headlines[1].check = null;
    bad.headlines.push({ ...bad.headlines[2] });
    expect(() => validate(bad)).toThrow(/measured\.commit must be a hex commit id[\s\S]*"unchecked"[\s\S]*duplicate id/);
  });

  it('the docs block wraps each entry to WRAP columns as one list item: no continuation line starts a list, quote, heading or table', () => {
    for (const line of docsBlock(doc).split('\n')) {
      expect([...line].length, line).toBeLessThanOrEqual(200);
      if (!line.startsWith('- ')) expect(line, 'a continuation of its item').toMatch(/^ {2}\S/);
      expect(line.slice(2), line).not.toMatch(/^(?:[-+*]|#{1,6}|\d{1,9}[.)])(?: |$)|^[>|]/);
    }
    // Positive controls: a long text wraps at a space, and a marker-like word is never put first on a line.
    const w: string = wrap(`${'word '.repeat(40)}- 1. end`, 30);
    expect(w.split('\n').length).toBeGreaterThan(5);
    expect(w.split('\n').every((l) => l.length <= 30 + 2)).toBe(true);
    expect(w.split('\n').slice(1).every((l) => !/^ {2}(?:-|1\.) /.test(l))).toBe(true);
    expect(WRAP).toBeLessThanOrEqual(200);
  });

  it('judge: the stored value is stale exactly when it lies outside the min–max of the run (rounded to two decimals)', () => {
    expect(judge(1.21, [1.8, 1.9, 2.0])).toEqual({ stored: 1.21, now: 1.9, lo: 1.8, hi: 2, reps: 3, stale: true });
    expect(judge(1.8, [1.8, 1.9, 2.0]).stale).toBe(false);
    expect(judge(2.0, [1.801, 1.9, 1.999]).stale).toBe(false);
    expect(judge(2.01, [1.8, 1.9, 2.0]).stale).toBe(true);
    expect(judge(1.5, [1.4, 1.6]).now).toBe(1.5);
    expect(() => judge(1, [])).toThrow(/no usable ratios/);
  });
});

describe('npm run bench -- --check', () => {
  it('fails (exit 1) on a doctored copy of the headlines: the doctored entries STALE, every other one judged by the rule, the long legs in the comparable mode', (ctx) => {
    needs(ctx, 'cc');
    // A copy, never the real file: two entries set far outside anything the machine can measure.
    const doctored = structuredClone(loadHeadlines()) as { headlines: Headline[] };
    for (const id of ['probe-free', 'long-leg-open']) (doctored.headlines.find((h) => h.id === id) as Headline).value = 99;
    // A fact whose stored time no run can meet: its claim (within 5× of it) fails.
    (doctored.headlines.find((h) => h.id === 'peers-recycled') as Headline).value = 'runwarden: gone after 0.001 ms; a pid check: fooled throughout';
    const dir = mkdtempSync(join(tmpdir(), 'rw-headlines-'));
    const copy = join(dir, 'headlines.json');
    writeFileSync(copy, JSON.stringify(doctored, null, 2));
    try {
      // The long legs at the headline's own size and count (20 × 50 MB against 20 × 100 KB), so they are judged, not "not comparable".
      const r = spawnSync(process.execPath, [join(repo, 'bench', 'run.js'), '--check', '--only', 'probe,peers,long-leg', '--reps', '2', '--chunk-ms', '2', '--headlines', copy, '--json'], {
        encoding: 'utf8',
        timeout: 560_000,
      });
      expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
      const res = JSON.parse(r.stdout) as { rows: { id: string; kind: string; verdict: string; stored: number; now: number | string; lo: number; hi: number; reps: number; ratios: number[]; stale: boolean }[]; stale: boolean };
      const judged = res.rows.filter((x) => x.verdict === 'fresh' || x.verdict === 'stale' || x.verdict === 'not comparable');
      expect(judged.map((x) => x.id).sort()).toEqual(['composed-free', 'composed-held', 'long-leg-closed', 'long-leg-open', 'peers-kill', 'peers-recycled', 'peers-stop', 'probe-free', 'probe-held', 'proper-lockfile-free', 'proper-lockfile-held']);
      const facts = judged.filter((x) => x.kind === 'fact');
      for (const x of facts) {
        expect(typeof x.now, x.id).toBe('string');
        expect(x.verdict, x.id).toBe(x.stale ? 'stale' : 'fresh');
      }
      expect(facts.find((x) => x.id === 'peers-recycled')?.verdict).toBe('stale');
      const checked = judged.filter((x) => x.kind === 'ratio');
      for (const x of checked) {
        expect(x.ratios.length, x.id).toBe(2);
        expect(x.ratios.every((v) => Number.isFinite(v) && v > 0), x.id).toBe(true);
        expect(judge(x.stored, x.ratios), x.id).toEqual({ stored: x.stored, now: x.now, lo: x.lo, hi: x.hi, reps: 2, stale: x.stale });
        expect(x.verdict, x.id).toBe(x.stale ? 'stale' : 'fresh');
      }
      expect(checked.filter((x) => x.id === 'probe-free' || x.id === 'long-leg-open').map((x) => x.verdict)).toEqual(['stale', 'stale']);
      expect(res.stale).toBe(true);
      expect(r.status).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);

  it('a headline file that is not one is a usage error (exit 2), not a pass', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rw-headlines-'));
    try {
      const bad = join(dir, 'bad.json');
      writeFileSync(bad, '{"headlines": []}');
      const r = spawnSync(process.execPath, [join(repo, 'bench', 'run.js'), '--check', '--headlines', bad], { encoding: 'utf8', timeout: 60_000 });
      expect(r.status).toBe(2);
      expect(r.stderr.split('\n')[0]).toMatch(/^bench --check: cannot use the headline file: /);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('bad options are one-line usage errors (exit 2); --help through npm run bench prints the check\'s help', () => {
    for (const args of [['--reps', 'x'], ['--only', 'nope'], ['--frobnicate']]) {
      const r = spawnSync(process.execPath, [join(repo, 'bench', 'run.js'), '--check', ...args], { encoding: 'utf8', timeout: 60_000 });
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr.split('\n')[0]).toMatch(/^bench --check: /);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
    const h = spawnSync(process.execPath, [join(repo, 'bench', 'run.js'), '--check', '--help'], { encoding: 'utf8', timeout: 60_000 });
    expect(h.status).toBe(0);
    expect(h.stdout).toMatch(/Exit status: 0 all fresh, 1 some stale, 2 usage error, 3 could not measure\./);
  });
});
