/**
 * RUNWARDEN_THREADS is bounded by the machine: a value above
 * os.availableParallelism() is capped at it, and `runs --json` says so once
 * on stderr; the document is the same as on one thread. The threads a
 * command starts are counted by the kernel, not asked of the code: strace
 * -f sees every clone with CLONE_THREAD the process makes (a sample of
 * /proc/<pid>/task could miss a short-lived worker; the trace cannot), so
 * RUNWARDEN_THREADS=99 must start exactly as many as RUNWARDEN_THREADS=<cores>,
 * and cores - 1 more than one thread (the main thread lists too).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { threadsCap, threadsFor } from '../src/status/list-threads.js';
import { run } from './helpers/exec-procs.js';
import { CLI, cleanupTemp, tempDir } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';
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

  it('starts at most the cores\' threads: counted by strace, 99 starts what <cores> starts, cores - 1 more than one', (ctx) => {
    needs(ctx, 'strace');
    const cores = availableParallelism();
    const runs = 256 * (cores + 1);
    const root = tempDir();
    const logs = tempDir(); // outside the root, which the command lists
    for (let i = 0; i < runs; i++) passedRun(root, `20261201-${String(i).padStart(6, '0')}.000000001-1`, 'diamond', DIAMOND.slice(0, 1));
    /** Threads the command's process created (clone/clone3 with CLONE_THREAD), and its stdout. */
    const threadsStarted = (threads: string): { n: number; stdout: string } => {
      const log = join(logs, `threads-${threads}.strace`);
      const t = spawnSync('strace', ['-f', '-qq', '-e', 'trace=clone,clone3', '-o', log, process.execPath, CLI, 'runs', '--json', '--root', root], {
        encoding: 'utf8',
        env: { ...process.env, RUNWARDEN_THREADS: threads },
        timeout: 120_000,
        maxBuffer: 64 * 1024 * 1024,
      });
      expect(t.status, t.stderr).toBe(0);
      const n = readFileSync(log, 'utf8').split('\n').filter((l) => /clone3?\(.*CLONE_THREAD/.test(l) && /=\s+\d+\s*$/.test(l)).length;
      return { n, stdout: t.stdout };
    };
    const one = threadsStarted('1');
    const atCap = threadsStarted(String(cores));
    const many = threadsStarted('99');
    expect(one.n).toBeGreaterThan(0); // the control: strace saw the runtime's own threads start
    expect(many.n).toBe(atCap.n);
    expect(atCap.n - one.n).toBe(cores - 1);
    expect(many.stdout).toBe(one.stdout);
  }, 180_000);
});
