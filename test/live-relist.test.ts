/**
 * The root is listed again only when it changed (or once an hour): the
 * first listing counts as one, so the first safety pass after start-up
 * does not list an unchanged root a second time (live/relist.ts). At
 * 100,000 runs a second listing is ~50 MB of garbage 30 s after start,
 * which would be serve's highest resident set. Control: a root whose
 * identity moved is listed by the next pass.
 */
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { LiveEngine } from '../src/index.js';
import { DashboardModel } from '../src/serve/model.js';
import { RootRelistGate } from '../src/live/relist.js';
import { cleanupTemp, tempDir, until } from './helpers/lock-procs.js';
import { eventLine } from './helpers/events.js';

const ev = (id: string, event: string, extra: Record<string, unknown> = {}): string => eventLine({ event, ...extra }, { runId: id, ts: '2026-11-30T08:00:00Z' });

const closers: { close(): void }[] = [];
afterEach(() => {
  for (const c of closers.splice(0)) c.close();
});
afterAll(() => cleanupTemp());

/** A root of three settled runs whose mtime is a minute old (a listing taken with it is trusted). */
function makeRoot(): string {
  const root = join(tempDir('rw-relist-'), 'runs');
  for (const id of ['20261130-080000-a', '20261130-080001-b', '20261130-080002-c']) {
    mkdirSync(join(root, id), { recursive: true });
    writeFileSync(join(root, id, 'events.jsonl'), ev(id, 'run_started') + ev(id, 'run_finished', { outcome: 'passed' }));
  }
  backdate(root, 60);
  return root;
}

/** Sets the root's times `secs` seconds back (its ctime moves to now: another identity). */
function backdate(root: string, secs: number): void {
  const t = Date.now() / 1000 - secs;
  utimesSync(root, t, t);
}

describe('RootRelistGate', () => {
  it('is not due after a listing of an unchanged root, and is due once the root changed', () => {
    const root = makeRoot();
    const gate = new RootRelistGate();
    expect(gate.due(root)).toBe(true); // never listed
    gate.listing(root);
    expect(gate.due(root)).toBe(false);
    expect(gate.due(root)).toBe(false);
    backdate(root, 120);
    expect(gate.due(root)).toBe(true);
  });

  it('does not trust a listing taken with an mtime under 2 s old', () => {
    const root = makeRoot();
    backdate(root, 0);
    const gate = new RootRelistGate();
    gate.listing(root);
    expect(gate.due(root)).toBe(true);
  });
});

describe('the first safety pass after start-up', () => {
  it('LiveEngine: does not list an unchanged root again; lists it once it changed', async () => {
    const root = makeRoot();
    const engine = new LiveEngine({ root, ref: false, safetyMs: 20 });
    closers.push(engine);
    await engine.start();
    expect(engine.stats.rootListings).toBe(1);
    await until(() => engine.stats.safetyPasses >= 3, 30_000);
    expect(engine.stats.rootListings).toBe(1);
    backdate(root, 120);
    const passes = engine.stats.safetyPasses;
    await until(() => engine.stats.safetyPasses >= passes + 2, 30_000);
    expect(engine.stats.rootListings).toBe(2);
  });

  it('DashboardModel (live): lists the root only through its engine, once at start', async () => {
    const root = makeRoot();
    const model = new DashboardModel(root, { live: true });
    closers.push(model);
    const doc = await model.dashboard();
    expect(Object.values(doc.tallies).reduce((a, b) => a + b, 0)).toBe(3);
    expect(model.engineStats?.rootListings).toBe(1);
    await model.dashboard();
    expect(model.engineStats?.rootListings).toBe(1);
  });
});
