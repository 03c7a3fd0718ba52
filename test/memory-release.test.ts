/**
 * kernel/memory.ts releaseFreeMemory: the allocator's free memory back to
 * the kernel (glibc malloc_trim(0)), which serve asks for after its first
 * listing (a list worker's arena stays resident otherwise). Real threads,
 * a real allocator: after a worker thread that allocated and ended, glibc
 * holds free memory in that thread's arena, and the call releases some.
 */
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { releaseFreeMemory } from '../src/kernel/memory.js';
import { native } from '../src/kernel/native.js';

const glibc = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime;

describe('releaseFreeMemory', () => {
  it('is in the addon and answers a boolean', () => {
    expect(typeof native().releaseFreeMemory).toBe('function');
    expect(typeof releaseFreeMemory()).toBe('boolean');
  });

  it('with glibc: releases what a worker thread that ended left in its arena', async (ctx) => {
    if (glibc === undefined) ctx.skip('not glibc: no malloc_trim, so there is nothing to release by this call');
    releaseFreeMemory(); // whatever was free before
    await new Promise<void>((resolve, reject) => {
      const code = `const a = []; for (let i = 0; i < 200000; i++) a.push({ x: i, s: 'abc' + i }); require('node:worker_threads').parentPort.postMessage(JSON.stringify(a).length);`;
      const w = new Worker(code, { eval: true });
      w.on('message', () => undefined);
      w.on('error', reject);
      w.on('exit', () => resolve());
    });
    expect(releaseFreeMemory()).toBe(true);
  });
});
