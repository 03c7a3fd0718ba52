#!/usr/bin/env node
/**
 * `npm run bench -- --check` (or `node bench/check.mjs`): re-measures every
 * headline ratio of bench/headlines.json in quick modes (well under two
 * minutes on a 2-core machine) and prints, per headline, the stored value,
 * the value now with this run's spread, and FRESH or STALE; every fact it
 * has a judge for (peers, pollers: FACT_JUDGES) is re-derived from a fresh
 * run and judged by the claim and tolerance its judge states.
 *
 * The rule (bench/lib/headlines.js judge): the run takes R interleaved
 * repetitions, one ratio each; the value now is their median and the spread
 * their min–max, both rounded to two decimals. A stored value outside that
 * spread is STALE. Headlines that are not ratios, or too large to measure
 * quickly, are listed as not re-measured, with the reason from the file.
 *
 * Exit status: 0 every re-measured headline is fresh; 1 at least one is stale;
 * 2 a usage error; 3 a measurement could not be made (no build, no compiler,
 * not linux, too little space). Options that shrink the data (--legs,
 * --leg-mb) make the long-leg ratios "not comparable": printed, never stale.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { judge, loadHeadlines, fmtX } from './lib/headlines.js';
import { oneLegRun } from './lib/runs.js';

const benchDir = dirname(fileURLToPath(import.meta.url));
const repo = dirname(benchDir);
const BIN = join(repo, 'bin', 'runwarden.js');

const HELP = `usage: npm run bench -- --check [options]   (or: node bench/check.mjs [options])

Re-measures each headline ratio in bench/headlines.json and prints the stored
value, the value now (median of this run's repetitions, with their min–max)
and STALE when the stored value lies outside that min–max.

  --only GROUPS   comma-separated measurer groups: probe, peers, pollers, watch, long-leg, open-leg-floor (default: all)
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
  const o = { only: undefined, reps: undefined, chunkMs: 8, legs: LEG_RUNS, legMb: LEG_MB, json: false, headlines: undefined };
  const num = (name, v, min) => {
    if (v === undefined || !/^\d+$/.test(v) || Number(v) < min) throw new Usage(`${name} takes a whole number ≥ ${min} (got ${v === undefined ? 'nothing' : JSON.stringify(v)})`);
    return Number(v);
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') o.help = true;
    else if (a === '--json') o.json = true;
    else if (a === '--only') {
      const v = argv[++i];
      const groups = (v ?? '').split(',').filter(Boolean);
      const bad = groups.find((g) => !(g in GROUPS));
      if (groups.length === 0 || bad !== undefined) throw new Usage(`--only takes ${Object.keys(GROUPS).join(', ')} (got ${JSON.stringify(bad ?? v ?? '')})`);
      o.only = groups;
    } else if (a === '--reps') o.reps = num(a, argv[++i], 2);
    else if (a === '--chunk-ms') o.chunkMs = num(a, argv[++i], 1);
    else if (a === '--legs') o.legs = num(a, argv[++i], 1);
    else if (a === '--leg-mb') o.legMb = num(a, argv[++i], 1);
    else if (a === '--headlines') {
      const v = argv[++i];
      if (v === undefined || v === '') throw new Usage('--headlines takes a file');
      o.headlines = v;
    }
    else throw new Usage(`unknown option ${JSON.stringify(a)}`);
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
  /** bench/peers.js as `npm run bench` runs it (proper-lockfile's stale window 2 s, a 4 s stop): the kill, stop and recycled-pid outcomes. */
  peers: {
    provides: ['peers-kill', 'peers-stop', 'peers-recycled'],
    async run() {
      const { runPeers } = await import('./peers.js');
      log('peers: kill -9, SIGSTOP past the stale window, a recycled pid (bench/peers.js)');
      const peers = await runPeers({ staleMs: 2000, stopMs: 4000 });
      return { facts: { peers }, comparable: true, detail: 'proper-lockfile stale window 2 s, stop 4 s' };
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
  /** bench/live.mjs --watch-only: `runwarden watch`'s death-to-exit latency over 50 kill -9s. */
  watch: {
    provides: ['watch-death'],
    async run() {
      log('watch: 50 kill -9s, each to `runwarden watch`\'s exit (bench/live.mjs --watch-only)');
      const r = spawnSync(process.execPath, [join(benchDir, 'live.mjs'), '--watch-only', '--kills', '50'], { encoding: 'utf8', maxBuffer: 1 << 24 });
      const m = /death-to-exit over (\d+) kills: p50 ([\d.]+) ms, p99 ([\d.]+) ms/.exec(r.stdout ?? '');
      if (r.status !== 0 || m === null) throw new CannotMeasure(`bench/live.mjs --watch-only failed (exit ${r.status}): ${(r.stderr ?? '').slice(-300)}`);
      return { facts: { watch: { n: Number(m[1]), p50: Number(m[2]), p99: Number(m[3]) } }, comparable: true, detail: '50 kills, bench/live.mjs --watch-only' };
    },
  },
  /** bench/open-leg-floor.mjs: readLastLeg over 20 open 50 MB legs against the C floor reading the same bytes. */
  'open-leg-floor': {
    provides: ['open-leg-floor'],
    async run(o) {
      const reps = o.reps ?? 5;
      const { measureOpenLegFloor, openLegFiles } = await import('./open-leg-floor.mjs');
      log(`open-leg-floor: ${o.legs} open legs of ${o.legMb} MB, ${reps} repetitions (bench/open-leg-floor.mjs)`);
      const { files, cleanup } = openLegFiles(o.legs, o.legMb);
      cleanups.push(cleanup);
      try {
        const m = await measureOpenLegFloor(files, reps);
        return { ratios: { 'open-leg-floor': m.ratios }, comparable: o.legs === LEG_RUNS && o.legMb === LEG_MB, detail: `${o.legs} × ${o.legMb} MB, ${reps} repetitions, floor ${m.compiler}` };
      } finally {
        cleanup();
      }
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
    tolerance: 'runwarden reports the kill within 5× the stored time; proper-lockfile (its stale window) takes at least ten times as long',
    judge(stored, { peers }) {
      const rw = peers.scenarios.kill.firstGone.runwarden;
      const pl = peers.scenarios.kill.firstGone['proper-lockfile'];
      const was = numberAfter(stored, 'runwarden');
      const holds = rw !== undefined && was !== undefined && rw <= 5 * was && (pl === undefined || pl >= 10 * rw);
      return { now: `runwarden ${rw === undefined ? 'never' : `${rw.toFixed(1)} ms`}; proper-lockfile ${pl === undefined ? 'never' : `${Math.round(pl)} ms`}`, holds };
    },
  },
  'peers-stop': {
    tolerance: 'runwarden never says a stopped holder is dead; proper-lockfile does (and grants the lock again, when the stored fact says so)',
    judge(stored, { peers }) {
      const { firstGone, secondLocker } = peers.scenarios.stop;
      const holds = firstGone.runwarden === undefined && firstGone['proper-lockfile'] !== undefined && (!stored.includes('granted') || secondLocker['proper-lockfile'] === 'granted');
      return { now: `runwarden ${firstGone.runwarden === undefined ? 'alive throughout' : 'said dead'}; proper-lockfile ${firstGone['proper-lockfile'] === undefined ? 'alive throughout' : `dead after ${Math.round(firstGone['proper-lockfile'])} ms, second owner ${secondLocker['proper-lockfile']}`}`, holds };
    },
  },
  'peers-recycled': {
    tolerance: 'runwarden reports the holder gone within 5× the stored time; a pid check is fooled throughout',
    judge(stored, { peers }) {
      const { firstGone } = peers.scenarios.recycled;
      const was = numberAfter(stored, 'gone after');
      const holds = firstGone.runwarden !== undefined && was !== undefined && firstGone.runwarden <= 5 * was && firstGone.pid === undefined;
      return { now: `runwarden ${firstGone.runwarden === undefined ? 'never said gone' : `gone after ${firstGone.runwarden.toFixed(1)} ms`}; a pid check ${firstGone.pid === undefined ? 'fooled throughout' : 'not fooled'}`, holds };
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
    tolerance: '`watch`\'s p99 from a kill -9 to its exit stays under the 100 ms target the headline states, and within 5× the stored p99',
    judge(stored, { watch }) {
      const was = numberAfter(stored, 'p99');
      return { now: `p50 ${watch.p50} ms, p99 ${watch.p99} ms over ${watch.n} kills`, holds: was !== undefined && watch.p99 < 100 && watch.p99 <= 5 * was };
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

/** Runs the chosen groups and judges every headline; returns the result document. */
export async function check(o) {
  let doc;
  try {
    doc = o.headlines === undefined ? loadHeadlines() : loadHeadlines(o.headlines);
  } catch (e) {
    throw new Usage(`cannot use the headline file: ${e.message}`);
  }
  const wanted = o.only ?? Object.keys(GROUPS);
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
    if (h.check === null) return { ...base, verdict: 'unchecked', why: h.unchecked };
    const m = measured[h.check];
    if (m === undefined) {
      const group = Object.keys(GROUPS).find((g) => GROUPS[g].provides.includes(h.check));
      return { ...base, verdict: 'skipped', why: group === undefined ? `no measurer named ${h.check}` : `group ${group} not run (--only)` };
    }
    if (m.facts !== undefined) {
      const f = FACT_JUDGES[h.check];
      const j = f.judge(h.value, m.facts);
      return { ...base, now: j.now, tolerance: f.tolerance, stale: !j.holds, group: m.group, verdict: j.holds ? 'fresh' : 'stale' };
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
    if (r.verdict === 'unchecked' || r.verdict === 'skipped') {
      out.push(`${id}  ${r.verdict === 'unchecked' ? 'not re-measured' : 'skipped'}: ${r.why}`);
      continue;
    }
    if (r.kind === 'fact') {
      out.push(`${id}  ${r.verdict.toUpperCase()}: now ${r.now} (stored ${r.measured.date}, ${r.measured.commit}; holds when ${r.tolerance})`);
      continue;
    }
    const stored = `stored ${fmtX(r.stored)} (${r.measured.date}, ${r.measured.commit})`;
    const now = `now ${fmtX(r.now)} [${r.lo.toFixed(2)}–${r.hi.toFixed(2)}, ${r.reps} reps]`;
    out.push(`${id}  ${stored.padEnd(36)}  ${now.padEnd(30)}  ${r.verdict.toUpperCase()}`);
  }
  out.push('');
  const n = (v) => res.rows.filter((r) => r.verdict === v).length;
  out.push(`${n('stale')} stale, ${n('fresh')} fresh${n('not comparable') ? `, ${n('not comparable')} not comparable` : ''}, ${n('unchecked')} not re-measured${n('skipped') ? `, ${n('skipped')} skipped` : ''}. Stale: a ratio outside this run's min–max, or a fact whose claim no longer holds within its tolerance.`);
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
