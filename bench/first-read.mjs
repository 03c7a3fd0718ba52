#!/usr/bin/env node
/**
 * The live engine's first read of one huge stream: a run
 * whose events.jsonl is N MiB of `{}` lines ending in `run_started` (a lock
 * nobody holds, so it is ABANDONED: read, probed free, confirmed), beside a
 * small settled run. Measures, in one process: the wall time of
 * `engine.start()` (every run has its first report), the engine's own
 * counters (bytes read, steps, the largest step) and the longest stall of
 * the event loop meanwhile (perf_hooks.monitorEventLoopDelay, 10 ms
 * resolution), which a page would see as a frozen event stream.
 *
 * usage: node bench/first-read.mjs [MiB]   (default 100; data under os.tmpdir(), deleted after)
 */
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { execFileSync } from 'node:child_process';

const repo = dirname(dirname(fileURLToPath(import.meta.url)));
const mib = Number(process.argv[2] ?? 100);
if (!Number.isInteger(mib) || mib < 1 || mib > 4096) {
  process.stderr.write('first-read: the size is a whole number of MiB, 1 to 4096\n');
  process.exit(2);
}
const { LiveEngine, runStatus } = await import(pathToFileURL(join(repo, 'dist', 'index.js')).href);
const line = (o) => JSON.stringify({ schema: 3, ts: '2026-12-02T10:00:00Z', run_id: 'r', ...o }) + '\n';

const root = mkdtempSync(join(tmpdir(), 'rw-first-read-'));
try {
  const big = join(root, '20261202-100000-huge');
  const small = join(root, '20261202-090000-small');
  mkdirSync(big);
  mkdirSync(small);
  const block = Buffer.from('{}\n'.repeat((1024 * 1024) / 3));
  const fd = openSync(join(big, 'events.jsonl'), 'w');
  for (let i = 0; i < mib; i++) writeSync(fd, block);
  writeSync(fd, line({ event: 'run_started' }));
  closeSync(fd);
  writeFileSync(join(big, 'resume.lock'), 'oh-my-graph-lock 1\n4242\n');
  writeFileSync(join(small, 'events.jsonl'), line({ event: 'run_started' }) + line({ event: 'run_finished', outcome: 'passed' }));
  // Warm the page cache, as a running server's would be.
  runStatus(big);

  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  const engine = new LiveEngine({ root, ref: false });
  const t0 = process.hrtime.bigint();
  await engine.start();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  h.disable();
  const s = engine.stats;
  const status = engine.get(big)?.report?.status;
  engine.close();
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['-C', repo, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    /* not a checkout */
  }
  process.stdout.write(
    `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, runwarden ${commit}, ${cpus().length} CPUs, load ${loadavg().map((x) => x.toFixed(1)).join(' ')}\n` +
      `${mib} MiB of {} lines ending in run_started (${status}): start() ${ms.toFixed(0)} ms; ` +
      `${(s.bytesRead / 1048576).toFixed(1)} MiB read in ${s.readSteps} steps, largest ${(s.maxStepBytes / 1048576).toFixed(2)} MiB; ` +
      `longest event-loop stall ${(h.max / 1e6).toFixed(0)} ms (p99 ${(h.percentile(99) / 1e6).toFixed(0)} ms)\n`,
  );
} finally {
  rmSync(root, { recursive: true, force: true });
}
