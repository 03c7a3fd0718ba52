#!/usr/bin/env node
/**
 * `npm run bench -- --check` (or `node bench/check.mjs`): re-derives every
 * headline of bench/headlines.json by the command that measured it and prints,
 * per headline, the stored value, the value now with this run's spread, and
 * FRESH or STALE. Every headline names its measurement (`check`); a record
 * with a headline the checker has no measurement for is refused (exit 2).
 *
 * Ratios (bench/lib/headlines.js judge): the run takes R interleaved
 * repetitions, one ratio each; the value now is their median and the spread
 * their min–max, rounded to two decimals. A stored value outside it is
 * STALE. Facts (outcomes, counts, times against a target the
 * product states in absolute terms) are judged by FACT_JUDGES, each of which
 * states its tolerance and, where the headline has one, the target it holds
 * the value to; a stored time is held, both ways, to the fresh run's own
 * spread (the repetitions' min–max, or a run's median to its slowest kill).
 *
 * The whole check measures every headline at its own scale: the probe, peers,
 * pollers and watch groups take a minute or two; long-leg and open-leg-floor
 * a few minutes (2 GB of legs); runs-scale (5 GB of streams), table-scale
 * (100,000 runs) and serve-scale (100,000 runs, Chromium, its idle windows)
 * several minutes each. A release runs it whole on a quiet machine.
 * `--only` picks groups or headlines; `--quick` runs the large groups in a
 * reduced form whose figures are printed as "not comparable", never stale
 * (as are the long-leg ratios under --legs or --leg-mb).
 *
 * Exit status: 0 every judged headline is fresh; 1 at least one is stale;
 * 2 a usage error (or a headline with no measurement); 3 a measurement could
 * not be made (no build, no compiler, not linux, too little space, a bench
 * that failed).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statfsSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { judge, loadHeadlines, fmtX } from './lib/headlines.js';
import { oneLegRun } from './lib/runs.js';

const benchDir = dirname(fileURLToPath(import.meta.url));
const repo = dirname(benchDir);
const BIN = join(repo, 'bin', 'runwarden.js');

const HELP = `usage: npm run bench -- --check [options]   (or: node bench/check.mjs [options])

Re-derives every headline in bench/headlines.json by the command that measured
it and prints the stored value, the value now (a ratio: the median of this
run's repetitions, with their min–max) and STALE when the stored value lies
outside that min–max, or when a fact's claim no longer holds within the
spread and target its judge states.

Every headline at its own scale takes tens of minutes (100,000-run roots,
5 GB of streams, Chromium); --only and --quick make it shorter.

  --only LIST     comma-separated groups or headline ids (default: all). Groups:
                  probe, peers, pollers, darwin-pollers, watch, long-leg, open-leg-floor,
                  runs-scale, table-scale, serve-scale, holder-death
  --quick         the large groups in a reduced form, printed "not comparable",
                  never stale: runs-scale --quick (1,000 runs; 20 + 20), table-scale
                  2,000 runs, serve-scale 1,000 runs (latencies only), holder-death
                  200 settled runs and 5 kills, long-leg and open-leg-floor 5 legs
                  of 10 MB (unless --legs, --leg-mb)
  --measured DIR  judge the JSON documents DIR/<group>.json (what the group's
                  bench writes with --json) instead of running those benches;
                  how test/headlines.test.ts drives the judging without them
  --reps N        interleaved repetitions per group (default 7 for probe, 5 for long-leg)
  --chunk-ms N    probe: ms per timed chunk (default 8)
  --legs N        long-leg, open-leg-floor: runs per set (default 20, as the headline; other values are not comparable)
  --leg-mb N      long-leg, open-leg-floor: MB per long leg (default 50; other values are not comparable)
  --headlines F   judge the entries of the headline file F instead of bench/headlines.json
                  (how test/headlines.test.ts checks a doctored copy)
  --json          print the results as one JSON document instead of the table
  --help          this text

Exit status: 0 all fresh, 1 some stale, 2 usage error, 3 could not measure.`;

const LEG_RUNS = 20;
const LEG_MB = 50;
const SMALL = 100 * 1024;

class Usage extends Error {}
class CannotMeasure extends Error {}

function parseArgs(argv) {
  const o = { only: undefined, reps: undefined, chunkMs: 8, legs: LEG_RUNS, legMb: LEG_MB, json: false, headlines: undefined, quick: false, measured: undefined };
  const num = (name, v, min) => {
    if (v === undefined || !/^\d+$/.test(v) || Number(v) < min) throw new Usage(`${name} takes a whole number ≥ ${min} (got ${v === undefined ? 'nothing' : JSON.stringify(v)})`);
    return Number(v);
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') o.help = true;
    else if (a === '--json') o.json = true;
    else if (a === '--quick') o.quick = true;
    else if (a === '--only') {
      const v = argv[++i];
      const names = (v ?? '').split(',').filter(Boolean);
      const groups = names.map(groupOf);
      const bad = names.find((_, k) => groups[k] === undefined);
      if (names.length === 0 || bad !== undefined) throw new Usage(`--only takes groups (${Object.keys(GROUPS).join(', ')}) or headline ids (got ${JSON.stringify(bad ?? v ?? '')})`);
      o.only = [...new Set(groups)];
    } else if (a === '--measured') {
      const v = argv[++i];
      if (v === undefined || v === '') throw new Usage('--measured takes a directory');
      o.measured = v;
    } else if (a === '--reps') o.reps = num(a, argv[++i], 2);
    else if (a === '--chunk-ms') o.chunkMs = num(a, argv[++i], 1);
    else if (a === '--legs') {
      o.legs = num(a, argv[++i], 1);
      o.legsGiven = true;
    } else if (a === '--leg-mb') {
      o.legMb = num(a, argv[++i], 1);
      o.legMbGiven = true;
    }
    else if (a === '--headlines') {
      const v = argv[++i];
      if (v === undefined || v === '') throw new Usage('--headlines takes a file');
      o.headlines = v;
    }
    else throw new Usage(`unknown option ${JSON.stringify(a)}`);
  }
  if (o.quick) {
    if (!o.legsGiven) o.legs = 5;
    if (!o.legMbGiven) o.legMb = 10;
  }
  return o;
}

const log = (m) => process.stderr.write(`[check] ${m}\n`);

/**
 * The measurer groups. Each measures several headlines in one run and returns
 * { ratios: { [check]: number[] per repetition }, comparable, detail }.
 */
