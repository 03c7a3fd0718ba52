/**
 * Opening under the runs root by directory descriptor (CONTRACT §1.3): the
 * addon's openDirNoFollow / openAt / fsTypeFd against the real
 * kernel; no descriptor leaked by any reader or writer path; `exec` refusing
 * a run directory that is a symlink, writing nothing through it; and the
 * filesystem gate judging the lock file itself, with a real FUSE file
 * bind-mounted alone into a local run directory.
 */
import { spawnSync } from 'node:child_process';
import { constants, closeSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { native } from '../src/kernel/native.js';
import { run } from './helpers/exec-procs.js';
import { cleanupTemp, killAll, ROOT, tempDir } from './helpers/lock-procs.js';
import { lacking, needs } from './helpers/prereq.js';
import { eventLine } from './helpers/events.js';

const MARKED = 'oh-my-graph-lock 1\n4242\n';
const OPEN_LEG = eventLine({ event: 'run_started' }, { ts: '2026-12-01T10:00:00Z' });
const mounts: string[] = [];

afterEach(() => killAll());
afterAll(async () => {
  await killAll();
  for (const m of mounts.splice(0).reverse()) spawnSync('umount', [m]);
  cleanupTemp();
});

function codeOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return undefined;
}

/** The O_CLOEXEC bit as /proc/self/fdinfo shows a descriptor's flags (octal). */
function cloexec(fd: number): boolean {
  const flags = /flags:\s+([0-7]+)/.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
  return flags !== null && (parseInt(flags[1], 8) & 0o2000000) !== 0;
}

describe('the addon: directories by descriptor', () => {
  it('openDirNoFollow opens a directory and refuses a symlink to one', (ctx) => {
    needs(ctx, 'linux: reads O_CLOEXEC from /proc/self/fdinfo');
    const base = tempDir('rw-dirfd-');
    mkdirSync(join(base, 'real'));
    symlinkSync(join(base, 'real'), join(base, 'link'));
    const n = native();
    const fd = n.openDirNoFollow(join(base, 'real'));
    try {
      expect(cloexec(fd)).toBe(true);
      expect(n.fsTypeFd(fd)).toBe(n.fsType(join(base, 'real')));
    } finally {
      closeSync(fd);
    }
    expect(['ENOTDIR', 'ELOOP']).toContain(codeOf(() => n.openDirNoFollow(join(base, 'link'))));
    expect(codeOf(() => n.openDirNoFollow(join(base, 'absent')))).toBe('ENOENT');
  });

  it('openAt opens one entry, never follows a link, and refuses anything but one entry', (ctx) => {
    needs(ctx, 'linux: reads O_CLOEXEC from /proc/self/fdinfo');
    const base = tempDir('rw-dirfd-');
    writeFileSync(join(base, 'file'), 'inside');
    writeFileSync(join(tempDir('rw-out-'), 'x'), 'outside');
    symlinkSync(join(base, 'file'), join(base, 'link'));
    const n = native();
    const d = n.openDirNoFollow(base);
    try {
      const fd = n.openAt(d, 'file', constants.O_RDONLY);
      expect(readFileSync(fd, 'utf8')).toBe('inside');
      expect(cloexec(fd)).toBe(true);
      closeSync(fd);
      // O_NOFOLLOW is added whatever the caller passes.
      expect(codeOf(() => n.openAt(d, 'link', constants.O_RDONLY))).toBe('ELOOP');
      for (const bad of ['..', '.', '', 'a/b', '../x']) expect(codeOf(() => n.openAt(d, bad, constants.O_RDONLY)), bad).toBe('ERR_INVALID_ARG_VALUE');
      // A Buffer name is taken byte for byte.
      const raw = n.openAt(d, Buffer.from('bytes-\xff', 'latin1'), constants.O_WRONLY | constants.O_CREAT, 0o600);
      closeSync(raw);
      expect(readdirSync(base, { encoding: 'buffer' }).some((b) => b.equals(Buffer.from('bytes-\xff', 'latin1')))).toBe(true);
    } finally {
      closeSync(d);
    }
  });
});

describe('no descriptor is leaked', () => {
  it('readers, the probe, the lock and a whole leg leave the descriptors as they found them (/dev/fd)', () => {
    const root = tempDir('rw-leak-');
    const outside = tempDir('rw-leak-out-');
    mkdirSync(join(root, 'a-ok'));
    writeFileSync(join(root, 'a-ok', 'events.jsonl'), OPEN_LEG);
    writeFileSync(join(root, 'a-ok', 'state.json'), '{"schema":3,"graph":{"name":"g","nodes":[]},"nodes":{}}');
    writeFileSync(join(root, 'a-ok', 'resume.lock'), MARKED);
    writeFileSync(join(root, 'a-ok', 'exec.pgid'), '999999\n');
    mkdirSync(join(root, 'b-fifo'));
    expect(spawnSync('mkfifo', [join(root, 'b-fifo', 'events.jsonl')]).status).toBe(0);
    mkdirSync(join(root, 'c-dir-stream', 'events.jsonl'), { recursive: true });
    symlinkSync(outside, join(root, 'd-link'));
    mkdirSync(join(root, 'e-lockdir', 'resume.lock'), { recursive: true });
    writeFileSync(join(root, 'e-lockdir', 'events.jsonl'), OPEN_LEG);
    const script = `
      import { readdirSync } from 'node:fs';
      const m = await import(${JSON.stringify(pathToFileURL(join(ROOT, 'dist', 'index.js')).href)});
      const { runLeg } = await import(${JSON.stringify(pathToFileURL(join(ROOT, 'dist', 'write', 'leg.js')).href)});
      const root = ${JSON.stringify(root)};
      // /dev/fd: linux and darwin both have it, so the darwin lane checks for leaks too.
      const count = () => readdirSync('/dev/fd').length;
      const quiet = (f) => { try { f(); } catch {} };
      async function work() {
        for (let i = 0; i < 40; i++) {
          for (const r of ['a-ok', 'b-fifo', 'c-dir-stream', 'd-link', 'e-lockdir', 'absent']) {
            quiet(() => m.runStatus(root + '/' + r));
            quiet(() => m.runDetail(root + '/' + r));
            m.probeLock(root + '/' + r + '/resume.lock');
          }
          m.listRuns(root);
          m.acquireLock(root + '/f-leg/resume.lock').release();
          quiet(() => m.acquireLock(root + '/d-link/resume.lock'));
          quiet(() => m.acquireLock(root + '/e-lockdir/resume.lock'));
        }
        for (let i = 0; i < 3; i++) await runLeg(root + '/f-leg', ['true'], { runId: 'f-leg', onNotice: () => {} });
        try { await runLeg(root + '/d-link', ['true'], { runId: 'd-link' }); } catch {}
      }
      await work(); // first use: the addon, module state
      const before = count();
      await work();
      process.stdout.write(JSON.stringify({ before, after: count() }));
    `;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 300_000 });
    expect(r.status, r.stderr).toBe(0);
    const { before, after } = JSON.parse(r.stdout) as { before: number; after: number };
    expect(after, 'open descriptors after the same work again').toBe(before);
    expect(readdirSync(outside), 'nothing was written through the symlink').toEqual([]);
  });
});

