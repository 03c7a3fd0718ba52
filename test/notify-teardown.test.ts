/**
 * A worker thread that opens the change notifier (raw, or through a
 * LiveEngine) and is terminated without close() must not take the process
 * down: the addon's teardown hook stops the poll and reports the
 * environment's cleanup done only once libuv has closed the handle, before
 * Node unloads the worker's copy of the addon (native/notify.cc). Each case
 * runs in a child process, so a crash (SIGSEGV) fails this test, not the
 * runner.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { notifyBackend } from '../src/kernel/notify.js';
import { runScript, type Ran } from './helpers/exec-procs.js';
import { cleanupTemp, killAll, ROOT, tempDir } from './helpers/lock-procs.js';

afterEach(async () => {
  await killAll(); // a case that hangs is killed, not left behind
  cleanupTemp();
});

const FIXTURE = join(ROOT, 'test', 'fixtures', 'notify-teardown.mjs');

function runCase(mode: string): Promise<Ran> {
  const dir = tempDir('rw-teardown-');
  for (let i = 0; i < 3; i++) mkdirSync(join(dir, `run-${i}`));
  return runScript(FIXTURE, [dir, mode, '4']);
}

describe('a notifier in a worker terminated without close()', () => {
  // Every system runwarden installs on has a notifier (inotify, kqueue): asserted, never a reason to skip.
  it('this system has a change notifier', () => {
    expect(notifyBackend()).not.toBe('unsupported');
  });

  it.each(['raw', 'engine', 'closed', 'both', 'exits'])('%s: the parent survives every termination and exits 0', async (mode) => {
    const r = await runCase(mode);
    expect({ code: r.code, signal: r.signal, stderr: r.stderr }).toEqual({ code: 0, signal: null, stderr: '' });
    expect(r.stdout.trim()).toBe('survived 4');
  });
});
