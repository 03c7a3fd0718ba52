/**
 * probeLock over every shape a lock path can take (CONTRACT §3.2, §4.2), and the
 * proof that a probe changes nothing on disk.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { classifyHead, parseLegacyPid, probeLock, processPresence, PROBE_REASONS } from '../src/index.js';
import { markedPid } from '../src/contract/marker.js';
import { fingerprint } from './helpers/tree.js';
import { cleanupTemp, CLI, killAll, ROOT, startHolder, tempDir } from './helpers/lock-procs.js';
import { DIST_URL, RELEASED } from './helpers/portable.js';
import { needs } from './helpers/prereq.js';

const servers: Server[] = [];
afterEach(async () => {
  await killAll();
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(() => r(undefined)))));
  cleanupTemp();
});

/** A released leg's lock file here (on Windows with the lock label: test/helpers/portable.ts). */
const MARKED = RELEASED;
const POSIX = process.platform !== 'win32';

/** A pid that belonged to a process which has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', '']);
  const pid = r.pid;
  expect(processPresence(pid)).toBe('gone');
  return pid;
}

function fileWith(content: string | Buffer): string {
  const p = join(tempDir(), 'resume.lock');
  writeFileSync(p, content);
  return p;
}

describe('strict legacy pid parse (CONTRACT §3.2)', () => {
  const cases: Array<[string, number | undefined]> = [
    ['1234', 1234],
    ['1234\n', 1234],
    [' \t1234 \t\n', 1234],
    ['1234\r\n', 1234],
    ['\r1234\r', 1234],
    ['1', 1],
    ['2147483647', 2147483647],
    ['2147483648', undefined],
    ['0', undefined],
    ['-1234', undefined],
    ['+1234', undefined],
    ['01234', undefined],
    ['00', undefined],
    ['1234\n5678\n', undefined],
    ['1234\n\n', undefined],
    ['1234x', undefined],
    ['12 34', undefined],
    ['0x10', undefined],
    ['1e3', undefined],
    ['9'.repeat(200), undefined],
    ['', undefined],
    ['\n', undefined],
    ['  \n', undefined],
    ['١٢٣', undefined], // non-ASCII digits
  ];
  for (const [text, want] of cases) {
    it(`${JSON.stringify(text.length > 20 ? text.slice(0, 12) + '…' : text)} → ${want ?? 'refused'}`, () => {
      const b = Buffer.from(text, 'utf8');
      expect(parseLegacyPid(b, b.length, b.length)).toBe(want);
    });
  }
  it('a file larger than what was read is never one pid line', () => {
    const b = Buffer.from('1234\n');
    expect(parseLegacyPid(b, b.length, 4096)).toBeUndefined();
  });
});

describe('head classification (CONTRACT §3.2)', () => {
  const cases: Array<[string, string]> = [
    ['oh-my-graph-lock 1\n123\n', 'marked'],
    ['oh-my-graph-lock 1', 'marked'],
    ['oh-my-graph-lock 1\r\n123\r\n', 'marked'],
    ['oh-my-graph-lock 1\r\r\n', 'marked'],
    ['oh-my-graph-lock 1 \n', 'unmarked'],
    ['oh-my-graph-lock 10\n', 'future'],
    ['oh-my-graph-lock 2\n1\n', 'future'],
    ['oh-my-graph-lock x\n', 'unmarked'],
    ['oh-my-graph-lock \n', 'unmarked'],
    ['OH-MY-GRAPH-LOCK 1\n', 'unmarked'],
    [' oh-my-graph-lock 1\n', 'unmarked'],
    ['1234\n', 'unmarked'],
    ['', 'empty'],
  ];
  for (const [text, want] of cases) {
    it(`${JSON.stringify(text)} is ${want}`, () => {
      expect(classifyHead(Buffer.from(text))).toBe(want);
    });
  }
  it('reads the label pid from a marked file', () => {
    const b = Buffer.from(MARKED);
    expect(markedPid(b, b.length)).toBe(4242);
  });
});

describe('probeLock on files', () => {
  it('a missing lock file is unknown (absence is not evidence)', () => {
    expect(probeLock(join(tempDir(), 'resume.lock'))).toMatchObject({ liveness: 'unknown', reason: 'missing' });
  });

  it('a missing run directory is unknown', () => {
    expect(probeLock(join(tempDir(), 'nope', 'resume.lock'))).toMatchObject({ liveness: 'unknown', reason: 'missing' });
  });

  it('an empty file is unknown (a leg between create and lock)', () => {
    expect(probeLock(fileWith(''))).toMatchObject({ liveness: 'unknown', reason: 'empty-file' });
  });

  it('a marked, unheld file is free', () => {
    expect(probeLock(fileWith(MARKED))).toEqual({ liveness: 'free', reason: 'flock-free' });
  });

  it('a marked file held by a live leg is held', async () => {
    const lock = join(tempDir(), 'run', 'resume.lock');
    await startHolder(lock);
    expect(probeLock(lock)).toEqual({ liveness: 'held', reason: 'flock-held' });
  });

  it('a future marker is unknown, never free', () => {
    expect(probeLock(fileWith('oh-my-graph-lock 2\n1\n'))).toMatchObject({ liveness: 'unknown', reason: 'future-marker' });
  });

  it('a pre-flock file whose pid is gone reads free', () => {
    const pid = deadPid();
    expect(probeLock(fileWith(`${pid}\n`))).toMatchObject({ liveness: 'free', reason: 'legacy-pid-gone' });
  });

  it('a pre-flock file whose pid is alive is unknown (the pid may be recycled)', () => {
    const r = probeLock(fileWith(`${process.pid}\n`));
    expect(r).toMatchObject({ liveness: 'unknown', reason: 'legacy-pid-alive' });
    expect(JSON.stringify(r)).not.toContain(String(process.pid));
  });

  it('a pre-flock file naming a process this user may not signal (present) is unknown', (ctx) => {
    // pid 1, init, on POSIX systems (kill(1, 0) fails with EPERM); pid 4, the System process, on Windows
    // (OpenProcess fails with ERROR_ACCESS_DENIED).
    if (!POSIX) needs(ctx, 'not-wine: the System process (pid 4), which Wine does not have');
    expect(probeLock(fileWith(POSIX ? '1\n' : '4\n'))).toMatchObject({ liveness: 'unknown', reason: 'legacy-pid-alive' });
  });

  it('pre-flock files that are not exactly one pid are unknown and never reach kill()', () => {
    for (const text of ['0\n', '-1\n', '01\n', '+5\n', '12\n34\n', '5x\n', '9'.repeat(200), '2147483648\n', 'garbage']) {
      expect(probeLock(fileWith(text)), text).toMatchObject({ liveness: 'unknown', reason: 'legacy-unparsable' });
    }
  });

  it('a CRLF pre-flock pid line parses', () => {
    const pid = deadPid();
    expect(probeLock(fileWith(`${pid}\r\n`))).toMatchObject({ liveness: 'free', reason: 'legacy-pid-gone' });
  });

  it('a directory in place of the lock file is unknown', () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'resume.lock'));
    expect(probeLock(join(dir, 'resume.lock'))).toMatchObject({ liveness: 'unknown', reason: 'not-regular-file', detail: 'directory' });
  });

  it('a FIFO answers at once, unknown, without waiting for a writer', (ctx) => {
    needs(ctx, 'posix: a FIFO (mkfifo)');
    const dir = tempDir();
    const fifo = join(dir, 'resume.lock');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    // If the probe blocked on the FIFO this call would never return (and the
    // test would time out); the child below proves the same in a bounded way.
    const r = spawnSync(process.execPath, ['-e', `import(${JSON.stringify(DIST_URL)}).then(m => console.log(JSON.stringify(m.probeLock(${JSON.stringify(fifo)}))))`], {
      timeout: 60_000,
      encoding: 'utf8',
    });
    expect(r.error).toBeUndefined();
    expect(JSON.parse(r.stdout)).toMatchObject({ liveness: 'unknown', reason: 'not-regular-file', detail: 'fifo' });
    expect(probeLock(fifo)).toMatchObject({ liveness: 'unknown', reason: 'not-regular-file' });
  });

  it('a symlink is not followed, even to a free marked file', (ctx) => {
    needs(ctx, 'not-wine: symbolic links (Wine 8 reports one made and makes nothing)');
    const dir = tempDir();
    writeFileSync(join(dir, 'real'), MARKED);
    symlinkSync(join(dir, 'real'), join(dir, 'resume.lock'));
    expect(probeLock(join(dir, 'real')).liveness).toBe('free');
    expect(probeLock(join(dir, 'resume.lock'))).toMatchObject({ liveness: 'unknown', reason: 'not-regular-file', detail: 'symlink' });
  });

  it('a socket is unknown', async (ctx) => {
    needs(ctx, 'posix: a socket in the filesystem (on Windows a path given to listen names a pipe, outside it)');
    const dir = tempDir();
    const sock = join(dir, 'resume.lock');
    const server = createServer();
    servers.push(server);
    await new Promise<void>((r) => server.listen(sock, () => r()));
    expect(lstatSync(sock).isSocket()).toBe(true);
    expect(probeLock(sock)).toMatchObject({ liveness: 'unknown', reason: 'not-regular-file', detail: 'socket' });
  });

  it('a 10 MB file of garbage is unknown, and only its head is read', () => {
    const big = Buffer.alloc(10 * 1024 * 1024, 0x41);
    expect(probeLock(fileWith(big))).toMatchObject({ liveness: 'unknown', reason: 'legacy-unparsable' });
  });

  it('a 10 MB file that starts with the marker is judged by its flock', () => {
    const big = Buffer.alloc(10 * 1024 * 1024, 0x20);
    Buffer.from(MARKED).copy(big);
    expect(probeLock(fileWith(big))).toEqual({ liveness: 'free', reason: 'flock-free' });
  });

  it('a file the reader may not open is unknown (run as an unprivileged user)', (ctx) => {
    needs(ctx, 'posix: modes and another uid (the Windows case, a file opened without sharing, is in test/windows.test.ts)');
    // As root the probe runs as uid 65534 on a file only root may read; as any
    // other user (already unprivileged) it runs as us on a file we made mode 000.
    const asRoot = process.getuid?.() === 0;
    const dir = tempDir();
    chmodSync(dir, 0o755);
    const lock = join(dir, 'resume.lock');
    writeFileSync(lock, MARKED, { mode: 0o600 });
    if (!asRoot) chmodSync(lock, 0o000);
    const r = spawnSync(process.execPath, ['-e', `import(${JSON.stringify(DIST_URL)}).then(m => console.log(JSON.stringify(m.probeLock(${JSON.stringify(lock)}))))`], {
      ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
      timeout: 60_000,
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toMatchObject({ liveness: 'unknown', reason: 'open-error', detail: 'open: EACCES' });
  });

  it('every reason it can return is in the documented set', () => {
    expect(new Set(PROBE_REASONS).size).toBe(PROBE_REASONS.length);
    // Every reason the code can give: each `answer(liveness, 'reason'` and `reason: 'reason'` in the
    // modules that make probe answers (the probe, and the status layer's lock-replaced).
    const given = new Set<string>();
    for (const file of ['src/lock/probe.ts', 'src/status/inspect.ts']) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      for (const m of text.matchAll(/answer\('(?:held|free|unknown)', '([a-z-]+)'|liveness: '(?:held|free|unknown)', reason: '([a-z-]+)'/g)) given.add((m[1] ?? m[2]));
    }
    expect(given.size, 'the scan found the answers (a rewrite of their spelling must update it)').toBeGreaterThanOrEqual(10);
    expect([...given].filter((r) => !(PROBE_REASONS as readonly string[]).includes(r))).toEqual([]);
    // The documented set: CONTRACT §4.2's list and the library guide's (docs/library.md), each exactly PROBE_REASONS, in order.
    const listAfter = (file: string, lead: string): string[] => {
      const text = readFileSync(join(ROOT, file), 'utf8').replace(/\s+/g, ' ');
      const at = text.indexOf(lead);
      expect(at, `${file} has ${JSON.stringify(lead)}`).toBeGreaterThan(-1);
      // The run of code spans right after the lead, joined by commas and "and".
      const run = /^\s*(?:`[a-z-]+`(?:,\s*(?:and\s+)?|\s+and\s+)?)+/.exec(text.slice(at + lead.length))?.[0] ?? '';
      return [...run.matchAll(/`([a-z-]+)`/g)].map((m) => m[1]);
    };
    expect(listAfter('docs/CONTRACT.md', '(`PROBE_REASONS`):')).toEqual([...PROBE_REASONS]);
    expect(listAfter('docs/library.md', 'the closed set of probe reasons:')).toEqual([...PROBE_REASONS]);
    // And the type's union has the same members as the list (types.ts declares both).
    const types = readFileSync(join(ROOT, 'src/contract/types.ts'), 'utf8');
    const union = /export type ProbeReason =([^;]+);/.exec(types)?.[1] ?? '';
    expect([...union.matchAll(/'([a-z-]+)'/g)].map((m) => m[1])).toEqual([...PROBE_REASONS]);
  });
});

describe('a probe changes nothing on disk', () => {
  it('over every file shape, via the library and the CLI', async () => {
    const root = tempDir();
    const mk = (name: string, content?: string | Buffer) => {
      const d = join(root, name);
      mkdirSync(d);
      if (content !== undefined) writeFileSync(join(d, 'resume.lock'), content);
      return d;
    };
    const dirs = [
      mk('missing'),
      mk('empty', ''),
      mk('marked', MARKED),
      mk('future', 'oh-my-graph-lock 9\n'),
      mk('legacy-gone', `${deadPid()}\n`),
      mk('legacy-alive', `${process.pid}\n`),
      mk('garbage', Buffer.from([0, 1, 2, 255, 10, 13])),
      mk('big', Buffer.alloc(1024 * 1024, 0x42)),
    ];
    const dirDir = mk('dir');
    mkdirSync(join(dirDir, 'resume.lock'));
    const heldDir = join(root, 'held');
    await startHolder(join(heldDir, 'resume.lock'));
    dirs.push(dirDir, heldDir);
    // The shapes only POSIX systems have in a directory (and links, which Wine does not make).
    if (POSIX) {
      const fifoDir = mk('fifo');
      spawnSync('mkfifo', [join(fifoDir, 'resume.lock')]);
      const linkDir = mk('link');
      symlinkSync(join(root, 'marked', 'resume.lock'), join(linkDir, 'resume.lock'));
      const sockDir = mk('sock');
      const server = createServer();
      servers.push(server);
      await new Promise<void>((r) => server.listen(join(sockDir, 'resume.lock'), () => r()));
      dirs.push(fifoDir, linkDir, sockDir);
    }

    const before = fingerprint(root);
    await new Promise((r) => setTimeout(r, 20)); // so any write would move an mtime
    for (let i = 0; i < 50; i++) for (const d of dirs) probeLock(join(d, 'resume.lock'));
    for (const d of dirs) {
      const r = spawnSync(process.execPath, [CLI, 'probe', d, '--json'], { encoding: 'utf8', timeout: 60_000 });
      expect(r.status, r.stderr).toBe(0);
    }
    expect(fingerprint(root)).toEqual(before);
  });
});