describe('exec and a run directory that is a symlink', () => {
  it('refuses it in one line (exit 2) and writes nothing outside the root', async (ctx) => {
    needs(ctx, 'not-wine: symbolic links (Wine 8 reports one made and makes nothing)');
    const root = tempDir('rw-exec-link-');
    const outside = tempDir('rw-exec-out-');
    symlinkSync(outside, join(root, 'r1'));
    const r = await run(['exec', 'r1', '--root', root, '--', 'sh', '-c', 'echo ran > ran.txt']);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/symlink/);
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(readdirSync(outside)).toEqual([]);
  });

  it('a leg whose run directory became a symlink after the command line was checked is refused there, nothing written through it', async (ctx) => {
    needs(ctx, 'not-wine: symbolic links (Wine 8 reports one made and makes nothing)');
    const root = tempDir('rw-exec-link-');
    const outside = tempDir('rw-exec-out-');
    symlinkSync(outside, join(root, 'r2'));
    const { runLeg } = await import('../dist/write/leg.js');
    await expect(runLeg(join(root, 'r2'), ['true'], { runId: 'r2' })).rejects.toMatchObject({ code: 'ENOTREGULAR' });
    expect(readdirSync(outside)).toEqual([]);
  });
});

describe('the filesystem gate judges the lock file itself', () => {
  it('a resume.lock alone bind-mounted from a FUSE filesystem is unknown (fs-not-local), never probed free', async (ctx) => {
    needs(ctx, 'root', 'mount', 'fuse', 'bindfs');
    const { probeLock, runStatus } = await import('../dist/index.js');
    const base = tempDir('rw-gate-file-');
    const src = join(base, 'src');
    const fuse = join(base, 'fuse');
    const runDir = join(base, 'runs', 'r');
    mkdirSync(src);
    mkdirSync(fuse);
    mkdirSync(runDir, { recursive: true });
    writeFileSync(join(src, 'resume.lock'), MARKED);
    writeFileSync(join(runDir, 'resume.lock'), MARKED);
    writeFileSync(join(runDir, 'events.jsonl'), OPEN_LEG);
    const lock = join(runDir, 'resume.lock');

    // Control: the local file, marked and free, with an open leg: the run reads ABANDONED.
    expect(probeLock(lock)).toEqual({ liveness: 'free', reason: 'flock-free' });
    expect(runStatus(runDir).status).toBe('ABANDONED');

    const b = spawnSync('bindfs', [src, fuse], { encoding: 'utf8' });
    expect(b.status, `bindfs: ${b.stderr}`).toBe(0);
    mounts.push(fuse);
    const m = spawnSync('mount', ['--bind', join(fuse, 'resume.lock'), lock], { encoding: 'utf8' });
    expect(m.status, `mount --bind: ${m.stderr}`).toBe(0);
    mounts.push(lock);

    // The run directory is local; the file in it is FUSE: unknown, and the run stays in flight.
    expect(probeLock(lock)).toMatchObject({ liveness: 'unknown', reason: 'fs-not-local' });
    if (lacking('strace').length === 0) {
      // The FUSE file was only looked at (an O_PATH descriptor), never opened for I/O.
      const log = join(base, 'strace.log');
      const script = `import(${JSON.stringify(pathToFileURL(join(ROOT, 'dist', 'index.js')).href)}).then(m => process.stdout.write(JSON.stringify(m.probeLock(${JSON.stringify(lock)}))))`;
      const t = spawnSync('strace', ['-f', '-qq', '-e', 'trace=open,openat,openat2', '-o', log, process.execPath, '-e', script], { encoding: 'utf8', timeout: 60_000 });
      expect(t.status, t.stderr).toBe(0);
      expect(JSON.parse(t.stdout)).toMatchObject({ reason: 'fs-not-local' });
      const opens = readFileSync(log, 'utf8').split('\n').filter((l) => l.includes('"resume.lock"'));
      expect(opens.length, 'the probe did look at the lock file').toBeGreaterThan(0);
      expect(opens.filter((l) => !l.includes('O_PATH')), 'opened only as O_PATH').toEqual([]);
    }
    const report = runStatus(runDir);
    expect(report.status).toBe('RUNNING');
    expect(report.reason).toBe('fs-not-local');
  });
});
