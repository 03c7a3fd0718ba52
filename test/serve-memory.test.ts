/**
 * The dashboard's memory at scale (issue 23): what the live model and its
 * engine keep per settled run is bounded, and a root entry that is not a run
 * costs nothing but a count. Measured in bytes of heap, never in time:
 *
 * - Per settled run: the heap a live DashboardModel (engine included) holds
 *   after its first complete document, at 10,000 and at 50,000 settled runs,
 *   each in a fresh child process with --expose-gc (collected twice before
 *   each reading); the growth from one to the other, per run, must stay
 *   under BYTES_PER_SETTLED_RUN (serve/model.ts). A positive control shows
 *   the measure can exceed that bound: the same children then hold a
 *   second live model over the same root (the state kept twice, as the
 *   model and the engine each kept their own before), and the growth of
 *   the two per run is above it.
 * - Entries that are not runs: 200,000 files beside 10 runs, against the
 *   same 10 runs alone; the growth per file must be under a few bytes (no
 *   per-entry record; the count is one number), the document counts them
 *   (`skipped_count`) and lists none. The control keeps listRuns' skipped
 *   list (an object per entry), which the same measure finds well above
 *   that bound.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BYTES_PER_SETTLED_RUN } from '../dist/serve/model.js';
import { cleanupTemp, ROOT, tempDir } from './helpers/lock-procs.js';

const ev = (id: string, event: string, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ schema: 3, ts: '2026-11-30T08:00:00Z', run_id: id, event, ...extra }) + '\n';

/** `n` settled runs of the benchmark's shape: a 3-line stream, a marked lock nobody holds, no snapshot. */
function settledRoot(n: number): string {
  const root = join(tempDir('rw-mem-'), 'runs');
  mkdirSync(root);
  for (let i = 0; i < n; i++) {
    const id = `20261130-${String(i).padStart(9, '0')}-1`;
    mkdirSync(join(root, id));
    writeFileSync(join(root, id, 'events.jsonl'), ev(id, 'run_started') + ev(id, 'node_passed', { node_id: 'a', verdict: 'PASS' }) + ev(id, 'run_finished', { outcome: 'passed' }));
    writeFileSync(join(root, id, 'resume.lock'), 'oh-my-graph-lock 1\n4242\n');
  }
  return root;
}

interface Reading {
  /** Heap used (bytes) before the model, after its first document, and after the control's keepings. */
  before: number;
  model: number;
  control: number;
  tallies: number;
  skipped: number;
  skippedCount: number;
}

/**
 * A fresh child with --expose-gc: a live DashboardModel over `root`, its
 * first complete document, the heap then; then, with the model still held,
 * the control (`second-model`: another live model over the same root, as
 * when the engine and the model each kept their own state of every run;
 * `skips`: listRuns' skipped list kept), the heap again.
 */
function measure(root: string, control: 'second-model' | 'skips'): Reading {
  const script = `
    const { DashboardModel } = await import(${JSON.stringify(join(ROOT, 'dist/serve/model.js'))});
    const { listRuns } = await import(${JSON.stringify(join(ROOT, 'dist/status/list.js'))});
    const root = ${JSON.stringify(root)};
    const heap = () => { globalThis.gc(); globalThis.gc(); return process.memoryUsage().heapUsed; };
    // Everything the measure loads, loaded before the first reading.
    new DashboardModel(root).close();
    listRuns(root, { select: { limit: 1 } });
    const before = heap();
    const model = new DashboardModel(root, { live: true });
    const doc = await model.dashboard();
    const after = heap();
    let kept;
    if (${JSON.stringify(control)} === 'second-model') {
      kept = new DashboardModel(root, { live: true });
      await kept.dashboard();
    } else {
      kept = listRuns(root).skipped;
    }
    const control = heap();
    process.stdout.write(JSON.stringify({
      before, model: after, control,
      tallies: Object.values(doc.tallies).reduce((a, b) => a + b, 0),
      skipped: doc.skipped.length, skippedCount: doc.skipped_count,
    }));
    model.close();
    if (kept instanceof DashboardModel) kept.close();
    process.exit(0);
  `;
  const r = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 300_000, maxBuffer: 1 << 20 });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Reading;
}

// Removing 50,000 runs and 200,000 stray files can take minutes on a loaded machine: a bound, not a timing.
afterAll(() => cleanupTemp(), 900_000);

describe('the live dashboard keeps a bounded number of bytes per settled run', () => {
  let small: string;
  let large: string;
  beforeAll(() => {
    small = settledRoot(10_000);
    large = settledRoot(50_000);
  }, 600_000);

  it('grows by less than BYTES_PER_SETTLED_RUN per run from 10,000 to 50,000 runs; twice that state would not', () => {
    const a = measure(small, 'second-model');
    const b = measure(large, 'second-model');
    expect(a.tallies).toBe(10_000);
    expect(b.tallies).toBe(50_000);
    const perRun = (b.model - b.before - (a.model - a.before)) / 40_000;
    const twicePerRun = (b.control - b.before - (a.control - a.before)) / 40_000;
    process.stdout.write(`serve-memory: model + engine ${perRun.toFixed(0)} B/run (bound ${BYTES_PER_SETTLED_RUN}); two of them ${twicePerRun.toFixed(0)} B/run\n`);
    expect(perRun).toBeGreaterThan(0); // the measure sees the runs at all
    expect(perRun).toBeLessThan(BYTES_PER_SETTLED_RUN);
    // Positive control: the same measure finds twice the state (each of two keeping its own, as the model
    // and the engine did before) above the bound, so a regression of that size cannot pass.
    expect(twicePerRun).toBeGreaterThan(BYTES_PER_SETTLED_RUN);
  }, 600_000);
});

describe('a root full of entries that are not runs', () => {
  const FILES = 200_000;
  let runsOnly: string;
  let withFiles: string;
  beforeAll(() => {
    runsOnly = settledRoot(10);
    withFiles = settledRoot(10);
    for (let i = 0; i < FILES; i++) closeSync(openSync(join(withFiles, `stray-${i}.txt`), 'w'));
  }, 600_000);

  it('costs no memory per entry beyond the count, which the document reports', () => {
    const a = measure(runsOnly, 'skips');
    const b = measure(withFiles, 'skips');
    expect(b.tallies).toBe(10);
    expect(b.skipped).toBe(0);
    expect(b.skippedCount).toBe(FILES);
    expect(a.skippedCount).toBe(0);
    const perEntry = (b.model - b.before - (a.model - a.before)) / FILES;
    const keptPerEntry = (b.control - b.model - (a.control - a.model)) / FILES;
    process.stdout.write(`serve-memory: ${perEntry.toFixed(2)} B per stray entry; listRuns' skipped list ${keptPerEntry.toFixed(0)} B per entry\n`);
    expect(perEntry).toBeLessThan(4);
    // Positive control: the same measure of a list with an object per entry is far above that bound.
    expect(keptPerEntry).toBeGreaterThan(40);
  }, 600_000);
});
