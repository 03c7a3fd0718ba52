/**
 * The live engine's `settledForget` and `seed` (one inspection per
 * run at start). A seeded report is taken for a settled, watched run instead
 * of a read, and only for such a run; the run is read again, from the start,
 * as soon as one of its files changes; without `settledForget` a seed is not
 * used at all. To tell a taken report from a read one, the seed says
 * something the files do not (a passed run seeded as failed): the engine
 * repeats it only if it did not read the run.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { needs } from './helpers/prereq.js';
import { LiveEngine, runStatus, type RunReport } from '../src/index.js';
import { DashboardModel } from '../src/serve/model.js';
import { cleanupTemp, tempDir, until } from './helpers/lock-procs.js';
import { eventLine } from './helpers/events.js';
import { RELEASED } from './helpers/portable.js';

const ev = (id: string, event: string, extra: Record<string, unknown> = {}): string => eventLine({ event, ...extra }, { runId: id, ts: '2026-11-30T08:00:00Z' });

const engines: LiveEngine[] = [];
afterEach(() => {
  for (const e of engines.splice(0)) e.close();
});
afterAll(() => cleanupTemp());

/** A root with a settled (passed) run and one whose leg is open and whose lock nobody holds (abandoned). */
function makeRoot(): { root: string; settled: string; open: string } {
  const root = join(tempDir('rw-seed-'), 'runs');
  const settled = '20261130-080000-done';
  const open = '20261130-090000-dead';
  mkdirSync(join(root, settled), { recursive: true });
  writeFileSync(join(root, settled, 'events.jsonl'), ev(settled, 'run_started') + ev(settled, 'node_passed', { node_id: 'a', verdict: 'PASS' }) + ev(settled, 'run_finished', { outcome: 'passed' }));
  mkdirSync(join(root, open));
  writeFileSync(join(root, open, 'events.jsonl'), ev(open, 'run_started') + ev(open, 'node_started', { node_id: 'a' }));
  writeFileSync(join(root, open, 'resume.lock'), RELEASED);
  return { root, settled, open };
}

/** What the seed hands over: the settled run as failed (not what its files say), the open run as it is. */
function seedOf(root: string, settled: string, open: string): Map<string, RunReport> {
  const truth = runStatus(join(root, settled));
  expect(truth.status).toBe('PASS');
  return new Map<string, RunReport>([
    [settled, { ...truth, status: 'FAIL' } as RunReport],
    [open, runStatus(join(root, open))],
  ]);
}

describe('LiveEngine seed and settledForget', () => {
  it('takes a seeded report for a settled, watched run instead of reading it, and reads it again when it changes', async (ctx) => {
    needs(ctx, 'linux: inotify (the engine\'s backend is asserted)');
    const { root, settled, open } = makeRoot();
    let asked = 0;
    const engine = new LiveEngine({
      root,
      ref: false,
      settledForget: true,
      seed: () => {
        asked++;
        return seedOf(root, settled, open);
      },
    });
    engines.push(engine);
    await engine.start();
    expect(asked).toBe(1);
    expect(engine.stats.backend).toBe('inotify');
    // Taken as given: the engine did not read the settled run.
    expect(engine.get(join(root, settled))?.report?.status).toBe('FAIL');
    // An open leg is never taken from a seed: the engine probed it itself.
    expect(engine.get(join(root, open))?.report?.status).toBe('ABANDONED');
    expect(engine.stats.derivations).toBe(1);
    // A new leg on the settled run: read again from the start, and now its own files speak.
    appendFileSync(join(root, settled, 'events.jsonl'), ev(settled, 'run_started') + ev(settled, 'run_finished', { outcome: 'passed' }));
    await until(() => engine.get(join(root, settled))?.report?.status === 'PASS');
    expect(engine.get(join(root, settled))?.report).toEqual(runStatus(join(root, settled)));
    // And a failing leg after it is followed too (the run was let go again after that read).
    appendFileSync(join(root, settled, 'events.jsonl'), ev(settled, 'run_started') + ev(settled, 'run_finished', { outcome: 'failed' }));
    await until(() => engine.get(join(root, settled))?.report?.status === 'FAIL');
    expect(engine.get(join(root, settled))?.report).toEqual(runStatus(join(root, settled)));
  });

  it('without settledForget a seed is not used: every run is read', async () => {
    const { root, settled, open } = makeRoot();
    let asked = 0;
    const engine = new LiveEngine({
      root,
      ref: false,
      seed: () => {
        asked++;
        return seedOf(root, settled, open);
      },
    });
    engines.push(engine);
    await engine.start();
    expect(asked).toBe(0);
    expect(engine.get(join(root, settled))?.report).toEqual(runStatus(join(root, settled)));
    expect(engine.stats.derivations).toBe(2);
  });

  it('settledForget alone reports what a full read reports, before and after a change', async () => {
    const { root, settled, open } = makeRoot();
    const engine = new LiveEngine({ root, ref: false, settledForget: true });
    engines.push(engine);
    await engine.start();
    for (const id of [settled, open]) expect(engine.get(join(root, id))?.report).toEqual(runStatus(join(root, id)));
    appendFileSync(join(root, settled, 'events.jsonl'), ev(settled, 'run_started') + ev(settled, 'gate_paused', { node_id: 'g' }) + ev(settled, 'run_finished', { outcome: 'paused' }));
    await until(() => engine.get(join(root, settled))?.report?.status === 'PAUSED');
    expect(engine.get(join(root, settled))?.report).toEqual(runStatus(join(root, settled)));
  });

  it('the live dashboard: the engine takes the first listing\'s report for every settled run of the root (one inspection per run)', async (ctx) => {
    needs(ctx, 'linux: a watch for every run (kqueue\'s are budgeted at 160 descriptors; the engine reads the runs past it itself)');
    const { root, open } = makeRoot();
    // Enough runs that the model's search of its newest-first listing takes several steps for each.
    for (let i = 0; i < 300; i++) {
      const id = `20261129-${String(i).padStart(6, '0')}-ok`;
      mkdirSync(join(root, id));
      writeFileSync(join(root, id, 'events.jsonl'), ev(id, 'run_started') + ev(id, 'run_finished', { outcome: i % 2 === 0 ? 'passed' : 'failed' }));
    }
    const model = new DashboardModel(root, { live: true });
    try {
      const doc = await model.dashboard();
      expect(Object.values(doc.tallies).reduce((a, b) => a + b, 0)).toBe(302);
      const engine = (model as unknown as { index: { engine: LiveEngine } }).index.engine;
      // Only the run with an open leg is read by the engine itself; the 301 settled ones are taken.
      expect(engine.stats.derivations).toBe(1);
      expect(engine.get(join(root, open))?.report?.liveness).not.toBeNull();
      const some = '20261129-000123-ok';
      expect(engine.get(join(root, some))?.report).toEqual(runStatus(join(root, some)));
    } finally {
      model.close();
    }
  });
});
