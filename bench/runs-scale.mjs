#!/usr/bin/env node
/**
 * `runs` at scale (speed):
 *   A. `runwarden runs --json` over 10,000 run directories with small streams
 *      must finish in under 2 s (wall clock, CLI, node start-up included);
 *   B. its time per run must not grow with stream size: 100 runs with 100 KB
 *      streams against 100 runs with 50 MB streams, per-run time ratio < 2;
 *   C. (reported, no target) the limit of the tail read: a stream whose LAST
 *      LEG is itself 50 MB costs time proportional to that leg, and the
 *      forward fold of a whole 50 MB stream, for scale.
 *
 * All data is generated under os.tmpdir() and deleted afterwards (also on
 * Ctrl-C). Runs are realistic: events.jsonl in the reference shape, a
 * state.json, and a marked resume.lock; some legs are open with a free lock
 * (ABANDONED, so the probe runs) and some are held by a live process.
 *
 * usage: node bench/runs-scale.mjs [--quick] [--no-write] [--write FILE] [--json FILE]
 *   --quick     1,000 small runs; 20 + 20 runs for the size ratio
 *   --write F   replace the "## runs at scale" section of F (default:
 *               bench/RESULTS.md, or bench/out/RESULTS-quick.md with --quick)
 *   --no-write  only print the section
 *   --json F    also write every repetition's times to F (bench/check.mjs reads it)
 * The section is always printed on stdout; progress goes to stderr.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { leg, line, MARKED, smallRun, state } from './lib/runs.js';
import { writeSection } from './lib/sections.js';

const benchDir = dirname(fileURLToPath(import.meta.url));
const repo = dirname(benchDir);
const BIN = join(repo, 'bin', 'runwarden.js');
const HEADING = '## runs at scale';

const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h')) {
  process.stdout.write(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(2, 24).map((l) => l.replace(/^ \*\/? ?/, '')).join('\n') + '\n');
  process.exit(0);
}
const quick = args.includes('--quick');
const noWrite = args.includes('--no-write');
const wi = args.indexOf('--write');
const writeTo = wi >= 0 ? args[wi + 1] : join(benchDir, quick ? 'out/RESULTS-quick.md' : 'RESULTS.md');
const ji = args.indexOf('--json');
const jsonTo = ji >= 0 ? args[ji + 1] : undefined;
const known = new Set(['--quick', '--no-write', '--write', writeTo, '--json', jsonTo]);
const unknown = args.filter((a) => !known.has(a));
if (unknown.length > 0 || (wi >= 0 && !args[wi + 1]) || (ji >= 0 && !jsonTo)) {
  process.stderr.write(`runs-scale: bad arguments ${unknown.join(' ')}; see --help\n`);
  process.exit(2);
}

if (!existsSync(join(repo, 'dist', 'index.js'))) {
  process.stderr.write('runs-scale: dist/ is missing; run `npm run build` first\n');
  process.exit(1);
}
const lib = await import(pathToFileURL(join(repo, 'dist', 'index.js')).href);

const cfg = quick
  ? { small: 1_000, big: 20, bigMB: 50, reps: 3 }
  : { small: 10_000, big: 100, bigMB: 50, reps: 5 };

const t0 = Date.now();
const log = (m) => process.stderr.write(`[runs-scale ${((Date.now() - t0) / 1000).toFixed(1).padStart(5)} s] ${m}\n`);

const scratch = mkdtempSync(join(tmpdir(), 'rw-runs-scale-'));
const children = [];
function cleanupAll() {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(scratch, { recursive: true, force: true });
}
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    cleanupAll();
    process.exit(130);
  });
}

// ---------------------------------------------------------------- data ---






/**
 * A run whose stream is `bytes` long, made of many ordinary legs, ending in
 * the same last leg whatever its size, so the two sets differ only in size.
 */