const GROUPS = {
  /** bench/cost.js, as `npm run bench` runs it, with fewer repetitions and only the methods that have headlines: probeLock, the composed steps and proper-lockfile against the floor. */
  probe: {
    provides: ['probe-free', 'probe-held', 'composed-free', 'composed-held', 'proper-lockfile-free', 'proper-lockfile-held'],
    async run(o) {
      const { buildFloor } = await import('./lib/floor.js');
      const { runCost } = await import('./cost.js');
      let floor;
      try {
        floor = buildFloor();
      } catch (e) {
        throw new CannotMeasure(e.message);
      }
      const reps = o.reps ?? 7;
      log(`probe: ${reps} interleaved repetitions, ${o.chunkMs} ms chunks (bench/cost.js)`);
      const ids = { probeLock: 'probe', 'composed-sh': 'composed', 'proper-lockfile': 'proper-lockfile' };
      const cost = await runCost({ floorBin: floor.binary, reps, chunkMs: o.chunkMs, only: Object.keys(ids) });
      const ratios = {};
      for (const row of cost.rows) {
        const base = ids[row.id];
        if (base === undefined) continue;
        for (const f of ['free', 'held']) ratios[`${base}-${f}`] = row[f].ratios;
      }
      return { ratios, comparable: true, detail: `${reps} repetitions × ${o.chunkMs} ms chunks, floor ${floor.compiler}` };
    },
  },
  /**
   * bench/peers.js as `npm run bench` runs it (proper-lockfile's stale window 2 s, a 4 s stop): the kill, stop and
   * recycled-pid outcomes, repeated (--reps, default 3) so that the times have a spread to judge a stored one by.
   */
  peers: {
    provides: ['peers-kill', 'peers-stop', 'peers-recycled'],
    async run(o) {
      const { runPeers } = await import('./peers.js');
      const reps = o.reps ?? 3;
      log(`peers: kill -9, SIGSTOP past the stale window, a recycled pid, ${reps} times (bench/peers.js)`);
      const runs = [];
      for (let i = 0; i < reps; i++) runs.push(await runPeers({ staleMs: 2000, stopMs: 4000 }));
      return { facts: { peers: runs }, comparable: true, detail: `proper-lockfile stale window 2 s, stop 4 s, ${reps} repetitions` };
    },
  },
  /**
   * bench/lockfile.mjs as the headlines ran it: runwarden/lockfile against proper-lockfile: the round trip (a ratio
   * per repetition), kill -9 to takeover, a 30 s blocked event loop and 64 processes × 1,000 (facts).
   */
  lockfile: {
    provides: ['lockfile-roundtrip', 'lockfile-kill', 'lockfile-blocked', 'lockfile-stress'],
    run(o) {
      const dir = mkdtempSync(join(tmpdir(), 'rw-check-lockfile-'));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      const out = join(dir, 'figures.json');
      const args = [join(benchDir, 'lockfile.mjs'), ...(o.quick ? ['--quick'] : []), '--json', out];
      log(`lockfile: node bench/lockfile.mjs ${o.quick ? '--quick ' : ''}(round trip, kill -9, a blocked loop, P processes × N)`);
      const r = spawnSync(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'] });
      if (r.status !== 0 || !existsSync(out)) throw new CannotMeasure(`node bench/lockfile.mjs exited ${r.status ?? r.signal} without its figures`);
      const doc = JSON.parse(readFileSync(out, 'utf8'));
      return { ratios: { 'lockfile-roundtrip': doc.roundtrip.ratios }, facts: { lockfile: doc }, comparable: doc.quick === false, detail: doc.quick ? 'reduced (--quick): not comparable' : `${doc.roundtrip.ratios.length} × ${doc.roundtrip.trips} round trips, ${doc.kill.kills} kills, ${doc.blocked.blockS} s blocked, ${doc.stress.procs} × ${doc.stress.each}` };
    },
  },
  /** bench/pollers.js in `npm run bench -- --quick`'s cells (P = 1, 4, 16; 2 × 150 ms windows): wrong answers and refused legs. */
  pollers: {
    provides: ['pollers', 'false-busy'],
    async run() {
      const { runPollers } = await import('./pollers.js');
      log('pollers: P = 1, 4, 16, 2 × 150 ms windows per cell (bench/pollers.js)');
      const cells = await runPollers({ Ps: [1, 4, 16], windowMs: 150, reps: 2, holdMs: 1, idleMs: 1 });
      return { facts: { cells }, comparable: true, detail: 'P = 1, 4, 16; 2 × 150 ms windows per cell' };
    },
  },
  /**
   * bench/darwin-acquire.mjs --pollers 64 --interval-ms 1, once on the XNU model and once on linux
   * (--linux): 1,000 legs starting among 64 pollers that each probe once a millisecond.
   */
  'darwin-pollers': {
    provides: ['darwin-pollers-1ms'],
    run(o) {
      const acquires = o.quick ? 100 : 1000;
      const one = (extra) => {
        const args = ['--pollers', '64', '--acquires', String(acquires), '--interval-ms', '1', '--max-seconds', '900', ...extra];
        log(`darwin-pollers: node bench/darwin-acquire.mjs ${args.join(' ')}`);
        const r = spawnSync(process.execPath, [join(benchDir, 'darwin-acquire.mjs'), ...args], { encoding: 'utf8', maxBuffer: 1 << 24 });
        const last = (r.stdout ?? '').trim().split('\n').at(-1) ?? '';
        if (r.status !== 0 || !last.startsWith('{')) throw new CannotMeasure(`bench/darwin-acquire.mjs ${extra.join(' ')} failed (exit ${r.status}): ${(r.stderr ?? '').slice(-300)}`);
        return JSON.parse(last);
      };
      const model = one([]);
      const linux = one(['--linux']);
      const comparable = model.done === 1000 && linux.done === 1000;
      return { facts: { darwinPollers: { model, linux } }, comparable, detail: `64 pollers once a millisecond, ${model.done} + ${linux.done} acquires${comparable ? '' : ' (reduced: not comparable)'}` };
    },
  },
  /** bench/live.mjs --watch-only: `runwarden watch`'s death-to-exit latency over 50 kill -9s. */
  watch: {
    provides: ['watch-death'],
    async run() {
      log('watch: 50 kill -9s, each to `runwarden watch`\'s exit (bench/live.mjs --watch-only)');
      const r = spawnSync(process.execPath, [join(benchDir, 'live.mjs'), '--watch-only', '--kills', '50'], { encoding: 'utf8', maxBuffer: 1 << 24 });
      const m = /death-to-exit over (\d+) kills: p50 ([\d.]+) ms, p99 ([\d.]+) ms, max ([\d.]+) ms/.exec(r.stdout ?? '');
      if (r.status !== 0 || m === null) throw new CannotMeasure(`bench/live.mjs --watch-only failed (exit ${r.status}): ${(r.stderr ?? '').slice(-300)}`);
      return { facts: { watch: { n: Number(m[1]), p50: Number(m[2]), p99: Number(m[3]), max: Number(m[4]) } }, comparable: true, detail: '50 kills, bench/live.mjs --watch-only' };
    },
  },
  /**
   * bench/open-leg-floor.mjs: readLastLeg over 20 open 50 MB legs against the C floor reading the same
   * bytes, once of plain text and once of text holding `\u` escapes (--escaped).
   */
  'open-leg-floor': {
    provides: ['open-leg-floor', 'open-leg-floor-escaped'],
    async run(o) {
      const reps = o.reps ?? 5;
      const { measureOpenLegFloor, openLegFiles } = await import('./open-leg-floor.mjs');
      const ratios = {};
      let compiler = '';
      for (const [id, escaped] of [['open-leg-floor', false], ['open-leg-floor-escaped', true]]) {
        log(`${id}: ${o.legs} open legs of ${o.legMb} MB${escaped ? ' of text with escapes' : ''}, ${reps} repetitions (bench/open-leg-floor.mjs)`);
        const { files, cleanup } = openLegFiles(o.legs, o.legMb, escaped);
        cleanups.push(cleanup);
        try {
          const m = await measureOpenLegFloor(files, reps);
          ratios[id] = m.ratios;
          compiler = m.compiler;
        } finally {
          cleanup();
        }
      }
      return { ratios, comparable: o.legs === LEG_RUNS && o.legMb === LEG_MB, detail: `${o.legs} × ${o.legMb} MB, plain and escaped, ${reps} repetitions, floor ${compiler}` };
    },
  },
  /**
   * bench/scale.mjs part B's CLI measure: `runs --json` over N runs whose one
   * leg is 50 MB against N of 100 KB, closed and open; each repetition's ratio
   * is the long set's wall clock over the short set's, taken back to back.
   */
  'long-leg': {
    provides: ['long-leg-closed', 'long-leg-open'],
    async run(o) {
      const reps = o.reps ?? 5;
      const big = o.legMb * 1024 * 1024;
      const need = 2 * o.legs * (big + SMALL) + 64 * 1024 * 1024;
      const fsInfo = statfsSync(tmpdir());
      if (fsInfo.bavail * fsInfo.bsize < need) throw new CannotMeasure(`${tmpdir()} has too little space; the long-leg check needs about ${(need / 1e9).toFixed(1)} GB`);
      const scratch = mkdtempSync(join(tmpdir(), 'rw-check-'));
      cleanups.push(() => rmSync(scratch, { recursive: true, force: true }));
      try {
        log(`long-leg: generating 2 × ${o.legs} runs of ${o.legMb} MB and 2 × ${o.legs} of 100 KB under ${scratch}`);
        const sets = {};
        for (const closed of [true, false]) {
          for (const bytes of [SMALL, big]) {
            const key = `${closed ? 'closed' : 'open'}-${bytes === SMALL ? 'small' : 'big'}`;
            const root = join(scratch, key);
            mkdirSync(root);
            for (let i = 0; i < o.legs; i++) oneLegRun(root, i, bytes, closed);
            sets[key] = root;
          }
        }
        const wall = (root) => {
          const t0 = process.hrtime.bigint();
          const r = spawnSync(process.execPath, [BIN, 'runs', '--json', '--root', root], { encoding: 'utf8', maxBuffer: 1 << 28 });
          const s = Number(process.hrtime.bigint() - t0) / 1e9;
          if (r.status !== 0) throw new Error(`runs --json --root ${root} exited ${r.status}: ${r.stderr.slice(-300)}`);
          const doc = JSON.parse(r.stdout);
          if (doc.runs.length !== o.legs) throw new Error(`runs --json listed ${doc.runs.length} runs, expected ${o.legs}`);
          return s;
        };
        wall(sets['open-big']); // warm-up: the CLI's own files (the streams were just written, so they are cached)
        const ratios = { 'long-leg-closed': [], 'long-leg-open': [] };
        for (let r = 0; r < reps; r++) {
          for (const kind of r % 2 ? ['open', 'closed'] : ['closed', 'open']) {
            // Short then long on even repetitions, long then short on odd ones, so drift cancels over the run.
            const pair = r % 2 ? [`${kind}-big`, `${kind}-small`] : [`${kind}-small`, `${kind}-big`];
            const t = Object.fromEntries(pair.map((k) => [k, wall(sets[k])]));
            ratios[`long-leg-${kind}`].push(t[`${kind}-big`] / t[`${kind}-small`]);
          }
        }
        const comparable = o.legs === LEG_RUNS && o.legMb === LEG_MB;
        return { ratios, comparable, detail: `${o.legs} runs per set, ${o.legMb} MB vs 100 KB, ${reps} repetitions, CLI wall clock` };
      } finally {
        rmSync(scratch, { recursive: true, force: true });
      }
    },
  },
};

/**
 * The document bench/<script> writes with `--json FILE`, from a run of it with
 * `args` (its progress on this process's stderr, its printed section dropped);
 * with --measured DIR, DIR/<group>.json instead, unchanged, so the judging
 * below is the same either way.
 */
function benchDoc(o, group, script, args) {
  if (o.measured !== undefined) {
    const f = join(o.measured, `${group}.json`);
    try {
      return JSON.parse(readFileSync(f, 'utf8'));
    } catch (e) {
      throw new Usage(`--measured: cannot read ${f}: ${e.message}`);
    }
  }
  const dir = mkdtempSync(join(tmpdir(), 'rw-check-figures-'));
  const drop = () => rmSync(dir, { recursive: true, force: true });
  cleanups.push(drop);
  const out = join(dir, 'figures.json');
  log(`${group}: node bench/${script} ${args.join(' ')} --json ${out}`);
  try {
    const r = spawnSync(process.execPath, [join(benchDir, script), ...args, '--json', out], { stdio: ['ignore', 'ignore', 'inherit'] });
    if (r.status !== 0 || !existsSync(out)) throw new CannotMeasure(`node bench/${script} ${args.join(' ')} exited ${r.status ?? r.signal} without its figures`);
    return JSON.parse(readFileSync(out, 'utf8'));
  } finally {
    drop();
  }
}

/** Throws CannotMeasure when os.tmpdir() has fewer than `bytes` free. */
function needSpace(o, bytes, what) {
  if (o.measured !== undefined) return;
  const fsInfo = statfsSync(tmpdir());
  if (fsInfo.bavail * fsInfo.bsize < bytes) throw new CannotMeasure(`${tmpdir()} has too little space; ${what} needs about ${(bytes / 1e9).toFixed(1)} GB`);
}

/** Repetition r's ratio a[r] / b[r] for every r (the bench took a[r] and b[r] back to back). */
const pairwise = (a, b) => {
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) throw new CannotMeasure(`the figures have unequal or missing repetitions (${a?.length} and ${b?.length})`);
  return a.map((x, r) => x / b[r]);
};

