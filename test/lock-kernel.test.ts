/**
 * The flock(2) facts this design rests on, pinned on the real kernel with
 * real processes (ADR 0015, "What could not be determined" #1: every
 * measurement must be re-run on linux before the design is trusted there).
 */
import { closeSync, openSync, writeFileSync, constants } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { acquireLock, acquireLockAsync, LockHeldError, probeLock, processPresence } from '../src/index.js';
import { native, nativeConstants } from '../src/kernel/native.js';
import { cleanupTemp, killAll, startFlock1, startHolder, tempDir, waitExit } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';

afterEach(async () => {
  await killAll();
  cleanupTemp();
});

function runLock(): string {
  return join(tempDir(), 'run-1', 'resume.lock');
}

describe('kernel facts behind the probe', () => {
  it('a holder killed with SIGKILL reads free at once', async () => {
    const lock = runLock();
    const h = await startHolder(lock);
    expect(probeLock(lock)).toEqual({ liveness: 'held', reason: 'flock-held' });
    h.proc.kill('SIGKILL');
    await waitExit(h.proc);
    // No cleanup path ran: the kernel released the lock with the process.
    expect(probeLock(lock)).toEqual({ liveness: 'free', reason: 'flock-free' });
  });

  it('a holder that spawned a long-lived child and died reads free: the lock fd is close-on-exec', async () => {
    const lock = runLock();
    const h = await startHolder(lock, ['--child']);
    expect(h.child).toBeGreaterThan(0);
    expect(probeLock(lock).liveness).toBe('held');
    h.proc.kill('SIGKILL');
    await waitExit(h.proc);
    // The child outlived its parent and is still running...
    expect(processPresence(h.child as number)).toBe('present');
    // ...but did not inherit the lock.
    expect(probeLock(lock)).toEqual({ liveness: 'free', reason: 'flock-free' });
  });

  it('a holder that exits normally without releasing, leaving a child running, reads free', async () => {
    const lock = runLock();
    const h = await startHolder(lock, ['--child', '--exit-after-child']);
    await waitExit(h.proc);
    expect(processPresence(h.child as number)).toBe('present');
    expect(probeLock(lock).liveness).toBe('free');
  });

  it('contrast: an inherited lock fd (flock(1) runs its command with the fd open) keeps the lock past the parent', async (ctx) => {
    needs(ctx, 'flock');
    // This is the hazard close-on-exec avoids, shown with a tool that does inherit.
    const dir = tempDir();
    const lock = join(dir, 'resume.lock');
    writeFileSync(lock, 'oh-my-graph-lock 1\n1\n');
    const { proc } = await startFlock1(lock, '-x');
    expect(probeLock(lock).liveness).toBe('held');
    proc.kill('SIGKILL'); // kills flock(1) itself; its `sleep` child keeps the fd
    await waitExit(proc);
    expect(probeLock(lock).liveness).toBe('held');
  });

  it('a SIGSTOPped holder still reads held (silence is not death)', async (ctx) => {
    needs(ctx, 'posix: SIGSTOP, which stops another process (Windows has no signal to send)');
    const lock = runLock();
    const h = await startHolder(lock);
    process.kill(h.pid, 'SIGSTOP');
    try {
      await new Promise((r) => setTimeout(r, 200));
      expect(probeLock(lock)).toEqual({ liveness: 'held', reason: 'flock-held' });
      expect(() => acquireLock(lock, { retryMs: 0 })).toThrow(LockHeldError);
    } finally {
      process.kill(h.pid, 'SIGCONT');
    }
  });

  it('a second descriptor in the same process is refused the exclusive lock and probes held', async () => {
    const lock = runLock();
    const first = acquireLock(lock);
    try {
      expect(() => acquireLock(lock, { retryMs: 0 })).toThrow(/a leg of this run is in flight/);
      await expect(acquireLockAsync(lock, { timeoutMs: 0 })).rejects.toThrow(/a leg of this run is in flight/);
      expect(probeLock(lock)).toEqual({ liveness: 'held', reason: 'flock-held' });
    } finally {
      first.release();
    }
    expect(probeLock(lock).liveness).toBe('free');
  });

  it('LOCK_SH is refused against a held LOCK_EX in another process', async () => {
    const lock = runLock();
    await startHolder(lock);
    const fd = openSync(lock, constants.O_RDONLY);
    try {
      expect(native().flock(fd, nativeConstants().flockOp.Shared)).toBe(false);
    } finally {
      closeSync(fd);
    }
  });

  it('LOCK_SH is granted beside another process\'s LOCK_SH, and LOCK_EX is refused then', async (ctx) => {
    needs(ctx, 'flock');
    const dir = tempDir();
    const lock = join(dir, 'resume.lock');
    writeFileSync(lock, 'oh-my-graph-lock 1\n1\n');
    await startFlock1(lock, '-s');
    const fd = openSync(lock, constants.O_RDONLY);
    try {
      expect(native().flock(fd, nativeConstants().flockOp.Shared)).toBe(true);
      expect(native().flock(fd, nativeConstants().flockOp.Unlock)).toBe(true);
      expect(native().flock(fd, nativeConstants().flockOp.Exclusive)).toBe(false);
    } finally {
      closeSync(fd);
    }
    // A reader's shared lock is not a leg: the probe still reads free.
    expect(probeLock(lock)).toEqual({ liveness: 'free', reason: 'flock-free' });
    // And a starting leg is refused while a shared lock persists this long, without being told a leg holds it.
    expect(() => acquireLock(lock, { retryMs: 0 })).toThrow(LockHeldError);
    expect(() => acquireLock(lock, { retryMs: 0 })).toThrow(/no leg holds the lock .*single attempt a zero retry window makes/);
    await expect(acquireLockAsync(lock, { timeoutMs: 0 })).rejects.toThrow(/no leg holds the lock .*single attempt a zero retry window makes/);
  });

  it('LOCK_SH vs LOCK_EX within one process, on two descriptors, conflicts too', () => {
    const lock = runLock();
    const held = acquireLock(lock);
    const fd = openSync(lock, constants.O_RDONLY);
    try {
      expect(native().flock(fd, nativeConstants().flockOp.Shared)).toBe(false);
    } finally {
      closeSync(fd);
      held.release();
    }
  });
});
