/**
 * acquireLock (CONTRACT §4.1): what a starting leg may and may not do, and the
 * exact wording of every refusal.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { acquireLock, LockFileError, LockHeldError, probeLock, processPresence } from '../src/index.js';
import { cleanupTemp, flockHolders, killAll, startFlock1, startGatedReader, startHolder, tempDir, track, waitExit, waitReady } from './helpers/lock-procs.js';
import { DIST_URL, leftByLeg } from './helpers/portable.js';
import { needs } from './helpers/prereq.js';
import { systemFacts } from '../src/kernel/system.js';

const servers: Server[] = [];
afterEach(async () => {
  await killAll();
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(() => r(undefined)))));
  cleanupTemp();
});

function refusal(fn: () => unknown): LockHeldError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(LockHeldError);
    return e as LockHeldError;
  }
  throw new Error('expected a LockHeldError');
}

describe('acquireLock: taking and releasing', () => {
  it('creates the run directory 0700 and the lock file 0600 with exactly the marker and pid', () => {
    const dir = join(tempDir(), 'a', 'run-1');
    const lock = acquireLock(join(dir, 'resume.lock'));
    try {
      // Windows applies no mode: a created file inherits its directory's access control list (CONTRACT §5.8 rule 4).
      if (process.platform !== 'win32') {
        expect(statSync(dir).mode & 0o777).toBe(0o700);
        expect(statSync(join(dir, 'resume.lock')).mode & 0o777).toBe(0o600);
      }
      expect(readFileSync(join(dir, 'resume.lock'), 'latin1')).toBe(leftByLeg(process.pid));
      expect(lock.pid).toBe(process.pid);
      expect(lock.held).toBe(true);
    } finally {
      lock.release();
    }
  });

  it('keeps the mode of an existing directory and file', (ctx) => {
    needs(ctx, 'posix: modes');
    const dir = tempDir();
    chmodSync(dir, 0o755);
    writeFileSync(join(dir, 'resume.lock'), '', { mode: 0o644 });
    chmodSync(join(dir, 'resume.lock'), 0o644);
    acquireLock(join(dir, 'resume.lock')).release();
    expect(statSync(dir).mode & 0o777).toBe(0o755);
    expect(statSync(join(dir, 'resume.lock')).mode & 0o777).toBe(0o644);
  });

  it('release unlocks and closes, never unlinks, and is idempotent', () => {
    const path = join(tempDir(), 'resume.lock');
    const lock = acquireLock(path);
    const ino = statSync(path).ino;
    lock.release();
    lock.release();
    expect(lock.held).toBe(false);
    expect(existsSync(path)).toBe(true);
    expect(statSync(path).ino).toBe(ino);
    expect(probeLock(path)).toEqual({ liveness: 'free', reason: 'flock-free' });
    // The file is reused by the next leg, same inode.
    const again = acquireLock(path, { pid: 7 });
    expect(statSync(path).ino).toBe(ino);
    again.release();
  });

  it('truncates a longer stale content when reusing the file (no stale pid digits survive)', () => {
    const path = join(tempDir(), 'resume.lock');
    writeFileSync(path, 'oh-my-graph-lock 1\n2147483647\nsome trailing junk from an old writer\n');
    acquireLock(path, { pid: 12 }).release();
    expect(readFileSync(path, 'latin1')).toBe(leftByLeg(12));
  });

  it('a refused acquire does not touch the holder\'s file', async () => {
    const path = join(tempDir(), 'run', 'resume.lock');
    const h = await startHolder(path);
    const before = readFileSync(path);
    const st = statSync(path);
    refusal(() => acquireLock(path, { retryMs: 0 }));
    expect(readFileSync(path)).toEqual(before);
    expect(statSync(path).mtimeMs).toBe(st.mtimeMs);
    expect(before.toString()).toBe(leftByLeg(h.pid));
  });

  it('a reused lock file is never empty while a leg rewrites it (readers see the marker, not empty-file)', async () => {
    const path = join(tempDir(), 'run', 'resume.lock');
    acquireLock(path).release(); // the file exists and is marked, as after any earlier leg
    const script = `
      import { acquireLock } from ${JSON.stringify(DIST_URL)};
      console.log('READY');
      // A long retry window: the probing test process may be preempted while it holds its shared lock.
      for (let i = 0; i < 3000; i++) acquireLock(${JSON.stringify(path)}, { pid: 1 + (i % 2) * 1000000, retryMs: 30000 }).release();
    `;
    const churn = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    track(churn);
    await waitReady(churn);
    const seen = new Map<string, number>();
    while (churn.exitCode === null) {
      for (let i = 0; i < 200; i++) {
        const r = probeLock(path).reason;
        seen.set(r, (seen.get(r) ?? 0) + 1);
      }
      await new Promise((r) => setImmediate(r));
    }
    expect(churn.exitCode).toBe(0);
    expect(seen.get('empty-file') ?? 0).toBe(0);
    expect([...seen.keys()].every((k) => k === 'flock-held' || k === 'flock-free')).toBe(true);
    expect(seen.get('flock-held') ?? 0).toBeGreaterThan(0);
  });

  it('an empty lock file (a crashed acquire before its write) is taken normally', () => {
    const path = join(tempDir(), 'resume.lock');
    writeFileSync(path, '');
    acquireLock(path).release();
    expect(readFileSync(path, 'latin1')).toBe(leftByLeg(process.pid));
  });

  it('retries past a reader\'s brief shared lock instead of refusing', async (ctx) => {
    needs(ctx, 'flock');
    const path = join(tempDir(), 'resume.lock');
    writeFileSync(path, 'oh-my-graph-lock 1\n1\n');
    // A reader that holds LOCK_SH for 0.3 s after the gate opens, far longer than a real probe.
    const gate = join(tempDir(), 'go');
    const { proc: reader } = await startGatedReader(path, gate, 0.3);
    writeFileSync(gate, '');
    // Positive control: the kernel's lock table shows the reader's shared lock the instant before the
    // attempt, so the first try met it and only the retry past it can have taken the lock.
    const atStart = flockHolders(path);
    const lock = acquireLock(path, { retryMs: 30_000 });
    expect(atStart).toEqual({ shared: [reader.pid], exclusive: [] });
    expect(lock.held).toBe(true);
    expect(flockHolders(path)).toEqual({ shared: [], exclusive: [process.pid] });
    lock.release();
    await waitExit(reader);
  });
});

describe('acquireLock: refusals and their exact wording', () => {
  it('held by a live leg: names the pid as a label, never rm/delete/kill', async () => {
    const path = join(tempDir(), 'run', 'resume.lock');
    const h = await startHolder(path);
    const e = refusal(() => acquireLock(path, { retryMs: 30 }));
    expect(e.code).toBe('ELOCKHELD');
    expect(e.message).toBe(`a leg of this run is in flight (started by pid ${h.pid}); wait for it, or stop it`);
    expect(e.message).not.toMatch(/\brm\b|delete|kill/i);
    expect(e).toMatchObject({ path, pid: h.pid, legacy: false, pidGone: false, future: false });
  });

  it('held, after the holder was SIGKILLed: no longer refused', async () => {
    const path = join(tempDir(), 'run', 'resume.lock');
    const h = await startHolder(path);
    h.proc.kill('SIGKILL');
    await waitExit(h.proc);
    acquireLock(path).release();
  });

  it('a pre-flock file with a live pid: legacy refusal with the exact rm advice and no pid shown', () => {
    const path = join(tempDir(), 'resume.lock');
    writeFileSync(path, `${process.pid}\n`);
    const e = refusal(() => acquireLock(path));
    expect(e).toMatchObject({ code: 'ELOCKHELD', legacy: true, pidGone: false, future: false, pid: undefined });
    expect(e.message).toContain(`rm "${path}"`);
    expect(e.message).not.toContain(String(process.pid));
    expect(e.message).not.toContain('very likely stale');
    expect(readFileSync(path, 'latin1')).toBe(`${process.pid}\n`);
  });

  it('a pre-flock file whose pid is gone: says "very likely stale" and names that pid', () => {
    const r = spawnSync(process.execPath, ['-e', '']);
    const pid = r.pid;
    expect(processPresence(pid)).toBe('gone');
    const path = join(tempDir(), 'resume.lock');
    writeFileSync(path, `${pid}\n`);
    const e = refusal(() => acquireLock(path));
    expect(e).toMatchObject({ legacy: true, pidGone: true, pid });
    expect(e.message).toContain('very likely stale');
    expect(e.message).toContain(String(pid));
    expect(e.message).toContain(`rm "${path}"`);
  });

  it('a pre-flock file with an unparsable body: legacy refusal with rm advice', () => {
    const path = join(tempDir(), 'resume.lock');
    writeFileSync(path, 'hello world\n');
    const e = refusal(() => acquireLock(path));
    expect(e).toMatchObject({ legacy: true, pidGone: false });
    expect(e.message).toContain(`rm "${path}"`);
  });

  it('a future marker: "written by a newer version", never the rm advice', () => {
    const path = join(tempDir(), 'resume.lock');
    writeFileSync(path, 'oh-my-graph-lock 2\n77\n');
    const e = refusal(() => acquireLock(path));
    expect(e).toMatchObject({ future: true, legacy: false });
    expect(e.message).toContain('written by a newer version');
    expect(e.message).not.toMatch(/\brm\b|delete/i);
    expect(readFileSync(path, 'latin1')).toBe('oh-my-graph-lock 2\n77\n');
  });

  const notRegular: Array<[string, (p: string) => Promise<void> | void]> = [
    ['directory', (p) => mkdirSync(p)],
    ['fifo', (p) => void spawnSync('mkfifo', [p])],
    [
      'symlink',
      (p) => {
        writeFileSync(p + '.target', 'oh-my-graph-lock 1\n1\n');
        symlinkSync(p + '.target', p);
      },
    ],
    [
      'socket',
      async (p) => {
        const s = createServer();
        servers.push(s);
        await new Promise<void>((r) => s.listen(p, () => r()));
      },
    ],
  ];
  for (const [kind, make] of notRegular) {
    it(`a ${kind} in place of the lock file is refused, naming the path and what it is`, async (ctx) => {
      if (kind === 'fifo') needs(ctx, 'posix: a FIFO (mkfifo)');
      if (kind === 'socket') needs(ctx, 'posix: a socket in the filesystem (on Windows a path given to listen names a pipe, outside it)');
      if (kind === 'symlink') needs(ctx, 'not-wine: symbolic links (Wine 8 reports one made and makes nothing)');
      const path = join(tempDir(), 'resume.lock');
      await make(path);
      let caught: unknown;
      try {
        acquireLock(path);
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(LockFileError);
      const e = caught as LockFileError;
      expect(e.code).toBe('ENOTREGULAR');
      expect(e.kind).toBe(kind);
      expect(e.message).toContain(path);
      expect(e.message).toContain(kind);
      if (kind === 'symlink') expect(readFileSync(path + '.target', 'latin1')).toBe('oh-my-graph-lock 1\n1\n');
    });
  }

  it('refuses when the file was replaced while it waited for the lock (inode re-check)', async () => {
    const path = join(tempDir(), 'run', 'resume.lock');
    // A holder that, after 300 ms, moves its locked file aside, puts a new
    // file in its place, and only then lets go of the old inode.
    const script = `
      import { renameSync, writeFileSync } from 'node:fs';
      import { acquireLock } from ${JSON.stringify(DIST_URL)};
      const p = ${JSON.stringify(path)};
      const l = acquireLock(p);
      console.log('READY');
      setTimeout(() => { renameSync(p, p + '.old'); writeFileSync(p, ''); l.release(); setTimeout(() => {}, 60000); }, 300);
    `;
    const proc = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    track(proc);
    await waitReady(proc);
    let caught: unknown;
    try {
      acquireLock(path, { retryMs: 30_000 });
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(LockFileError);
    expect((caught as LockFileError).code).toBe('ELOCKREPLACED');
    // Nothing holds the new file: the refusal left no lock behind.
    expect(existsSync(path + '.old')).toBe(true);
    acquireLock(path).release();
  });

  it('validates its arguments before any system call', () => {
    expect(() => acquireLock('')).toThrow(TypeError);
    expect(() => acquireLock(join(tempDir(), 'x'), { pid: 0 })).toThrow(RangeError);
    expect(() => acquireLock(join(tempDir(), 'x'), { retryMs: -1 })).toThrow(RangeError);
  });

  it('a shared lock that persists (not a brief probe) still refuses, saying a reader, not a leg, holds it', async (ctx) => {
    needs(ctx, 'flock');
    const path = join(tempDir(), 'resume.lock');
    writeFileSync(path, 'oh-my-graph-lock 1\n1\n');
    const { proc } = await startFlock1(path, '-s');
    const e = refusal(() => acquireLock(path, { retryMs: 50 }));
    // Told apart wherever the system says who holds the file (linux's lock table, darwin's libproc census of
    // descriptors: flock(1) opens it read-only); elsewhere the refusal keeps a leg's wording. The reader is
    // named once 40 looks have seen it, which fit in the window where a look is cheap (linux); darwin's
    // looks are censuses spaced by their cost, and there the readers' window may end first.
    const named = `no leg holds the lock "${path}", but pid ${proc.pid as number} has held a shared lock on it for 5 s (a reader that is stopped, or holds it on purpose); resume or stop that process`;
    if (systemFacts().holderTable === 'proc-locks') expect(e.message).toBe(named);
    else if (systemFacts().holderTable === 'libproc') expect(e.message === named || /^no leg holds the lock .*readers' shared probes kept it held/.test(e.message), e.message).toBe(true);
    else expect(e.message).toContain('in flight');
    expect(e.message).not.toMatch(/\brm\b|delete|kill/);
  });
});
