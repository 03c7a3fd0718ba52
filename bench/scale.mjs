#!/usr/bin/env node
/**
 * Scale, one command:
 *   A. `runwarden runs --json` over 100,000 small runs: wall clock, CPU
 *      (user + system) and peak RSS of the CLI process (target < 2 s, 150 MB);
 *   B. runs whose single last leg is 50 MB against runs of 100 KB, 20 each,
 *      closed legs and open legs (lock free, so ABANDONED: probed and
 *      confirmed) separately: per-run time ratio 50 MB / 100 KB (target < 2);
 *   C. the acquire-refusal cell: a leg starting and ending in a loop with the
 *      default acquireLock retry while 16, 32 and 64 tight-loop pollers probe
 *      the same lock (bench/pollers.js); every refusal is a false busy.
 *
 * Data is generated under os.tmpdir() and deleted afterwards (also on
 * Ctrl-C). Needs about 2.2 GB free there (checked first) and /usr/bin/time.
 *
 * usage: node bench/scale.mjs [--quick] [--no-write] [--only-a] [--only-b] [--acquire-only]
 *   --quick         10,000 small runs, 5 runs per leg set, 2 reps, pollers 16 and 64 only
 *   --no-write      only print the section (default: replace "## Scale" in bench/RESULTS.md)
 *   --only-a        part A alone, printed (implies --no-write); RUNWARDEN_THREADS is passed on
 *   --only-b        part B alone (the long legs), printed (implies --no-write)
 *   --acquire-only  only part C (no data generated, nothing written): its table,
 *                   and for each refusal how long it tried and the flocks on the file
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statfsSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { oneLegRun, smallRun } from './lib/runs.js';
import { writeSection } from './lib/sections.js';
import { TIME, timed } from './lib/timed.js';

const benchDir = dirname(fileURLToPath(import.meta.url));
const repo = dirname(benchDir);
const BIN = join(repo, 'bin', 'runwarden.js');
const HEADING = '## Scale';

const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h')) {
  process.stdout.write(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(2, 23).map((l) => l.replace(/^ \*\/? ?/, '')).join('\n') + '\n');
  process.exit(0);
}
const unknown = args.filter((a) => a !== '--quick' && a !== '--no-write' && a !== '--only-a' && a !== '--only-b' && a !== '--acquire-only');
if (unknown.length > 0) {
  process.stderr.write(`scale: unknown arguments ${unknown.join(' ')}; see --help\n`);
  process.exit(2);
}
const quick = args.includes('--quick');
const onlyA = args.includes('--only-a');
const onlyB = args.includes('--only-b');
const acquireOnly = args.includes('--acquire-only');
const noWrite = args.includes('--no-write') || onlyA || onlyB;
const cfg = quick ? { small: 10_000, legRuns: 5, reps: 2, Ps: [16, 64], windowMs: 4000, cellReps: 1 } : { small: 100_000, legRuns: 20, reps: 3, Ps: [16, 32, 64], windowMs: 10_000, cellReps: 2 };
const BIG = 50 * 1024 * 1024;
const SMALL = 100 * 1024;

if (!existsSync(join(repo, 'dist', 'index.js'))) {
  process.stderr.write('scale: dist/ is missing; run `npm run build` first\n');
  process.exit(1);
}
if (!existsSync(TIME)) {
  process.stderr.write(`scale: ${TIME} is needed to measure the CLI's CPU time and peak RSS\n`);
  process.exit(1);
}
const need = acquireOnly ? 0 : (onlyA ? 0 : 2 * cfg.legRuns * BIG) + (onlyB ? 0 : cfg.small * 8192) + 256 * 1024 * 1024;
const fsInfo = statfsSync(tmpdir());
const free = fsInfo.bavail * fsInfo.bsize;
if (free < need) {
  process.stderr.write(`scale: ${tmpdir()} has ${(free / 1e9).toFixed(1)} GB free; this bench needs about ${(need / 1e9).toFixed(1)} GB\n`);
  process.exit(1);
}

const t0 = Date.now();
const log = (m) => process.stderr.write(`[scale ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s] ${m}\n`);
const scratch = mkdtempSync(join(tmpdir(), 'rw-scale-'));
const cleanupAll = () => rmSync(scratch, { recursive: true, force: true });
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    cleanupAll();
    process.exit(130);
  });
}

// ---------------------------------------------------------------- data ---






// ------------------------------------------------------------- measure ---

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** `runs --json` under /usr/bin/time: wall s, CPU s (user + system), peak RSS MB; output discarded after a count check. */
function cli(root, expect) {
  const r = timed([process.execPath, BIN, 'runs', '--json', '--root', root]);
  if (expect !== undefined) {
    const doc = JSON.parse(r.stdout);
    if (doc.runs.length !== expect || doc.skipped.length !== 0) throw new Error(`expected ${expect} runs, got ${doc.runs.length} (+${doc.skipped.length} skipped)`);
  }
  return { wall: r.wall, cpu: r.cpu, rss: r.rss };
}

