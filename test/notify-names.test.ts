/**
 * inotify's descriptor is the key of a watch (src/kernel/notify.ts): a
 * directory watched again, by the same name or another spelling of it,
 * shares one kernel watch and every listener hears it; a directory removed
 * and made again under the same name, watched before the old watch's
 * IN_IGNORED was read, gets a watch of its own (a map by path used to hand
 * back the dead directory's entry, so the new one was never heard).
 */
import { mkdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDirWatcher, type DirEvent } from '../dist/kernel/notify.js';
import { cleanupTemp, tempDir } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';

afterAll(() => cleanupTemp());

async function until(cond: () => boolean): Promise<boolean> {
  for (let i = 0; i < 3000 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  return cond();
}

describe('inotify watches keyed by descriptor', () => {
  it('one kernel watch for one directory however it is named; every listener is told', async (ctx) => {
    needs(ctx, 'linux: inotify gives a watched directory its existing descriptor');
    const dir = join(tempDir('rw-names-'), 'run');
    mkdirSync(dir);
    const w = openDirWatcher();
    if (typeof w === 'string') throw new Error(w);
    try {
      const a: DirEvent[] = [];
      const b: DirEvent[] = [];
      const c: DirEvent[] = [];
      expect(w.watch(dir, (e) => a.push(e)).ok).toBe(true);
      expect(w.watch(dir, (e) => b.push(e)).ok).toBe(true);
      expect(w.watch(join(dir, '.'), (e) => c.push(e)).ok).toBe(true);
      expect(w.size).toBe(1);
      writeFileSync(join(dir, 'events.jsonl'), 'x\n');
      expect(await until(() => [a, b, c].every((l) => l.some((e) => e.name === 'events.jsonl')))).toBe(true);
    } finally {
      w.close();
    }
  });

  it('a directory made again under the same name before the old watch ended is watched, and heard', async (ctx) => {
    needs(ctx, 'linux: inotify gives a new directory a new descriptor');
    const dir = join(tempDir('rw-names-'), 'run');
    mkdirSync(dir);
    const w = openDirWatcher();
    if (typeof w === 'string') throw new Error(w);
    try {
      const old: DirEvent[] = [];
      expect(w.watch(dir, (e) => old.push(e)).ok).toBe(true);
      // Removed and made again in this same turn: the old watch's events are still queued, unread.
      rmdirSync(dir);
      mkdirSync(dir);
      const fresh: DirEvent[] = [];
      expect(w.watch(dir, (e) => fresh.push(e)).ok).toBe(true);
      writeFileSync(join(dir, 'events.jsonl'), 'x\n');
      expect(await until(() => fresh.some((e) => e.name === 'events.jsonl'))).toBe(true);
      expect(old.some((e) => e.kind === 'gone')).toBe(true);
      expect(old.some((e) => e.name === 'events.jsonl')).toBe(false);
    } finally {
      w.close();
    }
  });
});
