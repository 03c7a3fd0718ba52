/**
 * The dashboard's reading side (src/serve/model.ts) without HTTP: the bound
 * on expensive runs, and how legs are numbered for the run page.
 */
import { renameSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DashboardModel, numberLegs } from '../dist/serve/model.js';
import { cleanupTemp, killAll, tempDir, waitExit } from './helpers/lock-procs.js';
import { appendEvents, DIAMOND, ev, holdRun, killedHolder, openRun, passedRun, runDir, writeEvents } from './helpers/serve-fixtures.js';

afterAll(async () => {
  await killAll();
  cleanupTemp();
});

describe('expensive runs', () => {
  it('reuses an expensive run’s report only within its window, and says as of when', async () => {
    const root = tempDir('rw-model-');
    const id = '20261130-120000.000000001-1';
    const h = await holdRun(openRun(root, id, 'long-leg', DIAMOND, 1));
    passedRun(root, '20261130-110000.000000001-1', 'short', DIAMOND);
    // Every run counts as expensive, and its window never ends.
    const lazy = new DashboardModel(root, { expensiveMs: 0, expensiveFactor: 1e9 });
    const first = (await lazy.dashboard()).runs.find((c) => c.run_id === id);
    expect(first?.state).toBe('running');
    expect(typeof first?.checked_at).toBe('string');
    h.proc.kill('SIGKILL');
    await waitExit(h.proc);
    const again = (await lazy.dashboard()).runs.find((c) => c.run_id === id);
    // Reused, and marked with the time it was derived, not passed off as new.
    expect(again?.state).toBe('running');
    expect(again?.checked_at).toBe(first?.checked_at);
    // Derived afresh (no history of being expensive), the death shows at once.
    // (expensiveMs Infinity: however slow this machine is, a fresh model does not count the run as expensive.)
    const fresh = (await new DashboardModel(root, { expensiveMs: Infinity }).dashboard()).runs.find((c) => c.run_id === id);
    expect(fresh).toMatchObject({ state: 'abandoned', checked_at: null });
    // What the fixture makes, written here: one of five nodes passed, the leg open, its holder killed.
    expect(fresh?.report).toMatchObject({ run_id: id, status: 'ABANDONED', liveness: 'free', reason: 'flock-free', graph: 'long-leg', nodes_total: 5, nodes_passed: 1 });
  });

  it('never reuses an expensive run’s answer for another stream: a root replaced by one with a run of the same name', async () => {
    const base = tempDir('rw-model-');
    const root = join(base, 'runs');
    const id = '20261130-120000.000000001-3';
    await killedHolder(openRun(root, id, 'long-leg', DIAMOND, 1));
    // Every run counts as expensive, and its window never ends.
    const lazy = new DashboardModel(root, { expensiveMs: 0, expensiveFactor: 1e9 });
    expect((await lazy.dashboard()).runs.find((c) => c.run_id === id)?.state).toBe('abandoned');
    // Control: the same stream, still within the window, is the kept answer (checked_at set).
    const kept = (await lazy.dashboard()).runs.find((c) => c.run_id === id);
    expect(kept).toMatchObject({ state: 'abandoned' });
    expect(typeof kept?.checked_at).toBe('string');
    // Another directory, holding a settled run of that name, is renamed into the root's place.
    const next = join(base, 'next');
    passedRun(next, id, 'short', DIAMOND);
    renameSync(root, join(base, 'old'));
    renameSync(next, root);
    const card = (await lazy.dashboard()).runs.find((c) => c.run_id === id);
    expect(card?.state).toBe('passed');
    expect(card?.report).toMatchObject({ run_id: id, status: 'PASS', liveness: null, reason: null, graph: 'short', nodes_total: 5, nodes_passed: 5 });
  });

  it('re-derives an expensive run once its window has passed', async () => {
    const root = tempDir('rw-model-');
    const id = '20261130-120000.000000001-2';
    const h = await holdRun(openRun(root, id, 'long-leg', DIAMOND, 1));
    const m = new DashboardModel(root, { expensiveMs: 0, expensiveFactor: 0 });
    expect((await m.dashboard()).runs[0]?.state).toBe('running');
    h.proc.kill('SIGKILL');
    await waitExit(h.proc);
    expect((await m.dashboard()).runs[0]?.state).toBe('abandoned');
  });
});

