/**
 * kernel/memory.ts releaseFreeMemory: the allocator's free memory back to
 * the kernel (glibc malloc_trim(0)), which serve asks for after its first
 * listing (a list worker's arena stays resident otherwise). Real threads,
 * a real allocator: after a worker thread that allocated and ended, glibc
 * holds its freed memory in that thread's arena, resident (VmRSS) until the
 * call returns it; the control shows it staying resident without the call.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { releaseFreeMemory } from '../src/kernel/memory.js';
import { native } from '../src/kernel/native.js';
import { ROOT } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';

const glibc = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime;

describe('releaseFreeMemory', () => {
  it('is in the addon and answers a boolean', () => {
    expect(typeof native().releaseFreeMemory).toBe('function');
    expect(typeof releaseFreeMemory()).toBe('boolean');
  });

  it('with glibc: the arena a worker left behind shrinks by the call, and only by it (VmRSS, with a control)', (ctx) => {
    // glibc's malloc_trim and /proc/self/status; every linux runwarden's prebuilds target is glibc (asserted below).
    needs(ctx, 'linux: glibc malloc_trim, /proc/self/status');
    expect(glibc, 'a glibc process').toBeDefined();
    // In a process of its own, so that nothing else of this runner's allocates between the readings.
    const r = spawnSync(process.execPath, ['--expose-gc', join(ROOT, 'test', 'fixtures', 'arena-release.mjs'), join(ROOT, 'dist', 'kernel', 'memory.js')], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    const m = JSON.parse(r.stdout) as { afterWorker: number; withoutCall: number; withCall: number; released: boolean };
    const MB = 1024 * 1024;
    // The control: ~64 MB freed in the worker's arena stays resident without the call (free() does not
    // return memory below an arena's top in use) ...
    expect(m.afterWorker - m.withoutCall).toBeLessThan(8 * MB);
    // ... and the call returns most of it, and says so.
    expect(m.withoutCall - m.withCall).toBeGreaterThan(32 * MB);
    expect(m.released).toBe(true);
  });
});
