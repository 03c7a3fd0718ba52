#!/usr/bin/env node
/**
 * The replaced-lock window (CONTRACT §4.5): a live `runwarden exec`
 * leg holds resume.lock; something replaces the file under it (a restore:
 * cp then mv; rsync of the run directory; tar -x of an archive of it). Until
 * the leg's guard notices and takes the lock on the new file, the path names
 * an unlocked file. This measures that window, many times per method:
 *
 *   t0  the first moment the path names the new inode (lstat, polled in a
 *       tight loop while the replacing tool runs as its own process);
 *   t1  the first moment /proc/locks shows an exclusive flock on that inode
 *       (the leg holds the new file).
 *
 * Two modes per method:
 *   quiet      nothing but lstat and reads of /proc/locks during the window:
 *              the guard's own latency;
 *   contested  every poll also asks as a reader would (`runStatus`, which
 *              probes with a shared lock) and as a second leg would
 *              (`acquireLock` with no retry): counts ABANDONED answers and
 *              second acquires that succeeded (both must be 0), and the
 *              window under that contention.
 *
 * Linux only (/proc/locks). Everything lives under os.tmpdir() and is removed.
 *
 * usage: node bench/replaced-lock.mjs [--n N] [--write FILE | --no-write]
 *   --n N       replacements per method and mode (default 200)
 *   --write F   replace the "## Replaced lock window" section of F
 *               (default bench/RESULTS.md)
 *   --no-write  only print the section
 * The section is printed on stdout; progress goes to stderr.
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, lstatSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { machineInfo } from './lib/machine.js';
import { percentile } from './lib/stats.js';
import { writeSection } from './lib/sections.js';

const benchDir = dirname(fileURLToPath(import.meta.url));
const repo = dirname(benchDir);
const BIN = join(repo, 'bin', 'runwarden.js');
export const HEADING = '## Replaced lock window';

const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h')) {
  process.stdout.write(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(2, 33).map((l) => l.replace(/^ \*\/? ?/, '')).join('\n') + '\n');
  process.exit(0);
}
const nAt = args.indexOf('--n');
const N = nAt >= 0 ? Number(args[nAt + 1]) : 200;
if (!Number.isInteger(N) || N < 1) {
  process.stderr.write('bench: --n needs a positive integer\n');
  process.exit(2);
}
const writeAt = args.indexOf('--write');
const resultsPath = args.includes('--no-write') ? undefined : writeAt >= 0 ? args[writeAt + 1] : join(benchDir, 'RESULTS.md');
const log = (s) => process.stderr.write(`${s}\n`);

if (process.platform !== 'linux' || !existsSync('/proc/locks')) {
  log('bench: needs linux (/proc/locks)');
  process.exit(1);
}
const lib = await import(pathToFileURL(join(repo, 'dist', 'index.js')).href);

const base = mkdtempSync(join(tmpdir(), 'rw-replaced-'));
const root = join(base, 'runs');
const runDir = join(root, 'r');
const lockPath = join(runDir, 'resume.lock');
let leg;
const cleanup = () => {
  try {
    if (leg && leg.exitCode === null) process.kill(-leg.pid, 'SIGKILL');
  } catch {
    /* gone */
  }
  rmSync(base, { recursive: true, force: true });
};
process.on('SIGINT', () => {
  cleanup();
  process.exit(130);
});

const now = () => process.hrtime.bigint();
const ino = (p) => {
  try {
    return lstatSync(p, { bigint: true }).ino;
  } catch {
    return undefined;
  }
};

/** Whether /proc/locks shows an exclusive flock on inode `target` (any device: the temp dir's inodes are unique there). */
function exclusivelyLocked(target) {
  const want = `:${target}`;
  for (const line of readFileSync('/proc/locks', 'latin1').split('\n')) {
    // "12: FLOCK  ADVISORY  WRITE 4242 fd:01:1234567 0 EOF" (blocked waiters start with "->")
    if (!line.includes('FLOCK') || !line.includes('WRITE') || line.includes('->')) continue;
    const f = line.trim().split(/\s+/);
    if (f[5] !== undefined && f[5].endsWith(want) && f[5].split(':').length === 3) return true;
  }
  return false;
}

/** Waits (busy) for `pred`, up to `ms`; true when it held. */
function spinUntil(pred, ms) {
  const end = now() + BigInt(ms) * 1_000_000n;
  while (now() < end) if (pred()) return true;
  return false;
}

