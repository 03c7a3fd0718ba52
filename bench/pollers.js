/**
 * Many pollers: P poller processes probe one run's lock in a tight loop for
 * a fixed window, in four settings (held by a live holder; free; a leg
 * acquiring and releasing in a loop with acquireLock's retry disabled; the
 * same with its default retry window), with runwarden's shared probe and
 * with the bench-only exclusive probe. Reports per cell: probes per second,
 * p50/p99 latency, wrong answers, unknowns, and for the churn settings the
 * leg's false-busy rate. See RESULTS.md "Definitions" for what counts as
 * wrong, written from the code below.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { acquireLock, probeLock } from '../dist/index.js';
import { forkWorker, stop, waitMessage } from './lib/procs.js';
import { median, percentileSorted } from './lib/stats.js';

const worker = (name) => fileURLToPath(new URL(`./workers/${name}.js`, import.meta.url));
/** Answer codes in the pollers' sample files. */
export const HELD = 1;
export const FREE = 2;
export const UNKNOWN = 3;

export const SETTINGS = [
  { id: 'held', label: 'held (a live leg holds the lock)' },
  { id: 'free', label: 'free (no leg)' },
  { id: 'churn-0', label: 'churn, acquireLock retryMs 0', retryMs: 0 },
  { id: 'churn-default', label: 'churn, acquireLock default retry (100 ms)', retryMs: undefined },
];
export const KINDS = [
  { id: 'shared', label: 'runwarden probeLock (LOCK_SH)' },
  { id: 'exclusive', label: 'exclusive probe (LOCK_EX, bench only)' },
];

function readF64(path) {
  const b = readFileSync(path);
  return new Float64Array(b.buffer, b.byteOffset, b.byteLength / 8);
}

/**
 * Judges churn probes against the leg's certain intervals. A probe lying
 * wholly inside a held interval and answering free, or wholly inside a
 * not-held interval and answering held, is impossible if the probe is right.
 */
export function judgeChurn(times, answers, first, legs) {
  let wrongFree = 0;
  let wrongHeld = 0;
  let judged = 0;
  let k = 0;
  const m = legs.length / 3;
  for (let i = 0; i < times.length; i++) {
    const from = i === 0 ? first : times[i - 1];
    const to = times[i];
    while (k < m && legs[3 * k + 2] < to) k++;
    if (k === m) break;
    if (legs[3 * k + 1] > from) continue; // not wholly inside one interval
    judged++;
    const legHeld = legs[3 * k] === 1;
    if (legHeld && answers[i] === FREE) wrongFree++;
    if (!legHeld && answers[i] === HELD) wrongHeld++;
  }
  return { judged, wrongFree, wrongHeld };
}

/** The figures of one window (one repetition of one cell), latencies kept for pooling. */
function analyseWindow({ setting, results, legResult, legs }) {
  let probes = 0;
  let held = 0;
  let free = 0;
  let unknown = 0;
  let wrong = 0;
  let judged = 0;
  for (const r of results) probes += r.times.length;
  const lat = new Float64Array(probes);
  let j = 0;
  for (const r of results) {
    const { times, answers, first } = r;
    for (let i = 0; i < times.length; i++) {
      lat[j++] = times[i] - (i === 0 ? first : times[i - 1]);
      const a = answers[i];
      if (a === HELD) held++;
      else if (a === FREE) free++;
      else unknown++;
    }
    if (setting.id === 'held') {
      wrong += countOf(answers, FREE);
      judged += times.length;
    } else if (setting.id === 'free') {
      wrong += countOf(answers, HELD);
      judged += times.length;
    } else {
      const v = judgeChurn(times, answers, first, legs);
      wrong += v.wrongFree + v.wrongHeld;
      judged += v.judged;
    }
  }
  return { probes, held, free, unknown, wrong, judged, lat, legResult };
}

/** Pools the windows of one cell: counts add up, latencies pool, probes/s is the median window's. */
function mergeWindows({ setting, kind, P, windowMs, windows }) {
  const sum = (f) => windows.reduce((a, w) => a + f(w), 0);
  const probes = sum((w) => w.probes);
  const lat = new Float64Array(probes);
  let off = 0;
  for (const w of windows) {
    lat.set(w.lat, off);
    off += w.lat.length;
  }
  lat.sort();
  const rates = windows.map((w) => w.probes / (windowMs / 1000));
  const cell = {
    setting: setting.id,
    kind: kind.id,
    P,
    windowMs,
    windows: windows.length,
    probes,
    probesPerSec: median(rates),
    ratesPerWindow: rates,
    p50: percentileSorted(lat, 50),
    p99: percentileSorted(lat, 99),
    p999: percentileSorted(lat, 99.9),
    max: lat.length ? lat[lat.length - 1] : NaN,
    held: sum((w) => w.held),
    free: sum((w) => w.free),
    unknown: sum((w) => w.unknown),
    wrong: sum((w) => w.wrong),
    judged: sum((w) => w.judged),
    late: sum((w) => w.late),
    unknownReasons: {},
  };
  for (const w of windows) {
    for (const [k, v] of Object.entries(w.unknownReasons)) cell.unknownReasons[k] = (cell.unknownReasons[k] ?? 0) + v;
  }
  if (windows[0].legResult) {
    const acq = Float64Array.from(windows.flatMap((w) => w.legResult.acquireNs)).sort();
    cell.leg = {
      attempts: sum((w) => w.legResult.attempts),
      refused: sum((w) => w.legResult.refused),
      acquireP50: percentileSorted(acq, 50),
      acquireP99: percentileSorted(acq, 99),
      acquireMax: acq.length ? acq[acq.length - 1] : NaN,
      refusals: windows.flatMap((w) => w.legResult.refusals ?? []),
    };
  }
  return cell;
}

