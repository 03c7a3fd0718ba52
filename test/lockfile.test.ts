/**
 * runwarden/lockfile (docs/lockfile.md), with real processes: holders killed
 * with SIGKILL, event loops blocked, and genuine proper-lockfile 4.1.2
 * processes beside runwarden ones on the same file. Where a behaviour is
 * "the same as proper-lockfile", the reference is proper-lockfile itself,
 * run on the same setup; nothing here is taken from runwarden's sources.
 *
 * No test measures speed: every wait is for a line on a pipe or a process's
 * exit; the waits past `stale` are there to let proper-lockfile's own rule
 * act, and assert only who holds the lock.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type * as Plf from 'proper-lockfile';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanupTemp, killAll, ROOT, tempDir, track, until } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';
import { OPEN_NAME_UNDER_WINE } from './helpers/portable.js';

const PROC = join(ROOT, 'test', 'fixtures', 'lockfile-proc.cjs');
const STRESS = join(ROOT, 'test', 'fixtures', 'lockfile-stress.cjs');
const req = createRequire(join(ROOT, 'package.json'));
type Api = typeof Plf;
/** The package as a CommonJS user gets it (self-reference by name, through the exports map). */
const rw = req('runwarden/lockfile') as Api;
const plf = req('proper-lockfile') as Api;

const mounts: string[] = [];
afterEach(async () => {
  await killAll();
  for (const m of mounts.splice(0).reverse()) {
    spawnSync('umount', ['-l', m]);
    spawnSync('fusermount', ['-u', m]);
  }
  cleanupTemp();
});

/** A process of lockfile-proc.cjs, with its stdout as lines. */
class Proc {
  readonly child: ChildProcess;
  private readonly lines: string[] = [];
  private readonly waiters: Array<() => void> = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr = '';

  constructor(impl: 'rw' | 'plf', file: string, options: Record<string, unknown> = {}) {
    this.child = spawn(process.execPath, [PROC, impl, file, JSON.stringify(options)], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    track(this.child);
    // 'close', not 'exit': a child's last output can still be unread when its 'exit' is told (Node's child_process docs).
    this.exited = new Promise((r) => this.child.once('close', (code, signal) => r({ code, signal })));
    createInterface({ input: this.child.stdout! }).on('line', (l) => {
      this.lines.push(l);
      for (const w of this.waiters.splice(0)) w();
    });
    this.child.stderr!.on('data', (b: Buffer) => (this.stderr += b.toString()));
  }

  /** The first line (from the start) matching `re`, waiting for it; rejects if the process exits first. */
  async line(re: RegExp): Promise<string> {
    for (;;) {
      const found = this.lines.find((l) => re.test(l));
      if (found !== undefined) return found;
      const done = await Promise.race([new Promise<'line'>((r) => this.waiters.push(() => r('line'))), this.exited.then(() => 'exit' as const)]);
      if (done === 'exit') {
        const last = this.lines.find((l) => re.test(l));
        if (last !== undefined) return last;
        throw new Error(`process exited before printing ${re}: ${this.lines.join(' | ')} ${this.stderr}`);
      }
    }
  }

  all(): readonly string[] {
    return this.lines;
  }

  send(cmd: string): void {
    this.child.stdin!.write(`${cmd}\n`);
  }

  async kill9(): Promise<void> {
    this.child.kill('SIGKILL');
    await this.exited;
  }
}

/** One attempt by a fresh process, as `impl`: `held` or the failure's code. */
async function attempt(impl: 'rw' | 'plf', file: string, options: Record<string, unknown> = {}): Promise<string> {
  const p = new Proc(impl, file, { sync: true, ...options });
  const line = await p.line(/^(held|failed) /);
  if (line.startsWith('held')) {
    p.send('release');
    await p.line(/^released/);
    p.child.stdin!.end();
    await p.kill9();
    return 'held';
  }
  await p.exited;
  return line.split(' ')[1];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function setup(): { dir: string; file: string } {
  const dir = tempDir('rw-lockfile-');
  const file = join(dir, 'foo');
  writeFileSync(file, '');
  return { dir, file };
}

/** What a call throws: code and message, or 'ok'. */
function outcome(fn: () => unknown): { code?: unknown; message?: string } | 'ok' {
  try {
    fn();
    return 'ok';
  } catch (e) {
    return { code: (e as { code?: unknown }).code, message: (e as Error).message };
  }
}

describe('the module, as each module form loads it', () => {
  it('require() gives lock with its five calls as properties; import gives the same objects; one copy serves both forms', () => {
    const script = `
      import lf, { lock, lockSync } from 'runwarden/lockfile';
      import * as root from 'runwarden';
      import { createRequire } from 'node:module';
      import { writeFileSync } from 'node:fs';
      const require = createRequire(import.meta.url);
      const cjs = require('runwarden/lockfile');
      const cjsRoot = require('runwarden');
      const file = process.argv[1];
      writeFileSync(file, '');
      const out = {
        shape: [typeof cjs, cjs.lock === cjs, Object.keys(cjs).sort().join(',')],
        sameFunction: lf === cjs && lock === cjs.lock && lockSync === cjs.lockSync,
        sameRoot: root.RunwardenError === cjsRoot.RunwardenError,
      };
      const release = lf.lockSync(file);
      try { cjs.lockSync(file); } catch (e) { out.crossForm = [e.code, e instanceof cjsRoot.RunwardenError, e instanceof root.ProperLockfileError]; }
      release();
      console.log(JSON.stringify(out));`;
    const { file } = setup();
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script, file], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      shape: ['function', true, 'check,checkSync,lock,lockSync,unlock,unlockSync'],
      sameFunction: true,
      sameRoot: true,
      crossForm: ['ELOCKED', true, true],
    });
  });

