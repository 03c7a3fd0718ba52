/**
 * The filesystem gate (CONTRACT §4.2 step 2) on real filesystems: local ones are
 * probed, a FUSE mount is not, and on a non-local filesystem the lock file is
 * never opened (proved with strace, with a positive control showing that the
 * same trace does see the open on a local filesystem).
 *
 * The two mount tests need root, and the FUSE one also /dev/fuse, Debian's
 * bindfs and strace. Without them they are skipped with the reason and named
 * in the run's last line (test/helpers/prereq.ts); under CI or
 * RUNWARDEN_TEST_STRICT=1 they FAIL instead: a gate that was not tested must
 * not read as a gate that passed. With everything present, a mount that still
 * cannot be made fails with the reason.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DARWIN_LOCAL_FS, describeFsType, filesystemType, LINUX_LOCAL_FS, probeLock } from '../src/index.js';
import { cleanupTemp, killAll, ROOT, startHolder, tempDir } from './helpers/lock-procs.js';
import { needs, testedPlatform } from './helpers/prereq.js';

const MARKED = 'oh-my-graph-lock 1\n1\n';
const mounts: string[] = [];
let base: string;

function mustRun(cmd: string, args: string[], why: string): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 60_000 });
  if (r.error || r.status !== 0) {
    throw new Error(
      `CANNOT TEST THE FILESYSTEM GATE: ${why} failed (${cmd} ${args.join(' ')}): ` +
        `${r.error?.message ?? r.stderr.trim()}. Needs root, /dev/fuse and Debian's bindfs (.ci/run installs it).`,
    );
  }
}

function unmountAll(): void {
  for (const m of mounts.splice(0).reverse()) {
    spawnSync('umount', [m]);
    spawnSync('fusermount', ['-u', m]);
  }
}

/**
 * Runs a probe in a child under strace; returns the probe result and the
 * syscalls touching lockPath: by path, or (the probe opens the run directory
 * once and works relative to it) by that directory's descriptor.
 */
