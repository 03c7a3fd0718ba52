#!/usr/bin/env node
/**
 * Where `runwarden runs --json` over 100,000 runs spends its time, against
 * the floors it cannot go below (the "under 2 s" target), one command:
 *
 *   start-up   the CLI over an empty root (process, modules, the addon);
 *   syscalls   bench/list-floor.c `sync`: exactly the system calls the
 *              listing makes per run, in C, one after another (the open
 *              legs' probes and confirmation included);
 *   io_uring   bench/list-floor.c `uring`: the settled runs' kernel work
 *              submitted in batches (no fstat): what batching could save;
 *   parsing    JSON.parse of exactly the lines a listing must parse (each
 *              run's last leg: from its last `run_started`) and of each
 *              snapshot, timed in this process with the files already read;
 *   runs       `runs --json`, one thread and RUNWARDEN_THREADS=2: wall, CPU
 *              (user + system, /usr/bin/time) and peak RSS.
 *
 * Medians of interleaved repetitions, all in one run (the machine is shared:
 * compare the columns of one run, not runs). The runs are bench/lib/runs.js
 * smallRun (as bench/scale.mjs part A): 10 % open legs with a free lock.
 *
 * usage: node bench/list-floor.mjs [--runs N] [--reps R] [--no-write]
 *   --runs N     runs to generate (default 100000)
 *   --reps R     repetitions (default 3)
 *   --no-write   only print (default: also replace "## Listing floor" in bench/RESULTS.md)
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildC } from './lib/floor.js';
import { smallRun } from './lib/runs.js';
import { writeSection } from './lib/sections.js';
import { TIME, timed } from './lib/timed.js';

const benchDir = dirname(fileURLToPath(import.meta.url));
const repo = dirname(benchDir);
const BIN = join(repo, 'bin', 'runwarden.js');
const HEADING = '## Listing floor';

const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h')) {
  process.stdout.write(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(2, 26).map((l) => l.replace(/^ \*\/? ?/, '')).join('\n') + '\n');
  process.exit(0);
}
function opt(name, dflt) {
  const i = args.indexOf(name);
  if (i < 0) return dflt;
  const v = Number(args[i + 1]);
  if (!Number.isInteger(v) || v < 1) {
    process.stderr.write(`list-floor: ${name} needs a positive whole number; see --help\n`);
    process.exit(2);
  }
  return v;
}
const known = new Set(['--runs', '--reps', '--no-write']);
for (let i = 0; i < args.length; i++) {
  if (!known.has(args[i])) {
    process.stderr.write(`list-floor: unknown argument ${args[i]}; see --help\n`);
    process.exit(2);
  }
  if (args[i] !== '--no-write') i++;
}
const N = opt('--runs', 100_000);
const REPS = opt('--reps', 3);
const noWrite = args.includes('--no-write');
if (!existsSync(join(repo, 'dist', 'index.js'))) {
  process.stderr.write('list-floor: dist/ is missing; run `npm run build` first\n');
  process.exit(1);
}
if (!existsSync(TIME)) {
  process.stderr.write(`list-floor: ${TIME} is needed to measure CPU time and peak RSS\n`);
  process.exit(1);
}

const t0 = Date.now();
const log = (m) => process.stderr.write(`[list-floor ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s] ${m}\n`);
const scratch = mkdtempSync(join(tmpdir(), 'rw-list-floor-'));
const cleanup = () => rmSync(scratch, { recursive: true, force: true });
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => (cleanup(), process.exit(130)));

/** CPU seconds of JSON.parse over what a listing must parse: each run's last leg and its snapshot. */
function parseFloor(root, names) {
  const START = Buffer.from('"run_started"');
  let cpu = 0;
  let lines = 0;
  for (let s = 0; s < names.length; s += 1000) {
    const batch = names.slice(s, s + 1000).map((n) => [readFileSync(join(root, n, 'events.jsonl')), readFileSync(join(root, n, 'state.json'))]);
    const c0 = process.cpuUsage();
    for (const [ev, st] of batch) {
      const at = ev.lastIndexOf(START);
      let ls = at < 0 ? 0 : ev.lastIndexOf(0x0a, at) + 1;
      for (;;) {
        const nl = ev.indexOf(0x0a, ls);
        if (nl < 0) break;
        JSON.parse(ev.toString('utf8', ls, nl));
        lines++;
        ls = nl + 1;
      }
      JSON.parse(st.toString('utf8'));
    }
    const c = process.cpuUsage(c0);
    cpu += (c.user + c.system) / 1e6;
  }
  return { cpu, lines };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

try {
  const root = join(scratch, 'runs');
  const empty = join(scratch, 'empty');
  mkdirSync(root);
  mkdirSync(empty);
  log(`generating ${N} runs`);
  for (let i = 0; i < N; i++) smallRun(root, i);
  const names = readdirSync(root);
  const { binary, compiler } = buildC('list-floor');
  const loadStart = loadavg().map((x) => x.toFixed(1)).join(' ');
  const rows = { start: [], sync: [], uring: [], parse: [], t1: [], t2: [] };
  let uringNote = '';
  let parsedLines = 0;
  let openLegs = 0;
  timed([process.execPath, BIN, 'runs', '--json', '--root', root]); // warm-up: page cache, dentries
  for (let r = 0; r < REPS; r++) {
    rows.start.push(timed([process.execPath, BIN, 'runs', '--json', '--root', empty]));
    const sync = JSON.parse(execFileSync(binary, [root, 'sync'], { encoding: 'utf8' }));
    openLegs = sync.open_legs;
    rows.sync.push({ wall: sync.seconds });
    const uring = JSON.parse(execFileSync(binary, [root, 'uring'], { encoding: 'utf8' }));
    if (uring.unavailable !== undefined) uringNote = uring.unavailable;
    else rows.uring.push({ wall: uring.seconds });
    const p = parseFloor(root, names);
    parsedLines = p.lines;
    rows.parse.push({ wall: p.cpu });
    const one = timed([process.execPath, BIN, 'runs', '--json', '--root', root], { RUNWARDEN_THREADS: '1' });
    if (JSON.parse(one.stdout).runs.length !== N) throw new Error('runs --json did not list every run');
    one.stdout = '';
    rows.t1.push(one);
    const two = timed([process.execPath, BIN, 'runs', '--json', '--root', root], { RUNWARDEN_THREADS: '2' });
    two.stdout = '';
    rows.t2.push(two);
    log(`rep ${r + 1}/${REPS}: syscalls ${sync.seconds.toFixed(2)} s, runs --json ${one.wall.toFixed(2)} s (1 thread), ${two.wall.toFixed(2)} s (2)`);
  }
  const m = (xs, k = 'wall') => median(xs.map((x) => x[k]));
  const s = (x) => `${x.toFixed(2)} s`;
  const runsOne = m(rows.t1, 'cpu');
  const share = (x) => `${Math.round((100 * x) / runsOne)} %`;
  const uringRow = rows.uring.length ? `| the settled runs' kernel work through io_uring, batches of 256, no fstat (\`list-floor uring\`) | ${s(m(rows.uring))} | ${share(m(rows.uring))} |` : `| io_uring | unavailable here: ${uringNote} | |`;
  const section = `${HEADING}

\`node bench/list-floor.mjs${N === 100_000 ? '' : ` --runs ${N}`}${REPS === 3 ? '' : ` --reps ${REPS}`}\`, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, commit ${execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repo, encoding: 'utf8' }).trim()}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}, ${compiler}; load ${loadStart} → ${loadavg().map((x) => x.toFixed(1)).join(' ')}. ${N.toLocaleString('en-US')} runs as in "Scale" part A (${openLegs.toLocaleString('en-US')} open legs with a free lock, probed and confirmed); medians of ${REPS} interleaved repetitions. C and parsing rows are CPU-bound single-thread loops (their wall clock is their CPU time); the \`runs\` rows give CPU, then wall.

| what | seconds | share of \`runs --json\` CPU (1 thread) |
| --- | --- | --- |
| process start-up: \`runs --json\` over an empty root (CPU) | ${s(m(rows.start, 'cpu'))} | ${share(m(rows.start, 'cpu'))} |
| the listing's system calls, in C, one after another (\`list-floor sync\`) | ${s(m(rows.sync))} | ${share(m(rows.sync))} |
${uringRow}
| JSON.parse of the ${parsedLines.toLocaleString('en-US')} stream lines and ${N.toLocaleString('en-US')} snapshots a listing must parse (CPU) | ${s(m(rows.parse))} | ${share(m(rows.parse))} |
| \`runs --json\`, one thread: CPU / wall / peak RSS | ${s(runsOne)} / ${s(m(rows.t1))} / ${m(rows.t1, 'rss').toFixed(0)} MB | 100 % |
| \`runs --json\`, RUNWARDEN_THREADS=2: CPU / wall / peak RSS | ${s(m(rows.t2, 'cpu'))} / ${s(m(rows.t2))} / ${m(rows.t2, 'rss').toFixed(0)} MB | ${share(m(rows.t2, 'cpu'))} |

The system calls and the parsing alone are ${s(m(rows.sync) + m(rows.parse))} of CPU: what the contract's reads cost on this machine with plain system calls before a single report is built, start-up not counted (${s(m(rows.start, 'cpu'))} more). Shared perfectly over ${Math.min(2, cpus().length)} cores that is ${s((m(rows.sync) + m(rows.parse)) / Math.max(1, Math.min(2, cpus().length)))} of wall clock.${rows.uring.length ? ` Batched through io_uring the settled runs' kernel work took ${s(m(rows.uring))} instead (a lower bound: no fstat, no probes).` : ''}

So \`runs --json\` is **${(runsOne / (m(rows.sync) + m(rows.parse))).toFixed(2)}×** that floor in CPU on one thread (${s(runsOne)} ÷ ${s(m(rows.sync) + m(rows.parse))}), and its wall clock on two threads is **${(m(rows.t2) / ((m(rows.sync) + m(rows.parse)) / Math.max(1, Math.min(2, cpus().length)))).toFixed(2)}×** the floor shared over the cores (${s(m(rows.t2))} ÷ ${s((m(rows.sync) + m(rows.parse)) / Math.max(1, Math.min(2, cpus().length)))}), both measured in this run.
`;
  process.stdout.write(section);
  if (!noWrite) writeSection(join(benchDir, 'RESULTS.md'), HEADING, section, { before: '## Scale' });
} finally {
  cleanup();
}
