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
 * IPC out: {type:'ready'} once; {type:'done', attempts, refused, acquireNs:[…]} per run
 * File:    <out>.legs  Float64Array triples [1 held | 0 not held, from, to]
 */
import { writeFileSync } from 'node:fs';
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
    try {
      lock = acquireLock(lockPath, { retryMs });
    } catch (err) {
      if (err?.code !== 'ELOCKHELD') throw err;
      refused++;
    }
    const tBack = process.hrtime.bigint();
    acquireNs.push(Number(tBack - tCall));
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
  return { attempts, refused, acquireNs };
}

process.on('message', (m) => {
  if (m === 'exit') {
    process.disconnect();
    return;
  }
  if (m?.type === 'run') process.send({ type: 'done', ...run(m) });
});
process.send({ type: 'ready' });