/**
 * The groups that run a headline's own bench script (as a child, with --json)
 * and judge the document it writes; `recorded` marks them as the ones
 * --measured can stand in for.
 */
const SCRIPT_GROUPS = {
  /**
   * bench/runs-scale.mjs as the headlines ran it (10,000 small runs; 100 + 100
   * runs of 100 KB and 50 MB streams). runs-10k: each listing's wall clock over
   * the start-up alone (`runwarden --version`) timed right after it; runs-stream-size:
   * listRuns' per-run time over the 50 MB set against the 100 KB set, repetition by repetition.
   */
  'runs-scale': {
    provides: ['runs-10k', 'runs-stream-size'],
    run(o) {
      needSpace(o, o.quick ? 1.6e9 : 5.8e9, o.quick ? 'runs-scale --quick (20 × 50 MB streams)' : 'runs-scale (100 × 50 MB streams)');
      const doc = benchDoc(o, 'runs-scale', 'runs-scale.mjs', ['--no-write', ...(o.quick ? ['--quick'] : [])]);
      const comparable = doc.quick === false && doc.small === 10_000 && doc.big === 100 && doc.bigMB === 50;
      return {
        ratios: { 'runs-10k': pairwise(doc.cliMs, doc.startupMs), 'runs-stream-size': pairwise(doc.perRunBigMs, doc.perRunSmallMs) },
        comparable,
        detail: `${doc.small} small runs, ${doc.cliMs.length} listings; ${doc.big} + ${doc.big} runs of ${doc.bigMB} MB and 100 KB, ${doc.perRunBigMs.length} repetitions${comparable ? '' : ' (reduced: not comparable)'}`,
      };
    },
  },
  /** bench/table-scale.mjs --runs 100000 --reps 5: each repetition's peak RSS of `runs` (the table) over that of `runs --json` right beside it. */
  'table-scale': {
    provides: ['runs-table-100k'],
    run(o) {
      needSpace(o, o.quick ? 0.1e9 : 2e9, 'table-scale');
      const doc = benchDoc(o, 'table-scale', 'table-scale.mjs', o.quick ? ['--runs', '2000', '--reps', '2'] : ['--runs', '100000', '--reps', '5']);
      const comparable = doc.runs === 100_000;
      const rss = (xs) => xs.map((x) => x.rss);
      return {
        ratios: { 'runs-table-100k': pairwise(rss(doc.table), rss(doc.json)) },
        comparable,
        detail: `${doc.runs} runs, ${doc.table.length} repetitions, peak RSS table / --json${comparable ? '' : ' (reduced: not comparable)'}`,
      };
    },
  },
  /**
   * bench/serve-scale.mjs --targets (100,000 runs, Chromium): the first complete
   * page over `runs --json` of the same root (the median of 3) in the same run,
   * one ratio per run; the in-page kill latencies and serve's VmHWM and steady
   * VmRSS, judged as facts.
   */
  'serve-scale': {
    provides: ['dashboard-first-page', 'dashboard-kill', 'dashboard-memory'],
    run(o) {
      needSpace(o, o.quick ? 0.1e9 : 1.5e9, 'serve-scale');
      const doc = benchDoc(o, 'serve-scale', 'serve-scale.mjs', o.quick ? ['--quick', '--sizes', '1000', '--latency-only', '--no-write'] : ['--targets', '--no-write']);
      const row = doc.rows?.at(-1);
      if (row === undefined) throw new CannotMeasure('serve-scale wrote no size');
      if (row.failure !== undefined && row.failure !== null) throw new CannotMeasure(`serve-scale at ${row.n} runs: no complete page: ${row.failure}`);
      const comparable = doc.targets === true && doc.quick === false && doc.latencyOnly === false && row.n === 100_000;
      // One first page per run, against each of the run's listings of the same root: their spread is the ratio's.
      const listings = Array.isArray(row.listingsMs) && row.listingsMs.length > 0 ? row.listingsMs : [row.listMs];
      return {
        ratios: { 'dashboard-first-page': listings.map((l) => row.firstPageMs / l) },
        facts: { serve: row },
        comparable,
        detail: `${row.n} runs, first page ${(row.firstPageMs / 1000).toFixed(2)} s vs runs --json ${(row.listMs / 1000).toFixed(2)} s (one ratio per run), ${row.kills} kills${comparable ? '' : ' (reduced: not comparable)'}`,
      };
    },
  },
  /** bench/live.mjs --holder flock-x --settled 10000 --kills 30: a read-only holder's death to `watch`'s exit, to the page's event stream and to /metrics. */
  'holder-death': {
    provides: ['holder-death'],
    run(o) {
      const args = ['--holder', 'flock-x', '--settled', o.quick ? '200' : '10000', '--kills', o.quick ? '5' : '30', '--no-write', ...(o.quick ? ['--quick'] : [])];
      const doc = benchDoc(o, 'holder-death', 'live.mjs', args);
      const comparable = doc.holder === 'flock-x' && doc.settled === 10_000 && doc.kills === 30 && doc.quick === false && doc.watchOnly === false;
      return { facts: { live: doc }, comparable, detail: `${doc.holder} holders, ${doc.settled} settled runs, ${doc.kills} kills per cell${comparable ? '' : ' (reduced: not comparable)'}` };
    },
  },
};
for (const [g, v] of Object.entries(SCRIPT_GROUPS)) GROUPS[g] = { ...v, recorded: true };

