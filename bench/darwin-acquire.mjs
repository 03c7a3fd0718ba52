#!/usr/bin/env node
/**
 * A leg starting among tight-loop pollers, on the XNU model (darwin's code on linux:
 * scripts/darwin-model.mjs). darwin has no lock table: past its retry window, acquire tells readers
 * from a leg by libproc's census of open descriptors (a leg's lock file is open for writing,
 * readers' read-only; CONTRACT §4.1 step 3). This counts how many of N acquires (default retry
 * window) are refused while P poller processes probe the same lock in a tight loop, with no leg
 * anywhere: every refusal is a false "busy".
 *
 *   node bench/darwin-acquire.mjs [--pollers 64] [--acquires 1000] [--max-seconds S] [--interval-ms 0] [--linux]
 *
 * --interval-ms N: each poller probes once, then waits N ms (a poller that probes once a millisecond,
 * not a bare tight loop, which 0 keeps). --linux: the same on linux's own addon (build/Release), where
 * acquire tells readers from a leg by the kernel's lock table, for the comparison.
 *
 * Readers can starve an exclusive flock, so an acquire among 64 tight-loop pollers may wait its whole
 * readers' window (up to 30 s): --max-seconds stops after the acquire under way at S seconds, and the
 * line says how many were made. Prints one JSON line: {pollers, acquires, done, refused, reasons, ms,
 * p50Ms, p99Ms, addon}; progress goes to stderr.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildDarwinModel } from '../scripts/darwin-model.mjs';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const POLLERS = arg('pollers', 64);
const ACQUIRES = arg('acquires', 1000);
const MAX_MS = arg('max-seconds', Infinity) * 1000;
const INTERVAL_MS = arg('interval-ms', 0);
const LINUX = process.argv.includes('--linux');
const addon = LINUX ? fileURLToPath(new URL('../build/Release/runwarden.node', import.meta.url)) : buildDarwinModel({ quiet: true });

if (process.env['RUNWARDEN_ADDON'] !== addon) {
  // Run this measurement with the model addon loaded from the start.
  const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit', env: { ...process.env, RUNWARDEN_ADDON: addon } });
  process.exit(r.status ?? 1);
}

const { acquireLock } = await import('../dist/index.js');
const { native } = await import('../dist/kernel/native.js');
if (native().platform !== (LINUX ? 'linux' : 'darwin')) throw new Error(`not the ${LINUX ? 'linux' : 'model'} addon`);

const root = mkdtempSync(join(tmpdir(), 'rw-darwin-acquire-'));
const run = join(root, 'run-1');
mkdirSync(run);
const lockPath = join(run, 'resume.lock');
acquireLock(lockPath).release(); // the file exists, marked, free

const pollerSrc =
  INTERVAL_MS > 0
    ? `const { probeLock } = await import(${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)});
const again = () => { probeLock(${JSON.stringify(lockPath)}); setTimeout(again, ${INTERVAL_MS}); };
again();`
    : `const { probeLock } = await import(${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)});
for (;;) probeLock(${JSON.stringify(lockPath)});`;
const pollers = [];
for (let i = 0; i < POLLERS; i++) pollers.push(spawn(process.execPath, ['--input-type=module', '-e', pollerSrc], { stdio: 'ignore', env: process.env }));
await new Promise((r) => setTimeout(r, 2000)); // every poller in its loop

let refused = 0;
const reasons = {};
const took = [];
const start = performance.now();
for (let i = 0; i < ACQUIRES && performance.now() - start < MAX_MS; i++) {
  if (i % 25 === 0) process.stderr.write(`darwin-acquire: ${i} acquires, ${refused} refused, ${Math.round((performance.now() - start) / 1000)} s\n`);
  const t0 = performance.now();
  try {
    acquireLock(lockPath).release();
  } catch (e) {
    refused++;
    const why = String(e?.message ?? e).replace(/"[^"]*"/g, '"…"').replace(/\d+(\.\d+)?/g, 'N');
    reasons[why] = (reasons[why] ?? 0) + 1;
  }
  took.push(performance.now() - t0);
}
const ms = performance.now() - start;
for (const p of pollers) p.kill('SIGKILL');
rmSync(root, { recursive: true, force: true });
took.sort((a, b) => a - b);
const pct = (q) => Math.round(took[Math.min(took.length - 1, Math.floor(q * took.length))] * 10) / 10;
process.stdout.write(`${JSON.stringify({ system: LINUX ? 'linux' : 'darwin (XNU model)', pollers: POLLERS, intervalMs: INTERVAL_MS, acquires: ACQUIRES, done: took.length, refused, reasons, ms: Math.round(ms), p50Ms: pct(0.5), p99Ms: pct(0.99), addon })}\n`);