const fmt = (s) => `${s.toFixed(2)} s`;
const lib = await import(pathToFileURL(join(repo, 'dist', 'index.js')).href);

/** listRuns in this process: wall and CPU (process.cpuUsage, µs resolution) per run, in ms. */
function inProcess(root, n) {
  const c0 = process.cpuUsage();
  const w0 = process.hrtime.bigint();
  const list = lib.listRuns(root);
  const wall = Number(process.hrtime.bigint() - w0) / 1e6;
  const c = process.cpuUsage(c0);
  if (list.runs.length !== n) throw new Error(`listRuns: expected ${n} runs, got ${list.runs.length}`);
  return { wall: wall / n, cpu: (c.user + c.system) / 1000 / n };
}
const loadStart = loadavg().map((x) => x.toFixed(1)).join(' ');

/** Part C: one leg churning with the default acquire retry among P tight-loop pollers. */
async function acquireCell() {
  log(`acquire cell: pollers ${cfg.Ps.join(', ')}, ${cfg.windowMs} ms windows × ${cfg.cellReps}`);
  const { runPollers } = await import('./pollers.js');
  return runPollers({
    Ps: cfg.Ps,
    windowMs: cfg.windowMs,
    reps: cfg.cellReps,
    settings: [{ id: 'churn-default', label: 'churn, acquireLock default retry', retryMs: undefined }],
    kinds: [{ id: 'shared', label: 'runwarden probeLock (LOCK_SH)' }],
    log: () => {},
  });
}

if (acquireOnly) {
  try {
    const cells = await acquireCell();
    const msOf = (ns) => (Number.isFinite(ns) ? `${(ns / 1e6).toFixed(1)} ms` : 'no attempt');
    const out = [
      `C only (\`node bench/scale.mjs${quick ? ' --quick' : ''} --acquire-only\`), ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${cpus().length} CPUs, load ${loadStart} -> ${loadavg().map((x) => x.toFixed(1)).join(' ')}; ${cfg.windowMs} ms windows × ${cfg.cellReps}`,
      '',
      '| pollers | leg attempts | refused | acquire p50 | p99 | max |',
      '| --- | --- | --- | --- | --- | --- |',
      ...cells.map((c) => `| ${c.P} | ${c.leg.attempts} | **${c.leg.refused}** | ${msOf(c.leg.acquireP50)} | ${msOf(c.leg.acquireP99)} | ${msOf(c.leg.acquireMax)} |`),
      '',
      ...cells.flatMap((c) => c.leg.refusals.map((r) => `refused at P=${c.P} after ${(r.ns / 1e6).toFixed(1)} ms; /proc/locks then: ${r.shared} shared, ${r.exclusive} exclusive; "${r.message.split('\n')[0]}"`)),
    ];
    process.stdout.write(out.join('\n') + '\n');
  } finally {
    cleanupAll();
  }
  process.exit(0);
}