/** The group that measures `name`: a group's own name, a check a group provides, or the id of a headline whose check one provides. */
function groupOf(name) {
  if (name in GROUPS) return name;
  const byCheck = (c) => Object.keys(GROUPS).find((g) => GROUPS[g].provides.includes(c));
  if (byCheck(name) !== undefined) return byCheck(name);
  try {
    const h = loadHeadlines().headlines.find((x) => x.id === name);
    return h === undefined ? undefined : byCheck(h.check);
  } catch {
    return undefined;
  }
}

/** The p-th percentile as bench/serve-scale.mjs takes it (the ⌈p·n/100⌉-th smallest). */
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

/**
 * Whether a stored latency figure (a p99, in ms, one decimal) agrees with a fresh run's latencies: it lies within
 * that run's own measured spread, from its median to its slowest (rounded as stored). Two-sided, as a ratio's
 * repetitions are: a stored figure below the fresh median or above the fresh maximum is stale, and a noisy run
 * widens the band by itself.
 */
const inSpread = (was, { p50, max }) => was !== undefined && was >= Math.round(p50 * 10) / 10 && was <= Math.round(max * 10) / 10;

/** Whether a stored time (ms, one decimal) lies within [min, max] of the fresh repetitions' times (rounded as stored). */
const inReps = (was, xs) => was !== undefined && xs.length > 0 && xs.every((x) => x !== undefined) && was >= Math.round(Math.min(...xs) * 10) / 10 && was <= Math.round(Math.max(...xs) * 10) / 10;