function countOf(arr, v) {
  let c = 0;
  for (let i = 0; i < arr.length; i++) if (arr[i] === v) c++;
  return c;
}

/**
 * Runs the whole matrix. One pool of P pollers per P value serves every
 * setting and kind; one holder (on the held run) and one leg process (on the
 * churn run) serve every P. Each cell is measured in `reps` windows,
 * interleaved with the other cells. Returns the list of cells.
 */
export async function runPollers({ Ps, windowMs, reps = 1, settings = SETTINGS, kinds = KINDS, holdMs = 1, idleMs = 1, log }) {
  const base = mkdtempSync(join(tmpdir(), 'rw-bench-pollers-'));
  const files = {
    held: join(base, 'held-run', 'resume.lock'),
    free: join(base, 'free-run', 'resume.lock'),
    churn: join(base, 'churn-run', 'resume.lock'),
  };
  acquireLock(files.free).release();
  acquireLock(files.churn).release();
  mkdirSync(join(base, 'held-run'), { recursive: true });
  mkdirSync(join(base, 'samples'));
  const holder = forkWorker(worker('holder'), [files.held]);
  const leg = forkWorker(worker('leg'));
  const pools = [];
  const cells = [];
  try {
    await waitMessage(holder, (m) => m?.type === 'ready');
    await waitMessage(leg, (m) => m?.type === 'ready');
    if (probeLock(files.held).liveness !== 'held' || probeLock(files.free).liveness !== 'free') {
      throw new Error('bench: pollers fixture is not in the state it claims');
    }
    for (const P of Ps) {
      const pool = [];
      for (let i = 0; i < P; i++) pool.push(forkWorker(worker('poller')));
      pools.push(pool);
      await Promise.all(pool.map((w) => waitMessage(w, (m) => m?.type === 'ready', 120_000)));
      for (const kind of kinds) {
        await Promise.all(
          pool.map((w) => {
            const done = waitMessage(w, (m) => m?.type === 'warmed', 120_000);
            w.send({ type: 'warm', kind: kind.id, lockPath: files.free });
            return done;
          }),
        );
      }
      const combos = settings.flatMap((setting) => kinds.map((kind) => ({ setting, kind, windows: [] })));
      for (let rep = 0; rep < reps; rep++) {
        // Rotated each repetition, so a slow stretch of the machine is spread over every cell.
        for (let c = 0; c < combos.length; c++) {
          const combo = combos[(c + rep * 3) % combos.length];
          const { setting, kind } = combo;
          const churn = setting.id.startsWith('churn');
          const lockPath = churn ? files.churn : files[setting.id];
          // Room for the start message to reach every poller on a loaded machine.
          const marginMs = 100 + 3 * P;
          const startAt = process.hrtime.bigint() + BigInt(marginMs * 1e6);
          const out = (i) => join(base, 'samples', `${setting.id}-${kind.id}-${P}-${i}`);
          const runs = pool.map((w, i) => {
            const done = waitMessage(w, (m) => m?.type === 'done', 120_000 + windowMs);
            w.send({ type: 'run', kind: kind.id, lockPath, startAt: String(startAt), windowMs, out: out(i) });
            return done;
          });
          let legDone;
          if (churn) {
            legDone = waitMessage(leg, (m) => m?.type === 'done', 120_000 + windowMs);
            leg.send({
              type: 'run',
              lockPath,
              startAt: String(startAt),
              windowMs,
              retryMs: setting.retryMs,
              holdMs,
              idleMs,
              out: join(base, 'samples', 'leg'),
            });
          }
          const dones = await Promise.all(runs);
          const legResult = churn ? await legDone : undefined;
          const results = dones.map((d, i) => ({
            first: d.first,
            times: readF64(`${out(i)}.t`),
            answers: new Uint8Array(readFileSync(`${out(i)}.a`)),
          }));
          const legs = churn ? readF64(join(base, 'samples', 'leg.legs')) : undefined;
          const w = analyseWindow({ setting, results, legResult, legs });
          w.late = dones.filter((d) => d.first > 5e6).length;
          w.unknownReasons = {};
          for (const d of dones) {
            for (const [k, v] of Object.entries(d.unknownReasons ?? {})) w.unknownReasons[k] = (w.unknownReasons[k] ?? 0) + v;
          }
          combo.windows.push(w);
          for (let i = 0; i < P; i++) {
            rmSync(`${out(i)}.t`, { force: true });
            rmSync(`${out(i)}.a`, { force: true });
          }
        }
      }
      for (const { setting, kind, windows } of combos) {
        const cell = mergeWindows({ setting, kind, P, windowMs, windows });
        cells.push(cell);
        log?.(
          `  pollers P=${P} ${setting.id} ${kind.id}: ${Math.round(cell.probesPerSec)}/s p50 ${Math.round(cell.p50)} ns p99 ${Math.round(cell.p99)} ns wrong ${cell.wrong} unknown ${cell.unknown}` +
            (cell.leg ? ` leg refused ${cell.leg.refused}/${cell.leg.attempts}` : ''),
        );
      }
      for (const w of pool) w.send('exit');
      await Promise.all(pool.map((w) => stop(w, 'SIGTERM')));
    }
  } finally {
    for (const pool of pools) await Promise.all(pool.map((w) => stop(w)));
    await stop(holder);
    await stop(leg);
    rmSync(base, { recursive: true, force: true });
  }
  return cells;
}
