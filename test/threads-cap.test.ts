/**
 * RUNWARDEN_THREADS is bounded by the machine (issue 25 item 5): a value
 * above os.availableParallelism() is capped at it, and `runs --json` says so
 * once on stderr; the document is the same as on one thread. The cap itself
 * is threadsFor's (status/list-threads.ts), checked with its `cores` seam in
 * runs-fast.test.ts; here the real CLI on this machine's real core count.
 */
import { availableParallelism } from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { threadsCap, threadsFor } from '../src/status/list-threads.js';
import { run } from './helpers/exec-procs.js';
import { cleanupTemp, tempDir } from './helpers/lock-procs.js';
import { DIAMOND, passedRun } from './helpers/serve-fixtures.js';

afterAll(() => cleanupTemp());

describe('RUNWARDEN_THREADS above the number of cores', () => {
  it('is capped at the cores, said once on stderr; the document is unchanged', async () => {
    const cores = availableParallelism();
    expect(threadsCap()).toBe(cores);
    // Enough runs for more chunks (256 runs each) than cores, so the cap is what bounds the threads.
    const runs = 256 * (cores + 1);
    expect(threadsFor(runs, 99)).toBe(cores);
    expect(threadsFor(runs, cores + 1)).toBe(cores);
    const root = tempDir();
    for (let i = 0; i < runs; i++) passedRun(root, `20261201-${String(i).padStart(6, '0')}.000000001-1`, 'diamond', DIAMOND.slice(0, 1));
    const one = await run(['runs', '--json', '--root', root], { RUNWARDEN_THREADS: '1' });
    const many = await run(['runs', '--json', '--root', root], { RUNWARDEN_THREADS: '99' });
    const atCap = await run(['runs', '--json', '--root', root], { RUNWARDEN_THREADS: String(cores) });
    expect(one.code).toBe(0);
    expect(one.stderr).toBe('');
    expect(many.code).toBe(0);
    expect(many.stderr).toBe(`runwarden: note: RUNWARDEN_THREADS=99 is more than this machine's ${cores} ${cores === 1 ? 'core' : 'cores'}; using ${cores}\n`);
    expect(many.stdout).toBe(one.stdout);
    // Asking for exactly the cores is no note.
    expect(atCap.stderr).toBe('');
    expect(atCap.stdout).toBe(one.stdout);
  });
});
