/**
 * A settled run resumed by another process (a real leg: it takes the
 * exclusive flock on resume.lock, writes its label and appends run_started,
 * none of which makes or removes a directory entry) turns in flight on a
 * LiveEngine without the safety pass: inotify tells the append by name
 * (linux); where a directory watch tells only entries made, removed or
 * renamed (kqueue(2), the XNU model), the settled sweep finds it. The safety
 * pass and the open legs' re-probe are set far beyond the test, so neither
 * can be what finds it; the wait's limit is a hang guard, not a speed claim.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LiveEngine } from '../src/index.js';
import { eventLine } from './helpers/events.js';
import { cleanupTemp, flockHolders, killAll, ROOT, tempDir, track, until, waitReady } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';

const LEG = join(ROOT, 'test', 'fixtures', 'leg.mjs');
const engines: LiveEngine[] = [];

afterEach(async () => {
  for (const e of engines.splice(0)) e.close();
  await killAll();
  cleanupTemp();
});

const line = (o: Record<string, unknown>) => eventLine(o, { ts: '2026-12-04T02:00:00Z' });

describe('LiveEngine, a settled run resumed by another process', () => {
  it('turns in flight without the safety pass, and nothing sweeps where appends are told', async () => {
    const root = tempDir('rw-sweep-');
    // Twenty settled runs; the one resumed is in the middle of the rotation.
    const ids = Array.from({ length: 20 }, (_, i) => `20261204-0200${String(i).padStart(2, '0')}-settled`);
    for (const id of ids) {
      mkdirSync(join(root, id));
      writeFileSync(join(root, id, 'events.jsonl'), line({ event: 'run_started' }) + line({ event: 'run_finished', outcome: 'passed' }));
      writeFileSync(join(root, id, 'resume.lock'), '');
    }
    const dir = join(root, ids[10]);
    const e = new LiveEngine({ root, ref: false, safetyMs: 3_600_000, openRecheckMs: 3_600_000 });
    engines.push(e);
    await e.start();
    await until(() => ids.every((id) => e.get(join(root, id))?.report?.status === 'PASS'));
    const leg = spawn(process.execPath, [LEG, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    track(leg);
    await waitReady(leg);
    // Well within the 30 s safety pass a default engine would wait for (and this one's is an hour).
    await until(() => e.get(dir)?.report?.status === 'RUNNING', 20_000);
    expect(e.get(dir)?.report?.liveness).toBe('held');
    // The reference is the kernel's lock table, not the code under test: the leg holds the exclusive flock
    // (Windows keeps no table a reader can see: there the leg's own READY, after it locked, stands for it).
    if (process.platform !== 'win32') expect(flockHolders(join(dir, 'resume.lock')).exclusive).toEqual([leg.pid]);
    expect(e.stats.safetyPasses).toBe(0);
    // The other runs stay as they were.
    for (const id of ids) if (join(root, id) !== dir) expect(e.get(join(root, id))?.report?.status).toBe('PASS');
    if (e.stats.backend === 'inotify') {
      expect(e.stats.swept).toBe(0);
    } else {
      // Where appends are not told (kqueue; Windows, which polls), the settled sweep found it.
      expect(e.stats.backend).toBe(process.platform === 'win32' ? 'polling' : 'kqueue');
      expect(e.stats.sweepChanges).toBeGreaterThanOrEqual(1);
    }
  });

  it('looks at no more than 1,000 settled runs per 50 ms (CONTRACT §5.6 rule 4), all of them in turn', async (ctx) => {
    needs(ctx, 'darwin: the settled sweep runs only where a directory watch does not tell appends (kqueue)');
    const root = tempDir('rw-sweep-');
    const n = 2500;
    for (let i = 0; i < n; i++) {
      const d = join(root, `20261204-01${String(i).padStart(4, '0')}-settled`);
      mkdirSync(d);
      writeFileSync(join(d, 'events.jsonl'), line({ event: 'run_started' }) + line({ event: 'run_finished', outcome: 'passed' }));
    }
    const open = join(root, '20261204-020000-open');
    const leg = spawn(process.execPath, [LEG, open], { stdio: ['ignore', 'pipe', 'pipe'] });
    track(leg);
    await waitReady(leg);
    const e = new LiveEngine({ root, ref: false, safetyMs: 3_600_000, openRecheckMs: 3_600_000 });
    engines.push(e);
    await e.start();
    await until(() => e.get(open)?.report?.status === 'RUNNING');
    expect(e.stats.backend).toBe('kqueue');
    const t0 = performance.now();
    const s0 = e.stats.swept;
    // Two full turns of the 2,500 settled runs, however long the machine takes.
    await until(() => e.stats.swept - s0 >= 2 * n);
    const elapsed = performance.now() - t0;
    const swept = e.stats.swept - s0;
    // A tick every 50 ms at most (an interval never fires early), plus the one under way when counting began.
    expect(swept).toBeLessThanOrEqual(1000 * (Math.floor(elapsed / 50) + 2));
    expect(e.stats.sweepChanges).toBe(0); // nothing changed: nothing marked
    expect(e.stats.safetyPasses).toBe(0);
  });

  it('looks at settled runs only: a run in flight is followed, not swept', async (ctx) => {
    needs(ctx, 'darwin: the settled sweep runs only where a directory watch does not tell appends (kqueue)');
    const root = tempDir('rw-sweep-');
    for (const id of ['20261204-030000-a', '20261204-030001-b', '20261204-030002-c']) {
      mkdirSync(join(root, id));
      writeFileSync(join(root, id, 'events.jsonl'), line({ event: 'run_started' }) + line({ event: 'run_finished', outcome: 'passed' }));
    }
    const open = join(root, '20261204-030003-open');
    const leg = spawn(process.execPath, [LEG, open], { stdio: ['ignore', 'pipe', 'pipe'] });
    track(leg);
    await waitReady(leg);
    const e = new LiveEngine({ root, ref: false, safetyMs: 3_600_000, openRecheckMs: 3_600_000 });
    engines.push(e);
    await e.start();
    await until(() => e.get(open)?.report?.status === 'RUNNING');
    expect(e.stats.backend).toBe('kqueue');
    // Four runs, fewer than a tick takes: each tick looks at every one, and counts exactly the three settled.
    // Sampled every few milliseconds against 50 ms ticks, each step of the count is one tick (3), or a few
    // ticks when the machine is slow (6, 9): never 4 or 8, which sweeping the run in flight would give.
    const s0 = e.stats.swept;
    const steps: number[] = [];
    let last = 0;
    await until(() => {
      const now = e.stats.swept - s0;
      if (now !== last) steps.push(now - last);
      last = now;
      return now >= 30;
    }, 60_000, 2);
    expect(steps.filter((d) => d % 3 !== 0), `steps of the sweep count: ${steps.join(', ')}`).toEqual([]);
    expect(steps, 'at least one tick seen alone').toContain(3);
    expect(e.get(open)?.report?.status).toBe('RUNNING');
  });

  it('sweeps nothing where inotify tells every append, however long it runs', async (ctx) => {
    needs(ctx, 'linux: inotify tells appends by name, so nothing is swept');
    const root = tempDir('rw-sweep-');
    for (let i = 0; i < 50; i++) {
      const d = join(root, `20261204-04${String(i).padStart(4, '0')}-settled`);
      mkdirSync(d);
      writeFileSync(join(d, 'events.jsonl'), line({ event: 'run_started' }) + line({ event: 'run_finished', outcome: 'passed' }));
    }
    const e = new LiveEngine({ root, ref: false, safetyMs: 3_600_000, openRecheckMs: 3_600_000 });
    engines.push(e);
    await e.start();
    expect(e.stats.backend).toBe('inotify');
    // Six sweep ticks' time (50 ms each) with nothing to tell.
    await new Promise((r) => setTimeout(r, 300));
    expect(e.stats.swept).toBe(0);
  });
});
