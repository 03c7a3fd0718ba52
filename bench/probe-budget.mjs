#!/usr/bin/env node
/**
 * The probe's budget (CONTRACT §5.4): `probeLock` and `probeLockAt`
 * against the fixed 7-call reference floor (bench/floor.c), free and held,
 * with the probe's own sequence in C beside them, on the two files of the
 * cost table (bench/cost.js costFixture: a released marked lock; one held by
 * a live holder process).
 *
 * Each repetition runs, per file and in a rotated order, the reference floor,
 * the `same` C loop, `probeLock` and `probeLockAt`, each for `--iters` calls,
 * and divides each by the reference floor of that repetition. Two clocks,
 * both reported: wall time (what the cost table uses) and CPU time (the C
 * loops' own process CPU time; Node's process.cpuUsage() across the loop),
 * which waiting for a core does not inflate, so a loaded 2-core machine still
 * gives a usable ratio. Medians and quartiles over repetitions.
 *
 * usage: node bench/probe-budget.mjs [--reps R] [--iters N] [--no-write]
 *   writes "## Probe budget" into bench/RESULTS.md unless --no-write
 */
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { costFixture } from './cost.js';
import { buildFloor, runFloor } from './lib/floor.js';
import { writeSection } from './lib/sections.js';
import { median, quartiles } from './lib/stats.js';

const benchDir = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  if (i < 0) return dflt;
  const v = Number(args[i + 1]);
  if (!Number.isInteger(v) || v < 1) {
    process.stderr.write(`probe-budget: ${name} needs a positive whole number\n`);
    process.exit(2);
  }
  return v;
};
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--reps' || args[i] === '--iters') i++;
  else if (args[i] !== '--no-write') {
    process.stderr.write(`probe-budget: unknown argument ${args[i]}\n`);
    process.exit(2);
  }
}
const REPS = opt('--reps', 21);
const ITERS = opt('--iters', 4000);

const { probeLock } = await import('../dist/index.js');
const { probeLockAt } = await import('../dist/lock/probe.js');
const { openDirNoFollow } = await import('../dist/kernel/dirfd.js');

/** ns per call of fn over n calls: [wall, cpu]. */
function timeNode(fn, n) {
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  let sink;
  for (let i = 0; i < n; i++) sink = fn();
  const t1 = process.hrtime.bigint();
  const c = process.cpuUsage(c0);
  if (sink === undefined) throw new Error('no answer');
  return [Number(t1 - t0) / n, ((c.user + c.system) * 1000) / n];
}

const floor = buildFloor();
const fx = await costFixture();
const started = new Date().toISOString();
const load0 = loadavg()[0];
const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
const ids = ['same', 'probeLock', 'probeLockAt'];
const ratios = {};
try {
  const methods = {};
  for (const file of ['free', 'held']) {
    const p = fx.files[file];
    const fd = openDirNoFollow(dirname(p));
    methods[file] = {
      reference: (clock) => runFloor(floor.binary, p, ITERS, 'reference', clock).ns_per_iter,
      same: (clock) => runFloor(floor.binary, p, ITERS, 'same', clock).ns_per_iter,
      probeLock: () => timeNode(() => probeLock(p), ITERS),
      probeLockAt: () => timeNode(() => probeLockAt(fd, 'resume.lock', p), ITERS),
    };
    const want = file === 'free' ? 'free' : 'held';
    if (probeLock(p).liveness !== want || probeLockAt(fd, 'resume.lock', p).liveness !== want) throw new Error(`fixture ${file} does not read ${want}`);
    for (const id of ids) ratios[`${id} ${file}`] = { wall: [], cpu: [] };
    timeNode(() => probeLock(p), 20000); // JIT warm-up
    timeNode(() => probeLockAt(fd, 'resume.lock', p), 20000);
  }
  for (let r = 0; r < REPS; r++) {
    for (const file of ['free', 'held']) {
      const m = methods[file];
      const refWall = [m.reference('wall')];
      const refCpu = [m.reference('cpu')];
      const order = ids.map((_, i) => ids[(i + r) % ids.length]);
      const got = {};
      for (const id of order) {
        got[id] = id === 'same' ? [m.same('wall'), m.same('cpu')] : m[id]();
      }
      refWall.push(m.reference('wall'));
      refCpu.push(m.reference('cpu'));
      const rw = (refWall[0] + refWall[1]) / 2;
      const rc = (refCpu[0] + refCpu[1]) / 2;
      for (const id of ids) {
        ratios[`${id} ${file}`].wall.push(got[id][0] / rw);
        ratios[`${id} ${file}`].cpu.push(got[id][1] / rc);
      }
    }
    process.stderr.write(`probe-budget: repetition ${r + 1}/${REPS}\n`);
  }
} finally {
  await fx.close();
}
const load1 = loadavg()[0];
const cell = (v) => `**${median(v).toFixed(2)}×** [${quartiles(v).map((x) => x.toFixed(2)).join('–')}]`;
const label = { same: "the probe's own sequence in C (`floor.c … same`)", probeLock: '`probeLock`', probeLockAt: "`probeLockAt` (the listing's path)" };
const rows = ids.map((id) => `| ${label[id]} | ${cell(ratios[`${id} free`].cpu)} | ${cell(ratios[`${id} held`].cpu)} | ${cell(ratios[`${id} free`].wall)} | ${cell(ratios[`${id} held`].wall)} |`);
const section = `## Probe budget

\`node bench/probe-budget.mjs --reps ${REPS} --iters ${ITERS}\`, ${started}, commit ${commit}, load average ${load0.toFixed(1)} → ${load1.toFixed(1)} (2 cores). Each figure is a ratio to the **7-call reference floor** (\`bench/floor.c\`: statfs, open, fstat, pread 128, flock SH|NB, LOCK_UN, close; 6 calls held) measured in the same repetition, median of ${REPS} repetitions [quartiles]. CPU time is not inflated by waiting for a core, so on a loaded machine it is the figure to read; wall time is what the cost table above uses. Budget (CONTRACT §5.4): ≤ 1.3×.

| | CPU, free | CPU, held | wall, free | wall, held |
| --- | --- | --- | --- | --- |
${rows.join('\n')}
`;
process.stdout.write(section);
if (!args.includes('--no-write')) writeSection(join(benchDir, 'RESULTS.md'), '## Probe budget', section, { before: '## 2. Peer correctness' });
