/**
 * A watched directory moved away (src/kernel/notify.ts): the watcher tells
 * 'gone' and gives the kernel watch back, so a root renamed away and back
 * many times does not leak one kernel watch per move. Counted from the
 * kernel's own list: /proc/self/fdinfo of the inotify descriptor has one
 * "inotify wd:" line per watch.
 */
import { mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDirWatcher, type DirEvent } from '../dist/kernel/notify.js';
import { cleanupTemp, tempDir } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';

afterAll(() => cleanupTemp());

/** Kernel watches held by this process's inotify descriptors. */
function kernelWatches(): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue;
    }
    if (target !== 'anon_inode:inotify') continue;
    n += readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8').split('\n').filter((l) => l.startsWith('inotify wd:')).length;
  }
  return n;
}

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
}

describe('a watched directory moved away', () => {
  it('is told gone and its kernel watch is released, move after move', async (ctx) => {
    needs(ctx, 'linux: counts inotify watches in /proc/self/fdinfo');
    const base = tempDir('rw-moved-');
    const before = kernelWatches();
    const w = openDirWatcher();
    if (typeof w === 'string') throw new Error(w);
    try {
      for (let i = 0; i < 5; i++) {
        const dir = join(base, 'root');
        mkdirSync(dir);
        const told: DirEvent[] = [];
        const a = w.watch(dir, (e) => told.push(e));
        expect(a.ok).toBe(true);
        // Positive control: the watch is the kernel's.
        expect(kernelWatches()).toBe(before + 1);
        renameSync(dir, join(base, `away-${i}`));
        await until(() => told.some((e) => e.kind === 'gone'));
        expect(told.map((e) => e.kind)).toContain('gone');
        await until(() => kernelWatches() === before);
        expect(kernelWatches()).toBe(before);
      }
    } finally {
      w.close();
    }
  });
});