function sizedRun(root, i, bytes) {
  const id = `20260806-120000.${String(i).padStart(9, '0')}-1`;
  const dir = join(root, id);
  mkdirSync(dir);
  const closedLeg = leg(id, 6, 'failed', 400);
  const lastLeg = i % 2 ? leg(id, 6, 'passed', 400) : leg(id, 3, '', 400); // closed, or open and free
  const block = Buffer.from(closedLeg.repeat(Math.max(1, Math.floor((1 << 20) / closedLeg.length))));
  const fd = openSync(join(dir, 'events.jsonl'), 'w');
  let written = 0;
  const target = bytes - lastLeg.length;
  while (written + block.length <= target) written += writeSync(fd, block);
  const rest = Math.floor((target - written) / closedLeg.length);
  if (rest > 0) written += writeSync(fd, closedLeg.repeat(rest));
  written += writeSync(fd, lastLeg);
  closeSync(fd);
  writeFileSync(join(dir, 'state.json'), state(id, 6, i % 2 ? 6 : 3));
  writeFileSync(join(dir, 'resume.lock'), MARKED);
  return { dir, size: written };
}

/** A run whose last leg alone is `bytes` long (one start, then node events, never finished). */
function oneLegRun(root, i, bytes) {
  const id = `20260806-130000.${String(i).padStart(9, '0')}-1`;
  const dir = join(root, id);
  mkdirSync(dir);
  const fd = openSync(join(dir, 'events.jsonl'), 'w');
  let written = writeSync(fd, line(id, 'run_started'));
  const pair = line(id, 'node_started', { node_id: 'n' }) + line(id, 'node_passed', { node_id: 'n', verdict: 'PASS', detail: 'd'.repeat(400) });
  const block = Buffer.from(pair.repeat(Math.floor((1 << 20) / pair.length)));
  while (written + block.length <= bytes) written += writeSync(fd, block);
  closeSync(fd);
  writeFileSync(join(dir, 'resume.lock'), MARKED);
  return dir;
}

