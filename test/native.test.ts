/**
 * The native seam: expected answers are values, failures are NativeError
 * with a stable errno name in .code, .errno and .syscall, and arguments are
 * refused before any system call.
 */
import { closeSync, openSync, constants } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { filesystemType, groupPresence, NativeError, processPresence } from '../src/index.js';
import { FlockOp, native } from '../src/kernel/native.js';
import { cleanupTemp, tempDir } from './helpers/lock-procs.js';

afterEach(() => cleanupTemp());

describe('native addon', () => {
  it('flock on a closed descriptor throws NativeError EBADF with errno and syscall', () => {
    const fd = openSync(join(tempDir(), 'f'), constants.O_RDWR | constants.O_CREAT);
    closeSync(fd);
    let e: unknown;
    try {
      native().flock(fd, FlockOp.Shared);
    } catch (x) {
      e = x;
    }
    expect(e).toBeInstanceOf(NativeError);
    expect(e).toMatchObject({ code: 'EBADF', errno: 9, syscall: 'flock' });
  });

  it('statfs of a missing directory throws NativeError ENOENT', () => {
    expect(() => filesystemType(join(tempDir(), 'missing'))).toThrow(expect.objectContaining({ code: 'ENOENT', syscall: 'statfs' }));
  });

  it('works from worker threads too: each environment keeps its own error class and probe buffers', async () => {
    const { Worker } = await import('node:worker_threads');
    const dir = tempDir();
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(dir, 'resume.lock'), 'oh-my-graph-lock 1\n1\n');
    const src = `
      const { parentPort, workerData } = require('node:worker_threads');
      import(workerData.index).then((m) => {
        const probe = m.probeLock(workerData.lock);
        let code;
        try { m.filesystemType(workerData.missing); } catch (e) { code = e instanceof m.NativeError ? e.code : 'not NativeError'; }
        parentPort.postMessage({ probe, code });
      });`;
    const index = new URL('../dist/index.js', import.meta.url).href;
    const results = await Promise.all(
      [1, 2, 3].map(
        () =>
          new Promise<unknown>((resolve, reject) => {
            const w = new Worker(src, { eval: true, workerData: { index, lock: join(dir, 'resume.lock'), missing: join(dir, 'nope') } });
            w.once('message', (m) => {
              resolve(m);
              void w.terminate();
            });
            w.once('error', reject);
          }),
      ),
    );
    for (const r of results) expect(r).toEqual({ probe: { liveness: 'free', reason: 'flock-free' }, code: 'ENOENT' });
    // The main thread's own state is intact after the workers came and went.
    expect(() => filesystemType(join(dir, 'nope'))).toThrow(NativeError);
  });

  it('flock returns granted/contended as booleans, not exceptions', () => {
    const p = join(tempDir(), 'f');
    const a = openSync(p, constants.O_RDWR | constants.O_CREAT);
    const b = openSync(p, constants.O_RDONLY);
    try {
      expect(native().flock(a, FlockOp.Exclusive)).toBe(true);
      expect(native().flock(b, FlockOp.Shared)).toBe(false);
      expect(native().flock(b, FlockOp.Exclusive)).toBe(false);
      expect(native().flock(a, FlockOp.Unlock)).toBe(true);
      expect(native().flock(b, FlockOp.Shared)).toBe(true);
    } finally {
      closeSync(a);
      closeSync(b);
    }
  });

  it('the addon refuses bad arguments itself, with a code', () => {
    expect(() => native().flock(-1, FlockOp.Shared)).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
    expect(() => native().flock(0, 9 as 1)).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
    expect(() => native().pidProbe(0)).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
    expect(() => native().pidProbe(-5)).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
    expect(() => native().groupProbe(1)).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
    expect(() => native().fsType('a\0b')).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
  });

  it('kill(pid, 0) is classified: self present, pid 1 present, an exited pid gone', async () => {
    expect(processPresence(process.pid)).toBe('present');
    expect(processPresence(1)).toBe('present');
    const { spawnSync } = await import('node:child_process');
    expect(processPresence(spawnSync('true').pid as number)).toBe('gone');
  });

  it('JS validates pids before the native call: never 0, negative, fractional or out of range', () => {
    for (const bad of [0, -1, 1.5, NaN, 2 ** 31, Infinity]) expect(() => processPresence(bad)).toThrow(RangeError);
    for (const bad of [0, 1, -3, 2 ** 31]) expect(() => groupPresence(bad)).toThrow(RangeError);
  });

  it('groupPresence: a live process group is present, then gone once its only member is killed', async () => {
    const { spawn } = await import('node:child_process');
    const child = spawn('sleep', ['600'], { detached: true, stdio: 'ignore' });
    const pgid = child.pid as number;
    try {
      expect(groupPresence(pgid)).toBe('present');
    } finally {
      process.kill(-pgid, 'SIGKILL');
    }
    await new Promise((r) => child.once('exit', r));
    expect(groupPresence(pgid)).toBe('gone');
  });
});

describe('importing runwarden', () => {
  it('has no side effects: the addon loads only on the first call that needs the kernel', async () => {
    const { spawnSync } = await import('node:child_process');
    const index = new URL('../dist/index.js', import.meta.url).href;
    const script = `
      import { readFileSync } from 'node:fs';
      const loaded = () => readFileSync('/proc/self/maps', 'utf8').includes('runwarden.node');
      const m = await import(${JSON.stringify(index)});
      const before = loaded();
      m.probeLock('/nonexistent-rw/resume.lock');
      console.log(JSON.stringify({ before, after: loaded() }));`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({ before: false, after: true });
  });
});