function run(cmd, argv) {
  const r = spawnSync(cmd, argv, { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${argv.join(' ')}: ${r.stderr || r.error?.message}`);
}

const have = (cmd) => spawnSync(cmd, ['--version'], { stdio: 'ignore' }).status === 0;

/** Each method: `prepare()` (untimed) returns the replacing command, run as its own process. */
const METHODS = [
  {
    name: 'cp then mv (a restore)',
    prepare: () => {
      copyFileSync(lockPath, `${lockPath}.x`);
      return ['mv', [`${lockPath}.x`, lockPath]];
    },
  },
  {
    name: 'rsync -a --ignore-times of the run directory from a copy',
    needs: 'rsync',
    prepare: () => {
      const copy = join(base, 'copy');
      rmSync(copy, { recursive: true, force: true });
      run('cp', ['-a', runDir, copy]);
      return ['rsync', ['-a', '--ignore-times', `${copy}/`, `${runDir}/`]];
    },
  },
  {
    name: 'tar -x of an archive of the run directory',
    needs: 'tar',
    prepare: () => {
      const archive = join(base, 'r.tar');
      run('tar', ['-cf', archive, '-C', runDir, '.']);
      return ['tar', ['-xf', archive, '-C', runDir]];
    },
  },
];

/** One replacement: the window in µs, and what readers and second legs said inside it. */
async function once(method, contested) {
  const [cmd, argv] = method.prepare();
  const old = ino(lockPath);
  const child = spawn(cmd, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  // t0: the path names another inode.
  let current;
  const seen = spinUntil(() => {
    current = ino(lockPath);
    return current !== undefined && current !== old;
  }, 10_000);
  if (!seen) throw new Error(`${method.name}: the path never named a new file (${stderr})`);
  const t0 = now();
  let polls = 0;
  let abandoned = 0;
  let granted = 0;
  let asked = 0;
  const held = spinUntil(() => {
    polls++;
    const at = ino(lockPath);
    if (at !== undefined && at !== current) current = at; // replaced again (rsync's temp, tar's extract)
    if (!contested || polls > 1) {
      if (exclusivelyLocked(current)) return true;
    }
    if (contested) {
      // Asked before the first look, so every contested replacement is asked about at least once.
      asked++;
      if (lib.runStatus(runDir).status === 'ABANDONED') abandoned++;
      try {
        const second = lib.acquireLock(lockPath, { retryMs: 0 });
        granted++;
        second.release();
      } catch {
        /* refused: what must happen */
      }
      return exclusivelyLocked(current);
    }
    return false;
  }, 10_000);
  const t1 = now();
  const code = await exited;
  if (code !== 0) throw new Error(`${cmd} exited ${code}: ${stderr}`);
  if (!held) throw new Error(`${method.name}: the leg did not hold the new file within 10 s`);
  return { us: Number(t1 - t0) / 1000, polls, abandoned, granted, asked };
}

function fmt(us) {
  return us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${Math.round(us)} µs`;
}

async function main() {
  const t0 = Date.now();
  const info = machineInfo(repo);
  const loadStart = loadavg()[0];
  // The live leg: a real `runwarden exec`, its guard on, its command asleep.
  leg = spawn(process.execPath, [BIN, 'exec', '--root', root, 'r', '--', 'sleep', '100000'], { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let legErr = '';
  leg.stderr.on('data', (d) => (legErr += d));
  if (!spinUntil(() => existsSync(lockPath) && ino(lockPath) !== undefined && exclusivelyLocked(ino(lockPath)), 30_000)) throw new Error(`the leg never took its lock: ${legErr}`);
  if (!spinUntil(() => existsSync(join(runDir, 'exec.pgid')), 30_000)) throw new Error('the leg never started its command');
  log(`leg pid ${leg.pid} holds ${lockPath}; ${N} replacements per method and mode`);

  const rows = [];
  for (const method of METHODS) {
    if (method.needs && !have(method.needs)) {
      log(`  ${method.name}: ${method.needs} not installed, skipped`);
      continue;
    }
    for (const contested of [false, true]) {
      const windows = [];
      let polls = 0;
      let abandoned = 0;
      let granted = 0;
      let asked = 0;
      for (let i = 0; i < N; i++) {
        const r = await once(method, contested);
        windows.push(r.us);
        polls += r.polls;
        abandoned += r.abandoned;
        granted += r.granted;
        asked += r.asked;
        await new Promise((res) => setTimeout(res, 5));
      }
      const row = {
        method: method.name,
        mode: contested ? 'contested' : 'quiet',
        n: N,
        p50: percentile(windows, 50),
        p99: percentile(windows, 99),
        max: Math.max(...windows),
        step: windows.reduce((a, b) => a + b, 0) / Math.max(1, polls),
        abandoned,
        granted,
        asked,
      };
      rows.push(row);
      log(`  ${row.method} / ${row.mode}: p50 ${fmt(row.p50)}  p99 ${fmt(row.p99)}  max ${fmt(row.max)}  ABANDONED ${abandoned}  granted ${granted} (of ${asked} asks)`);
    }
  }
  const alive = leg.exitCode === null;
  process.kill(-leg.pid, 'SIGTERM');
  await new Promise((res) => leg.on('close', res)); // its stderr read to the end
  const retakes = (legErr.match(/resume\.lock was replaced while this leg ran \(a restore or sync\?\)/g) ?? []).length;
  const conflicts = (legErr.match(/could not take the lock on the new file/g) ?? []).length;
  const finalStatus = lib.runStatus(runDir).status;
  const durationS = (Date.now() - t0) / 1000;

  const all = rows.flatMap((r) => [r.max]);
  const section = `${HEADING}

\`node bench/replaced-lock.mjs --n ${N}\`, ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}, ${info.cpuModel} × ${info.nproc}, ${info.kernel}, node ${info.node}, runwarden ${info.commit}, temp dir on ${info.fs}; load average ${loadStart.toFixed(2)} → ${loadavg()[0].toFixed(2)} (a shared machine); ${durationS.toFixed(0)} s.

One live \`runwarden exec\` leg (its command \`sleep\`) had its \`resume.lock\` replaced ${rows.length * N} times by a separate process. **Window** = from the first moment the path named the new inode (\`lstat\` polled in a tight loop while the tool ran) to the first moment \`/proc/locks\` showed an exclusive flock on that inode (the leg's guard had taken it, CONTRACT §4.5 rule 3). *quiet*: nothing else touched the run. *contested*: every poll inside the window also ran \`runStatus\` (a reader's shared probe) and \`acquireLock(…, { retryMs: 0 })\` (a second leg).

| method | mode | replacements | window p50 | p99 | max | poll step | ABANDONED answers | second acquires granted |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
${rows.map((r) => `| ${r.method} | ${r.mode} | ${r.n} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${fmt(r.max)} | ${fmt(r.step)} | ${r.abandoned} of ${r.asked} | ${r.granted} of ${r.asked} |`).join('\n')}

The leg noticed ${retakes} replacements (one notice line each; some tools replace the file more than once, e.g. rsync's temporary file renamed into place) and ${conflicts === 0 ? 'never' : conflicts === 1 ? 'once' : `${conflicts} times`} found the new file locked by someone else first; it was ${alive ? 'alive throughout' : 'NOT alive at the end'}, and after SIGTERM to its command the run read **${finalStatus}**.

**What the window means.** During it the path names a file nobody has locked. Readers still answer \`unknown\` (\`lock-replaced\`: the old file is held through a descriptor naming this path, CONTRACT §4.5 rule 1) and a second leg is refused (rule 2), as the zero counts show; the window is the holder's own latency to re-lock, set by inotify delivery (\`fs.watch\`) and the event loop, with the 250 ms re-check as the bound when a notification is missed. Largest window measured: ${fmt(Math.max(...all))}. "poll step" is the mean time of one poll, the resolution of these numbers. On a loaded machine the tails are scheduling: a process that waits for a core cannot re-lock, and in *contested* mode the second leg's attempts hold the new file's lock exclusively while they search \`/proc\`, so the leg's retake (100 ms of retries) can lose to them and wait for its next notification or re-check.

Before commit 91c3cea, a reader could answer ABANDONED inside this window: 4 of 635 contested asks in a run of this bench (2026-12-01 20:45Z), when the leg took the new file between the reader's probe and its search for a holder of the old one. Readers now probe once more after an empty search (CONTRACT §4.5).`;

  process.stdout.write(`${section}\n`);
  if (resultsPath !== undefined) {
    writeSection(resultsPath, HEADING, section, { before: '## Method' });
    log(`wrote the "${HEADING}" section of ${resultsPath}`);
  }
}

main()
  .then(cleanup)
  .catch((err) => {
    cleanup();
    log(`bench: ${err?.stack ?? err}`);
    process.exit(1);
  });
