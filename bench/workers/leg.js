/**
 * A leg that starts and ends over and over on one run's lock, for the churn
 * setting: acquireLock, hold ~holdMs, release, idle ~idleMs, repeat, for a
 * window starting at an agreed CLOCK_MONOTONIC instant.
 *
 * It records what it knows for certain about its own lock, as intervals of
 * ns after startAt:
 * - held: [acquireLock returned, release() called]: the exclusive flock was
 *   held for all of it, so a probe lying wholly inside cannot truly see free;
 * - not held: [release() returned (or the window began), the next
 *   successful acquireLock was called]: failed attempts in between never
 *   took the lock, so a probe lying wholly inside cannot truly see held.
 * Outside these (inside acquireLock and release) the state is in transit and
 * either answer is legitimate.
 * Every refused attempt is a false busy: no other leg exists.
 *
 * IPC in:  {type:'run', lockPath, startAt, windowMs, retryMs, holdMs, idleMs, out} ; 'exit'
 * IPC out: {type:'ready'} once; {type:'done', attempts, refused, acquireNs:[…], refusals:[…]} per run
 *          (refusals: for each refused attempt, how long it tried (ns) and the
 *          flocks /proc/locks showed on the lock file right after: shared
 *          holders and exclusive ones, so a refusal can be told apart as a
 *          timeout among readers or a holder the census saw)
 * File:    <out>.legs  Float64Array triples [1 held | 0 not held, from, to]
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { acquireLock } from '../../dist/index.js';

const sleeper = new Int32Array(new SharedArrayBuffer(4));
const sleep = (ms) => Atomics.wait(sleeper, 0, 0, ms);

function waitUntil(at) {
  for (;;) {
    const left = Number(at - process.hrtime.bigint()) / 1e6;
    if (left <= 0) return;
    if (left > 2) sleep(left - 2);
  }
}

function run({ lockPath, startAt, windowMs, retryMs, holdMs, idleMs, out }) {
  const base = BigInt(startAt);
  const end = base + BigInt(Math.round(windowMs * 1e6));
  const rel = (t) => Number(t - base);
  const intervals = [];
  const acquireNs = [];
  let attempts = 0;
  let refused = 0;
  const refusals = [];
  const ino = String(statSync(lockPath).ino);
  waitUntil(base);
  let notHeldSince = rel(process.hrtime.bigint());
  for (;;) {
    const tCall = process.hrtime.bigint();
    if (tCall >= end) {
      intervals.push(0, notHeldSince, rel(tCall));
      break;
    }
    attempts++;
    let lock;
    let err;
    try {
      lock = acquireLock(lockPath, { retryMs });
    } catch (e) {
      err = e;
      if (err?.code !== 'ELOCKHELD') throw err;
      refused++;
    }
    const tBack = process.hrtime.bigint();
    acquireNs.push(Number(tBack - tCall));
    if (!lock) refusals.push({ ns: Number(tBack - tCall), ...flocksOn(ino), message: String(err?.message ?? '') });
    if (lock) {
      intervals.push(0, notHeldSince, rel(tCall));
      sleep(holdMs);
      const tRelease = process.hrtime.bigint();
      lock.release();
      const tReleased = process.hrtime.bigint();
      intervals.push(1, rel(tBack), rel(tRelease));
      notHeldSince = rel(tReleased);
    }
    sleep(idleMs);
  }
  writeFileSync(`${out}.legs`, new Uint8Array(Float64Array.from(intervals).buffer));
  return { attempts, refused, acquireNs, refusals };
}

/** The flocks /proc/locks lists on inode `ino` (any device: the bench's files are the only ones): shared and exclusive holders. */
function flocksOn(ino) {
  let shared = 0;
  let exclusive = 0;
  try {
    for (const line of readFileSync('/proc/locks', 'latin1').split('\n')) {
      const m = /^\d+:\s+FLOCK\s+\S+\s+(READ|WRITE)\s+-?\d+\s+[0-9a-f]+:[0-9a-f]+:(\d+)\s/.exec(line);
      if (m === null || m[2] !== ino) continue;
      if (m[1] === 'READ') shared++;
      else exclusive++;
    }
  } catch {
    return { shared: -1, exclusive: -1 };
  }
  return { shared, exclusive };
}

process.on('message', (m) => {
  if (m === 'exit') {
    process.disconnect();
    return;
  }
  if (m?.type === 'run') process.send({ type: 'done', ...run(m) });
});
process.send({ type: 'ready' });