/** The first number after `label` in a fact's text (commas as thousands separators), or undefined. */
function numberAfter(text, label) {
  const m = new RegExp(`${label}\\D*?([\\d,]+(?:\\.\\d+)?)`).exec(text);
  return m === null ? undefined : Number(m[1].replace(/,/g, ''));
}

/**
 * Facts (outcomes, counts, times) are judged by what they claim, re-derived
 * from a fresh run of the measurer that made them: each judge returns the
 * value now, as text, and whether the stored claim still holds within the
 * tolerance it states (`tolerance`, shown beside the verdict).
 */
const FACT_JUDGES = {
  'peers-kill': {
    tolerance: "the stored runwarden time lies within [min, max] of the repetitions' times, and proper-lockfile (its stale window) takes at least ten times the slowest of them",
    judge(stored, { peers }) {
      const rw = peers.map((p) => p.scenarios.kill.firstGone.runwarden);
      const pl = peers.map((p) => p.scenarios.kill.firstGone['proper-lockfile']);
      const was = numberAfter(stored, 'runwarden');
      const slowest = Math.max(...rw.map((x) => x ?? Infinity));
      const holds = inReps(was, rw) && pl.every((x) => x === undefined || x >= 10 * slowest);
      return { now: `runwarden ${rw.map((x) => (x === undefined ? 'never' : `${x.toFixed(1)} ms`)).join(' / ')}; proper-lockfile ${pl.map((x) => (x === undefined ? 'never' : `${Math.round(x)} ms`)).join(' / ')}`, holds };
    },
  },
  'peers-stop': {
    tolerance: 'runwarden never says a stopped holder is dead; proper-lockfile does (and grants the lock again, when the stored fact says so), in every repetition',
    judge(stored, { peers }) {
      const all = peers.map((p) => FACT_JUDGES['peers-stop'].once(stored, p));
      return { now: all.map((x) => x.now).join(' / '), holds: all.every((x) => x.holds) };
    },
    once(stored, peers) {
      const { firstGone, secondLocker } = peers.scenarios.stop;
      const holds = firstGone.runwarden === undefined && firstGone['proper-lockfile'] !== undefined && (!stored.includes('granted') || secondLocker['proper-lockfile'] === 'granted');
      return { now: `runwarden ${firstGone.runwarden === undefined ? 'alive throughout' : 'said dead'}; proper-lockfile ${firstGone['proper-lockfile'] === undefined ? 'alive throughout' : `dead after ${Math.round(firstGone['proper-lockfile'])} ms, second owner ${secondLocker['proper-lockfile']}`}`, holds };
    },
  },
  'lockfile-kill': {
    tolerance: "runwarden's median takeover under the 50 ms goal, and the stored median within the fresh kills' min–max; proper-lockfile's at least its stale window (2000 ms)",
    judge(stored, { lockfile }) {
      const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
      const rw = med(lockfile.kill.ms.rw);
      const pl = med(lockfile.kill.ms.plf);
      const was = numberAfter(stored, 'runwarden p50');
      const holds = rw < 50 && inReps(was, lockfile.kill.ms.rw) && pl >= lockfile.kill.plfStale;
      return { now: `runwarden p50 ${rw.toFixed(1)} ms; proper-lockfile p50 ${Math.round(pl)} ms`, holds };
    },
  },
  'lockfile-blocked': {
    tolerance: 'runwarden: 0 compromised and 0 double holders; proper-lockfile: some of each, when the stored fact says so',
    judge(stored, { lockfile }) {
      const { rw, plf } = lockfile.blocked;
      const plfSaid = numberAfter(stored, 'proper-lockfile') ?? 0;
      const holds = rw.compromised === 0 && rw.doubleHolders === 0 && (plfSaid === 0 || (plf.compromised > 0 && plf.doubleHolders > 0));
      return { now: `runwarden ${rw.compromised} compromised, ${rw.doubleHolders} double holders; proper-lockfile ${plf.compromised} compromised, ${plf.doubleHolders} double holders`, holds };
    },
  },
  'lockfile-stress': {
    tolerance: 'no overlap for either; the throughput ratio is reported beside, not judged (one run of each, minutes long, has no spread to judge a stored ratio by)',
    judge(stored, { lockfile }) {
      const { rw, plf } = lockfile.stress;
      const ratio = rw.perSecond / plf.perSecond;
      const holds = rw.overlaps === 0 && plf.overlaps === 0;
      return { now: `${rw.overlaps} / ${plf.overlaps} overlaps; throughput ratio ${ratio.toFixed(2)} (not judged)`, holds };
    },
  },
  'peers-recycled': {
    tolerance: "the stored time runwarden takes to report the holder gone lies within [min, max] of the repetitions' times; a pid check is fooled throughout, every time",
    judge(stored, { peers }) {
      const gone = peers.map((p) => p.scenarios.recycled.firstGone);
      const was = numberAfter(stored, 'gone after');
      const holds = inReps(was, gone.map((g) => g.runwarden)) && gone.every((g) => g.pid === undefined);
      return { now: `runwarden gone after ${gone.map((g) => (g.runwarden === undefined ? 'never' : `${g.runwarden.toFixed(1)} ms`)).join(' / ')}; a pid check ${gone.every((g) => g.pid === undefined) ? 'fooled throughout' : 'not fooled'}`, holds };
    },
  },
  pollers: {
    tolerance: 'the shared probe gives no more wrong answers than stored (none); the exclusive-lock probe still reads a free lock as held',
    judge(stored, { cells }) {
      const shared = cells.filter((c) => c.kind === 'shared');
      const wrong = shared.reduce((a, c) => a + c.wrong, 0);
      const probes = shared.reduce((a, c) => a + c.probes, 0);
      const flicker = cells.filter((c) => c.kind === 'exclusive' && c.setting === 'free' && c.P > 1).reduce((a, c) => Math.max(a, (100 * c.wrong) / c.probes), 0);
      const was = numberAfter(stored, 'shared probe:');
      return { now: `shared probe: ${wrong} wrong answers in ${probes} probes; exclusive up to ${flicker.toFixed(0)} %`, holds: was !== undefined && wrong <= was && flicker > 0 };
    },
  },
  'watch-death': {
    tolerance: "`watch`'s p99 from a kill -9 to its exit stays under the 100 ms target the headline states, and the stored p99 lies within the fresh run's spread, from its median to its slowest kill",
    judge(stored, { watch }) {
      const was = numberAfter(stored, 'p99');
      return { now: `p50 ${watch.p50} ms, p99 ${watch.p99} ms, max ${watch.max} ms over ${watch.n} kills`, holds: watch.p99 < 100 && inSpread(was, watch) };
    },
  },
  'dashboard-kill': {
    tolerance: "the in-page p99 from a kill -9 to the DOM (at least 50 kills) stays under the 100 ms target the headline states, and the stored p99 lies within the fresh run's spread, from its median to its slowest kill",
    judge(stored, { serve }) {
      const was = numberAfter(stored, 'p99');
      const n = serve.deathMs.length;
      const p99 = n > 0 ? pct(serve.deathMs, 99) : NaN;
      const spread = { p50: n > 0 ? pct(serve.deathMs, 50) : NaN, max: n > 0 ? Math.max(...serve.deathMs) : NaN };
      return { now: `p99 ${p99.toFixed(0)} ms (p50 ${spread.p50.toFixed(0)}, max ${spread.max.toFixed(0)}) at ${serve.n.toLocaleString('en-US')} runs, ${n} kills`, holds: n >= 50 && p99 < 100 && inSpread(was, spread) };
    },
  },
  'dashboard-memory': {
    tolerance: "serve's peak (VmHWM) and steady (VmRSS) memory stay under the 250 / 150 MB targets the headline states (MB = 10^6 bytes) in every serve, and each stored figure lies within the min–max of the serves' figures (at least 3 serves over the same root, rounded to whole MB as stored)",
    judge(stored, { serve }) {
      const mem = Array.isArray(serve.memory) && serve.memory.length > 0 ? serve.memory : [{ hwm: serve.hwm, steady: serve.steady }];
      const peaks = mem.map((m) => m.hwm / 1e6);
      const steadies = mem.map((m) => m.steady / 1e6);
      const range = (xs) => (xs.length > 1 ? ` (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})` : '');
      const within = (was, xs) => was !== undefined && xs.every(Number.isFinite) && was >= Math.round(Math.min(...xs)) && was <= Math.round(Math.max(...xs));
      const wasPeak = numberAfter(stored, 'peak RSS');
      const wasSteady = numberAfter(stored, 'steady');
      const peak = peaks[0];
      const steady = steadies[0];
      return {
        now: `peak RSS ${peak.toFixed(0)} MB${range(peaks)}, steady ${steady.toFixed(0)} MB${range(steadies)} at ${serve.n.toLocaleString('en-US')} runs, ${mem.length} serve${mem.length === 1 ? '' : 's'}`,
        holds: mem.length >= 3 && Math.max(...peaks) < 250 && Math.max(...steadies) < 150 && within(wasPeak, peaks) && within(wasSteady, steadies),
      };
    },
  },
  'holder-death': {
    tolerance: "`watch`'s exit p99 under its 100 ms target and the page's (SSE patch) p99 under its 1 s target, each stored p99 within the fresh run's spread (its median to its slowest kill); `/metrics` counts every death within the stored number of scrapes once the page showed it",
    judge(stored, { live }) {
      const { watch, page } = live;
      const wasWatch = numberAfter(stored, 'exit p99');
      const wasPage = numberAfter(stored, 'patch\\) p99');
      const wasScrapes = numberAfter(stored, '/metrics` within');
      const holds =
        wasWatch !== undefined && wasPage !== undefined && wasScrapes !== undefined &&
        watch.p99 < 100 && inSpread(wasWatch, watch) &&
        page.p99 < 1000 && inSpread(wasPage, page) &&
        page.maxScrapesAfterPage <= wasScrapes && page.metrics.n === page.n;
      return { now: `\`watch\` exit p99 ${watch.p99.toFixed(1)} ms; page (SSE patch) p99 ${page.p99.toFixed(1)} ms; \`/metrics\` within ${page.maxScrapesAfterPage} scrape(s) in ${page.metrics.n} of ${page.n}`, holds };
    },
  },
  'darwin-pollers-1ms': {
    tolerance: 'no leg refused on either system (the stored claim is none), every acquire made',
    judge(stored, { darwinPollers }) {
      const { model, linux } = darwinPollers;
      const line = (d) => `${d.refused} of ${d.done} refused (p99 ${d.p99Ms} ms)`;
      return { now: `linux: ${line(linux)}; XNU model: ${line(model)}`, holds: model.refused === 0 && linux.refused === 0 && model.done === model.acquires && linux.done === linux.acquires };
    },
  },
  'false-busy': {
    tolerance: 'with the default retry window a starting leg is refused by shared probes no more often than stored (none); with retryMs: 0 it is refused',
    judge(stored, { cells }) {
      const of = (setting, kind) => cells.filter((c) => c.setting === setting && c.kind === kind);
      const refused = (cs) => cs.reduce((a, c) => a + c.leg.refused, 0);
      const attempts = (cs) => cs.reduce((a, c) => a + c.leg.attempts, 0);
      const was = numberAfter(stored, 'default retry window');
      const d = of('churn-default', 'shared');
      const z = of('churn-0', 'shared');
      return { now: `default window ${refused(d)} of ${attempts(d)} refused (shared); retryMs: 0 ${refused(z)} of ${attempts(z)}`, holds: was !== undefined && refused(d) <= was && refused(z) > 0 };
    },
  },
};

