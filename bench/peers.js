/**
 * Peer correctness: the same three scenarios put to runwarden and to the
 * peers, with real processes.
 *
 * 1. kill -9: the holder is killed; how long until each reports it gone?
 * 2. stop: the holder is SIGSTOPped for longer than proper-lockfile's stale
 *    window; does anyone report the live (stopped) holder dead, and would a
 *    second locker be let in?
 * 3. recycled pid: the holder is killed and the pid in its lock file then
 *    names a live, unrelated process; who is fooled?
 *
 * proper-lockfile's stale window defaults to 10 s; the bench shortens it to
 * `staleMs` (its minimum is 2 s) to stay quick. That only scales its figures.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { acquireLock, LOCK_MARKER } from '../dist/index.js';
import { fsExtFlock, pidFileCheck, probeShared, properLockfileCheck } from './lib/probes.js';
import { forkWorker, sleep, spawnTracked, stop, waitMessage } from './lib/procs.js';

const require = createRequire(import.meta.url);
const holderScript = fileURLToPath(new URL('./workers/holder.js', import.meta.url));

export const OBSERVERS = [
  { id: 'runwarden', label: 'runwarden `probeLock`' },
  { id: 'proper-lockfile', label: '`proper-lockfile` `checkSync`' },
  { id: 'fs-ext', label: '`fs-ext` flock probe' },
  { id: 'pid', label: 'pid in file + `kill(pid, 0)`' },
];

function observers(staleMs) {
  const fns = {
    runwarden: probeShared,
    'proper-lockfile': properLockfileCheck(staleMs),
    'fs-ext': fsExtFlock(),
    pid: pidFileCheck,
  };
  return OBSERVERS.map((o) => ({ ...o, fn: fns[o.id] }));
}

/**
 * Polls every observer about once a millisecond for `durationMs` after `t0`
 * (or until every one has said gone, if `untilAllGone`). Returns, per
 * observer, the first instant (ms after t0) it answered free, or undefined.
 * The loop yields to the event loop between rounds so the bench reaps a dead
 * holder at once, as any parent would.
 */
async function watch(obs, lockPath, t0, durationMs, untilAllGone) {
  const firstGone = {};
  const answers = {};
  for (const o of obs) answers[o.id] = {};
  for (;;) {
    const elapsed = Number(process.hrtime.bigint() - t0) / 1e6;
    if (elapsed > durationMs) break;
    for (const o of obs) {
      const a = o.fn(lockPath);
      answers[o.id][a] = (answers[o.id][a] ?? 0) + 1;
      if (a === 'free' && firstGone[o.id] === undefined) firstGone[o.id] = Number(process.hrtime.bigint() - t0) / 1e6;
    }
    if (untilAllGone && obs.every((o) => firstGone[o.id] !== undefined)) break;
    await sleep(1);
  }
  return { firstGone, answers };
}

async function startHolder(lockPath, staleMs) {
  const holder = forkWorker(holderScript, [lockPath, '--proper-stale', String(staleMs)]);
  const compromised = [];
  holder.on('message', (m) => {
    if (m?.type === 'compromised') compromised.push(m.message);
  });
  await waitMessage(holder, (m) => m?.type === 'ready');
  return { holder, compromised };
}

function before(obs, lockPath) {
  return Object.fromEntries(obs.map((o) => [o.id, o.fn(lockPath)]));
}

/** Would a second locker get in right now? Each peer's own way of locking. */
function secondLocker(lockPath, staleMs) {
  const out = {};
  try {
    acquireLock(lockPath, { retryMs: 0 }).release();
    out.runwarden = 'granted';
  } catch (err) {
    out.runwarden = err.code === 'ELOCKHELD' ? 'refused' : `error ${err.code}`;
  }
  try {
    const release = require('proper-lockfile').lockSync(lockPath, { stale: staleMs, onCompromised: () => {} });
    out['proper-lockfile'] = 'granted';
    release();
  } catch (err) {
    out['proper-lockfile'] = err.code === 'ELOCKED' ? 'refused' : `error ${err.code}`;
  }
  const fsext = require('fs-ext');
  const { openSync, closeSync } = require('node:fs');
  const fd = openSync(lockPath, 'r');
  try {
    fsext.flockSync(fd, 'exnb');
    out['fs-ext'] = 'granted';
  } catch (err) {
    out['fs-ext'] = err.code === 'EAGAIN' || err.code === 'EWOULDBLOCK' ? 'refused' : `error ${err.code}`;
  } finally {
    closeSync(fd);
  }
  out.pid = 'n/a';
  return out;
}

