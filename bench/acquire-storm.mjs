#!/usr/bin/env node
/**
 * A reader storm against a starting leg, for longer than
 * the scale bench's 10 s windows: P tight-loop pollers (probeLock, the
 * shared probe) on one lock for the whole run, and in this process a leg
 * that acquires (hold 1 ms, release, idle 1 ms) over and over.
 *
 *   1. /proc/locks is sampled first, for 3 s: how many shared locks the
 *      pollers hold at each look (how often the lock is ever free).
 *   2. Then the leg runs for the window: with `--retry default` each
 *      acquireLock uses the default retry (a refusal is counted, with how
 *      long it tried); with `--retry unbounded` it retries for 120 s, so the
 *      times measure how long readers starve an exclusive flock.
 *
 * usage: node bench/acquire-storm.mjs [--pollers 64] [--seconds 60] [--retry default|unbounded]
 * Prints one summary line and the raw times over 100 ms; writes nothing
 * outside a temporary directory it removes.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { acquireLock, probeLock } from '../dist/index.js';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const P = Number(opt('--pollers', '64'));
const WIN = Number(opt('--seconds', '60')) * 1000;
const retry = opt('--retry', 'default');
if (!Number.isInteger(P) || P < 1 || !(WIN > 0) || (retry !== 'default' && retry !== 'unbounded')) {
  process.stderr.write('usage: node bench/acquire-storm.mjs [--pollers N] [--seconds S] [--retry default|unbounded]\n');
  process.exit(2);
}

// A child: poll the lock until told the end (ms since the epoch).
if (process.env.RW_STORM_POLLER) {
  const [lockPath, end] = [process.env.RW_STORM_POLLER, Number(process.env.RW_STORM_END)];
  while (Date.now() < end) probeLock(lockPath);
  process.exit(0);
}

const dir = mkdtempSync(join(tmpdir(), 'rw-bench-storm-'));
const lock = join(dir, 'run', 'resume.lock');
acquireLock(lock).release();
const ino = String(statSync(lock).ino);
const end = Date.now() + 5000 + WIN;
const self = fileURLToPath(import.meta.url);
const kids = [];
for (let i = 0; i < P; i++) {
  kids.push(spawn(process.execPath, [self], { env: { ...process.env, RW_STORM_POLLER: lock, RW_STORM_END: String(end) }, stdio: 'ignore', cwd: dirname(self) }));
}
const sleeper = new Int32Array(new SharedArrayBuffer(4));
const sleep = (ms) => Atomics.wait(sleeper, 0, 0, ms);
const load0 = loadavg()[0];
try {
  await new Promise((r) => setTimeout(r, 2000));
  // 1. How many shared locks are held at each look.
  const hist = new Map();
  let looks = 0;
  let none = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < 3000) {
    let held = 0;
    for (const l of readFileSync('/proc/locks', 'latin1').split('\n')) {
      const m = /^\d+:\s+FLOCK\s+\S+\s+READ\s+-?\d+\s+[0-9a-f]+:[0-9a-f]+:(\d+)\s/.exec(l);
      if (m !== null && m[1] === ino) held++;
    }
    looks++;
    if (held === 0) none++;
    hist.set(held, (hist.get(held) ?? 0) + 1);
    sleep(1);
  }
  // 2. The leg.
  const times = [];
  const refused = [];
  const t1 = performance.now();
  while (performance.now() - t1 < WIN) {
    const a = performance.now();
    let l;
    try {
      l = acquireLock(lock, retry === 'unbounded' ? { retryMs: 120_000 } : {});
    } catch (e) {
      if (e?.code !== 'ELOCKHELD') throw e;
      refused.push({ ms: performance.now() - a, message: e.message });
      sleep(1);
      continue;
    }
    times.push(performance.now() - a);
    sleep(1);
    l.release();
    sleep(1);
  }
  times.sort((x, y) => x - y);
  const pct = (p) => (times.length ? times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))].toFixed(1) : 'n/a');
  const histText = [...hist.entries()].sort((a, b) => a[0] - b[0]).map(([k, v]) => `${k}:${v}`).join(' ');
  process.stdout.write(
    `P=${P}, ${WIN / 1000} s, retry ${retry}, load ${load0.toFixed(1)} -> ${loadavg()[0].toFixed(1)}\n` +
      `/proc/locks over 3 s: ${looks} looks, ${none} with no shared lock held; held-count histogram ${histText}\n` +
      `leg: ${times.length} acquired, ${refused.length} refused; time to acquire p50 ${pct(50)} ms, p90 ${pct(90)}, p99 ${pct(99)}, max ${times.length ? times[times.length - 1].toFixed(1) : 'n/a'} ms\n` +
      `over 100 ms: ${times.filter((x) => x > 100).map((x) => x.toFixed(0)).join(' ')}\n` +
      refused.map((r) => `refused after ${r.ms.toFixed(0)} ms: ${r.message.split('\n')[0]}\n`).join(''),
  );
} finally {
  for (const k of kids) k.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