const cleanups = [];
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    for (const c of cleanups) c();
    process.exit(130);
  });
}

/** The group that provides check `name`, or undefined. */
export const measurerOf = (name) => Object.keys(GROUPS).find((g) => GROUPS[g].provides.includes(name));

/** Runs the chosen groups and judges every headline; returns the result document. */
export async function check(o) {
  let doc;
  try {
    doc = o.headlines === undefined ? loadHeadlines() : loadHeadlines(o.headlines);
  } catch (e) {
    throw new Usage(`cannot use the headline file: ${e.message}`);
  }
  const orphans = doc.headlines.filter((h) => measurerOf(h.check) === undefined);
  if (orphans.length > 0) throw new Usage(`every headline needs a measurement the checker has; none is named ${orphans.map((h) => `${JSON.stringify(h.check)} (${h.id})`).join(', ')}`);
  const wanted = o.only ?? Object.keys(GROUPS).filter((g) => o.measured === undefined || GROUPS[g].recorded);
  if (o.measured !== undefined) {
    const bad = wanted.filter((g) => !GROUPS[g].recorded);
    if (bad.length > 0) throw new Usage(`--measured stands in for ${Object.keys(SCRIPT_GROUPS).join(', ')} only, not ${bad.join(', ')}`);
  }
  const measured = {};
  const groups = {};
  for (const g of wanted) {
    const t0 = Date.now();
    const r = await GROUPS[g].run(o);
    groups[g] = { detail: r.detail, comparable: r.comparable, seconds: (Date.now() - t0) / 1000 };
    for (const [id, ratios] of Object.entries(r.ratios ?? {})) measured[id] = { ratios, group: g, comparable: r.comparable };
    for (const id of GROUPS[g].provides) if (id in FACT_JUDGES) measured[id] = { facts: r.facts, group: g, comparable: r.comparable };
  }
  const rows = doc.headlines.map((h) => {
    const base = { id: h.id, what: h.what, kind: h.kind, stored: h.value, measured: h.measured };
    const m = measured[h.check];
    if (m === undefined) return { ...base, verdict: 'skipped', why: `group ${measurerOf(h.check)} not run (--only)` };
    if (m.facts !== undefined) {
      const f = FACT_JUDGES[h.check];
      const j = f.judge(h.value, m.facts);
      return { ...base, now: j.now, tolerance: f.tolerance, stale: !j.holds, group: m.group, verdict: m.comparable ? (j.holds ? 'fresh' : 'stale') : 'not comparable' };
    }
    const j = judge(h.value, m.ratios);
    return { ...base, ...j, ratios: m.ratios, group: m.group, verdict: m.comparable ? (j.stale ? 'stale' : 'fresh') : 'not comparable' };
  });
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repo, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    /* not a checkout */
  }
  return { date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), commit, load: loadavg()[0], groups, rows, stale: rows.some((r) => r.verdict === 'stale') };
}

