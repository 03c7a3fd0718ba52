#!/usr/bin/env node
/**
 * darwin's holder census (libproc: every process of this user, every vnode descriptor of each;
 * native/fs_darwin.cc OpenFilesOnDevice) among a desktop's processes, on the XNU model (darwin's
 * code on linux: scripts/darwin-model.mjs; a model, not a Mac: its libproc reads linux's /proc, which
 * costs more per descriptor than xnu's proc_pidfdinfo).
 *
 *   node bench/darwin-census.mjs [--same 300] [--fds 50] [--other 100] [--reps 30] [--wait-seconds 10] [--json out]
 *
 * Starts `--same` processes of this user holding `--fds` descriptors each on files of the runs root's
 * device, and `--other` processes the model takes for another user's (XNU_MODEL_UID: libproc answers
 * them EPERM, as root's daemons on a Mac); then
 * - one census (kernel/holders.ts openFilesOn, read fresh) `--reps` times, as acquire's wait takes it
 *   (the descriptors of the lock file's inode, no paths): its wall time (censusMs); and as the
 *   replaced-lock evidence takes it (writers named like the lock file, their paths): holderCensusMs;
 * - acquire waiting on a lock a reader holds (a shared flock that never goes: acquireLockAsync with an
 *   unbounded timeout, stopped after `--wait-seconds`): the process's CPU time over the wait's wall
 *   time (its attempts and its census looks, CONTRACT §4.1 step 3); then the same wait once the
 *   population is gone (`alone`: attempts and censuses of a machine's few processes), and the
 *   difference (`censusShare`: what the population's censuses add).
 * Prints one JSON line (and writes it to --json): {same, fds, other, files (every descriptor on the
 * device, one census with no query), unreadable, censusMs: {p50, p99, max}, holderCensusMs: {…},
 * wait: {seconds, cpuShare, outcome, alone: {seconds, cpuShare, outcome}, censusShare}, addon}.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildDarwinModel } from '../scripts/darwin-model.mjs';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const SAME = arg('same', 300);
const FDS = arg('fds', 50);
const OTHER = arg('other', 100);
const REPS = arg('reps', 30);
const WAIT_S = arg('wait-seconds', 10);
const jsonAt = process.argv.indexOf('--json');
const JSON_OUT = jsonAt > 0 ? process.argv[jsonAt + 1] : undefined;
const addon = buildDarwinModel({ quiet: true });

if (process.env['RUNWARDEN_ADDON'] !== addon) {
  // The model addon from the start; its stand-ins for root's daemons off, so the other users' processes are the --other ones.
  const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit', env: { ...process.env, RUNWARDEN_ADDON: addon, XNU_MODEL_DAEMONS: '0' } });
  process.exit(r.status ?? 1);
}

const { acquireLock, acquireLockAsync } = await import('../dist/index.js');
const { openFilesOn } = await import('../dist/kernel/holders.js');
const { native } = await import('../dist/kernel/native.js');
if (native().platform !== 'darwin') throw new Error('not the model addon');

const root = mkdtempSync(join(tmpdir(), 'rw-darwin-census-'));
const procs = [];
const stop = () => {
  for (const p of procs) p.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
};
process.on('exit', stop);

const files = join(root, 'files');
mkdirSync(files);
const names = [];
for (let i = 0; i < FDS; i++) {
  names.push(join(files, `f${i}`));
  writeFileSync(names[i], '');
}
// Each holds FDS descriptors (bash's `exec {fd}<file`, inherited by the sleep it becomes).
const holderSrc = 'for f in "$@"; do exec {fd}<"$f"; done; echo ready; exec sleep 600';
const ready = [];
for (let i = 0; i < SAME; i++) {
  const p = spawn('bash', ['-c', holderSrc, 'bash', ...names], { stdio: ['ignore', 'pipe', 'ignore'] });
  procs.push(p);
  ready.push(new Promise((res) => p.stdout.once('data', res)));
}
for (let i = 0; i < OTHER; i++) procs.push(spawn('sleep', ['600'], { stdio: 'ignore', env: { ...process.env, XNU_MODEL_UID: '501' } }));
await Promise.all(ready);
await new Promise((r) => setTimeout(r, 500));

const run = join(root, 'run-1');
mkdirSync(run);
const lockPath = join(run, 'resume.lock');
acquireLock(lockPath).release();
const dev = (await import('node:fs')).statSync(run).dev;

const lockIno = (await import('node:fs')).statSync(lockPath).ino;
const full = openFilesOn(dev, {}, true);
// Counted now: the census object is the one the next census fills.
const all = { files: full.files.length, unreadable: full.unreadable.size };
const timed = (query) => {
  const times = [];
  for (let i = 0; i < REPS; i++) {
    const t0 = performance.now();
    openFilesOn(dev, query, true);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const at = (q) => Math.round(times[Math.min(times.length - 1, Math.ceil(q * times.length) - 1)] * 10) / 10;
  return { p50: at(0.5), p99: at(0.99), max: at(1) };
};
const censusMs = timed({ ino: lockIno });
const holderCensusMs = timed({ writers: true, name: 'resume.lock' });

// A reader that never lets go (a shared flock held by a process of this user), and a leg waiting for it.
const reader = spawn('python3', ['-c', 'import fcntl, sys, time\nf = open(sys.argv[1])\nfcntl.flock(f, fcntl.LOCK_SH)\nprint("held", flush=True)\ntime.sleep(600)', lockPath], { stdio: ['ignore', 'pipe', 'inherit'] });
procs.push(reader);
await new Promise((res) => reader.stdout.once('data', res));
/** acquire waiting on the reader for up to WAIT_S: the share of a core this process spent, and how the wait ended. */
async function waitShare() {
  const ac = new AbortController();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const waiting = acquireLockAsync(lockPath, { timeoutMs: 100, signal: ac.signal }).then(
    (l) => (l.release(), 'acquired'),
    (e) => e.message,
  );
  const outcome = await Promise.race([waiting, new Promise((res) => setTimeout(() => res('still waiting'), WAIT_S * 1000))]);
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  ac.abort();
  await waiting;
  return { seconds: Math.round(wallMs / 100) / 10, cpuShare: Math.round(((cpu.user + cpu.system) / 1000 / wallMs) * 1000) / 1000, outcome };
}
const amid = await waitShare();
// The same wait with the population gone (the reader stays): what the wait costs apart from its censuses' size.
for (const p of procs) if (p !== reader) p.kill('SIGKILL');
await new Promise((r) => setTimeout(r, 500));
const alone = await waitShare();

const doc = {
  same: SAME,
  fds: FDS,
  other: OTHER,
  files: all.files,
  unreadable: all.unreadable,
  censusMs,
  holderCensusMs,
  wait: { ...amid, alone, censusShare: Math.round((amid.cpuShare - alone.cpuShare) * 1000) / 1000 },
  addon,
};
process.stdout.write(`${JSON.stringify(doc)}\n`);
if (JSON_OUT !== undefined) writeFileSync(JSON_OUT, `${JSON.stringify(doc, null, 2)}\n`);
process.exit(0);
