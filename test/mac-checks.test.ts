/**
 * What a first run on a real Mac must check (docs/install.md, "darwin"), written to run on every
 * lane against whatever addon is loaded: linux's, the XNU model's (`npm run test:darwin-model`), or
 * a Mac's own, where the macOS workflow runs this file by name. Each expectation is chosen by the
 * system facts the addon reports (src/kernel/system.ts), never by `process.platform`:
 * - the holder census under /tmp and under os.tmpdir(): on a Mac both are reached through symlinks
 *   (/tmp -> /private/tmp, /var -> /private/var), and libproc names a holder's descriptor by the real
 *   path; a replaced lock's live holder is found through either, so the run is never ABANDONED;
 * - the truncation of a followed stream: a Mac says only NOTE_ATTRIB for it;
 * - a third party's fcntl lock on resume.lock: on a Mac it keeps every flock out (one list of locks),
 *   and is reported as such; on linux it is no lock of runwarden's at all.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { acquireLock, LiveEngine, probeLock, runStatus } from '../src/index.js';
import { descriptorHolders } from '../src/kernel/holders.js';
import { systemFacts } from '../src/kernel/system.js';
import { eventLine } from './helpers/events.js';
import { killAll, startHolder, until } from './helpers/lock-procs.js';

const made: string[] = [];
const others: ChildProcess[] = [];
afterEach(async () => {
  for (const p of others.splice(0)) p.kill('SIGKILL');
  await killAll();
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});

const line = (o: Record<string, unknown>): string => eventLine(o, { ts: '2026-12-01T10:00:00Z' });

/** A fresh directory under `base`, by the path `base` names (not its real path). */
function under(base: string): string {
  const d = mkdtempSync(join(base, 'rw-mac-'));
  made.push(d);
  return d;
}

describe('the holder census under /tmp and under os.tmpdir()', () => {
  for (const [where, base] of [
    ['/tmp', '/tmp'],
    ['os.tmpdir()', tmpdir()],
  ] as const) {
    it(`${where}: a replaced lock's live holder is found whichever path it and the reader use, and its run is never ABANDONED`, async () => {
      const root = under(base);
      const real = realpathSync(root);
      for (const [holdRoot, readRoot, id] of [
        [root, real, 'via-given'],
        [real, root, 'via-real'],
      ]) {
        const dir = join(holdRoot, id);
        mkdirSync(dir);
        const holder = await startHolder(join(dir, 'resume.lock'));
        writeFileSync(join(dir, 'events.jsonl'), line({ event: 'run_started' }));
        // A restore's replacement: a new inode at the path, unlocked; the holder's flock stays on the old one.
        copyFileSync(join(dir, 'resume.lock'), join(dir, 'resume.lock.x'));
        renameSync(join(dir, 'resume.lock.x'), join(dir, 'resume.lock'));
        const read = join(readRoot, id);
        expect(probeLock(join(read, 'resume.lock')).liveness, 'the kernel alone would say dead').toBe('free');
        expect(runStatus(read)).toMatchObject({ status: 'RUNNING', liveness: 'unknown', reason: 'lock-replaced' });
        expect(descriptorHolders(join(read, 'resume.lock'), 0)).toContain(holder.pid);
        expect(() => acquireLock(join(read, 'resume.lock'), { retryMs: 0 }).release()).toThrow(new RegExp(`pid ${holder.pid}`));
      }
    });
  }
});

describe('the truncation of a followed stream', () => {
  it('is seen by the live engine with every re-check out of reach', async () => {
    const root = under(tmpdir());
    const dir = join(root, '20261201-100000-t');
    mkdirSync(dir);
    await startHolder(join(dir, 'resume.lock'));
    writeFileSync(join(dir, 'events.jsonl'), line({ event: 'run_started' }) + line({ event: 'node_started', node_id: 'a' }));
    const engine = new LiveEngine({ root, safetyMs: 600_000, openRecheckMs: 600_000 });
    try {
      await engine.start();
      await until(() => engine.get(dir)?.report?.status === 'RUNNING', 60_000);
      const before = engine.stats.rereads;
      truncateSync(join(dir, 'events.jsonl'), 0);
      // Only the stream's own notice can tell in time: inotify's IN_MODIFY, or kqueue's NOTE_ATTRIB on a Mac.
      await until(() => engine.stats.rereads > before, 30_000);
    } finally {
      engine.close();
    }
  });
});

describe("a third party's fcntl lock on resume.lock", () => {
  it('is reported for what it is, as the system keeps its locks: one list (darwin) or two (linux)', async () => {
    const dir = join(under(tmpdir()), 'run');
    mkdirSync(dir);
    const lock = join(dir, 'resume.lock');
    acquireLock(lock, { retryMs: 0 }).release();
    writeFileSync(join(dir, 'events.jsonl'), line({ event: 'run_started' }));
    // python3: node-gyp's own requirement, on every machine that built the addon and on macOS; lockf is a POSIX record lock.
    const third = spawn('python3', ['-c', 'import fcntl, sys, time\nf = open(sys.argv[1], "r+")\nfcntl.lockf(f, fcntl.LOCK_EX)\nprint("locked", flush=True)\ntime.sleep(600)', lock], { stdio: ['ignore', 'pipe', 'inherit'] });
    others.push(third);
    await new Promise((res) => third.stdout?.once('data', res));
    if (systemFacts().oneLockList) {
      expect(probeLock(lock)).toEqual({ liveness: 'unknown', reason: 'record-lock', detail: expect.stringContaining(`pid ${third.pid as number}`) });
      expect(runStatus(dir)).toMatchObject({ status: 'RUNNING', reason: 'record-lock' });
      expect(() => acquireLock(lock, { retryMs: 50 })).toThrow(new RegExp(`no leg holds the lock .* pid ${third.pid as number} holds a record lock`));
    } else {
      expect(probeLock(lock)).toEqual({ liveness: 'free', reason: 'flock-free' });
      expect(runStatus(dir)).toMatchObject({ status: 'ABANDONED' });
      acquireLock(lock, { retryMs: 0 }).release();
    }
    third.kill('SIGKILL');
    await new Promise((res) => third.once('exit', res));
    acquireLock(lock, { retryMs: 1000 }).release();
  });
});