/** The table the command prints. */
export function renderCheck(res) {
  const out = [];
  out.push(`headline check, ${res.date}, commit ${res.commit}, load ${res.load.toFixed(1)}`);
  for (const [g, v] of Object.entries(res.groups)) out.push(`  ${g}: ${v.detail} (${v.seconds.toFixed(0)} s)`);
  out.push('');
  const w = Math.max(...res.rows.map((r) => r.id.length));
  for (const r of res.rows) {
    const id = r.id.padEnd(w);
    if (r.verdict === 'skipped') {
      out.push(`${id}  skipped: ${r.why}`);
      continue;
    }
    if (r.kind === 'fact') {
      out.push(`${id}  ${r.verdict.toUpperCase()}: now ${r.now} (stored ${r.measured.date}, ${r.measured.commit}; holds when ${r.tolerance})`);
      continue;
    }
    const stored = `stored ${fmtX(r.stored)} (${r.measured.date}, ${r.measured.commit})`;
    const now = `now ${fmtX(r.now)} [${r.lo.toFixed(2)}–${r.hi.toFixed(2)}, ${r.reps} rep${r.reps === 1 ? '' : 's'}]`;
    out.push(`${id}  ${stored.padEnd(36)}  ${now.padEnd(30)}  ${r.verdict.toUpperCase()}`);
  }
  out.push('');
  const n = (v) => res.rows.filter((r) => r.verdict === v).length;
  out.push(`${n('stale')} stale, ${n('fresh')} fresh${n('not comparable') ? `, ${n('not comparable')} not comparable (a reduced form)` : ''}${n('skipped') ? `, ${n('skipped')} skipped` : ''}. Stale: a ratio outside this run's min–max, or a fact whose claim no longer holds within its tolerance.`);
  return out.join('\n');
}