describe('legs on the run page', () => {
  it('shows an auto run’s planning start and the start after it as one leg (CONTRACT §2.3)', async () => {
    const root = tempDir('rw-model-');
    const id = '20261130-130000.000000001-1';
    const dir = runDir(root, id);
    writeEvents(dir, [
      ev(id, 'run_started', { phase: 'planning' }),
      ev(id, 'run_started'),
      ev(id, 'node_started', { node_id: 'a' }),
      ev(id, 'node_passed', { node_id: 'a', verdict: 'PASS' }),
      ev(id, 'run_finished', { outcome: 'passed' }),
    ]);
    const page = await new DashboardModel(root).page(id, dir);
    expect(page.state).toBe('passed');
    expect(page.legs).toHaveLength(1);
    expect(page.legs[0]).toMatchObject({ n: 1, phase: '', state: 'closed', outcome: 'passed' });
    expect(page.timeline.map((t) => t.leg)).toEqual([1, 1, 1, 1, 1]);
  });

  it('keeps a superseded leg abandoned and numbers the next one', async () => {
    const root = tempDir('rw-model-');
    const id = '20261130-130000.000000001-2';
    const dir = runDir(root, id);
    writeEvents(dir, [ev(id, 'run_started'), ev(id, 'node_started', { node_id: 'a' }), ev(id, 'run_started'), ev(id, 'node_started', { node_id: 'a' }), ev(id, 'node_failed', { node_id: 'a', verdict: 'FAIL' }), ev(id, 'run_finished', { outcome: 'failed' })]);
    const page = await new DashboardModel(root).page(id, dir);
    expect(page.legs.map((l) => [l.n, l.state, l.outcome])).toEqual([
      [1, 'abandoned', null],
      [2, 'closed', 'failed'],
    ]);
    expect(page.timeline.map((t) => t.leg)).toEqual([1, 1, 2, 2, 2, 2]);
  });

  it('does not merge a planning leg that a later planning start superseded', () => {
    const leg = (offset: number, phase: string, state: 'open' | 'closed' | 'abandoned') => ({ offset, phase, outcome: null, started_ts: null, finished_ts: null, command: null, state });
    expect(numberLegs([leg(0, 'planning', 'abandoned'), leg(10, 'planning', 'open')]).map((l) => [l.n, l.phase, l.state])).toEqual([
      [1, 'planning', 'abandoned'],
      [2, 'planning', 'open'],
    ]);
  });

  it('keeps an abandoned run’s open leg abandoned on its page', async () => {
    const root = tempDir('rw-model-');
    const id = '20261130-130000.000000001-3';
    const dir = openRun(root, id, 'g', DIAMOND, 1);
    await killedHolder(dir);
    const page = await new DashboardModel(root).page(id, dir);
    expect(page.state).toBe('abandoned');
    expect(page.legs.map((l) => l.state)).toEqual(['abandoned']);
    expect(page.nodes.filter((n) => n.state === 'abandoned').map((n) => n.id)).toEqual(['impl-api']);
  });
});

describe('card folds', () => {
  it('shows the first change after a run’s first fold at once, however long that fold took', async () => {
    const { CardMaker } = await import('../dist/serve/cards.js');
    const { inspectRun } = await import('../dist/status/inspect.js');
    const root = tempDir('rw-cards-');
    const id = '20261130-120000.000000001-7';
    const dir = openRun(root, id, 'first-fold', DIAMOND, 1);
    const h = await holdRun(dir);
    const cards = new CardMaker(root);
    const first = cards.card(inspectRun(dir), null);
    expect(first.state).toBe('running');
    expect(first.nodes.map((n) => n.state)).toEqual(['passed', 'running', 'pending', 'pending', 'pending']);
    // The leg goes on: its second node passes and the third starts. The
    // engine would say the files changed; here the test says it.
    appendEvents(dir, [ev(id, 'node_passed', { node_id: DIAMOND[1].id, verdict: 'PASS', cost_usd: 0.25 }), ev(id, 'node_started', { node_id: DIAMOND[2].id })]);
    cards.invalidate(dir);
    const next = cards.card(inspectRun(dir), null);
    expect(next.state).toBe('running');
    expect(next.nodes.map((n) => n.state)).toEqual(['passed', 'passed', 'running', 'pending', 'pending']);
    h.proc.kill('SIGKILL');
    await waitExit(h.proc);
  });
});