  it('codes and messages are proper-lockfile\'s, side by side on the same cases', async () => {
    const cases: Array<[string, (api: Api, file: string) => unknown]> = [
      ['locked twice', (api, file) => (api.lockSync(file), api.lockSync(file))],
      ['unlock of a lock not held', (api, file) => api.unlockSync(file)],
      ['a release called twice', (api, file) => {
        const release = api.lockSync(file);
        release();
        release();
      }],
      ['retries with the sync call', (api, file) => api.lockSync(file, { retries: 2 })],
      ['retries as an object with the sync call', (api, file) => api.lockSync(file, { retries: { retries: 1 } })],
      ['a missing file (realpath)', (api, file) => api.lockSync(`${file}-missing`)],
      ['check of a missing file', (api, file) => api.checkSync(`${file}-missing`)],
      ['a missing lock directory parent', (api, file) => api.lockSync(file, { lockfilePath: join(file, '..', 'nope', 'x.lock') })],
    ];
    for (const [what, run] of cases) {
      const results = [];
      for (const api of [plf, rw]) {
        const { dir, file } = setup();
        const got = outcome(() => run(api, file));
        for (const f of [file]) {
          // Whatever was held is let go before the next implementation runs.
          try {
            api.unlockSync(f);
          } catch {
            /* not held */
          }
        }
        results.push(typeof got === 'string' ? got : { code: got.code, message: got.message?.replaceAll(dir, 'DIR') });
      }
      expect(results[1], what).toEqual(results[0]);
    }
    // The promise forms reject the same way.
    const { file } = setup();
    const release = await rw.lock(file);
    await expect(rw.lock(file)).rejects.toMatchObject({ code: 'ELOCKED', message: 'Lock file is already being held', file });
    await release();
    await expect(release()).rejects.toMatchObject({ code: 'ERELEASED', message: 'Lock is already released' });
    await expect(rw.unlock(file)).rejects.toMatchObject({ code: 'ENOTACQUIRED', message: 'Lock is not acquired/owned by you' });
    expect(await rw.check(file)).toBe(false);
  });