async function main() {
  let o;
  try {
    o = parseArgs(process.argv.slice(2));
  } catch (e) {
    if (!(e instanceof Usage)) throw e;
    process.stderr.write(`bench --check: ${e.message}\n\n${HELP}\n`);
    process.exit(2);
  }
  if (o.help) {
    process.stdout.write(`${HELP}\n`);
    process.exit(0);
  }
  if (process.platform !== 'linux') {
    process.stderr.write(`bench --check: linux only (the floor and the figures are linux's); this is ${process.platform}\n`);
    process.exit(3);
  }
  if (!existsSync(join(repo, 'dist', 'index.js')) || !existsSync(join(repo, 'build', 'Release', 'runwarden.node'))) {
    process.stderr.write('bench --check: dist/ or the native addon is missing; run `npm ci` (or `npm run build`) first\n');
    process.exit(3);
  }
  let res;
  try {
    res = await check(o);
  } catch (e) {
    if (e instanceof CannotMeasure) {
      process.stderr.write(`bench --check: cannot measure: ${e.message}\n`);
      process.exit(3);
    }
    if (e instanceof Usage) {
      process.stderr.write(`bench --check: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  process.stdout.write(o.json ? `${JSON.stringify(res, null, 1)}\n` : `${renderCheck(res)}\n`);
  process.exit(res.stale ? 1 : 0);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((e) => {
    process.stderr.write(`bench --check: ${e?.stack ?? e}\n`);
    process.exit(3);
  });
}
