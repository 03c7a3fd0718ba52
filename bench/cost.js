/**
 * Probe cost: every way of asking, on the same two lock files (one free, one
 * held by a live holder process), timed per iteration in the same run, with
 * the C floor measured between them. Repetitions are interleaved (each one
 * runs every method once, in a rotated order), and every figure reported is
 * the median over repetitions of a value measured within one repetition, so
 * a slow moment of this noisy machine moves a whole repetition, not a ratio.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { acquireLock, probeLock } from '../dist/index.js';
import { openDirNoFollow } from '../dist/kernel/dirfd.js';
import { probeLockAt } from '../dist/lock/probe.js';
import { runFloor } from './lib/floor.js';
import {
  fsExtFlock,
  killCheck,
  pidFileCheck,
  pidFromFile,
  probeComposedShared,
  probeExclusive,
  properLockfileCheck,
} from './lib/probes.js';
import { forkWorker, stop, waitMessage } from './lib/procs.js';
import { median, quartiles } from './lib/stats.js';

const holderScript = fileURLToPath(new URL('./workers/holder.js', import.meta.url));

/** A pid that named a process a moment ago and names none now (verified). */
export function deadPid() {
  for (let i = 0; i < 5; i++) {
    const r = spawnSync('true');
    const pid = r.pid;
    try {
      process.kill(pid, 0);
    } catch (err) {
      if (err.code === 'ESRCH') return pid;
    }
  }
  throw new Error('bench: could not find a dead pid');
}

const dirFds = new Map();
/** A descriptor of the run directory of `lockPath`, opened once (as a listing holds it while it reads the run). */
function dirFd(lockPath) {
  let fd = dirFds.get(lockPath);
  if (fd === undefined) {
    fd = openDirNoFollow(dirname(lockPath));
    dirFds.set(lockPath, fd);
  }
  return fd;
}

/** The methods of the cost table, in display order. `fn(lockPath)` is what one iteration does. */
function methods(pids) {
  const plf = properLockfileCheck(10_000);
  const fsx = fsExtFlock();
  return [
    { id: 'probeLock', label: '`probeLock` (runwarden: one native call)', fn: (p) => probeLock(p) },
    { id: 'probeLockAt', label: "`probeLockAt` (the listing's path: run directory already open)", fn: (p) => probeLockAt(dirFd(p), 'resume.lock', p) },
    { id: 'composed-sh', label: 'same steps from `node:fs` + native `flock` (LOCK_SH)', fn: probeComposedShared },
    { id: 'composed-ex', label: 'same, LOCK_EX (the rejected design; bench only)', fn: probeExclusive },
    { id: 'proper-lockfile', label: '`proper-lockfile` `checkSync` (mtime, stale 10 s)', fn: plf },
    { id: 'fs-ext', label: '`fs-ext` `flockSync` (open, `shnb`, `un`, close)', fn: fsx },
    { id: 'kill', label: '`process.kill(pid, 0)`, pid already known', fn: (p) => killCheck(pids.get(p)) },
    { id: 'pidfile', label: 'read pid from the file + `process.kill(pid, 0)`', fn: pidFileCheck },
  ];
}

/** Times `iterations` calls of fn(lockPath); ns per call. */
function timeLoop(fn, lockPath, iterations) {
  let sink;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) sink = fn(lockPath);
  const t1 = process.hrtime.bigint();
  if (sink === undefined) throw new Error('bench: a method returned nothing');
  return Number(t1 - t0) / iterations;
}

/** Iterations so that one timed chunk takes about `chunkMs`. */
function calibrate(fn, lockPath, chunkMs) {
  timeLoop(fn, lockPath, 2000); // JIT warm-up
  const ns = timeLoop(fn, lockPath, 2000);
  return Math.max(1000, Math.round((chunkMs * 1e6) / ns));
}

/**
 * Sets up the two files. free: a marked lock released by a leg whose pid is
 * now dead. held: a live holder process holding runwarden's flock and
 * proper-lockfile's lock on the same path.
 */
export async function costFixture() {
  const base = mkdtempSync(join(tmpdir(), 'rw-bench-cost-'));
  const free = join(base, 'free-run', 'resume.lock');
  const held = join(base, 'held-run', 'resume.lock');
  const gone = deadPid();
  acquireLock(free, { pid: gone }).release();
  mkdirSync(join(base, 'held-run'), { recursive: true });
  const holder = forkWorker(holderScript, [held, '--proper-stale', '10000']);
  const ready = await waitMessage(holder, (m) => m?.type === 'ready');
  const pids = new Map([
    [free, pidFromFile(free)],
    [held, pidFromFile(held)],
  ]);
  if (pids.get(held) !== ready.pid) throw new Error('bench: the held file does not name its holder');
  const check = { free: probeLock(free), held: probeLock(held) };
  if (check.free.liveness !== 'free' || check.held.liveness !== 'held') {
    throw new Error(`bench: fixture is not what it claims: ${JSON.stringify(check)}`);
  }
  return {
    base,
    files: { free, held },
    pids,
    async close() {
      await stop(holder);
      rmSync(base, { recursive: true, force: true });
    },
  };
}

/**
 * Runs the cost table. Within a repetition, for each file, the methods run
 * in a rotated order with a floor run between every two of them
 * (F M F M … M F), and each method's ratio is its time over the mean of the
 * two floor runs right beside it, so a method is compared with the floor as
 * it was at that moment. Returns per method and file: the median ns per
 * call, its quartiles, the median ratio and its quartiles, the answer it
 * gave, and the raw per-repetition figures.
 */
