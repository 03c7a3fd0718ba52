/**
 * Readers never turn a starting leg away (CONTRACT §4.1 step 3): while only
 * shared locks (readers' probes) hold a run's lock, acquire keeps trying past
 * its window, boundedly; an exclusive holder (a leg) is still refused once
 * the window is over. Real locks held by util-linux flock(1).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { acquireLock } from '../src/lock/acquire.js';
import { LockHeldError } from '../src/contract/errors.js';
import { cleanupTemp, killAll, startFlock1, tempDir, track, waitReady } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';

afterEach(killAll);
afterAll(cleanupTemp);

/** flock(1) holding a shared lock on `path` for about `seconds`, then letting go by exiting. */
async function sharedFor(path: string, seconds: number): Promise<void> {
  const proc = spawn('flock', ['-s', '-n', path, '-c', `echo READY; exec sleep ${seconds}`], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  track(-(proc.pid as number));
  track(proc);
  await waitReady(proc);
}

describe('acquire past readers', () => {
  // linux: the kernel's lock table (/proc/locks) tells readers from a leg.
  it.skipIf(process.platform !== 'linux')('a shared lock held longer than the retry window delays the leg but does not refuse it', async (ctx) => {
    needs(ctx, 'flock');
    const lockPath = join(tempDir(), 'run', 'resume.lock');
    acquireLock(lockPath, { retryMs: 0 }).release();
    await sharedFor(lockPath, 1);
    // The window is 200 ms; the reader holds on for ~1 s. Before: ELOCKHELD after 200 ms.
    const lock = acquireLock(lockPath, { retryMs: 200 });
    expect(lock.held).toBe(true);
    lock.release();
  });

  it('an exclusive holder (a leg) is refused once the window is over', async (ctx) => {
    needs(ctx, 'flock');
    const lockPath = join(tempDir(), 'run', 'resume.lock');
    acquireLock(lockPath, { retryMs: 0 }).release();
    await startFlock1(lockPath, '-x');
    expect(() => acquireLock(lockPath, { retryMs: 100 })).toThrow(LockHeldError);
  });

  it('a reader that never lets go is refused at the bound, not waited for forever', async (ctx) => {
    needs(ctx, 'flock');
    const lockPath = join(tempDir(), 'run', 'resume.lock');
    acquireLock(lockPath, { retryMs: 0 }).release();
    await startFlock1(lockPath, '-s');
    expect(() => acquireLock(lockPath, { retryMs: 20 })).toThrow(LockHeldError);
  });
});
