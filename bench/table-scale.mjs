#!/usr/bin/env node
/**
 * The `runs` table (not --json) over many runs: wall clock,
 * CPU (user + system) and peak RSS of the CLI printing the table into a pipe,
 * beside `runs --json` over the same root in the same run, interleaved.
 * The table's peak RSS should sit near --json's, not grow with the list.
 *
 * usage: node bench/table-scale.mjs [--runs N] [--reps R] [--keep DIR]
 *   --runs N    small runs to generate (default 100000; bench/lib/runs.js smallRun)
 *   --reps R    interleaved repetitions (default 3); medians and min–max are printed
 *   --keep DIR  generate into (or reuse) DIR and leave it there; default: a
 *               temporary directory under os.tmpdir(), deleted afterwards
 *   --bin FILE  the CLI to time (default: this checkout's bin/runwarden.js), e.g.
 *               a copy of an earlier build, for a before/after in one run
 *   --json FILE also write every repetition's wall, CPU and peak RSS to FILE
 *               (bench/check.mjs reads it)
 * Prints a markdown table on stdout; writes nothing else unless --json.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';
import { smallRun } from './lib/runs.js';
import { TIME, timed } from './lib/timed.js';

const repo = dirname(dirname(fileURLToPath(import.meta.url)));

function opt(name, dflt) {
  const i = process.argv.indexOf(name);
  if (i < 0) return dflt;
  const v = process.argv[i + 1];
  if (v === undefined) {
    process.stderr.write(`table-scale: ${name} needs a value\n`);
    process.exit(2);
  }
  return v;
}
const n = Number(opt('--runs', '100000'));
const reps = Number(opt('--reps', '3'));
const keep = opt('--keep', undefined);
const jsonTo = opt('--json', undefined);
const BIN = opt('--bin', join(repo, 'bin', 'runwarden.js'));
const binGiven = BIN !== join(repo, 'bin', 'runwarden.js');
if (!Number.isInteger(n) || n < 1 || !Number.isInteger(reps) || reps < 1) {
  process.stderr.write('table-scale: --runs and --reps take positive whole numbers\n');
  process.exit(2);
}
if (!existsSync(TIME)) {
  process.stderr.write(`table-scale: ${TIME} is needed (apt-get install time)\n`);
  process.exit(1);
}

const root = keep ?? mkdtempSync(join(tmpdir(), 'rw-table-'));
const cleanup = () => {
  if (keep === undefined) rmSync(root, { recursive: true, force: true });
};
process.on('SIGINT', () => {
  cleanup();
  process.exit(130);
});
try {
  mkdirSync(root, { recursive: true });
  const have = readdirSync(root).length;
  if (have !== n) {
    if (have !== 0) throw new Error(`${root} holds ${have} entries, not ${n}; give an empty or matching --keep directory`);
    process.stderr.write(`generating ${n} runs under ${root}\n`);
    for (let i = 0; i < n; i++) smallRun(root, i);
  }
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repo, encoding: 'utf8' }).trim();
  const load0 = loadavg()[0];
  const rows = { table: [], json: [] };
  for (let r = 0; r < reps; r++) {
    for (const kind of r % 2 ? ['json', 'table'] : ['table', 'json']) {
      const argv = [process.execPath, BIN, 'runs', '--root', root, ...(kind === 'json' ? ['--json'] : [])];
      const t = timed(argv, { NO_COLOR: '1' });
      const lines = t.stdout.split('\n').length;
      if (kind === 'table' && lines < n) throw new Error(`the table printed ${lines} lines for ${n} runs`);
      rows[kind].push(t);
      process.stderr.write(`rep ${r + 1} ${kind}: ${t.wall.toFixed(2)} s wall, ${t.cpu.toFixed(2)} s CPU, ${t.rss.toFixed(0)} MB\n`);
    }
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const cell = (xs, f) => `${f(med(xs))} (${f(Math.min(...xs))}–${f(Math.max(...xs))})`;
  const s = (v) => v.toFixed(2);
  const mb = (v) => v.toFixed(0);
  const out = [];
  out.push(`\`node bench/table-scale.mjs --runs ${n} --reps ${reps}\` ${binGiven ? `(CLI ${BIN})` : ''}, ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}, ${binGiven ? `the bench at runwarden ${commit}` : `runwarden ${commit}`}, node ${process.version}; load ${load0.toFixed(1)} → ${loadavg()[0].toFixed(1)}. Medians (min–max) of ${reps} interleaved repetitions, output into a pipe read by the bench.`);
  out.push('');
  out.push('| command | wall s | CPU s | peak RSS MB |');
  out.push('|---|---|---|---|');
  for (const kind of ['table', 'json']) {
    const xs = rows[kind];
    out.push(`| \`runs${kind === 'json' ? ' --json' : ''}\` | ${cell(xs.map((x) => x.wall), s)} | ${cell(xs.map((x) => x.cpu), s)} | ${cell(xs.map((x) => x.rss), mb)} |`);
  }
  const rssRatio = rows.table.map((t, r) => t.rss / rows.json[r].rss);
  out.push('');
  out.push(`Peak RSS of the table over that of \`runs --json\` beside it, repetition by repetition (the \`runs-table-100k\` headline): ${cell(rssRatio, s)}.`);
  process.stdout.write(out.join('\n') + '\n');
  if (jsonTo !== undefined) {
    // Repetition r of the table and of --json ran back to back (wall and CPU in s, peak RSS in MB).
    const strip = (xs) => xs.map(({ wall, cpu, rss }) => ({ wall, cpu, rss }));
    writeFileSync(jsonTo, JSON.stringify({ runs: n, reps, commit, table: strip(rows.table), json: strip(rows.json) }) + '\n');
  }
} finally {
  cleanup();
}
