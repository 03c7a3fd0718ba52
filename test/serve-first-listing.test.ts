/**
 * Serve's first listing on two threads: the live model's
 * first listing shares its inspections with a list worker, as `runs --json`
 * does (status/list-threads.ts forEachRunThreaded), and gives the same
 * reports, skips and order as on one thread: the same dashboard document,
 * the same reports list, the same lock probes told to the observer. A list
 * worker that ends early loses nothing: the chunks it held are inspected on
 * the owning thread. Everything here runs from dist/ (built before the
 * tests), so the list worker is the real dist/status/list-worker.js; the
 * `workersOnly` seam makes every chunk a worker's while the worker lives,
 * since test roots are small and the owning thread would otherwise race it.
 */
import { symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunReport } from '../dist/index.js';
import { listRuns } from '../dist/index.js';
import { compactReport } from '../dist/status/compact.js';
import { CHUNK_RUNS, CLAIM, OWNER, forEachRunThreaded, type ThreadedListOptions } from '../dist/status/list-threads.js';
import { DashboardModel } from '../dist/serve/model.js';
import { cleanupTemp, killAll, ROOT, tempDir } from './helpers/lock-procs.js';
import { dyingWorker } from './helpers/list-workers.js';
import { eventLine } from './helpers/events.js';
import { DIAMOND, holdRun, killedHolder, openRun, passedRun, runDir } from './helpers/serve-fixtures.js';

const models: { close(): void }[] = [];
afterEach(async () => {
  for (const m of models.splice(0)) m.close();
  await killAll();
  cleanupTemp();
});

/** Run directories of {@link makeRoot}: more than two chunks, so that a worker and the owner each have some. */
const DIRS = 2 * CHUNK_RUNS + 120;

/**
 * A root of {@link DIRS} run directories: settled runs, one in flight held
 * by a real holder, one abandoned (its holder was SIGKILLed), one with no
 * stream yet, one unreadable (a stream of an unknown schema); and entries
 * that are not runs (a file, a symlink). The special runs sit in different
 * chunks.
 */
async function makeRoot(): Promise<string> {
  const root = tempDir('rw-first-listing-');
  const id = (i: number, what: string): string => `20261201-${String(i).padStart(5, '0')}-${what}`;
  const special = new Map<number, string>([
    [10, 'live'],
    [150, 'nothing'],
    [300, 'dead'],
    [420, 'unreadable'],
    [600, 'live2'],
  ]);
  for (let i = 0; i < DIRS; i++) {
    const what = special.get(i);
    if (what === undefined) passedRun(root, id(i, 'done'), i % 2 === 0 ? 'diamond' : 'line', DIAMOND.slice(0, 1 + (i % 5)), 0.25 * (i % 4));
    else if (what === 'nothing') runDir(root, id(i, what));
    else if (what === 'unreadable') writeFileSync(join(runDir(root, id(i, what)), 'events.jsonl'), eventLine({ schema: 99, event: 'run_started' }));
    else if (what === 'dead') await killedHolder(openRun(root, id(i, what), 'diamond', DIAMOND, 1));
    else await holdRun(openRun(root, id(i, what), 'diamond', DIAMOND, 2));
  }
  writeFileSync(join(root, id(200, 'stray.txt')), 'not a run\n');
  symlinkSync(join(root, id(1, 'done')), join(root, id(500, 'link')));
  return root;
}

interface Collected {
  runs: string;
  skipped: string;
  probes: string[];
  byWorkers: number;
}

/** forEachRunThreaded as serve's model calls it (compacted reports, 32 a batch), with what it handed over and the probes it told of. */
async function collect(root: string, options: ThreadedListOptions): Promise<Collected> {
  const runs: RunReport[] = [];
  const probes: string[] = [];
  const r = await forEachRunThreaded(root, (x: RunReport) => compactReport(x), (x: RunReport) => runs.push(x), {
    batchRuns: 32,
    onProbe: (_s: number, answer: { liveness: string }) => probes.push(answer.liveness),
    ...options,
  });
  return { runs: JSON.stringify(runs), skipped: JSON.stringify(r.skipped), probes: probes.sort(), byWorkers: r.byWorkers };
}

