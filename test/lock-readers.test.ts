/**
 * Readers never turn a starting leg away (CONTRACT §4.1 step 3): while only
 * shared locks (readers' probes) hold a run's lock, acquire keeps trying past
 * its window, boundedly; an exclusive holder (a leg) is still refused once
 * the window is over. Real locks held by util-linux flock(1).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { acquireLock, acquireLockAsync } from '../src/lock/acquire.js';
import { LockHeldError } from '../src/contract/errors.js';
import { cleanupTemp, killAll, startFlock1, tempDir, track, until, waitReady } from './helpers/lock-procs.js';
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
  it('a shared lock held longer than the retry window delays the leg but does not refuse it', async (ctx) => {
    needs(ctx, 'flock', 'linux: /proc/locks tells readers from a leg');
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

  it('a reader that never lets go is refused at the bound, not waited for forever, and the refusal says it was a reader', async (ctx) => {
    needs(ctx, 'flock');
    const lockPath = join(tempDir(), 'run', 'resume.lock');
    acquireLock(lockPath, { retryMs: 0 }).release();
    const { proc } = await startFlock1(lockPath, '-s');
    let e: unknown;
    try {
      acquireLock(lockPath, { retryMs: 20 }).release();
    } catch (x) {
      e = x;
    }
    expect(e).toBeInstanceOf(LockHeldError);
    expect((e as LockHeldError).message).toContain('no leg holds the lock');
    if (process.platform === 'linux') expect((e as LockHeldError).message).toContain(`pid ${proc.pid as number} has held a shared lock`);
  });

  // Readers coming and going, each for less than the stuck bound, with no free
  // instant between them, for longer than the old 5 s readers-only cap.
  it('readers that keep the lock held without a gap, each letting go, delay the leg past 5 s but do not refuse it', async (ctx) => {
    needs(ctx, 'flock', 'linux: /proc/locks tells readers from a leg');
    const lockPath = join(tempDir(), 'run', 'resume.lock');
    acquireLock(lockPath, { retryMs: 0 }).release();
    // Six readers, one started every 1.5 s, each holding 3 s: about 10.5 s of cover, no pid past 3 s.
    const chain = spawn('sh', ['-c', `for i in 1 2 3 4 5 6; do flock -s -n "$1" -c "echo HOLDING $i; sleep 3" & sleep 1.5; done; wait`, 'sh', lockPath], {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    track(-(chain.pid as number));
    track(chain);
    let said = '';
    chain.stdout.on('data', (d: Buffer) => (said += d.toString()));
    await until(() => said.includes('HOLDING 1'));
    const lock = acquireLock(lockPath); // the default retry window; blocks this thread until a free instant
    expect(lock.held).toBe(true);
    lock.release();
    // Read after the fact: readers had still been starting while the leg waited (4 of them span more than 5 s).
    await new Promise((r) => setImmediate(r));
    await until(() => said.includes('HOLDING 6'));
    expect(said).toMatch(/HOLDING 4/);
  }, 60_000);

  it('acquireLockAsync, too, waits past its timeout while only readers hold the lock, and the loop ticks meanwhile', async (ctx) => {
    needs(ctx, 'flock', 'linux: /proc/locks tells readers from a leg');
    const lockPath = join(tempDir(), 'run', 'resume.lock');
    acquireLock(lockPath, { retryMs: 0 }).release();
    const chain = spawn('sh', ['-c', `for i in 1 2 3; do flock -s -n "$1" -c "echo HOLDING $i; sleep 1" & sleep 0.5; done; wait; echo DONE`, 'sh', lockPath], {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    track(-(chain.pid as number));
    track(chain);
    let said = '';
    chain.stdout.on('data', (d: Buffer) => (said += d.toString()));
    await until(() => said.includes('HOLDING 1'));
    let ticks = 0;
    const t = setInterval(() => ticks++, 10);
    try {
      const lock = await acquireLockAsync(lockPath); // default timeoutMs: 100
      expect(lock.held).toBe(true);
      await lock.release();
    } finally {
      clearInterval(t);
    }
    // It got the lock only once the readers had come and gone, well past its 100 ms timeout.
    expect(said).toMatch(/HOLDING 3/);
    expect(ticks).toBeGreaterThan(0);
  }, 60_000);
});
