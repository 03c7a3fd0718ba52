/**
 * serve's /metrics says how many runs its live view polls for want of a
 * change watch (`runwarden_runs_unwatched`). On darwin (the XNU model) each
 * kqueue watch holds a descriptor and directories get at most 160 of them, the
 * root's own included (past the budget it polls, and says so in /metrics); on linux
 * inotify's max_user_watches is far above this root, so none is polled.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DashboardModel } from '../src/serve/model.js';
import { RunwardenMetrics } from '../src/serve/metrics.js';
import { cleanupTemp, tempDir } from './helpers/lock-procs.js';
import { testedPlatform } from './helpers/prereq.js';
import { eventLine } from './helpers/events.js';

afterAll(() => cleanupTemp());

const RUNS = 300;
/** Run directories kqueue watches at most (the budget as specified, not read from src/). */
const DARWIN_BUDGET = 160;

describe('serve /metrics runwarden_runs_unwatched', () => {
  it('counts the runs the live view polls past the watch budget', async () => {
    const root = join(tempDir('rw-unwatched-'), 'runs');
    for (let i = 0; i < RUNS; i++) {
      const id = `20261201-${String(100000 + i).slice(1)}-r`;
      mkdirSync(join(root, id), { recursive: true });
      const ev = (event: string, extra: object = {}): string => eventLine({ event, ...extra }, { runId: id, ts: '2026-12-01T08:00:00Z' });
      writeFileSync(join(root, id, 'events.jsonl'), ev('run_started') + ev('run_finished', { outcome: 'passed' }));
    }
    const m = new DashboardModel(root, { live: true });
    try {
      const metrics = new RunwardenMetrics(() => m.currentReports(0), { processMetrics: false });
      await m.dashboard();
      // darwin: the root's own watch is one of the 160, so 159 run directories are watched and the rest polled.
      // linux: every run is watched. Exact, once the view has opened its watches.
      const want = testedPlatform() === 'darwin' ? RUNS - (DARWIN_BUDGET - 1) : 0;
      let got = NaN;
      const end = Date.now() + 60_000;
      for (;;) {
        got = Number(/^runwarden_runs_unwatched (\d+)$/m.exec(await metrics.text())?.[1]);
        if (got === want || Date.now() > end) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(got).toBe(want);
    } finally {
      m.close();
    }
  });
});
