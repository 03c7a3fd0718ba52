/**
 * `runwarden exec` with real processes: the stream it writes, its exit codes,
 * its refusals (exit 75, nothing appended, nothing run), signal forwarding,
 * and the orphan evidence a SIGKILLed leg leaves for readers.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { groupPresence, probeLock, runStatus, WriteError } from '../src/index.js';
import { runLeg } from '../src/write/leg.js';
import { events, run, start } from './helpers/exec-procs.js';
import { cleanupTemp, CLI, killAll, tempDir, track, until, waitExit } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';
import { exitWith, leftByLeg, RUNS_ON, touching } from './helpers/portable.js';

/** Modes, signals and process groups: POSIX systems only (CONTRACT §5.8 rules 4 to 6). */
const POSIX = process.platform !== 'win32';
const SIGNALS = 'posix: signals sent to another process and forwarded to its command (Windows has none; its kill is TerminateProcess)';
import { eventLine } from './helpers/events.js';

afterEach(async () => {
  await killAll();
  cleanupTemp();
});

function root(): string {
  return tempDir('rw-exec-');
}

function mustMount(args: string[]): void {
  const res = spawnSync('mount', args, { encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`mount ${args.join(' ')} failed: ${res.stderr}`);
}

describe('runwarden exec', () => {
  it('success: exit 0, the exact stream, the lock released, files 0600 in a 0700 dir', async () => {
    const r = root();
    const command = POSIX ? ['sh', '-c', 'echo out; echo err >&2'] : [process.execPath, '-e', "process.stdout.write('out\\n'); process.stderr.write('err\\n')"];
    const res = await run(['exec', '--root', r, 'run-a', '--', ...command]);
    expect(res.code).toBe(0);
    expect(res.stdout).toBe('out\n');
    expect(res.stderr).toBe('err\n');
    const dir = join(r, 'run-a');
    expect(events(dir)).toEqual([
      { schema: 3, run_id: 'run-a', event: 'run_started', command },
      { schema: 3, run_id: 'run-a', event: 'node_started', node_id: 'command' },
      { schema: 3, run_id: 'run-a', event: 'node_passed', node_id: 'command', verdict: 'PASS', detail: 'exit code 0' },
      { schema: 3, run_id: 'run-a', event: 'run_finished', outcome: 'passed' },
    ]);
    expect(probeLock(join(dir, 'resume.lock'))).toEqual({ liveness: 'free', reason: 'flock-free' });
    // Windows applies no mode: created files inherit their directory's access control list (CONTRACT §5.8 rule 4).
    if (POSIX) {
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      expect(statSync(join(dir, 'events.jsonl')).mode & 0o777).toBe(0o600);
      expect(statSync(join(dir, 'resume.lock')).mode & 0o777).toBe(0o600);
    }
    expect(runStatus(dir)).toMatchObject({ status: 'PASS', has_snapshot: false });
  });

  it('failure: exits with the command\'s code and records it; --name names the node', async () => {
    const r = root();
    const res = await run(['exec', '--root', r, 'run-b', '--name', 'build', '--', ...exitWith(3)]);
    expect(res.code).toBe(3);
    expect(events(join(r, 'run-b')).slice(2)).toEqual([
      { schema: 3, run_id: 'run-b', event: 'node_failed', node_id: 'build', verdict: 'FAIL', detail: 'exit code 3' },
      { schema: 3, run_id: 'run-b', event: 'run_finished', outcome: 'failed', detail: 'build failed: exit code 3' },
    ]);
    expect(runStatus(join(r, 'run-b')).status).toBe('FAIL');
  });

  it('a command ended by a signal: exit 128+N, detail names the signal', async (ctx) => {
    needs(ctx, 'posix: a command that signals itself (sh, kill)');
    const r = root();
    const res = await run(['exec', '--root', r, 'run-c', '--', 'sh', '-c', 'kill -TERM $$']);
    expect(res.code).toBe(143);
    expect(events(join(r, 'run-c'))[2]).toMatchObject({ event: 'node_failed', detail: 'signal SIGTERM' });
  });

  it('a command that does not exist: exit 127, the leg is closed failed', async () => {
    const r = root();
    const res = await run(['exec', '--root', r, 'run-d', '--', 'no-such-command-rw']);
    expect(res.code).toBe(127);
    const evs = events(join(r, 'run-d'));
    expect(evs.map((e) => e['event'])).toEqual(['run_started', 'node_started', 'node_failed', 'run_finished']);
  });

  it('a command that does not exist exits 127 even when PATH holds a directory the user cannot search', (ctx) => {
    needs(ctx, 'posix: modes and another uid');
    // A shell says "not found" (127) there; a bare exec would say 126 (EACCES from that directory).
    // As root the leg runs as uid 65534 past a root-only directory; as anyone else, past a mode 000 one.
    const r = root();
    const asRoot = process.getuid?.() === 0;
    const hidden = join(r, 'hidden');
    mkdirSync(hidden, { mode: 0o700 });
    if (asRoot) chownSync(r, 65534, 65534);
    else chmodSync(hidden, 0o000);
    const res = spawnSync(process.execPath, [CLI, 'exec', '--root', r, 'run-n', '--', 'no-such-command-rw'], {
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1', PATH: `${hidden}:${process.env['PATH'] ?? '/usr/bin:/bin'}` },
      timeout: 60_000,
      ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
    });
    expect(res.status, res.stderr).toBe(127);
    expect(res.stderr).toContain('no-such-command-rw: not found');
    const evs = events(join(r, 'run-n'));
    expect(evs.map((e) => e['event'])).toEqual(['run_started', 'node_started', 'node_failed', 'run_finished']);
    expect(evs[2]).toMatchObject({ detail: 'exit code 127' });
  });

  it('a second exec on a held run is refused with exit 75, appends nothing and runs nothing', async () => {
    const r = root();
    const dir = join(r, 'run-e');
    const first = start(['exec', '--root', r, 'run-e', '--', ...RUNS_ON]);
    await until(() => existsSync(join(dir, 'exec.pgid')));
    const before = readFileSync(join(dir, 'events.jsonl'));
    const marker = join(r, 'ran');
    const second = await run(['exec', '--root', r, 'run-e', '--', ...touching(marker)]);
    expect(second.code).toBe(75);
    expect(second.stderr).toContain(`a leg of this run is in flight (started by pid ${first.proc.pid}); wait for it, or stop it`);
    expect(second.stderr).not.toMatch(/\brm\b|delete|kill/i);
    expect(readFileSync(join(dir, 'events.jsonl'))).toEqual(before);
    expect(existsSync(marker)).toBe(false);
    first.proc.kill('SIGTERM');
    const ended = await first.done;
    if (POSIX) expect(ended.code).toBe(143); // forwarded to the command, which it ended
  });

  it('SIGKILL to exec while its child sleeps: ABANDONED, the child\'s group reported alive, then gone', async (ctx) => {
    needs(ctx, 'linux: the gone wording needs the search of /proc/<pid>/environ for the leg mark');
    const r = root();
    const dir = join(r, 'run-f');
    const leg = start(['exec', '--root', r, 'run-f', '--', 'sleep', '60']);
    await until(() => existsSync(join(dir, 'exec.pgid')));
    const pgid = Number(readFileSync(join(dir, 'exec.pgid'), 'utf8'));
    track(-pgid);
    expect(runStatus(dir).status).toBe('RUNNING');
    leg.proc.kill('SIGKILL');
    await leg.done;
    const dead = runStatus(dir);
    expect(dead.status).toBe('ABANDONED');
    expect(dead.hint).toContain(`still has live processes (pgid ${pgid})`);
    expect(dead.hint).toContain('runwarden exec run-f -- sleep 60');
    expect(groupPresence(pgid)).toBe('present');
    process.kill(-pgid, 'SIGKILL');
    await until(() => groupPresence(pgid) === 'gone');
    const after = runStatus(dir);
    expect(after.status).toBe('ABANDONED');
    const gone = `No process is left in its command's process group (pgid ${pgid}), and no process this user can read carries the leg's RUNWARDEN_LEG mark`;
    expect(after.hint).toContain(gone);
    // The status CLI shows the same evidence.
    const st = await run(['status', '--root', r, 'run-f', '--json']);
    expect(JSON.parse(st.stdout)).toMatchObject({ status: 'ABANDONED' });
    expect(JSON.parse(st.stdout).hint).toContain(gone);
  });

  it('a daemon the command started with setsid left the group: the hint names it while it lives, never "all gone"', async (ctx) => {
    needs(ctx, 'linux: reads /proc/<pid>/stat, cmdline and environ');
    const r = root();
    const dir = join(r, 'run-s');
    const pidFile = join(r, 'daemon.pid');
    const leg = start(['exec', '--root', r, 'run-s', '--', 'sh', '-c', `setsid sh -c 'echo $$ > ${pidFile}.tmp && mv ${pidFile}.tmp ${pidFile}; exec sleep 1000' & exec sleep 1000`]);
    await until(() => existsSync(join(dir, 'exec.pgid')) && existsSync(pidFile));
    const pgid = Number(readFileSync(join(dir, 'exec.pgid'), 'utf8'));
    track(-pgid);
    const daemon = Number(readFileSync(pidFile, 'utf8'));
    track(daemon);
    // It really left the command's group (field 5 of /proc/<pid>/stat is the pgrp)…
    await until(() => readFileSync(`/proc/${daemon}/cmdline`, 'latin1').startsWith('sleep'));
    const pgrp = Number(readFileSync(`/proc/${daemon}/stat`, 'latin1').replace(/^.*\) /s, '').split(' ')[2]);
    expect(pgrp).toBe(daemon);
    expect(pgrp).not.toBe(pgid);
    // … and carries the leg's mark: the run directory's dev:ino and the group.
    const st = statSync(dir, { bigint: true });
    expect(readFileSync(`/proc/${daemon}/environ`, 'latin1').split('\0')).toContain(`RUNWARDEN_LEG=${st.dev}:${st.ino}:${pgid}`);

    leg.proc.kill('SIGKILL');
    await leg.done;
    process.kill(-pgid, 'SIGKILL');
    await until(() => groupPresence(pgid) === 'gone');
    const dead = runStatus(dir);
    expect(dead.status).toBe('ABANDONED');
    expect(dead.hint).toContain(`No process is left in its command's process group (pgid ${pgid}), but processes it started still run outside the group (pid ${daemon},`);
    expect(dead.hint).not.toContain('no process this user can read');
    const cli = await run(['status', '--root', r, 'run-s']);
    expect(cli.stdout + cli.stderr).toContain(`still run outside the group (pid ${daemon},`);

    process.kill(daemon, 'SIGKILL');
    // (A census of /proc is reused for a quarter second, so wait for the next one.)
    await until(() => !(runStatus(dir).hint ?? '').includes(`pid ${daemon}`));
    expect(runStatus(dir).hint).toContain(`No process is left in its command's process group (pgid ${pgid}), and no process this user can read carries`);
  });

  it('exec on an abandoned run warns with the orphan evidence before taking the lock, then runs', async () => {
    const r = root();
    const dir = join(r, 'run-g');
    const leg = start(['exec', '--root', r, 'run-g', '--', ...RUNS_ON]);
    await until(() => existsSync(join(dir, 'exec.pgid')));
    const pgid = Number(readFileSync(join(dir, 'exec.pgid'), 'utf8'));
    track(POSIX ? -pgid : pgid);
    leg.proc.kill('SIGKILL');
    await leg.done;
    const again = await run(['exec', '--root', r, 'run-g', '--', ...exitWith(0)]);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('starting a new leg of an abandoned run');
    // The orphan evidence is the command's process group, which Windows does not have (CONTRACT §5.8 rule 5).
    if (POSIX) expect(again.stderr).toContain(`still has live processes (pgid ${pgid})`);
    expect(runStatus(dir).status).toBe('PASS');
  });

  it('SIGTERM to exec goes to the child; the leg closes failed and the lock is released', async (ctx) => {
    needs(ctx, SIGNALS);
    const r = root();
    const dir = join(r, 'run-h');
    const got = join(r, 'got-term');
    const leg = start(['exec', '--root', r, 'run-h', '--', 'sh', '-c', `trap 'echo yes > ${got}; exit 7' TERM; echo READY; sleep 30 & wait`]);
    await until(() => leg.stdout().includes('READY'));
    leg.proc.kill('SIGTERM');
    const res = await leg.done;
    expect(res.code).toBe(7);
    expect(readFileSync(got, 'utf8')).toBe('yes\n');
    const evs = events(dir);
    expect(evs.slice(-2)).toEqual([
      { schema: 3, run_id: 'run-h', event: 'node_failed', node_id: 'command', verdict: 'FAIL', detail: 'exit code 7' },
      { schema: 3, run_id: 'run-h', event: 'run_finished', outcome: 'failed', detail: 'command failed: exit code 7' },
    ]);
    expect(probeLock(join(dir, 'resume.lock')).liveness).toBe('free');
  });

  it('SIGHUP and SIGINT are forwarded too', async (ctx) => {
    needs(ctx, SIGNALS);
    for (const sig of ['SIGHUP', 'SIGINT'] as const) {
      const r = root();
      const leg = start(['exec', '--root', r, 'run-s', '--', 'sh', '-c', 'echo READY; exec sleep 30']);
      await until(() => leg.stdout().includes('READY'));
      leg.proc.kill(sig);
      const res = await leg.done;
      expect(res.code, sig).toBe(sig === 'SIGHUP' ? 129 : 130);
      expect(events(join(r, 'run-s'))[2]).toMatchObject({ event: 'node_failed', detail: `signal ${sig}` });
    }
  });

  it('an open leg without a lock file is refused without --force, and runs with it', async () => {
    const r = root();
    const dir = join(r, 'run-i');
    mkdirSync(dir);
    writeFileSync(join(dir, 'events.jsonl'), eventLine({ event: 'run_started' }, { runId: 'run-i', ts: '2026-01-01T00:00:00Z' }));
    const before = readFileSync(join(dir, 'events.jsonl'));
    const refused = await run(['exec', '--root', r, 'run-i', '--', ...exitWith(0)]);
    expect(refused.code).toBe(75);
    expect(refused.stderr).toContain('--force');
    expect(readFileSync(join(dir, 'events.jsonl'))).toEqual(before);
    expect(existsSync(join(dir, 'resume.lock'))).toBe(false);
    const forced = await run(['exec', '--root', r, 'run-i', '--force', '--', ...exitWith(0)]);
    expect(forced.code).toBe(0);
    expect(runStatus(dir).status).toBe('PASS');
  });

  it('a pre-flock lock file is refused with exit 75 and the exact rm advice', async () => {
    const r = root();
    const dir = join(r, 'run-j');
    mkdirSync(dir);
    writeFileSync(join(dir, 'resume.lock'), `${process.pid}\n`);
    const res = await run(['exec', '--root', r, 'run-j', '--', 'true']);
    expect(res.code).toBe(75);
    expect(res.stderr).toContain(`rm "${join(dir, 'resume.lock')}"`);
    expect(existsSync(join(dir, 'events.jsonl'))).toBe(false);
  });

  it('a future-format lock file is refused with exit 75: written by a newer version', async () => {
    const r = root();
    const dir = join(r, 'run-k');
    mkdirSync(dir);
    writeFileSync(join(dir, 'resume.lock'), 'oh-my-graph-lock 2\n1\n');
    const res = await run(['exec', '--root', r, 'run-k', '--', 'true']);
    expect(res.code).toBe(75);
    expect(res.stderr).toContain('written by a newer version');
    expect(res.stderr).not.toContain('rm "');
  });

  it('appends after an unterminated final line without gluing onto it', async () => {
    const r = root();
    const dir = join(r, 'run-l');
    mkdirSync(dir);
    writeFileSync(join(dir, 'events.jsonl'), '{"schema":3,"run_id":"run-l","event":"run_fini');
    const res = await run(['exec', '--root', r, 'run-l', '--', ...exitWith(0)]);
    expect(res.code).toBe(0);
    const lines = readFileSync(join(dir, 'events.jsonl'), 'utf8').split('\n');
    expect(lines[0]).toBe('{"schema":3,"run_id":"run-l","event":"run_fini');
    expect(JSON.parse(lines[1])).toMatchObject({ event: 'run_started' });
    expect(runStatus(dir).status).toBe('PASS');
  });

  it('usage errors exit 2: no command, an empty command, bad run ids', async () => {
    const r = root();
    for (const args of [['exec', '--root', r, 'x'], ['exec', '--root', r, '..', '--', 'true'], ['exec', '--root', r, '', '--', 'true']]) {
      const res = await run(args);
      expect(res.code, args.join(' ')).toBe(2);
      expect(res.stderr).not.toMatch(/\n\s+at /);
    }
    for (const cmd of [[''], ['', 'arg']]) {
      const res = await run(['exec', '--root', r, 'x', '--', ...cmd]);
      expect(res.code).toBe(2);
      expect(res.stderr).toBe('runwarden: exec needs a command after --, and the command name given is empty\n');
    }
    expect(existsSync(join(r, 'x'))).toBe(false); // refused before anything was made
  });

  describe('a run directory that cannot be created: exit 1, one line with the real reason', () => {
    /** Runs exec on `runDir`, optionally as another user; returns its exit code and stderr. */
    function execAt(runDir: string, as?: { uid: number; gid: number }): { code: number | null; stderr: string } {
      const res = spawnSync(process.execPath, [CLI, 'exec', runDir, '--', ...exitWith(0)], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' }, timeout: 60_000, ...(as ?? {}) });
      return { code: res.status, stderr: res.stderr };
    }

    it('a file in the way', () => {
      const r = root();
      writeFileSync(join(r, 'file'), '');
      for (const target of [join(r, 'file'), join(r, 'file', 'run'), join(r, 'file', 'deeper', 'run')]) {
        const res = execAt(target);
        expect(res.code, target).toBe(1);
        expect(res.stderr).toBe(`runwarden: cannot create the run directory ${target}: ${target === join(r, 'file') ? '' : `${join(r, 'file')}: `}it exists and is not a directory (ENOTDIR)\n`);
      }
      expect(readdirSync(r)).toEqual(['file']);
    });

    it('permission denied (EACCES), not ENOENT', (ctx) => {
      needs(ctx, 'posix: modes and another uid');
      // Root ignores mode bits, so as root the leg runs as uid 65534 under a root-owned directory.
      const r = root();
      const asRoot = process.getuid?.() === 0;
      const locked = join(r, 'locked');
      mkdirSync(locked, { mode: 0o755 });
      if (asRoot) chownSync(r, 65534, 65534);
      else chmodSync(locked, 0o555);
      try {
        for (const target of [join(locked, 'run'), join(locked, 'root', 'run')]) {
          const res = execAt(target, asRoot ? { uid: 65534, gid: 65534 } : undefined);
          expect(res.code, res.stderr).toBe(1);
          expect(res.stderr).toMatch(/^runwarden: cannot create the run directory .*: permission denied \(EACCES\)\n$/);
          expect(res.stderr).toContain(target === join(locked, 'run') ? `${target}: permission denied` : `${join(locked, 'root')}: permission denied`);
        }
        expect(readdirSync(locked)).toEqual([]);
      } finally {
        chmodSync(locked, 0o755);
      }
    });

    it('a read-only filesystem (EROFS), from the CLI and from runLeg', async (ctx) => {
      needs(ctx, 'root', 'mount');
      const r = root();
      const ro = join(r, 'ro');
      mkdirSync(ro);
      mustMount(['--bind', ro, ro]);
      try {
        mustMount(['-o', 'remount,bind,ro', ro]);
        const res = execAt(join(ro, 'runs', 'run1'));
        expect(res.code).toBe(1);
        expect(res.stderr).toBe(`runwarden: cannot create the run directory ${join(ro, 'runs', 'run1')}: ${join(ro, 'runs')}: read-only file system (EROFS)\n`);
        const e = await runLeg(join(ro, 'run2'), ['true'], { runId: 'run2' }).then(
          () => undefined,
          (err: unknown) => err,
        );
        expect(e).toBeInstanceOf(WriteError);
        expect(e).toMatchObject({ code: 'EWRITE', errno: 'EROFS', path: join(ro, 'run2') });
      } finally {
        spawnSync('umount', [ro]);
      }
    });
  });

  it('the lock is held while the child runs, by the exec process', async () => {
    const r = root();
    const dir = join(r, 'run-m');
    const leg = start(['exec', '--root', r, 'run-m', '--', ...RUNS_ON]);
    await until(() => existsSync(join(dir, 'exec.pgid')));
    expect(probeLock(join(dir, 'resume.lock'))).toEqual({ liveness: 'held', reason: 'flock-held' });
    expect(readFileSync(join(dir, 'resume.lock'), 'latin1')).toBe(leftByLeg(leg.proc.pid));
    leg.proc.kill('SIGTERM');
    await leg.done;
    await waitExit(leg.proc);
  });
});