/** A live process holding the locks of `dirs` (taken through dist/, as a leg does). */
function holdLocks(dirs) {
  const script = `
    const { acquireLock } = await import(process.env.RW_INDEX);
    for (const d of JSON.parse(process.env.RW_DIRS)) acquireLock(d + '/resume.lock', { retryMs: 0 });
    process.stdout.write('ready\\n');
    setTimeout(() => {}, 600000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, RW_INDEX: pathToFileURL(join(repo, 'dist', 'index.js')).href, RW_DIRS: JSON.stringify(dirs) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  return new Promise((res, rej) => {
    child.stdout.on('data', (d) => String(d).includes('ready') && res(child));
    child.once('exit', (c) => rej(new Error(`lock holder exited (${c})`)));
  });
}

// ------------------------------------------------------------- measure ---

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (ns) => Number(ns) / 1e6;

/** Wall clock of `runwarden runs --json --root root`, output discarded; checks the row count. */
function cliRun(root, expectRows) {
  const start = process.hrtime.bigint();
  const r = spawnSync(process.execPath, [BIN, 'runs', '--json', '--root', root], { maxBuffer: 1 << 30, encoding: 'utf8' });
  const took = ms(process.hrtime.bigint() - start);
  if (r.status !== 0) throw new Error(`runs failed: ${r.stderr}`);
  const json = JSON.parse(r.stdout);
  if (json.runs.length + json.skipped.length !== expectRows) throw new Error(`expected ${expectRows} entries, got ${json.runs.length}+${json.skipped.length}`);
  if (json.skipped.length > 0) throw new Error(`unexpected skips: ${JSON.stringify(json.skipped.slice(0, 3))}`);
  return { took, json };
}

function inProcess(root) {
  const start = process.hrtime.bigint();
  const list = lib.listRuns(root);
  return { took: ms(process.hrtime.bigint() - start), list };
}

function tally(runs) {
  const t = {};
  for (const r of runs) t[r.status] = (t[r.status] ?? 0) + 1;
  return Object.entries(t).map(([k, v]) => `${v} ${k}`).join(', ');
}

const fmtS = (x) => `${(x / 1000).toFixed(2)} s`;
const fmtUs = (x) => `${(x * 1000).toFixed(0)} µs`;

try {
  // A. 10,000 small runs.
  const smallRoot = join(scratch, 'small');
  mkdirSync(smallRoot);
  log(`generating ${cfg.small} small runs`);
  const dirs = [];
  for (let i = 0; i < cfg.small; i++) dirs.push(smallRun(smallRoot, i));
  // 2% of runs have an open leg held by a live process: RUNNING, probed held.
  const heldDirs = [];
  for (let i = 5; i < cfg.small; i += 50) {
    const d = dirs[i];
    writeFileSync(join(d, 'events.jsonl'), leg('held', 2, ''));
    heldDirs.push(d);
  }
  await holdLocks(heldDirs);
  log(`${heldDirs.length} of them held by a live process; timing runs --json (${cfg.reps} times)`);
  cliRun(smallRoot, cfg.small); // warm-up: page cache and node's compile cache
  // Each listing beside a start-up alone (`runwarden --version`), so the pair of repetition r saw the same machine.
  const cliTimes = [];
  const startup = [];
  let last;
  for (let r = 0; r < cfg.reps; r++) {
    last = cliRun(smallRoot, cfg.small);
    cliTimes.push(last.took);
    const s = process.hrtime.bigint();
    spawnSync(process.execPath, [BIN, '--version']);
    startup.push(ms(process.hrtime.bigint() - s));
  }
  const libTimes = [];
  for (let r = 0; r < cfg.reps; r++) libTimes.push(inProcess(smallRoot).took);
  const overStartup = cliTimes.map((t, r) => t / startup[r]);
  const smallStatuses = tally(last.json.runs);
  log(`A: median ${fmtS(median(cliTimes))} (${smallStatuses})`);

  // B. per-run time vs stream size.
  const sizes = [
    { label: '100 KB', bytes: 100 * 1024 },
    { label: `${cfg.bigMB} MB`, bytes: cfg.bigMB * 1024 * 1024 },
  ];
  const sets = [];
  for (const s of sizes) {
    const root = join(scratch, `size-${s.bytes}`);
    mkdirSync(root);
    log(`generating ${cfg.big} runs with ${s.label} streams`);
    let total = 0;
    const tails = [];
    for (let i = 0; i < cfg.big; i++) {
      const { dir, size } = sizedRun(root, i, s.bytes);
      total += size;
      const t = lib.readLastLeg(join(dir, 'events.jsonl'));
      tails.push(t.size - t.from);
    }
    sets.push({ ...s, root, total, maxTail: Math.max(...tails) });
  }
  for (const s of sets) cliRun(s.root, cfg.big); // warm-up
  const per = sets.map(() => ({ lib: [], cli: [] }));
  for (let r = 0; r < cfg.reps * 2; r++) {
    sets.forEach((s, k) => {
      per[k].lib.push(inProcess(s.root).took / cfg.big);
      per[k].cli.push(cliRun(s.root, cfg.big).took);
    });
  }
  const perRun = per.map((p) => median(p.lib));
  const ratio = perRun[1] / perRun[0];
  const bStatuses = tally(inProcess(sets[1].root).list.runs);
  log(`B: per run ${fmtUs(perRun[0])} vs ${fmtUs(perRun[1])}, ratio ${ratio.toFixed(2)}`);

  // C. the tail read's limit, and the forward fold for scale.
  const oneRoot = join(scratch, 'one-leg');
  mkdirSync(oneRoot);
  const oneLeg = [];
  for (let i = 0; i < 5; i++) oneLeg.push(oneLegRun(oneRoot, i, cfg.bigMB * 1024 * 1024));
  const oneLegPer = [];
  for (let r = 0; r < cfg.reps; r++) oneLegPer.push(inProcess(oneRoot).took / oneLeg.length);
  const fwd = [];
  const bigStream = join(sets[1].root, lib.listRuns(sets[1].root).runs[0].run_id, 'events.jsonl');
  for (let r = 0; r < 3; r++) {
    const s = process.hrtime.bigint();
    lib.readStream(bigStream);
    fwd.push(ms(process.hrtime.bigint() - s));
  }
  log(`C: one 50 MB leg ${fmtS(median(oneLegPer))} per run; forward fold of a 50 MB stream ${fmtS(median(fwd))}`);

  // ---------------------------------------------------------- report ---
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['-C', repo, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    /* not a checkout */
  }
  const target = cfg.small === 10_000 ? '< 2 s' : '(quick mode: 1,000 runs; the 2 s target is for 10,000)';
  const okA = median(cliTimes) < 2000;
  const section = `${HEADING}

\`node bench/runs-scale.mjs${quick ? ' --quick' : ''}\` (${quick ? 'quick' : 'full'} mode), ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}, runwarden ${commit}. Data generated under \`${tmpdir()}\` and deleted afterwards; every run has \`events.jsonl\`, \`state.json\` and a marked \`resume.lock\`.

**A. \`runwarden runs --json\` over ${cfg.small.toLocaleString('en-US')} runs with small streams** (~${Math.round(readFileSync(join(dirs[2], 'events.jsonl')).length / 100) / 10} KB each: ${smallStatuses}; ${heldDirs.length} held by a live process, the ABANDONED ones probed free):

| measurement | median of ${cfg.reps} | min – max | target |
| --- | --- | --- | --- |
| CLI wall clock, node start-up and JSON output included | **${fmtS(median(cliTimes))}** | ${fmtS(Math.min(...cliTimes))} – ${fmtS(Math.max(...cliTimes))} | ${target}${cfg.small === 10_000 ? (okA ? ' ✓' : ' ✗') : ''} |
| \`listRuns(root)\` in one process | ${fmtS(median(libTimes))} | ${fmtS(Math.min(...libTimes))} – ${fmtS(Math.max(...libTimes))} | |
| \`runwarden --version\` (start-up alone, right after each listing) | ${fmtS(median(startup))} | ${fmtS(Math.min(...startup))} – ${fmtS(Math.max(...startup))} | |

The listing over the start-up beside it, repetition by repetition (the \`runs-10k\` headline): median **${median(overStartup).toFixed(2)}×**, ${Math.min(...overStartup).toFixed(2)}× – ${Math.max(...overStartup).toFixed(2)}×.

**B. Time per run against stream size** (${cfg.big} runs per set, each stream many ordinary legs ending in the same last leg — half closed, half open with a free lock; ${bStatuses} in the big set):

| set | total stream bytes | bytes the tail reader consulted (max per run) | per run, \`listRuns\` (median of ${cfg.reps * 2}) | \`runs --json\` CLI, whole set (median) |
| --- | --- | --- | --- | --- |
| ${cfg.big} × ${sets[0].label} | ${(sets[0].total / 1e6).toFixed(1)} MB | ${(sets[0].maxTail / 1024).toFixed(1)} KB | ${fmtUs(perRun[0])} | ${fmtS(median(per[0].cli))} |
| ${cfg.big} × ${sets[1].label} | ${(sets[1].total / 1e9).toFixed(2)} GB | ${(sets[1].maxTail / 1024).toFixed(1)} KB | ${fmtUs(perRun[1])} | ${fmtS(median(per[1].cli))} |

Ratio of per-run times (${sets[1].label} / ${sets[0].label}): **${ratio.toFixed(2)}** (target < 2${ratio < 2 ? ' ✓' : ' ✗'}). The status comes from reading the stream backwards from its end (\`readLastLeg\`), so a run costs the size of its last leg (plus the previous one while the last is open), not the size of its stream.

**C. The limit, stated:** the tail reader must see the whole last leg. ${oneLeg.length} runs whose single open leg is ${cfg.bigMB} MB of node events cost **${fmtS(median(oneLegPer))} per run** — proportional to that leg. For scale, the forward fold of a whole ${cfg.bigMB} MB many-leg stream (\`readStream\`, what \`status\` does once for its node list) takes ${fmtS(median(fwd))}.
`;
  process.stdout.write(section);
  if (jsonTo !== undefined) {
    // Repetition r of each list was taken beside repetition r of its partner (A: listing and start-up; B: the two sets), in ms.
    const doc = { quick, small: cfg.small, big: cfg.big, bigMB: cfg.bigMB, commit, cliMs: cliTimes, startupMs: startup, perRunSmallMs: per[0].lib, perRunBigMs: per[1].lib, ratio };
    writeFileSync(jsonTo, JSON.stringify(doc) + '\n');
  }
  if (!noWrite) {
    writeSection(writeTo, HEADING, section);
    log(`wrote the section into ${writeTo}`);
  }
  if (!quick && (!okA || ratio >= 2)) process.exitCode = 1;
} finally {
  cleanupAll();
}
