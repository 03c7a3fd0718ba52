/**
 * A live leg's resume.lock replaced under it (CONTRACT §4.5): what a backup
 * restore, an rsync of the runs tree, `tar -x` or an editor's save does. The
 * kernel lock stays on the old inode and the path names a new, unlocked one.
 * Nothing may then call the run ABANDONED, a second leg may not start, and a
 * guarded leg (`runwarden exec`) takes the lock on the new file at once.
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, copyFileSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { probeLock, runStatus } from '../src/index.js';
import { start, run } from './helpers/exec-procs.js';
import { cleanupTemp, killAll, startHolder, tempDir, until } from './helpers/lock-procs.js';
import { needs, type Prereq } from './helpers/prereq.js';
import { OPEN_NAME_UNDER_WINE } from './helpers/portable.js';
import { eventLine } from './helpers/events.js';

afterEach(async () => {
  await killAll();
  cleanupTemp();
});

const line = (o: Record<string, unknown>) => eventLine(o);

/** The ways a file gets replaced by a new inode at the same path. */
const REPLACERS: Record<string, (lock: string) => void> = {
  'cp then mv (a restore)': (lock) => {
    copyFileSync(lock, `${lock}.x`);
    renameSync(`${lock}.x`, lock);
  },
  'tar -x of an archive of the run': (lock) => {
    const dir = join(lock, '..');
    const archive = join(dir, '..', `${Math.random().toString(36).slice(2)}.tar`);
    execFileSync('tar', ['-cf', archive, '-C', dir, 'resume.lock']);
    execFileSync('tar', ['-xf', archive, '-C', dir]);
    rmSync(archive);
  },
  "an editor's save (write a temp file, rename it over)": (lock) => {
    const text = readFileSync(lock);
    writeFileSync(`${lock}.swp`, text);
    renameSync(`${lock}.swp`, lock);
  },
  'rm then recreate': (lock) => {
    const text = readFileSync(lock);
    unlinkSync(lock);
    writeFileSync(lock, text);
  },
};

/** Replacers that need a tool outside Node, and the prerequisite that names it (test/helpers/prereq.ts). */
const NEEDS: Record<string, Prereq> = {};
NEEDS['rsync of the run directory from a copy'] = 'rsync';
REPLACERS['rsync of the run directory from a copy'] = (lock) => {
  const dir = join(lock, '..');
  const copy = `${dir}.copy`;
  execFileSync('cp', ['-a', dir, copy]);
  appendFileSync(join(copy, 'resume.lock'), ''); // same content; rsync still rewrites by temp + rename
  execFileSync('rsync', ['-a', '--ignore-times', `${copy}/`, `${dir}/`]);
  rmSync(copy, { recursive: true });
};

function ino(path: string): number {
  return statSync(path).ino;
}

describe('a replaced lock under a live holder that does not heal it', () => {
  for (const [name, replace] of Object.entries(REPLACERS)) {
    it(`${name}: readers say in flight (lock-replaced), never ABANDONED, and a second leg is refused`, async (ctx) => {
      needs(ctx, 'linux: /proc/locks and /proc/<pid>/fd find the holder of a replaced lock');
      if (NEEDS[name]) needs(ctx, NEEDS[name]);
      const root = tempDir();
      const dir = join(root, 'r');
      mkdirSync(dir);
      const lockPath = join(dir, 'resume.lock');
      const holder = await startHolder(lockPath); // acquireLock alone: no guard
      writeFileSync(join(dir, 'events.jsonl'), line({ event: 'run_started' }));
      expect(runStatus(dir)).toMatchObject({ status: 'RUNNING', liveness: 'held' });
      const before = ino(lockPath);
      replace(lockPath);
      expect(ino(lockPath)).not.toBe(before);
      // The path's lock is free now: the kernel alone would say dead.
      expect(probeLock(lockPath).liveness).toBe('free');
      const report = runStatus(dir);
      expect(report.status).toBe('RUNNING');
      expect(report).toMatchObject({ liveness: 'unknown', reason: 'lock-replaced' });
      const second = await run(['exec', dir, '--', 'sh', '-c', `touch ${join(root, 'ran')}`]);
      expect(second.code).toBe(75);
      expect(second.stderr).toMatch(/in flight \(pid \d+\)/);
      expect(() => statSync(join(root, 'ran'))).toThrow();
      // Once the holder is really gone, the evidence is gone too.
      holder.proc.kill('SIGKILL');
      await until(() => runStatus(dir).status === 'ABANDONED', 10_000);
    });
  }
});

