/**
 * HeldLock.onCompromised: a holder is told when its lock file is replaced
 * or removed under it (CONTRACT §4.5), with real files and renames. The
 * test waits for the callback (generous bounds); it asserts what was told,
 * never how fast.
 */
import { copyFileSync, mkdtempSync, renameSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { acquireLock, probeLock } from '../dist/index.js';
import { OPEN_NAME_UNDER_WINE as OPEN_NAME } from './helpers/portable.js';
import { needs } from './helpers/prereq.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function runDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'rw-comp-'));
  dirs.push(d);
  return join(d, 'run');
}

/** Resolves with the states told, once `n` have been told (or rejects after a generous bound). */
function told(lock: ReturnType<typeof acquireLock>, n: number, intervalMs = 20): { states: string[]; done: Promise<string[]>; stop: () => void } {
  const states: string[] = [];
  let resolve!: (v: string[]) => void;
  const done = new Promise<string[]>((r) => (resolve = r));
  const stop = lock.onCompromised((s) => {
    states.push(s);
    if (states.length === n) resolve([...states]);
  }, { intervalMs });
  const bound = setTimeout(() => resolve([...states]), 60_000);
  void done.then(() => clearTimeout(bound));
  return { states, done, stop };
}

describe('HeldLock.onCompromised', () => {
  it('tells a holder its lock file was replaced (cp + mv), once; retake() from the callback heals it', async (ctx) => {
    needs(ctx, OPEN_NAME);
    const dir = runDir();
    const path = join(dir, 'resume.lock');
    const lock = acquireLock(path);
    const states: string[] = [];
    let healed: string | undefined;
    const seen = new Promise<void>((resolve) => {
      lock.onCompromised((s) => {
        states.push(s);
        if (s === 'replaced') healed = lock.retake();
        resolve();
      }, { intervalMs: 20 });
    });
    copyFileSync(path, join(dir, 'copy'));
    renameSync(join(dir, 'copy'), path);
    await seen;
    expect(states).toEqual(['replaced']);
    expect(healed).toBe('replaced');
    expect(lock.verify()).toBe('ok');
    expect(probeLock(path).liveness).toBe('held');
    // Healed: several more intervals, nothing more to tell.
    await new Promise((r) => setTimeout(r, 200));
    expect(states).toEqual(['replaced']);
    lock.release();
  });

  it('tells a holder its lock file was removed, and says nothing more while nothing changes', async (ctx) => {
    needs(ctx, OPEN_NAME);
    const dir = runDir();
    const path = join(dir, 'resume.lock');
    const lock = acquireLock(path);
    const watch = told(lock, 1);
    unlinkSync(path);
    expect(await watch.done).toEqual(['missing']);
    // Several more intervals pass with the file still missing: no second call.
    await new Promise((r) => setTimeout(r, 200));
    expect(watch.states).toEqual(['missing']);
    lock.release();
  });

  it('stops at release, and refuses bad arguments before watching', () => {
    const lock = acquireLock(join(runDir(), 'resume.lock'));
    expect(() => lock.onCompromised(42 as never)).toThrow(TypeError);
    expect(() => lock.onCompromised(() => {}, { intervalMs: 0 })).toThrow(RangeError);
    const stop = lock.onCompromised(() => {});
    lock.release();
    expect(() => lock.onCompromised(() => {})).toThrow(RangeError);
    stop(); // harmless after release
  });
});
