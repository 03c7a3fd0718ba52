/**
 * One poller: probes one lock file in a tight loop for a fixed window that
 * starts at an agreed CLOCK_MONOTONIC instant (the same clock in every
 * process), and records, for every probe, the instant it ended and its
 * answer. Probe i ran inside [t[i-1], t[i]] (t[-1] is the window's first
 * instant), so its latency is t[i] - t[i-1], which includes one clock read
 * (~0.1 µs here) and the store; nothing else runs in the loop.
 *
 * IPC in:  {type:'warm', kind, lockPath} (JIT warm-up, outside any window);
 *          {type:'run', kind:'shared'|'exclusive', lockPath, startAt, windowMs, out}
 *          (startAt: ns as a decimal string) ; 'exit'
 * IPC out: {type:'ready'} once, {type:'warmed'} per warm-up,
 *          {type:'done', probes, first, unknownReasons} per run.
 * Files:   <out>.t  Float64Array of end instants (ns after startAt)
 *          <out>.a  Uint8Array of answers: 1 held, 2 free, 3 unknown
 */
import { writeFileSync } from 'node:fs';
import { probeLock } from '../../dist/index.js';
import { probeExclusive } from '../lib/probes.js';

const CODE = { held: 1, free: 2, unknown: 3 };
const sleeper = new Int32Array(new SharedArrayBuffer(4));
let times = new Float64Array(1 << 16);
let answers = new Uint8Array(1 << 16);

function grow() {
  const t = new Float64Array(times.length * 2);
  t.set(times);
  times = t;
  const a = new Uint8Array(answers.length * 2);
  a.set(answers);
  answers = a;
}

/** Waits until CLOCK_MONOTONIC reaches `at` (sleeping, then spinning the last 2 ms). */
function waitUntil(at) {
  for (;;) {
    const left = Number(at - process.hrtime.bigint()) / 1e6;
    if (left <= 0) return;
    if (left > 2) Atomics.wait(sleeper, 0, 0, left - 2);
  }
}

const WARM_UP = 3000;

/** runwarden's probe; the reasons behind unknown answers are tallied, since they say why. */
function sharedProbe(reasons) {
  return (lockPath) => {
    const r = probeLock(lockPath);
    if (r.liveness === 'unknown') reasons[r.reason] = (reasons[r.reason] ?? 0) + 1;
    return r.liveness;
  };
}

function probeFor(kind, reasons) {
  return kind === 'exclusive' ? probeExclusive : sharedProbe(reasons);
}

/** JIT warm-up, outside any window, so windows measure steady state. */
function warm({ kind, lockPath }) {
  const probe = probeFor(kind, {});
  for (let i = 0; i < WARM_UP; i++) probe(lockPath);
}

function run({ kind, lockPath, startAt, windowMs, out }) {
  const unknownReasons = {};
  const probe = probeFor(kind, unknownReasons);
  const base = BigInt(startAt);
  const end = base + BigInt(Math.round(windowMs * 1e6));
  waitUntil(base);
  let n = 0;
  let t = process.hrtime.bigint();
  const first = Number(t - base);
  while (t < end) {
    const answer = probe(lockPath);
    t = process.hrtime.bigint();
    if (n === times.length) grow();
    times[n] = Number(t - base);
    answers[n] = CODE[answer];
    n++;
  }
  writeFileSync(`${out}.t`, new Uint8Array(times.buffer, 0, n * 8));
  writeFileSync(`${out}.a`, answers.subarray(0, n));
  return { probes: n, first, unknownReasons };
}

process.on('message', (m) => {
  if (m === 'exit') {
    process.disconnect();
    return;
  }
  if (m?.type === 'warm') {
    warm(m);
    process.send({ type: 'warmed' });
  }
  if (m?.type === 'run') process.send({ type: 'done', ...run(m) });
});
process.send({ type: 'ready' });