describe('a holder that retakes the new file while a reader is between its probe and its search', () => {
  it('the reader probes again after finding no holder of the old file: in flight, never ABANDONED', async (ctx) => {
    needs(ctx, 'linux: /proc/locks');
    const root = tempDir();
    const dir = join(root, 'r');
    mkdirSync(dir);
    const lockPath = join(dir, 'resume.lock');
    const holder = await startHolder(lockPath, ['--retake-on-usr1']);
    let said = '';
    holder.proc.stdout?.on('data', (d: Buffer) => (said += d.toString()));
    writeFileSync(join(dir, 'events.jsonl'), line({ event: 'run_started' }));
    const old = ino(lockPath);
    REPLACERS['cp then mv (a restore)'](lockPath);
    let first: ReturnType<typeof probeLock> | undefined;
    let retakenFirst = false;
    const pause = new Int32Array(new SharedArrayBuffer(4));
    const report = runStatus(dir, {
      probe: (p) => {
        const answer = probeLock(p);
        if (first === undefined) {
          first = answer;
          // Between this probe and the reader's search for a holder of the old
          // file, the holder takes the new one and lets the old one go.
          holder.proc.kill('SIGUSR1');
          const end = Date.now() + 30_000;
          while (Date.now() < end) {
            const oldHeld = readFileSync('/proc/locks', 'latin1').split('\n').some((l) => l.includes('FLOCK') && l.includes(`:${old} `));
            if (!oldHeld && probeLock(p).liveness === 'held') break;
            Atomics.wait(pause, 0, 0, 5);
          }
          retakenFirst = true;
        }
        return answer;
      },
    });
    expect(first?.liveness).toBe('free');
    expect(retakenFirst).toBe(true);
    expect(report.status).toBe('RUNNING');
    expect(report.liveness).toBe('held');
    await until(() => said.includes('RETAKEN'), 10_000);
  });
});

describe('runwarden exec heals a replaced lock', () => {
  for (const [name, replace] of Object.entries(REPLACERS)) {
    it(`${name}: the leg takes the lock on the new file and every reader sees it held`, async (ctx) => {
      needs(ctx, 'linux: /proc/locks and /proc/<pid>/fd find the holder of a replaced lock');
      if (NEEDS[name]) needs(ctx, NEEDS[name]);
      const root = tempDir();
      const dir = join(root, 'r');
      const leg = start(['exec', dir, '--', 'sleep', '60']);
      await until(() => {
        try {
          return runStatus(dir).liveness === 'held';
        } catch {
          return false;
        }
      }, 15_000);
      const before = ino(join(dir, 'resume.lock'));
      replace(join(dir, 'resume.lock'));
      // Never ABANDONED at any moment we look, and held again once healed.
      let healed = false;
      await until(() => {
        const r = runStatus(dir);
        expect(r.status).toBe('RUNNING');
        healed = r.liveness === 'held' && ino(join(dir, 'resume.lock')) !== before;
        return healed;
      }, 10_000);
      expect(healed).toBe(true);
      await until(() => /resume\.lock was (replaced|removed)/.test(leg.stderr()), 10_000);
      const second = await run(['exec', dir, '--', 'true']);
      expect(second.code).toBe(75);
      leg.proc.kill('SIGTERM');
      const done = await leg.done;
      expect(done.code).toBe(143);
      // The verdict landed in the file readers read.
      expect(runStatus(dir).status).toBe('FAIL');
    });
  }
});

describe('the run directory removed under a running exec', () => {
  it('exec says so, exits non-zero, and a second leg of the same id is refused meanwhile', async (ctx) => {
    needs(ctx, OPEN_NAME_UNDER_WINE);
    needs(ctx, 'posix: sh, touch and sleep as the command');
    const root = tempDir();
    const dir = join(root, 'r');
    const gate = join(root, 'go');
    const started = join(root, 'started');
    const leg = start(['exec', dir, '--', 'sh', '-c', `touch ${started}; while [ ! -e ${gate} ]; do sleep 0.05; done`]);
    // The command runs only once the leg is fully set up (lock, events, exec.pgid).
    await until(() => {
      try {
        return statSync(started).isFile();
      } catch {
        return false;
      }
    }, 15_000);
    rmSync(dir, { recursive: true });
    await until(() => /was removed or replaced while this leg ran/.test(leg.stderr()), 10_000);
    const second = await run(['exec', dir, '--', 'sh', '-c', `touch ${join(root, 'second-ran')}`]);
    expect(second.code).toBe(75);
    expect(() => statSync(join(root, 'second-ran'))).toThrow();
    writeFileSync(gate, '');
    const done = await leg.done;
    expect(done.code).toBe(1);
    expect(done.stderr).toMatch(/its directory was removed or replaced while the leg ran/);
  });
});
