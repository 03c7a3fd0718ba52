/**
 * acquireLockAsync and disposal, against locks held by real child processes:
 * the wait leaves the event loop running (timer ticks are counted, never
 * timed), an AbortSignal cancels it with ABORT_ERR, a timeout answers
 * ELOCKHELD, and `using` releases what it took (a child probe says so).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AbortError, acquireLock, acquireLockAsync, LockFileError, LockHeldError, RunwardenError } from '../src/index.js';
import { CLI, cleanupTemp, killAll, startHolder, tempDir, waitExit } from './helpers/lock-procs.js';

afterEach(async () => {
  await killAll();
  cleanupTemp();
});

/** What another process's probe says about the lock at `path` (never this process's own view). */
function childProbe(path: string): string {
  const r = spawnSync(process.execPath, [CLI, 'probe', path, '--json'], { encoding: 'utf8', timeout: 60_000 });
  expect(r.status, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { liveness: string }).liveness;
}

/** Counts 1 ms interval ticks while `work` runs. */
async function ticksDuring<T>(work: () => Promise<T>): Promise<{ ticks: number; result: PromiseSettledResult<T> }> {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 1);
  try {
    const [result] = await Promise.allSettled([work()]);
    return { ticks, result: result as PromiseSettledResult<T> };
  } finally {
    clearInterval(timer);
  }
}

function rejection(r: PromiseSettledResult<unknown>): unknown {
  expect(r.status).toBe('rejected');
  return (r as PromiseRejectedResult).reason;
}

