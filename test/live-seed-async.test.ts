/**
 * LiveEngineOptions.seed answered with a promise (serve's first listing on
 * two threads awaits its list worker): the engine follows events while it
 * waits, takes the seeded report of a run nothing touched, and reads a run
 * whose files changed before the seed came (never taking a report that may
 * be older than its files). To tell a taken report from a read one, the
 * seed says something the files do not (a passed run seeded as failed).
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { LiveEngine, runStatus, type RunReport } from '../src/index.js';
import { cleanupTemp, tempDir, until } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';
import { eventLine } from './helpers/events.js';

const ev = (id: string, event: string, extra: Record<string, unknown> = {}): string => eventLine({ event, ...extra }, { runId: id, ts: '2026-12-01T08:00:00Z' });

const engines: LiveEngine[] = [];
afterEach(() => {
  for (const e of engines.splice(0)) e.close();
});
afterAll(() => cleanupTemp());

describe('LiveEngine seed as a promise', () => {
  it('takes an untouched run as seeded, and reads a run that changed while the seed was awaited', async (ctx) => {
    needs(ctx, 'posix: change notification (a seed is taken only for a watched run; Windows watches none and reads every run, CONTRACT §5.8 rule 7)');
    const root = join(tempDir('rw-seed-async-'), 'runs');
    const [quiet, touched] = ['20261201-080000-quiet', '20261201-090000-touched'];
    for (const id of [quiet, touched]) {
      mkdirSync(join(root, id), { recursive: true });
      writeFileSync(join(root, id, 'events.jsonl'), ev(id, 'run_started') + ev(id, 'run_finished', { outcome: 'passed' }));
    }
    // What the seed will say: both runs as failed, as read before the change below.
    const seeded = new Map<string, RunReport>([quiet, touched].map((id) => [id, { ...runStatus(join(root, id)), status: 'FAIL' } as RunReport]));
    let answer: ((m: Map<string, RunReport>) => void) | undefined;
    let asked = 0;
    const engine = new LiveEngine({
      root,
      ref: false,
      settledForget: true,
      seed: () => {
        asked++;
        return new Promise<Map<string, RunReport>>((r) => (answer = r));
      },
    });
    engines.push(engine);
    const started = engine.start();
    await until(() => answer !== undefined);
    // While the seed is awaited, a new leg on one run: the engine sees it and reads that run itself.
    appendFileSync(join(root, touched, 'events.jsonl'), ev(touched, 'run_started') + ev(touched, 'run_finished', { outcome: 'passed' }));
    await until(() => engine.get(join(root, touched))?.report != null);
    (answer as (m: Map<string, RunReport>) => void)(seeded);
    await started;
    expect(asked).toBe(1);
    expect(engine.get(join(root, quiet))?.report?.status).toBe('FAIL'); // taken as given
    expect(engine.get(join(root, touched))?.report).toEqual(runStatus(join(root, touched))); // read, not taken
    expect(engine.get(join(root, touched))?.report?.status).toBe('PASS');
  });
});
