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
import { LiveEngine, runStatus } from '../src/index.js';
import { eventLine } from './helpers/events.js';
import { cleanupTemp, killAll, ROOT, tempDir, track, until, waitReady } from './helpers/lock-procs.js';

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
    expect(e.get(dir)?.report?.status).toBe(runStatus(dir).status);
    expect(e.stats.safetyPasses).toBe(0);
    // The other runs stay as they were.
    for (const id of ids) if (join(root, id) !== dir) expect(e.get(join(root, id))?.report?.status).toBe('PASS');
    if (e.stats.backend === 'inotify') {
      expect(e.stats.swept).toBe(0);
    } else {
      expect(e.stats.backend).toBe('kqueue');
      expect(e.stats.sweepChanges).toBeGreaterThanOrEqual(1);
    }
  });
});
