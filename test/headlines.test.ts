/**
 * The benchmark headlines: bench/headlines.json is the one record;
 * docs/benchmarks.md's headline list and RESULTS.md's Headlines are its
 * rendering (a number edited in either, or in the record alone, fails here);
 * every entry names its date, commit and command, and the check that
 * re-derives it (a record with an entry the checker cannot re-derive is
 * refused). `npm run bench -- --check` re-measures and judges them by the rule
 * in bench/lib/headlines.js and the judges of bench/check.mjs: run here for
 * real against a doctored copy of the record (values no run can measure), it
 * must exit 1 and call exactly those stale. The headlines measured at 100,000
 * runs, over 5 GB of streams or in Chromium are judged here from figures
 * written in this file in the shape their benches write with --json (the
 * checker's --measured), built from the stored values and the stated
 * targets, never from the checker's own code: fresh figures exit 0, each
 * doctored headline alone exits 1. No timing is asserted: measured ratios are
 * only checked for consistency with the verdict beside them.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
    expect(() => validate(bad)).toThrow(/measured\.commit must be a hex commit id[\s\S]*\(probe-held\): check must name the bench\/check\.mjs measurement[\s\S]*duplicate id/);
    // No entry may go without a check, whatever excuse it gives.
    const excused = structuredClone(doc);
    Object.assign(excused.headlines[3], { check: null, unchecked: 'an absolute time' });
    expect(() => validate(excused)).toThrow(/check must name[\s\S]*"unchecked" is not a field/);
    const missing = structuredClone(doc);
    delete (missing.headlines[4] as Partial<Headline>).check;
    expect(() => validate(missing)).toThrow(/\(proper-lockfile-free\): check must name/);
    // No entry widens its run's spread by a tolerance of its own, ratio or fact.
    for (const k of [0, doc.headlines.findIndex((h) => h.kind === 'fact')]) {
      const loose = structuredClone(doc);
      Object.assign(loose.headlines[k], { tolerance: 0.05 });
      expect(() => validate(loose)).toThrow(/"tolerance" is not a field/);
    }
  });

  it('every entry of the record has a check', () => {
    for (const h of doc.headlines) expect(typeof h.check === 'string' && h.check.length > 0, h.id).toBe(true);
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
    // One repetition is a spread of one value: anything else is stale, both ways.
    expect(judge(2.0, [2.0]).stale).toBe(false);
    expect(judge(1.99, [2.0]).stale).toBe(true);
    expect(judge(2.01, [2.0]).stale).toBe(true);
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

  /**
   * Figures in the shape bench/runs-scale.mjs, table-scale.mjs, serve-scale.mjs
   * and live.mjs write with --json, at the scale of the headlines (10,000 and
   * 100 + 100 runs; 100,000 runs, 5 repetitions; 100,000 runs with --targets;
   * flock-x, 10,000 settled, 30 kills), with numbers written here to give
   * exactly the stored headlines (runs-10k 1160 / 170 ms = 6.82; the stream
   * size 0.45 / 0.364 = 1.23; the table 111 / 142–146 MB = 0.77–0.78 around the stored 0.78; the first page
   * 3.26 s against listings of 2.14, 1.69 and 1.62 s = 1.52–2.02 around the
   * stored 1.93; the kills' p99 50 ms; three serves' 190–192 / 142–145 MB
   * around the stored 191 / 143 MB; `watch` p99 20.2 ms and the page's
   * 33.9 ms), inside the targets (dashboard kill p99 < 100 ms; serve memory
   * < 250 / 150 MB; holder death: watch p99 < 100 ms, page p99 < 1 s,
   * /metrics within one scrape).
   */
  const freshFigures = () => ({
    'runs-scale': {
      quick: false, small: 10000, big: 100, bigMB: 50, commit: 'figures',
      cliMs: [1160, 1120, 1200, 1150, 1180], startupMs: [170, 170, 170, 170, 170],
      perRunSmallMs: Array(10).fill(0.364), perRunBigMs: [0.43, 0.45, 0.46, 0.44, 0.45, 0.45, 0.44, 0.45, 0.46, 0.45],
    },
    'table-scale': {
      runs: 100000, reps: 5, commit: 'figures',
      table: [111, 111, 111, 111, 112].map((rss) => ({ wall: 6, cpu: 6, rss })),
      json: [142, 143, 142, 143, 146].map((rss) => ({ wall: 4, cpu: 7, rss })),
    },
    'serve-scale': {
      command: 'node bench/serve-scale.mjs --targets', commit: 'figures', targets: true, quick: false, latencyOnly: false,
      rows: [{
        n: 100000, listMs: 1693.8, listingsMs: [2141.9, 1693.8, 1615.8], firstPageMs: 3260.5, hwm: 190.9e6, steady: 142.8e6,
        memory: [{ hwm: 190.9e6, steady: 142.8e6 }, { hwm: 192.1e6, steady: 144.6e6 }, { hwm: 190.3e6, steady: 142.1e6 }],
        deathMs: Array.from({ length: 50 }, (_, i) => 20 + (i * 30) / 49), kills: 50,
      }],
    },
    'holder-death': {
      holder: 'flock-x', settled: 10000, kills: 30, quick: false, watchOnly: false,
      watch: { n: 30, p50: 15.1, p99: 20.2, max: 20.2 },
      page: { n: 30, p50: 21.4, p99: 33.9, max: 33.9, metrics: { n: 30, p50: 40, p99: 60, max: 60 }, maxScrapesAfterPage: 1 },
    },
  });
  type Figures = ReturnType<typeof freshFigures>;
  const SCALE_IDS = ['runs-10k', 'runs-stream-size', 'runs-table-100k', 'dashboard-first-page', 'dashboard-kill', 'dashboard-memory', 'holder-death'];

  /** `npm run bench -- --check --measured` over `figures`, judging `headlines` (the real record unless given). */
  function checkFigures(figures: Figures, headlines = loadHeadlines() as { headlines: Headline[] }) {
    const dir = mkdtempSync(join(tmpdir(), 'rw-headlines-'));
    try {
      mkdirSync(join(dir, 'measured'));
      for (const [group, doc] of Object.entries(figures)) writeFileSync(join(dir, 'measured', `${group}.json`), JSON.stringify(doc));
      writeFileSync(join(dir, 'headlines.json'), JSON.stringify(headlines, null, 2));
      const r = spawnSync(process.execPath, [join(repo, 'bench', 'run.js'), '--check', '--measured', join(dir, 'measured'), '--headlines', join(dir, 'headlines.json'), '--json'], { encoding: 'utf8', timeout: 60_000 });
      expect(r.stderr).not.toMatch(/\n\s+at /);
      const res = r.status === 0 || r.status === 1 ? (JSON.parse(r.stdout) as { rows: { id: string; verdict: string }[]; stale: boolean }) : undefined;
      const verdicts = Object.fromEntries((res?.rows ?? []).filter((x) => x.verdict !== 'skipped').map((x) => [x.id, x.verdict]));
      return { status: r.status, stderr: r.stderr, verdicts };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const withValue = (id: string, value: number | string) => {
    const d = structuredClone(loadHeadlines()) as { headlines: Headline[] };
    (d.headlines.find((h) => h.id === id) as Headline).value = value;
    return d;
  };

  it('the headlines measured at 100,000 runs, over 5 GB or in Chromium: figures that agree are fresh (exit 0); each doctored headline alone is stale (exit 1)', () => {
    const fresh = checkFigures(freshFigures());
    expect(fresh.verdicts).toEqual(Object.fromEntries(SCALE_IDS.map((id) => [id, 'fresh'])));
    expect(fresh.status).toBe(0);
    // Each doctored both ways (two-sided): below the fresh run's spread and above it, each still inside any target.
    const doctored: [string, number | string][] = [
      ['runs-10k', 99],
      ['runs-10k', 5.0],
      ['runs-stream-size', 2.5],
      ['runs-stream-size', 1.0],
      ['runs-table-100k', 0.5],
      ['runs-table-100k', 0.95],
      ['dashboard-first-page', 1.51], // below the fresh 1.52–2.02 (the first page over each listing)
      ['dashboard-first-page', 2.03],
      ['dashboard-kill', 'p99 **10 ms** at 100,000 runs, 50 kills (target < 100 ms)'], // below the fresh median
      ['dashboard-kill', 'p99 **95 ms** at 100,000 runs, 50 kills (target < 100 ms)'], // above the fresh maximum
      ['dashboard-memory', 'peak RSS **189 MB** (189–190 in 3 serves), steady **143 MB** (142–145) (targets 250 / 150 MB: met)'], // below the serves' 190–192
      ['dashboard-memory', 'peak RSS **193 MB** (190–193 in 3 serves), steady **143 MB** (142–145) (targets 250 / 150 MB: met)'],
      ['dashboard-memory', 'peak RSS **191 MB** (190–192 in 3 serves), steady **141 MB** (141–145) (targets 250 / 150 MB: met)'], // below the serves' 142–145
      ['dashboard-memory', 'peak RSS **191 MB** (190–192 in 3 serves), steady **146 MB** (142–146) (targets 250 / 150 MB: met)'],
      ['holder-death', '`watch` exit p99 **5.0 ms**; page (SSE patch) p99 **33.9 ms**; `/metrics` within 1 scrape in 30 of 30'],
      ['holder-death', '`watch` exit p99 **90.0 ms**; page (SSE patch) p99 **33.9 ms**; `/metrics` within 1 scrape in 30 of 30'],
      ['holder-death', '`watch` exit p99 **20.2 ms**; page (SSE patch) p99 **500.0 ms**; `/metrics` within 1 scrape in 30 of 30'],
    ];
    for (const [id, value] of doctored) {
      const r = checkFigures(freshFigures(), withValue(id, value));
      expect(r.verdicts, id).toEqual(Object.fromEntries(SCALE_IDS.map((x) => [x, x === id ? 'stale' : 'fresh'])));
      expect(r.status, id).toBe(1);
    }
  }, 300_000);

  it('a fact over its absolute target is stale though near the stored value; a reduced form is never judged', () => {
    const over: [string, (f: Figures) => void][] = [
      ['dashboard-kill', (f) => { f['serve-scale'].rows[0].deathMs[49] = 120; }], // p99 120 ms: the stored 59 within the spread, over the 100 ms target
      ['dashboard-memory', (f) => { f['serve-scale'].rows[0].memory[1].steady = 152e6; }], // the stored 143 MB within 142–152, one serve over 150 MB
      ['dashboard-memory', (f) => { f['serve-scale'].rows[0].memory.splice(1); }], // one serve: no spread to judge by
      ['holder-death', (f) => { Object.assign(f['holder-death'].watch, { p99: 105, max: 105 }); }], // the stored 20.2 within the spread, over 100 ms
      ['holder-death', (f) => { f['holder-death'].page.maxScrapesAfterPage = 2; }], // /metrics needed a second scrape
    ];
    for (const [id, spoil] of over) {
      const f = freshFigures();
      spoil(f);
      const r = checkFigures(f);
      expect(r.verdicts[id], id).toBe('stale');
      expect(r.status, id).toBe(1);
    }
    // The same benches in their --quick forms: printed, never stale, whatever the record says.
    const quick = freshFigures();
    Object.assign(quick['runs-scale'], { quick: true, small: 1000, big: 20 });
    Object.assign(quick['table-scale'], { runs: 2000 });
    Object.assign(quick['serve-scale'], { targets: false, quick: true, latencyOnly: true });
    quick['serve-scale'].rows[0].n = 1000;
    Object.assign(quick['holder-death'], { settled: 200, kills: 5, quick: true });
    const r = checkFigures(quick, withValue('runs-10k', 99));
    expect(r.verdicts).toEqual(Object.fromEntries(SCALE_IDS.map((id) => [id, 'not comparable'])));
    expect(r.status).toBe(0);
  }, 300_000);

  it('a record with a headline no measurement of the checker re-derives is refused (exit 2), before anything is measured', () => {
    const d = structuredClone(loadHeadlines()) as { headlines: Headline[] };
    (d.headlines.find((h) => h.id === 'dashboard-kill') as Headline).check = 'eyeballed';
    const r = checkFigures(freshFigures(), d);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/every headline needs a measurement the checker has; none is named "eyeballed" \(dashboard-kill\)/);
  });

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