describe('acquireLockAsync', () => {
  it('waits for a lock held by another process without blocking the event loop, then refuses with ELOCKHELD', async () => {
    const path = join(tempDir(), 'run', 'resume.lock');
    const h = await startHolder(path);
    const { ticks, result } = await ticksDuring(() => acquireLockAsync(path, { timeoutMs: 300 }));
    const e = rejection(result);
    expect(e).toBeInstanceOf(LockHeldError);
    expect((e as LockHeldError).code).toBe('ELOCKHELD');
    expect((e as LockHeldError).pid).toBe(h.pid);
    expect(ticks).toBeGreaterThan(0);
    expect(childProbe(path)).toBe('held');
  });

  it('the sync call, for contrast, lets no timer run while it retries', async () => {
    const path = join(tempDir(), 'run', 'resume.lock');
    await startHolder(path);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    try {
      expect(() => acquireLock(path, { retryMs: 300 })).toThrow(LockHeldError);
      expect(ticks).toBe(0);
    } finally {
      clearInterval(timer);
    }
  });

  it('with timeoutMs Infinity, takes the lock once its holder is killed -9, and the loop ticked meanwhile', async () => {
    const path = join(tempDir(), 'run', 'resume.lock');
    const h = await startHolder(path);
    let ticks = 0;
    let tickAtKill = -1;
    const timer = setInterval(() => {
      ticks++;
      // Kill the holder from inside the running loop, once the wait is under way.
      if (ticks === 5) {
        tickAtKill = ticks;
        h.proc.kill('SIGKILL');
      }
    }, 1);
    let lock;
    try {
      lock = await acquireLockAsync(path, { timeoutMs: Infinity });
    } finally {
      clearInterval(timer);
    }
    try {
      expect(tickAtKill).toBe(5);
      expect(lock.held).toBe(true);
      expect(lock.pid).toBe(process.pid);
      await waitExit(h.proc);
      expect(childProbe(path)).toBe('held');
    } finally {
      lock.release();
    }
    expect(childProbe(path)).toBe('free');
  });

  it('an AbortSignal cancels the wait with ABORT_ERR (an AbortError); nothing is taken', async () => {
    const path = join(tempDir(), 'run', 'resume.lock');
    await startHolder(path);
    const ac = new AbortController();
    const reason = new Error('the user gave up');
    let ticks = 0;
    const timer = setInterval(() => {
      if (++ticks === 5) ac.abort(reason);
    }, 1);
    let caught: unknown;
    try {
      await acquireLockAsync(path, { timeoutMs: Infinity, signal: ac.signal });
    } catch (e) {
      caught = e;
    } finally {
      clearInterval(timer);
    }
    expect(caught).toBeInstanceOf(AbortError);
    expect(caught).toBeInstanceOf(RunwardenError);
    expect((caught as AbortError).code).toBe('ABORT_ERR');
    expect((caught as AbortError).name).toBe('AbortError');
    expect((caught as AbortError).cause).toBe(reason);
    expect(childProbe(path)).toBe('held');
  });

  it('an already aborted signal is refused before anything is created', async () => {
    const dir = join(tempDir(), 'never');
    const e = await acquireLockAsync(join(dir, 'resume.lock'), { signal: AbortSignal.abort() }).catch((x: unknown) => x);
    expect((e as AbortError).code).toBe('ABORT_ERR');
    expect(existsSync(dir)).toBe(false);
  });

  it('a free lock is taken at once; a pre-flock lock file is refused at once even with no timeout', async () => {
    const dir = tempDir();
    const free = join(dir, 'a', 'resume.lock');
    const lock = await acquireLockAsync(free, { timeoutMs: Infinity });
    expect(childProbe(free)).toBe('held');
    lock.release();
    const legacy = join(dir, 'b', 'resume.lock');
    mkdirSync(join(dir, 'b'));
    writeFileSync(legacy, `${process.pid}\n`);
    const e = await acquireLockAsync(legacy, { timeoutMs: Infinity }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(LockHeldError);
    expect((e as LockHeldError).legacy).toBe(true);
  });

  it('a kernel refusal is a LockFileError with code ELOCKIO and the errno, sync and async', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'plain'), '');
    const path = join(dir, 'plain', 'run', 'resume.lock'); // a run directory under a regular file: ENOTDIR
    for (const e of [(() => { try { acquireLock(path); } catch (x) { return x; } })(), await acquireLockAsync(path).catch((x: unknown) => x)]) {
      expect(e).toBeInstanceOf(LockFileError);
      expect((e as LockFileError).code).toBe('ELOCKIO');
      expect((e as LockFileError).errno).toBe('ENOTDIR');
      expect((e as LockFileError).syscall).toBe('mkdir');
    }
  });

  it('rejects bad options as TypeError/RangeError before touching anything', async () => {
    const path = join(tempDir(), 'x', 'resume.lock');
    await expect(acquireLockAsync(path, { timeoutMs: -1 })).rejects.toBeInstanceOf(RangeError);
    await expect(acquireLockAsync(path, { timeoutMs: Number.NaN })).rejects.toBeInstanceOf(RangeError);
    await expect(acquireLockAsync(path, { pid: 0 })).rejects.toBeInstanceOf(RangeError);
    await expect(acquireLockAsync('')).rejects.toBeInstanceOf(TypeError);
    expect(existsSync(join(path, '..'))).toBe(false);
  });
});

describe('disposal', () => {
  it('`using` releases the lock when the block ends, and when it throws', () => {
    const path = join(tempDir(), 'run', 'resume.lock');
    {
      using lock = acquireLock(path);
      expect(lock.held).toBe(true);
      expect(childProbe(path)).toBe('held');
    }
    expect(childProbe(path)).toBe('free');
    expect(() => {
      using lock = acquireLock(path);
      void lock;
      throw new Error('boom');
    }).toThrow('boom');
    expect(childProbe(path)).toBe('free');
  });

  it('`await using` releases an async-taken lock', async () => {
    const path = join(tempDir(), 'run', 'resume.lock');
    let seen: string | undefined;
    {
      await using lock = await acquireLockAsync(path);
      seen = childProbe(path);
      void lock;
    }
    expect(seen).toBe('held');
    expect(childProbe(path)).toBe('free');
  });
});