try {
  // A. 100,000 small runs.
  const smallRoot = join(scratch, 'small');
  mkdirSync(smallRoot);
  if (!onlyB) {
    log(`generating ${cfg.small} small runs`);
    for (let i = 0; i < cfg.small; i++) smallRun(smallRoot, i);
  }
  const emptyRoot = join(scratch, 'empty');
  mkdirSync(emptyRoot);

  // B. one-leg runs.
  const sets = [];
  for (const closed of onlyA ? [] : [true, false]) {
    for (const bytes of [SMALL, BIG]) {
      const root = join(scratch, `${closed ? 'closed' : 'open'}-${bytes}`);
      mkdirSync(root);
      log(`generating ${cfg.legRuns} runs with one ${closed ? 'closed' : 'open'} leg of ${bytes === BIG ? '50 MB' : '100 KB'}`);
      let total = 0;
      for (let i = 0; i < cfg.legRuns; i++) total += oneLegRun(root, i, bytes, closed);
      sets.push({ closed, bytes, root, total, runs: [] });
    }
  }

  log('timing runs --json (interleaved repetitions; the first is a warm-up)');
  if (!onlyB) cli(smallRoot, cfg.small);
  for (const s of sets) cli(s.root, cfg.legRuns);
  const small = [];
  const empty = [];
  for (let r = 0; r < cfg.reps; r++) {
    empty.push(cli(emptyRoot));
    if (!onlyB) small.push(cli(smallRoot));
    for (const s of sets) {
      s.runs.push(cli(s.root));
      (s.lib ??= []).push(inProcess(s.root, cfg.legRuns));
    }
    if (!onlyB) log(`rep ${r + 1}/${cfg.reps}: 100k ${fmt(small[r].wall)} wall, ${fmt(small[r].cpu)} cpu, ${small[r].rss.toFixed(0)} MB`);
    else log(`rep ${r + 1}/${cfg.reps} done`);
  }
  if (onlyA) {
    const e = { wall: median(empty.map((x) => x.wall)), cpu: median(empty.map((x) => x.cpu)) };
    const m = (k) => median(small.map((x) => x[k]));
    process.stdout.write(
      `A only, ${cfg.small} runs, ${cfg.reps} reps, load ${loadStart} → ${loadavg().map((x) => x.toFixed(1)).join(' ')}${process.env.RUNWARDEN_THREADS ? `, RUNWARDEN_THREADS=${process.env.RUNWARDEN_THREADS}` : ', default threads (status/list-threads.ts threadsFor)'}\n` +
        `empty root: ${fmt(e.wall)} wall, ${fmt(e.cpu)} cpu\n` +
        `runs --json: median ${fmt(m('wall'))} wall, ${fmt(m('cpu'))} cpu, ${m('rss').toFixed(0)} MB peak; each rep: ${small.map((x) => `${fmt(x.wall)}/${fmt(x.cpu)}/${x.rss.toFixed(0)} MB`).join(', ')}\n`,
    );
    cleanupAll();
    process.exit(0);
  }
  const med = (xs, k) => median(xs.map((x) => x[k]));
  // --only-b measures no small root; part A's rows are cut from what is printed, this only keeps them computable.
  if (onlyB) small.push(...empty);

  // C. the acquire-refusal cell.
  const cells = onlyB ? [] : await acquireCell();

  // ---------------------------------------------------------- report ---
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['-C', repo, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    /* not a checkout */
  }
  const loadEnd = loadavg().map((x) => x.toFixed(1)).join(' ');
  const e = { wall: med(empty, 'wall'), cpu: med(empty, 'cpu') };
  const row = (label, xs, n) =>
    `| ${label} | ${fmt(med(xs, 'wall'))} | ${fmt(med(xs, 'cpu'))} | ${med(xs, 'rss').toFixed(0)} MB | ${((1000 * med(xs, 'wall')) / n).toFixed(2)} ms | ${((1000 * Math.max(0, med(xs, 'cpu') - e.cpu)) / n).toFixed(3)} ms |`;
  const ratios = [true, false].map((closed) => {
    const [a, b] = sets.filter((s) => s.closed === closed);
    return {
      closed,
      wall: med(b.runs, 'wall') / med(a.runs, 'wall'),
      cpu: med(b.runs, 'cpu') / med(a.runs, 'cpu'),
      small: { wall: med(a.lib, 'wall'), cpu: med(a.lib, 'cpu') },
      big: { wall: med(b.lib, 'wall'), cpu: med(b.lib, 'cpu') },
    };
  });
  const msOf = (ns) => (Number.isFinite(ns) ? `${(ns / 1e6).toFixed(1)} ms` : 'no attempt');
  const cellRows = cells.map((c) => `| ${c.P} | ${c.leg.attempts} | **${c.leg.refused}** | ${msOf(c.leg.acquireP50)} | ${msOf(c.leg.acquireP99)} | ${msOf(c.leg.acquireMax)} |`);
  const refused = cells.reduce((a, c) => a + c.leg.refused, 0);
  const attempts = cells.reduce((a, c) => a + c.leg.attempts, 0);
  const section = `${HEADING}

\`node bench/scale.mjs${quick ? ' --quick' : ''}\` (${quick ? 'quick' : 'full'} mode), ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}, runwarden ${commit}. Load average at start ${loadStart}, at end ${loadEnd} (1, 5, 15 min): the machine is shared, so wall clock is the least trustworthy column; CPU time (user + system of the CLI process, from \`${TIME}\`) is the one to compare. Data generated under \`${tmpdir()}\` and deleted afterwards. Medians of ${cfg.reps} interleaved repetitions after a warm-up.

**A. \`runs --json\` over ${cfg.small.toLocaleString('en-US')} small runs** (3-to-8-line streams, \`state.json\`, marked lock; 10 % open legs with a free lock, probed and confirmed; output streamed):

| root | wall | CPU | peak RSS | wall per run | CPU per run, start-up (empty root) subtracted |
| --- | --- | --- | --- | --- | --- |
| empty (node start-up) | ${fmt(e.wall)} | ${fmt(e.cpu)} | ${med(empty, 'rss').toFixed(0)} MB | | |
${row(`${cfg.small.toLocaleString('en-US')} runs`, small, cfg.small)}

Targets: under 2 s and 150 MB.

**B. One long last leg** (${cfg.legRuns} runs per set, each stream a single leg of node events with prose details; open legs have a free lock, so each is probed and confirmed ABANDONED):

| set | stream bytes per run | wall | CPU | peak RSS | wall per run | CPU per run, start-up subtracted |
| --- | --- | --- | --- | --- | --- | --- |
${sets.map((s) => row(`${cfg.legRuns} × ${s.closed ? 'closed' : 'open'} ${s.bytes === BIG ? '50 MB' : '100 KB'}`, s.runs, cfg.legRuns).replace(/^\| ([^|]+) \|/, `| $1 | ${(s.total / cfg.legRuns / 1e6).toFixed(2)} MB |`)).join('\n')}

Per-run ratio 50 MB / 100 KB (target < 2):

| legs | CLI wall, whole set (start-up included) | CLI CPU (start-up included) | \`listRuns\` in one process, per run: 100 KB → 50 MB wall | per run CPU | ratio, wall | ratio, CPU |
| --- | --- | --- | --- | --- | --- | --- |
${ratios.map((r) => `| ${r.closed ? 'closed' : 'open'} | **${r.wall.toFixed(2)}** | ${r.cpu.toFixed(2)} | ${r.small.wall.toFixed(2)} → ${r.big.wall.toFixed(2)} ms | ${r.small.cpu.toFixed(2)} → ${r.big.cpu.toFixed(2)} ms | ${(r.big.wall / r.small.wall).toFixed(1)} | ${(r.big.cpu / r.small.cpu).toFixed(1)} |`).join('\n')}

The CLI columns are the target's measure (whole \`runs --json\` per set, so node's start-up is in both); the in-process columns are the reader's own cost per run, where a 50 MB leg is a byte search of 50 MB (read from the page cache and searched by the addon's \`lastMatch\`) against 100 KB.

**C. Acquire against tight-loop readers** (bench/pollers.js churn cell: one leg acquiring with the default retry, holding 1 ms, idle 1 ms, in a loop, while P pollers probe the same lock with the shared probe; ${cfg.windowMs} ms windows × ${cfg.cellReps}):

| pollers | leg attempts | refused | acquire p50 | p99 | max |
| --- | --- | --- | --- | --- | --- |
${cellRows.join('\n')}

Refused: **${refused} of ${attempts}** attempts.
`;
  process.stdout.write(onlyB ? section.slice(section.indexOf('**B.'), section.indexOf('**C.')) : section);
  if (!noWrite) {
    const file = join(benchDir, 'RESULTS.md');
    writeSection(file, HEADING, section);
    log(`wrote the "${HEADING}" section of ${file}`);
  }
} finally {
  cleanupAll();
}