  it('holding a lock does not keep a process alive, and a graceful end or a crash leaves no lock behind', async () => {
    const { dir, file } = setup();
    const r = spawnSync(process.execPath, ['-e', `require('runwarden/lockfile').lockSync(${JSON.stringify(file)}); console.log('held')`], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    expect({ status: r.status, out: r.stdout.trim() }).toEqual({ status: 0, out: 'held' });
    expect(readdirSync(dir)).toEqual(['foo']);

    const crash = new Proc('rw', file, { sync: true });
    await crash.line(/^held/);
    expect(readdirSync(dir).sort()).toEqual(['foo', 'foo.lock', 'foo.lock.runwarden']);
    crash.send('crash');
    expect((await crash.exited).code).toBe(1);
    expect(crash.stderr).toMatch(/crash on purpose/);
    expect(readdirSync(dir)).toEqual(['foo']);
  });
});

describe('liveness from the kernel', () => {
  it('a holder killed with SIGKILL: the next runwarden attempt takes the lock, with no wait; proper-lockfile\'s stays taken (reference)', async () => {
    const { file } = setup();
    const holder = new Proc('rw', file);
    await holder.line(/^held/);
    expect(await attempt('rw', file)).toBe('ELOCKED');
    await holder.kill9();
    // Its lock directory and sidecar are still on disk; the flock went with the process. On Windows the
    // system unlocks a dead process's LockFileEx ranges soon after, not at its exit ("the time it takes ...
    // depends upon available system resources": the LockFileEx page's remarks), so there it is waited for.
    expect(existsSync(`${file}.lock`)).toBe(true);
    if (process.platform === 'win32') await until(() => !rw.checkSync(file));
    expect(rw.checkSync(file)).toBe(false);
    expect(await attempt('rw', file)).toBe('held');

    const { file: other } = setup();
    const legacy = new Proc('plf', other);
    await legacy.line(/^held/);
    await legacy.kill9();
    expect(await attempt('plf', other)).toBe('ELOCKED');
    expect(await attempt('rw', other)).toBe('ELOCKED');
  });

  it('a holder whose event loop is blocked past `stale`: no one else gets in, nothing is compromised; a proper-lockfile holder loses it (reference)', async () => {
    // One process per kind tries every 100 ms from before the holder blocks until after it unblocks (3 × `stale`).
    const TRIER = `
      const lf = require(process.argv[1] === 'plf' ? 'proper-lockfile' : 'runwarden/lockfile');
      let tries = 0, taken = 0;
      const t = setInterval(() => {
        tries++;
        try { const release = lf.lockSync(process.argv[2], { stale: 2000, onCompromised: () => {} }); taken++; release(); } catch (e) { if (e.code !== 'ELOCKED') console.log('error ' + e.code); }
      }, 100);
      console.log('trying');
      process.stdin.on('data', () => { clearInterval(t); console.log('tries ' + tries + ' ' + taken); process.exit(0); });`;
    const run = async (impl: 'rw' | 'plf'): Promise<{ taken: number; compromised: boolean }> => {
      const { file } = setup();
      const holder = new Proc(impl, file, { stale: 2000 });
      await holder.line(/^held/);
      const triers = (['rw', 'plf'] as const).map((who) => {
        const c = spawn(process.execPath, ['-e', TRIER, who, file], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
        track(c);
        const lines = createInterface({ input: c.stdout });
        const said: string[] = [];
        const started = new Promise<void>((r) => lines.on('line', (l) => (said.push(l), l === 'trying' && r())));
        return { c, said, started };
      });
      await Promise.all(triers.map((t) => t.started));
      holder.send('block 6000');
      await holder.line(/^unblocked/);
      let taken = 0;
      for (const t of triers) {
        const done = new Promise<void>((r) => t.c.once('exit', () => r()));
        t.c.stdin.end('stop\n');
        await done;
        const line = t.said.find((l) => l.startsWith('tries ')) as string;
        expect(Number(line.split(' ')[1]), `${impl} holder: the trier tried`).toBeGreaterThan(0);
        expect(t.said.filter((l) => l.startsWith('error'))).toEqual([]);
        taken += Number(line.split(' ')[2]);
      }
      // A loss would be told within the holder thread's next look; its loop runs again now.
      holder.send('block 1');
      await holder.line(/^unblocked/);
      await sleep(1000);
      return { taken, compromised: holder.all().some((l) => l.startsWith('compromised')) };
    };
    const [mine, theirs] = await Promise.all([run('rw'), run('plf')]);
    expect(mine).toEqual({ taken: 0, compromised: false });
    // The same scene with proper-lockfile holding: its lock is taken over, and it learns it was compromised.
    expect(theirs.taken).toBeGreaterThan(0);
    expect(theirs.compromised).toBe(true);
  });

  it('onCompromised: only when the lock directory or the sidecar is removed or replaced by someone else; here the directory removed', async () => {
    const { file } = setup();
    const holder = new Proc('rw', file);
    await holder.line(/^held/);
    rmdirSync(`${file}.lock`);
    expect(await holder.line(/^compromised/)).toMatch(/^compromised ECOMPROMISED ENOENT: .*lock directory .* was removed by another process/);
    // A lost lock is released: its release function says so.
    holder.send('release');
    expect(await holder.line(/^release-failed/)).toMatch(/ERELEASED Lock is already released/);
  });

  it('onCompromised: a sidecar replaced by someone else', async (ctx) => {
    needs(ctx, OPEN_NAME_UNDER_WINE);
    const { file: second } = setup();
    const h2 = new Proc('rw', second);
    await h2.line(/^held/);
    rmSync(`${second}.lock.runwarden`);
    writeFileSync(`${second}.lock.runwarden`, 'someone else\n');
    expect(await h2.line(/^compromised/)).toMatch(/^compromised ECOMPROMISED .*lock sidecar .* was replaced by another process/);
  });
});

describe('side by side with genuine proper-lockfile processes', () => {
  it('each excludes the other while it holds, also past `stale`, and each takes the lock once the other released', async () => {
    for (const [holderImpl, otherImpl] of [['plf', 'rw'], ['rw', 'plf']] as const) {
      const { file } = setup();
      const holder = new Proc(holderImpl, file, { stale: 2000 });
      await holder.line(/^held/);
      expect(await attempt(otherImpl, file, { stale: 2000 }), `${otherImpl} against ${holderImpl}`).toBe('ELOCKED');
      await sleep(3000);
      expect(await attempt(otherImpl, file, { stale: 2000 }), `${otherImpl} against ${holderImpl}, past stale`).toBe('ELOCKED');
      holder.send('release');
      await holder.line(/^released/);
      expect(await attempt(otherImpl, file, { stale: 2000 }), `${otherImpl} after ${holderImpl} released`).toBe('held');
    }
  });

  it('each takes the lock once the other died: runwarden at once, proper-lockfile by its own stale rule', async () => {
    const { file } = setup();
    const holder = new Proc('rw', file);
    await holder.line(/^held/);
    await holder.kill9();
    expect(await attempt('plf', file, { stale: 2000 })).toBe('ELOCKED');
    const legacy = new Proc('plf', file, { stale: 2000, retries: { retries: 100, minTimeout: 200, maxTimeout: 200 } });
    await legacy.line(/^held/);
    // It judged the dead holder's directory by its mtime, as it judges its own kind's.
    await legacy.kill9();
    expect(await attempt('rw', file, { stale: 2000 })).toBe('ELOCKED');
    const mine = new Proc('rw', file, { stale: 2000, retries: { retries: 100, minTimeout: 200, maxTimeout: 200 } });
    expect(await mine.line(/^(held|failed)/)).toMatch(/^held/);
  });

  it('mutual exclusion: two runwarden and two proper-lockfile processes, 60 lock/release each on one file, never overlap', async () => {
    const { dir, file } = setup();
    const log = join(dir, 'log');
    writeFileSync(log, '');
    const procs = (['rw', 'plf', 'rw', 'plf'] as const).map((impl) => {
      const p = spawn(process.execPath, [STRESS, impl, file, log, '60'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
      track(p);
      let out = '';
      p.stdout.on('data', (b: Buffer) => (out += b.toString()));
      return new Promise<string>((r) => p.once('exit', () => r(out)));
    });
    const outs = await Promise.all(procs);
    for (const o of outs) expect(o).toMatch(/^done \d+ 60 /);
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(4 * 60 * 2);
    let holder: string | undefined;
    for (const [i, l] of lines.entries()) {
      const [kind, pid] = l.split(' ');
      if (kind === 'A') {
        expect(holder, `line ${i + 1}: ${l} while ${holder} held`).toBeUndefined();
        holder = pid;
      } else {
        expect(pid, `line ${i + 1}`).toBe(holder);
        holder = undefined;
      }
    }
  });
});

describe('bad input: the same code as proper-lockfile, never a hang, nothing half-made left', () => {
  /** Runs `make` on a fresh setup for each implementation, then one lockSync: its code (or 'ok'), and what is left in the directory. */
  function both(make: (file: string) => void, options: Record<string, unknown> = {}): Array<{ code: unknown; left: string[] }> {
    return [plf, rw].map((api) => {
      const { dir, file } = setup();
      make(file);
      const got = outcome(() => api.lockSync(file, { stale: 2000, ...options }));
      try {
        api.unlockSync(file);
      } catch {
        /* not held */
      }
      return { code: got === 'ok' ? 'ok' : got.code, left: readdirSync(dir).sort() };
    });
  }
  const old = (p: string): void => utimesSync(p, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));

  it('a regular file where the lock directory goes: ELOCKED while fresh, then what proper-lockfile says once stale (ENOTDIR on POSIX)', () => {
    expect(both((f) => writeFileSync(`${f}.lock`, 'x'))).toEqual([
      { code: 'ELOCKED', left: ['foo', 'foo.lock'] },
      { code: 'ELOCKED', left: ['foo', 'foo.lock'] },
    ]);
    // Once stale, proper-lockfile's rmdir of a file fails: ENOTDIR on POSIX; on Windows it reads as held.
    const stale = both((f) => (writeFileSync(`${f}.lock`, 'x'), old(`${f}.lock`)));
    expect(stale[1]).toEqual(stale[0]);
    expect(stale[0]).toEqual({ code: process.platform === 'win32' ? 'ELOCKED' : 'ENOTDIR', left: ['foo', 'foo.lock'] });
  });

  it('a FIFO where the lock directory goes: never opened, never a hang', (ctx) => {
    needs(ctx, 'posix: a FIFO (mkfifo)');
    const fifo = (f: string): void => {
      const r = spawnSync('mkfifo', [`${f}.lock`]);
      expect(r.status).toBe(0);
    };
    expect(both(fifo)).toEqual([
      { code: 'ELOCKED', left: ['foo', 'foo.lock'] },
      { code: 'ELOCKED', left: ['foo', 'foo.lock'] },
    ]);
  });

  it('a stale lock directory someone put a file in: ENOTEMPTY, as proper-lockfile; a fresh one: ELOCKED', () => {
    const withFile = (f: string): void => {
      mkdirSync(`${f}.lock`);
      writeFileSync(join(`${f}.lock`, 'note'), 'x');
    };
    expect(both((f) => (withFile(f), old(`${f}.lock`)))).toEqual([
      { code: 'ENOTEMPTY', left: ['foo', 'foo.lock'] },
      { code: 'ENOTEMPTY', left: ['foo', 'foo.lock'] },
    ]);
    expect(both(withFile).map((x) => x.code)).toEqual(['ELOCKED', 'ELOCKED']);
  });

  it('a stale lock directory of proper-lockfile\'s kind is taken over by both, and released clean', () => {
    expect(both((f) => (mkdirSync(`${f}.lock`), old(`${f}.lock`)))).toEqual([
      { code: 'ok', left: ['foo'] },
      { code: 'ok', left: ['foo'] },
    ]);
  });

  it('a directory where the sidecar goes: the lock is taken as proper-lockfile takes it, and the odd directory left alone', () => {
    const { dir, file } = setup();
    mkdirSync(`${file}.lock.runwarden`);
    const release = rw.lockSync(file);
    expect(rw.checkSync(file)).toBe(true);
    expect(outcome(() => rw.lockSync(file))).toMatchObject({ code: 'ELOCKED' });
    release();
    expect(readdirSync(dir).sort()).toEqual(['foo', 'foo.lock.runwarden']);
    expect(lstatSync(`${file}.lock.runwarden`).isDirectory()).toBe(true);
  });

  it('a read-only filesystem: EROFS from both', (ctx) => {
    needs(ctx, 'root', 'mount');
    const base = tempDir('rw-lockfile-ro-');
    const mnt = join(base, 'ro');
    mkdirSync(mnt);
    expect(spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'rw-lockfile', mnt]).status).toBe(0);
    mounts.push(mnt);
    writeFileSync(join(mnt, 'foo'), '');
    expect(spawnSync('mount', ['-o', 'remount,ro', mnt]).status).toBe(0);
    for (const api of [plf, rw]) expect(outcome(() => api.lockSync(join(mnt, 'foo')))).toMatchObject({ code: 'EROFS' });
    expect(readdirSync(mnt)).toEqual(['foo']);
  });

  it('a full filesystem (no inode left): ENOSPC from both, nothing left', (ctx) => {
    needs(ctx, 'root', 'mount');
    const base = tempDir('rw-lockfile-full-');
    const mnt = join(base, 'full');
    mkdirSync(mnt);
    expect(spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,nr_inodes=3', 'rw-lockfile', mnt]).status).toBe(0);
    mounts.push(mnt);
    writeFileSync(join(mnt, 'foo'), '');
    // Fill the inodes that are left.
    for (let i = 0; ; i++) {
      try {
        writeFileSync(join(mnt, `fill-${i}`), '');
      } catch {
        break;
      }
    }
    const before = readdirSync(mnt).sort();
    for (const api of [plf, rw]) expect(outcome(() => api.lockSync(join(mnt, 'foo')))).toMatchObject({ code: 'ENOSPC' });
    expect(readdirSync(mnt).sort()).toEqual(before);
  });
});

describe('on a filesystem whose flock is not known to be local', () => {
  it('a FUSE mount (bindfs): no sidecar, the lock is proper-lockfile\'s mkdir and mtime, and runwarden processes still exclude each other', async (ctx) => {
    needs(ctx, 'root', 'mount', 'fuse', 'bindfs');
    const base = tempDir('rw-lockfile-fuse-');
    const src = join(base, 'src');
    const mnt = join(base, 'mnt');
    mkdirSync(src);
    mkdirSync(mnt);
    expect(spawnSync('bindfs', [src, mnt]).status).toBe(0);
    mounts.push(mnt);
    const file = join(mnt, 'foo');
    writeFileSync(file, '');
    const holder = new Proc('rw', file, { stale: 2000 });
    await holder.line(/^held/);
    expect(readdirSync(mnt).sort()).toEqual(['foo', 'foo.lock']);
    expect(await attempt('rw', file, { stale: 2000 })).toBe('ELOCKED');
    await sleep(3000);
    // Past stale, the holder's thread keeps the mtime fresh.
    expect(await attempt('rw', file, { stale: 2000 })).toBe('ELOCKED');
    holder.send('release');
    await holder.line(/^released/);
    expect(readdirSync(mnt)).toEqual(['foo']);
  });
});