function tracedProbe(lockPath: string): { result: unknown; opens: string[]; statfs: string[] } {
  const log = join(base, `strace-${Math.random().toString(36).slice(2)}.log`);
  const script = `import('${ROOT}/dist/index.js').then(m => process.stdout.write(JSON.stringify(m.probeLock(${JSON.stringify(lockPath)}))))`;
  const r = spawnSync('strace', ['-f', '-qq', '-e', 'trace=open,openat,openat2,statfs,fstatfs', '-o', log, process.execPath, '-e', script], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (r.error || r.status !== 0) throw new Error(`strace run failed: ${r.error?.message ?? r.stderr}`);
  const lines = readFileSync(log, 'utf8').split('\n');
  const dir = lockPath.slice(0, lockPath.lastIndexOf('/'));
  const name = lockPath.slice(lockPath.lastIndexOf('/') + 1);
  const dirFds = new Set<string>();
  for (const l of lines) {
    const m = /openat\(AT_FDCWD, "([^"]*)", [^)]*O_DIRECTORY[^)]*\) = (\d+)$/.exec(l);
    if (m && m[1] === dir) dirFds.add(m[2]);
  }
  const viaDir = (l: string, call: RegExp): boolean => [...dirFds].some((fd) => call.test(l) && l.includes(`(${fd}, `));
  return {
    result: JSON.parse(r.stdout),
    opens: lines.filter((l) => /\bopen(at2?)?\(/.test(l) && (l.includes(lockPath) || (viaDir(l, /\bopenat2?\(/) && l.includes(`"${name}"`)))),
    statfs: lines.filter((l) => (l.includes('statfs(') && l.includes(dir)) || viaDir(l, /\bfstatfs\(/)),
  };
}

beforeAll(() => {
  base = tempDir('rw-fs-');
});
afterEach(() => killAll());
afterAll(async () => {
  await killAll();
  unmountAll();
  cleanupTemp();
});

describe('filesystem gate', () => {
  it('the test temp dir is on a known-local filesystem and is probed', () => {
    const t = filesystemType(base);
    const local = testedPlatform() === 'darwin' ? DARWIN_LOCAL_FS.includes(t as string) : LINUX_LOCAL_FS.has(t as number);
    expect(local, `temp dir is ${describeFsType(t)}`).toBe(true);
    const d = join(base, 'local');
    mkdirSync(d);
    writeFileSync(join(d, 'resume.lock'), MARKED);
    expect(probeLock(join(d, 'resume.lock'))).toEqual({ liveness: 'free', reason: 'flock-free' });
  });

  it('tmpfs reads as local: free and held are both told', async (ctx) => {
    needs(ctx, 'root', 'mount');
    const mnt = join(base, 'tmpfs');
    mkdirSync(mnt);
    mustRun('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'rw-test', mnt], 'mounting a tmpfs');
    mounts.push(mnt);
    expect(filesystemType(mnt)).toBe(0x01021994);
    const lock = join(mnt, 'run', 'resume.lock');
    const h = await startHolder(lock);
    expect(probeLock(lock)).toEqual({ liveness: 'held', reason: 'flock-held' });
    h.proc.kill('SIGKILL');
    await new Promise((r) => h.proc.once('exit', r));
    expect(probeLock(lock)).toEqual({ liveness: 'free', reason: 'flock-free' });
  });

  it('a FUSE mount (bindfs) reads unknown/fs-not-local, and the lock file is never opened', (ctx) => {
    needs(ctx, 'root', 'mount', 'fuse', 'bindfs', 'strace');
    const src = join(base, 'fuse-src');
    const mnt = join(base, 'fuse-mnt');
    mkdirSync(join(src, 'run'), { recursive: true });
    mkdirSync(mnt);
    writeFileSync(join(src, 'run', 'resume.lock'), MARKED);
    mustRun('bindfs', [src, mnt], 'mounting a FUSE filesystem with bindfs');
    mounts.push(mnt);
    expect(describeFsType(filesystemType(mnt))).toContain('fuse');

    const onFuse = join(mnt, 'run', 'resume.lock');
    const traced = tracedProbe(onFuse);
    expect(traced.result).toMatchObject({ liveness: 'unknown', reason: 'fs-not-local' });
    expect(traced.statfs.length, 'the probe did look at the filesystem type').toBeGreaterThan(0);
    expect(traced.opens, 'the lock file must not be opened on a non-local filesystem').toEqual([]);

    // Positive control: the same trace sees the open on a local filesystem,
    // so an empty list above is evidence, not a blind spot.
    const local = tracedProbe(join(src, 'run', 'resume.lock'));
    expect(local.result).toEqual({ liveness: 'free', reason: 'flock-free' });
    expect(local.opens.length).toBeGreaterThan(0);
  });

  it('a mount judged local is remembered only for that mount: another mount at the same place is judged afresh', async (ctx) => {
    needs(ctx, 'root', 'mount', 'fuse', 'bindfs', 'strace');
    const mnt = join(base, 'memo-mnt');
    const src = join(base, 'memo-src');
    mkdirSync(mnt);
    mkdirSync(join(src, 'run'), { recursive: true });
    writeFileSync(join(src, 'run', 'resume.lock'), MARKED);
    mustRun('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'rw-memo', mnt], 'mounting a tmpfs');
    mounts.push(mnt);
    mkdirSync(join(mnt, 'run'));
    writeFileSync(join(mnt, 'run', 'resume.lock'), MARKED);
    const lock = join(mnt, 'run', 'resume.lock');

    // One process probes the tmpfs twice (the second from memory), waits while
    // the tmpfs goes and a FUSE mount takes its place, and probes again.
    const script = `
      const { probeLock } = await import(${JSON.stringify(join(ROOT, 'dist', 'index.js'))});
      const { statSync } = await import('node:fs');
      const { createInterface } = await import('node:readline');
      const lock = process.argv[1];
      const mark = (n) => statSync('/rw-memo-mark-' + n, { throwIfNoEntry: false });
      const out = [probeLock(lock)];
      mark(1); out.push(probeLock(lock)); mark(2);
      console.log(JSON.stringify({ pid: process.pid, step: 'swap' }));
      for await (const _ of createInterface({ input: process.stdin })) break;
      mark(3); out.push(probeLock(lock)); mark(4);
      console.log(JSON.stringify({ pid: process.pid, out }));
      process.exit(0);`;
    const log = join(base, 'memo-strace.log');
    const child = spawn('strace', ['-f', '-qq', '-o', log, process.execPath, '--input-type=module', '-e', script, lock], { stdio: ['pipe', 'pipe', 'inherit'] });
    let final: { pid: number; out: { liveness: string; reason: string }[] } | undefined;
    for await (const line of createInterface({ input: child.stdout })) {
      const msg = JSON.parse(line) as { step?: string; pid: number; out?: { liveness: string; reason: string }[] };
      if (msg.step === 'swap') {
        mustRun('umount', [mnt], 'unmounting the tmpfs');
        mounts.pop();
        mustRun('bindfs', [src, mnt], 'mounting a FUSE filesystem with bindfs');
        mounts.push(mnt);
        expect(describeFsType(filesystemType(mnt))).toContain('fuse');
        child.stdin.write('go\n');
      } else {
        final = msg as typeof final;
      }
    }
    expect(final?.out).toEqual([
      { liveness: 'free', reason: 'flock-free' },
      { liveness: 'free', reason: 'flock-free' },
      expect.objectContaining({ liveness: 'unknown', reason: 'fs-not-local' }),
    ]);
    const between = (from: number, to: number): string[] => {
      const lines = readFileSync(log, 'utf8').split('\n');
      const a = lines.findIndex((l) => l.includes(`/rw-memo-mark-${from}`));
      const b = lines.findIndex((l) => l.includes(`/rw-memo-mark-${to}`));
      return lines.slice(a + 1, b).filter((l) => l.startsWith(`${final?.pid} `));
    };
    // Positive control: the second tmpfs probe came from memory (no fstatfs), yet still opened the file.
    const second = between(1, 2);
    expect(second.filter((l) => /\bfstatfs\(/.test(l)), second.join('\n')).toEqual([]);
    expect(second.filter((l) => /\bopenat2?\(/.test(l) && l.includes('"resume.lock"')).length, second.join('\n')).toBe(1);
    // The FUSE mount at the same place was judged afresh, and its lock file never opened.
    const third = between(3, 4);
    expect(third.filter((l) => /\bfstatfs\(/.test(l)).length, third.join('\n')).toBeGreaterThan(0);
    expect(third.filter((l) => /\bopenat2?\(/.test(l) && l.includes('"resume.lock"') && !l.includes('O_PATH')), third.join('\n')).toEqual([]);
  });

  it('seam: a filesystem type outside the list (stand-in for NFS) is unknown and the file is not opened', () => {
    const d = join(base, 'seam');
    mkdirSync(d);
    // A directory in place of the lock file would read not-regular-file if it
    // were opened; fs-not-local proves the gate answered first.
    mkdirSync(join(d, 'resume.lock'));
    expect(probeLock(join(d, 'resume.lock'), { localFsTypes: [] })).toMatchObject({ liveness: 'unknown', reason: 'fs-not-local' });
    expect(probeLock(join(d, 'resume.lock'))).toMatchObject({ reason: 'not-regular-file' });
  });
});