export async function runCost({ floorBin, reps, chunkMs, log, only }) {
  const fx = await costFixture();
  try {
    const ms = methods(fx.pids).filter((m) => only === undefined || only.includes(m.id)); // `only`: method ids, for bench/check.mjs
    const fileNames = ['free', 'held'];
    const cells = [];
    const floors = {};
    for (const file of fileNames) {
      const path = fx.files[file];
      const probeNs = runFloor(floorBin, path, 5000).ns_per_iter;
      floors[file] = { id: 'floor', file, path, iterations: Math.max(2000, Math.round((chunkMs * 1e6) / probeNs)), raw: [], ratios: [], answer: runFloor(floorBin, path, 10).last };
      for (const m of ms) {
        const r = m.fn(path);
        cells.push({ id: m.id, file, path, fn: m.fn, iterations: calibrate(m.fn, path, chunkMs), raw: [], ratios: [], answer: typeof r === 'string' ? r : r.liveness });
      }
      // The probe's own sequence in C: timed like a method, against the reference floor beside it.
      const sameNs = runFloor(floorBin, path, 5000, 'same').ns_per_iter;
      cells.push({ id: 'floor-same', file, path, fn: undefined, iterations: Math.max(2000, Math.round((chunkMs * 1e6) / sameNs)), raw: [], ratios: [], answer: runFloor(floorBin, path, 10, 'same').last });
    }
    for (let r = 0; r < reps; r++) {
      for (const file of fileNames) {
        const fl = floors[file];
        const group = cells.filter((c) => c.file === file);
        const order = group.map((_, i) => group[(i + r) % group.length]);
        let before = runFloor(floorBin, fl.path, fl.iterations).ns_per_iter;
        fl.raw.push(before);
        for (const c of order) {
          const ns = c.fn === undefined ? runFloor(floorBin, c.path, c.iterations, 'same').ns_per_iter : timeLoop(c.fn, c.path, c.iterations);
          const after = runFloor(floorBin, fl.path, fl.iterations).ns_per_iter;
          fl.raw.push(after);
          c.raw.push(ns);
          c.ratios.push(ns / ((before + after) / 2));
          before = after;
        }
      }
      log?.(`  cost: repetition ${r + 1}/${reps}`);
    }
    const rows = [];
    const floorRows = [
      { id: 'floor', label: 'floor: the reference C loop, 7 calls (`bench/floor.c`)' },
      { id: 'floor-same', label: "the probe's own sequence in C (`bench/floor.c … same`)" },
    ];
    for (const m of [...floorRows, ...ms]) {
      const row = { id: m.id, label: m.label };
      for (const file of fileNames) {
        const c = m.id === 'floor' ? floors[file] : cells.find((x) => x.id === m.id && x.file === file);
        const ratios = m.id === 'floor' ? c.raw.map(() => 1) : c.ratios;
        row[file] = {
          ns: median(c.raw),
          quartiles: quartiles(c.raw),
          ratio: median(ratios),
          ratioQuartiles: quartiles(ratios),
          ratios, // per repetition, for bench/check.mjs's spread
          answer: c.answer,
          iterations: c.iterations,
          raw: c.raw,
        };
      }
      rows.push(row);
    }
    return { reps, chunkMs, rows };
  } finally {
    await fx.close();
  }
}

/**
 * Counts the syscalls one probe makes, with strace -c: a node process doing
 * N probes minus one doing none, divided by N; and the same for the floor.
 * Returns undefined when strace is not installed.
 */
export async function syscallAudit({ floorBin, log }) {
  try {
    execFileSync('strace', ['-V'], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  const fx = await costFixture();
  const traced = 'statfs,fstatfs,open,openat,fstat,newfstatat,statx,pread64,read,flock,close';
  const dist = new URL('../dist/index.js', import.meta.url).href;
  const count = (argv) => {
    const out = join(fx.base, `strace-${Math.random().toString(36).slice(2)}.txt`);
    execFileSync('strace', ['-f', '-c', '-o', out, '-e', `trace=${traced}`, ...argv], { stdio: 'ignore' });
    const counts = {};
    for (const line of execFileSync('cat', [out], { encoding: 'utf8' }).split('\n')) {
      const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$/.exec(line);
      if (m && m[2] !== 'total') counts[m[2]] = Number(m[1]);
    }
    return counts;
  };
  const perCall = (a, b, n) => {
    const out = {};
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const v = ((b[k] ?? 0) - (a[k] ?? 0)) / n;
      if (Math.abs(v) >= 0.01) out[k] = Math.round(v * 100) / 100;
    }
    return out;
  };
  const N = 2000;
  const script = (n, file) =>
    `import(${JSON.stringify(dist)}).then(m => { const p = ${JSON.stringify(file)}; for (let i = 0; i < ${n}; i++) m.probeLock(p); })`;
  const result = {};
  try {
    for (const file of ['free', 'held']) {
      const path = fx.files[file];
      result[file] = {
        probeLock: perCall(count([process.execPath, '-e', script(0, path)]), count([process.execPath, '-e', script(N, path)]), N),
        floor: perCall(count([floorBin, path, '1']), count([floorBin, path, String(N + 1)]), N),
        same: perCall(count([floorBin, path, '1', 'same']), count([floorBin, path, String(N + 1), 'same']), N),
      };
      log?.(`  syscalls per probe (${file}): ${JSON.stringify(result[file])}`);
    }
  } finally {
    await fx.close();
  }
  return result;
}