describe('the first listing on two threads', () => {
  it('gives the reports, skips, order and probes of one thread and of listRuns, through a real list worker', async () => {
    const root = await makeRoot();
    const truth = listRuns(root);
    expect(truth.runs.length).toBe(DIRS - 1); // all but the unreadable one
    expect(truth.skipped.map((s) => s.run_id)).toEqual(['20261201-00500-link', '20261201-00420-unreadable', '20261201-00200-stray.txt']);
    expect(truth.runs.filter((r) => r.status === 'RUNNING').length).toBe(2);
    expect(truth.runs.filter((r) => r.status === 'ABANDONED').length).toBe(1);
    const one = await collect(root, { threads: 1 });
    expect(one.byWorkers).toBe(0);
    expect(one.runs).toBe(JSON.stringify(truth.runs));
    expect(one.skipped).toBe(JSON.stringify(truth.skipped));
    // Every open leg is probed: held twice (in flight), free once (abandoned), whoever inspects it.
    expect(one.probes.filter((p) => p === 'held').length).toBeGreaterThanOrEqual(2);
    expect(one.probes).toContain('free');
    // Every chunk through the worker: its report objects, copied across, compacted here; its probes told here.
    const worker = await collect(root, { threads: 2, workersOnly: true });
    expect(worker.byWorkers).toBe(Math.ceil((DIRS - 2) / CHUNK_RUNS)); // the file and the link are not run directories
    expect(worker).toEqual({ ...one, byWorkers: worker.byWorkers });
    // Shared as it comes (whoever is free claims the next chunk).
    const shared = await collect(root, { threads: 2 });
    expect({ ...shared, byWorkers: 0 }).toEqual(one);
  });

  it('loses nothing to a list worker that ends early: the chunks it held are inspected on the owning thread', async () => {
    const root = await makeRoot();
    const one = await collect(root, { threads: 1 });
    const dir = tempDir('rw-first-listing-workers-');
    // Claims a chunk as list-worker.js does, then throws before sending it.
    const dying = dyingWorker(dir, CLAIM, OWNER);
    // Sends its first chunk as list-worker.js would (report objects and probes), claims a second, and exits.
    const once = join(dir, 'once-worker.mjs');
    const threads = pathToFileURL(join(ROOT, 'dist', 'status', 'list-threads.js')).href;
    writeFileSync(
      once,
      [
        "import { workerData } from 'node:worker_threads';",
        `import { claimChunk, inspectChunk, packedChunk, CHUNK_RUNS, SENT } from ${JSON.stringify(threads)};`,
        'const { abs, names, control, owner, port, batchRuns } = workerData;',
        'const ctl = new Int32Array(control);',
        'const chunks = Math.ceil(names.count / CHUNK_RUNS);',
        'const probes = [];',
        'const k = claimChunk(ctl, chunks, owner);',
        'const got = inspectChunk(abs, packedChunk(names, k), (r) => r, { onProbe: (s, a) => probes.push([s, a]) }, batchRuns);',
        'port.postMessage({ chunk: k, ...got, probes });',
        'Atomics.add(ctl, SENT, 1);',
        'Atomics.notify(ctl, SENT);',
        'claimChunk(ctl, chunks, owner);',
        'process.exit(0);',
      ].join('\n'),
    );
    const dyingRun = await collect(root, { threads: 2, workersOnly: true, workerScript: dying });
    expect(dyingRun.byWorkers).toBe(0);
    expect({ ...dyingRun, byWorkers: 0 }).toEqual(one);
    const onceRun = await collect(root, { threads: 2, workersOnly: true, workerScript: pathToFileURL(once) });
    expect(onceRun.byWorkers).toBe(1);
    expect({ ...onceRun, byWorkers: 0 }).toEqual(one);
    // Sharing with the owner, and a worker that cannot even start.
    expect({ ...(await collect(root, { threads: 2, workerScript: dying })), byWorkers: 0 }).toEqual(one);
    expect({ ...(await collect(root, { threads: 2, workersOnly: true, workerScript: pathToFileURL(join(dir, 'no-such-worker.mjs')) })), byWorkers: 0 }).toEqual(one);
  });

  it("serve's live model: the same dashboard document and reports list on two threads as on one, and as a whole derivation", async () => {
    const root = await makeRoot();
    const probes = { 1: [] as string[], 2: [] as string[] };
    const opts = { expensiveMs: Infinity };
    const live = (threads: 1 | 2) => {
      const model = new DashboardModel(root, { ...opts, live: true, listThreads: threads, observer: { probed: (_s, liveness) => probes[threads].push(liveness), scanned: () => {} } });
      models.push(model);
      return model;
    };
    const strip = <D extends { generated_at: string }>(d: D): D => ({ ...d, generated_at: '' });
    const [one, two] = [live(1), live(2)];
    const [docOne, docTwo] = [strip(await one.dashboard()), strip(await two.dashboard())];
    expect(docTwo).toEqual(docOne);
    expect(docOne).toEqual(strip(await new DashboardModel(root, opts).dashboard()));
    expect(docOne.tallies.running).toBe(2);
    expect(docOne.tallies.abandoned).toBe(1);
    expect(docOne.skipped_count).toBe(3); // the unreadable run, and the file and the link (counted, not listed)
    const [listOne, listTwo] = [await one.currentReports(0), await two.currentReports(0)];
    expect(JSON.stringify(listTwo.runs)).toBe(JSON.stringify(listOne.runs));
    expect(listTwo.skipped).toEqual(listOne.skipped);
    expect(JSON.stringify(listOne.runs)).toBe(JSON.stringify(listRuns(root).runs));
    // The first listing's probes reach the observer on two threads too (a worker's when its chunk arrives).
    for (const t of [1, 2] as const) {
      expect(probes[t].filter((p) => p === 'held').length).toBeGreaterThanOrEqual(2);
      expect(probes[t]).toContain('free');
    }
  });
});