/** Scenario 1: the holder is killed with SIGKILL; how long until each observer says gone? */
async function killScenario(obs, { lockPath, holder }, staleMs) {
  const pre = before(obs, lockPath);
  const t0 = process.hrtime.bigint();
  holder.kill('SIGKILL');
  const windowMs = staleMs * 2 + 2000;
  const w = await watch(obs, lockPath, t0, windowMs, true);
  await stop(holder);
  return { before: pre, ...w, windowMs };
}

/** Scenario 2: the holder is stopped for longer than the stale window; who calls it dead, and who lets a second owner in? */
async function stopScenario(obs, { lockPath, holder, compromised }, staleMs, stopFor) {
  const pre = before(obs, lockPath);
  const t0 = process.hrtime.bigint();
  process.kill(holder.pid, 'SIGSTOP');
  const w = await watch(obs, lockPath, t0, stopFor, false);
  const second = secondLocker(lockPath, staleMs);
  process.kill(holder.pid, 'SIGCONT');
  // Give the holder's proper-lockfile refresh timer time to notice.
  await sleep(Math.max(1500, staleMs / 2 + 500));
  await stop(holder);
  return { before: pre, ...w, secondLocker: second, holderCompromised: compromised.slice() };
}

/** Scenario 3: the holder is killed and its pid then names a live, unrelated process. */
async function recycledScenario(obs, { lockPath, holder, stranger }, staleMs) {
  const pre = before(obs, lockPath);
  const t0 = process.hrtime.bigint();
  await stop(holder);
  // The pid the dead leg wrote now names someone else: simulate by writing it.
  writeFileSync(lockPath, `${LOCK_MARKER}\n${stranger.pid}\n`);
  const windowMs = staleMs + 1500;
  const w = await watch(obs, lockPath, t0, windowMs, true);
  await stop(stranger);
  return { before: pre, ...w, windowMs, strangerPid: stranger.pid };
}

/** A run directory with a live holder in it, ready for a scenario. */
async function prepare(base, name, staleMs) {
  mkdirSync(join(base, name));
  const lockPath = join(base, name, 'resume.lock');
  return { lockPath, ...(await startHolder(lockPath, staleMs)) };
}

/**
 * Runs the three scenarios side by side (each on its own run directory and
 * holder), so the whole section costs one stop window rather than three.
 * Every holder (and the stranger) is started and ready before any scenario
 * begins, so no timed moment competes with a process starting up.
 */
export async function runPeers({ staleMs = 2000, stopMs, log }) {
  const stopFor = stopMs ?? staleMs * 2;
  const base = mkdtempSync(join(tmpdir(), 'rw-bench-peers-'));
  const obs = observers(staleMs);
  try {
    const [k, st, rc] = await Promise.all(['killed', 'stopped', 'recycled'].map((name) => prepare(base, name, staleMs)));
    rc.stranger = spawnTracked('sleep', ['600']);
    await sleep(100); // let the stranger's exec settle
    const [kill, stopped, recycled] = await Promise.all([
      killScenario(obs, k, staleMs),
      stopScenario(obs, st, staleMs, stopFor),
      recycledScenario(obs, rc, staleMs),
    ]);
    log?.(`  peers kill -9: first gone (ms) ${JSON.stringify(kill.firstGone)}`);
    log?.(`  peers stop ${stopFor} ms: first gone (ms) ${JSON.stringify(stopped.firstGone)}; second locker ${JSON.stringify(stopped.secondLocker)}`);
    log?.(`  peers recycled pid: first gone (ms) ${JSON.stringify(recycled.firstGone)}`);
    return { staleMs, stopMs: stopFor, scenarios: { kill, stop: stopped, recycled } };
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}
