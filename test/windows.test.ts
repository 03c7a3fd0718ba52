/**
 * runwarden on Windows (CONTRACT §5.8), run by the Windows lane (`npm run test:windows`: vitest
 * under Wine with Node for Windows, loading the win32-x64 prebuild). Elsewhere every test here is
 * skipped, "Windows only". What each asserts comes from Windows itself, never from src/: the lock
 * is held by another real process (a holder, a leg) and freed by ending it with TerminateProcess
 * (Node's kill on Windows), and the files are written as a writer of the other kind would write
 * them (oh-my-graph's Windows build: the marker, no label, no lock).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acquireLock, acquireLockAsync, filesystemType, listRuns, probeLock, processPresence, runStatus } from '../src/index.js';
import { loadedAddonPath } from '../src/kernel/native.js';
import { ev, runId } from './helpers/reading-fixtures.js';
import { CLI, cleanupTemp, killAll, startHolder, tempDir, track, until, waitExit, waitReady } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';

/** What runwarden's Windows writer leaves in resume.lock: the marker, the pid, the lock label. */
const labelled = (pid: number): string => `oh-my-graph-lock 1\n${pid}\nlocked-by LockFileEx\n`;
/** What oh-my-graph's own Windows build leaves: the marker and the pid, and no lock at all. */
const unlabelled = (pid: number): string => `oh-my-graph-lock 1\n${pid}\n`;

beforeEach((ctx) => needs(ctx, 'windows: LockFileEx, process handles and Windows paths'));
afterEach(async () => {
  await killAll();
  cleanupTemp();
});

/** An open leg's stream: run_started and a running node, no run_finished. */
function openLeg(id: string): string {
  return ev('run_started', { command: ['node'] }, id) + ev('node_started', { node_id: 'work' }, id);
}

function cli(args: string[], timeoutMs = 120_000): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: timeoutMs });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('the Windows addon', () => {
  it('is the win32 prebuild, takes LockFileEx, and reads the volume a local NTFS one', () => {
    expect(probeLock(join(tempDir(), 'resume.lock')).reason).toBe('missing');
    expect(loadedAddonPath()).toMatch(/prebuilds[\\/]win32-x64[\\/]runwarden\.node$/);
    expect(['NTFS', 'ReFS']).toContain(filesystemType(tempDir()));
  });
});

describe('a lock runwarden took (labelled)', () => {
  it('reads held while its holder lives and free once TerminateProcess ended it; the run goes RUNNING, then ABANDONED', async () => {
    const root = tempDir();
    const id = runId();
    const dir = join(root, id);
    mkdirSync(dir);
    writeFileSync(join(dir, 'events.jsonl'), openLeg(id));
    const h = await startHolder(join(dir, 'resume.lock'));
    expect(readFileSync(join(dir, 'resume.lock'), 'latin1')).toBe(labelled(h.pid));
    // The head stays readable while the leg holds its byte: the probe read the marker to say held.
    expect(probeLock(join(dir, 'resume.lock'))).toEqual({ liveness: 'held', reason: 'flock-held' });
    expect(runStatus(dir).status).toBe('RUNNING');
    h.proc.kill('SIGKILL');
    await waitExit(h.proc);
    // The system unlocks a dead process's ranges "depending upon available system resources": wait for it.
    await until(() => probeLock(join(dir, 'resume.lock')).liveness === 'free');
    expect(probeLock(join(dir, 'resume.lock'))).toEqual({ liveness: 'free', reason: 'flock-free' });
    expect(runStatus(dir).status).toBe('ABANDONED');
  });

  it('an in-process lock contends with a probe of another handle, and release frees it', () => {
    const path = join(tempDir(), 'run', 'resume.lock');
    const lock = acquireLock(path);
    expect(readFileSync(path, 'latin1')).toBe(labelled(process.pid));
    expect(probeLock(path).liveness).toBe('held');
    lock.release();
    expect(probeLock(path)).toEqual({ liveness: 'free', reason: 'flock-free' });
  });
});

describe("a lock oh-my-graph's Windows build wrote (unlabelled: it takes no lock)", () => {
  it('reads unknown (unlabeled-lock), and its open leg stays RUNNING, never ABANDONED', () => {
    const root = tempDir();
    const id = runId();
    const dir = join(root, id);
    mkdirSync(dir);
    writeFileSync(join(dir, 'events.jsonl'), openLeg(id));
    writeFileSync(join(dir, 'resume.lock'), unlabelled(process.pid));
    const p = probeLock(join(dir, 'resume.lock'));
    expect(p.liveness).toBe('unknown');
    expect(p.reason).toBe('unlabeled-lock');
    expect(runStatus(dir).status).toBe('RUNNING');
    const list = listRuns(root);
    expect(list.runs.map((r) => [r.run_id, r.status])).toEqual([[id, 'RUNNING']]);
    const shown = cli(['runs', '--root', root, '--json']);
    expect(shown.status, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout).runs.map((r: { status: string }) => r.status)).toEqual(['RUNNING']);
    const status = cli(['status', id, '--root', root, '--json']);
    expect(status.status, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ run_id: id, status: 'RUNNING', reason: 'unlabeled-lock' });
  });
});

describe("taking over a lock oh-my-graph's Windows build wrote (unlabelled): its pid label decides (CONTRACT §5.8 rule 8)", () => {
  /** A stand-in for oh-my-graph's Windows build mid-leg: it writes the marker and its pid, takes no lock, and runs on. */
  async function unlockedLeg(dir: string): Promise<ChildProcess> {
    const script = `require('fs').writeFileSync(process.argv[1], 'oh-my-graph-lock 1\\n' + process.pid + '\\n'); console.log('READY'); setInterval(() => {}, 1 << 30);`;
    const proc = spawn(process.execPath, ['-e', script, join(dir, 'resume.lock')], { stdio: ['ignore', 'pipe', 'pipe'] });
    track(proc);
    await waitReady(proc);
    return proc;
  }

  it('exec refuses (exit 75, saying why and how to go on) while the writer lives, and takes the run over once it is gone', async () => {
    const root = tempDir();
    const id = runId();
    const dir = join(root, id);
    mkdirSync(dir);
    writeFileSync(join(dir, 'events.jsonl'), openLeg(id));
    const leg = await unlockedLeg(dir);
    const written = readFileSync(join(dir, 'resume.lock'), 'latin1');
    expect(written).toBe(unlabelled(leg.pid as number));
    const refused = cli(['exec', id, '--root', root, '--', process.execPath, '-e', 'process.exit(0)']);
    expect(refused.status, refused.stderr).toBe(75);
    expect(refused.stderr).toContain('takes no lock on Windows');
    expect(refused.stderr).toContain('still running');
    expect(refused.stderr).toContain(`del "${join(dir, 'resume.lock')}"`);
    // A pid that may be alive (or another program's by now) is never offered.
    expect(refused.stderr).not.toMatch(/pid \d/);
    // Nothing was run or written: the file and the stream are as the writer left them.
    expect(readFileSync(join(dir, 'resume.lock'), 'latin1')).toBe(written);
    expect(readFileSync(join(dir, 'events.jsonl'), 'utf8')).toBe(openLeg(id));
    expect(() => acquireLock(join(dir, 'resume.lock'))).toThrow(expect.objectContaining({ code: 'ELOCKHELD', legacy: false }));
    await expect(acquireLockAsync(join(dir, 'resume.lock'), { timeoutMs: 300 })).rejects.toMatchObject({ code: 'ELOCKHELD' });
    expect(runStatus(dir).status).toBe('RUNNING');

    leg.kill('SIGKILL');
    await waitExit(leg);
    await until(() => processPresence(leg.pid as number) === 'gone');
    const taken = cli(['exec', id, '--root', root, '--', process.execPath, '-e', 'process.exit(0)']);
    expect(taken.status, taken.stderr).toBe(0);
    expect(readFileSync(join(dir, 'resume.lock'), 'latin1')).toMatch(/^oh-my-graph-lock 1\n\d+\nlocked-by LockFileEx\n$/);
    expect(runStatus(dir).status).toBe('PASS');
  });

  it('an async acquire waits while the writer lives and takes the lock once it is ended', async () => {
    const dir = join(tempDir(), 'run');
    mkdirSync(dir);
    const leg = await unlockedLeg(dir);
    const waiting = acquireLockAsync(join(dir, 'resume.lock'), { timeoutMs: Infinity });
    let settled = false;
    void waiting.then(
      () => (settled = true),
      () => (settled = true),
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(settled).toBe(false);
    leg.kill('SIGKILL');
    const lock = await waiting;
    expect(readFileSync(join(dir, 'resume.lock'), 'latin1')).toBe(labelled(process.pid));
    lock.release();
  });

  it('a marked file that names no pid is refused at once, by the async acquire too, never waited on for ever', async () => {
    const dir = join(tempDir(), 'run');
    mkdirSync(dir);
    writeFileSync(join(dir, 'resume.lock'), 'oh-my-graph-lock 1\n');
    expect(() => acquireLock(join(dir, 'resume.lock'))).toThrow(/names no pid/);
    await expect(acquireLockAsync(join(dir, 'resume.lock'), { timeoutMs: Infinity })).rejects.toThrow(/names no pid/);
    expect(readFileSync(join(dir, 'resume.lock'), 'latin1')).toBe('oh-my-graph-lock 1\n');
  });
});

describe('Windows paths', () => {
  it('a drive letter, backslashes or forward slashes name the same lock', async () => {
    const dir = join(tempDir(), 'run');
    expect(dir).toMatch(/^[A-Za-z]:\\/);
    const h = await startHolder(join(dir, 'resume.lock'));
    for (const p of [join(dir, 'resume.lock'), `${dir.replace(/\\/g, '/')}/resume.lock`, `${dir}\\resume.lock`]) {
      expect(probeLock(p).liveness, p).toBe('held');
    }
    const r = cli(['probe', dir, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ liveness: 'held', reason: 'flock-held' });
    h.proc.kill('SIGKILL');
    await waitExit(h.proc);
    await until(() => probeLock(`${dir}/resume.lock`).liveness === 'free');
  });

  it('a path longer than MAX_PATH (260) is taken, probed and listed', async () => {
    let root = tempDir();
    while (root.length < 300) root = join(root, 'a-directory-name-of-forty-characters-xx');
    const id = runId();
    const dir = join(root, id);
    expect(join(dir, 'resume.lock').length).toBeGreaterThan(300);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'events.jsonl'), openLeg(id));
    const h = await startHolder(join(dir, 'resume.lock'));
    expect(probeLock(join(dir, 'resume.lock')).liveness).toBe('held');
    expect(runStatus(dir).status).toBe('RUNNING');
    h.proc.kill('SIGKILL');
    await waitExit(h.proc);
    await until(() => probeLock(join(dir, 'resume.lock')).liveness === 'free');
    const r = cli(['runs', '--root', root, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).runs.map((x: { status: string }) => x.status)).toEqual(['ABANDONED']);
    const m = cli(['metrics', '--root', root]);
    expect(m.status, m.stderr).toBe(0);
    expect(m.stdout).toMatch(/^runwarden_runs\{status="ABANDONED"\} 1$/m);
  });
});

describe('bad input: a clear answer, never a hang, never a false ABANDONED', () => {
  it('a lock file another program opened without sharing: unknown (open-error, EBUSY), and its leg stays RUNNING', async () => {
    const root = tempDir();
    const id = runId();
    const dir = join(root, id);
    mkdirSync(dir);
    writeFileSync(join(dir, 'events.jsonl'), openLeg(id));
    writeFileSync(join(dir, 'resume.lock'), labelled(1));
    // libuv's UV_FS_O_EXLOCK (0x10000000): CreateFileW with a share mode of 0.
    const script = `require('fs').openSync(process.argv[1], 0x10000000 | 2); console.log('READY'); setInterval(() => {}, 1 << 30);`;
    const proc = spawn(process.execPath, ['-e', script, join(dir, 'resume.lock')], { stdio: ['ignore', 'pipe', 'pipe'] });
    track(proc);
    await waitReady(proc);
    const p = probeLock(join(dir, 'resume.lock'));
    expect(p).toMatchObject({ liveness: 'unknown', reason: 'open-error' });
    expect(p.detail).toContain('EBUSY');
    expect(runStatus(dir).status).toBe('RUNNING');
    expect(() => acquireLock(join(dir, 'resume.lock'), { retryMs: 0 })).toThrow(/EBUSY/);
  });

  it('a run directory that is a symbolic link is refused, never followed: unknown, and the run is not ABANDONED', (ctx) => {
    needs(ctx, 'not-wine: symbolic links (Wine 8 reports one made and makes nothing)');
    const root = tempDir();
    const real = join(root, 'real');
    mkdirSync(real);
    writeFileSync(join(real, 'resume.lock'), labelled(1));
    symlinkSync(real, join(root, 'link'), 'dir');
    const p = probeLock(join(root, 'link', 'resume.lock'));
    expect(p.liveness).toBe('unknown');
    expect(p.reason).toBe('open-error');
    expect(probeLock(join(real, 'resume.lock')).liveness).toBe('free');
  });

  it('a run directory that is a junction is refused, never followed', (ctx) => {
    needs(ctx, 'not-wine: junctions (Wine 8 cannot make one: FSCTL_SET_REPARSE_POINT fails with ENOTSUP)');
    const root = tempDir();
    const real = join(root, 'real');
    mkdirSync(real);
    writeFileSync(join(real, 'resume.lock'), labelled(1));
    symlinkSync(real, join(root, 'junction'), 'junction');
    const p = probeLock(join(root, 'junction', 'resume.lock'));
    expect(p.liveness).toBe('unknown');
    expect(p.reason).toBe('open-error');
  });

  it('a runs root on a mapped network drive reads unknown (fs-not-local), and its open leg stays RUNNING', (ctx) => {
    needs(ctx, 'network-drive');
    const drive = process.env['RUNWARDEN_TEST_NETWORK_DRIVE'] as string;
    const root = join(`${drive}\\`, `runs-${process.pid}-${runId()}`);
    const id = runId();
    const dir = join(root, id);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'events.jsonl'), openLeg(id));
    writeFileSync(join(dir, 'resume.lock'), labelled(1));
    const p = probeLock(join(dir, 'resume.lock'));
    expect(p).toMatchObject({ liveness: 'unknown', reason: 'fs-not-local' });
    expect(p.detail).toMatch(/^remote:/);
    expect(runStatus(dir).status).toBe('RUNNING');
  });
});

describe('the CLI on Windows', () => {
  it('exec runs the command without a shell or signals, and the run reads its verdict; exit codes pass through', () => {
    const root = tempDir();
    const ok = cli(['exec', 'win-ok', '--root', root, '--', process.execPath, '-e', 'process.exit(0)']);
    expect(ok.status, ok.stderr).toBe(0);
    const bad = cli(['exec', 'win-bad', '--root', root, '--', process.execPath, '-e', 'process.exit(3)']);
    expect(bad.status, bad.stderr).toBe(3);
    expect(runStatus(join(root, 'win-ok')).status).toBe('PASS');
    expect(runStatus(join(root, 'win-bad')).status).toBe('FAIL');
    expect(readFileSync(join(root, 'win-ok', 'resume.lock'), 'latin1')).toMatch(/^oh-my-graph-lock 1\n\d+\nlocked-by LockFileEx\n$/);
    const missing = cli(['exec', 'win-none', '--root', root, '--', 'no-such-command-here']);
    expect(missing.status).toBe(127);
  });

  it('an exec that is killed leaves its leg open with the lock free: ABANDONED; watch notices it and ends', async () => {
    const root = tempDir();
    const exec = spawn(process.execPath, [CLI, 'exec', 'win-killed', '--root', root, '--', process.execPath, '-e', 'setInterval(() => {}, 1 << 30)'], { stdio: ['ignore', 'pipe', 'pipe'] });
    track(exec);
    const dir = join(root, 'win-killed');
    await until(() => existsSync(join(dir, 'exec.pgid')) && probeLock(join(dir, 'resume.lock')).liveness === 'held');
    const child = Number(readFileSync(join(dir, 'exec.pgid'), 'utf8').trim());
    expect(Number.isInteger(child) && child > 0).toBe(true);
    const watch = spawn(process.execPath, [CLI, 'watch', 'win-killed', '--root', root], { stdio: ['ignore', 'pipe', 'pipe'] });
    track(watch);
    let out = '';
    watch.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    await until(() => out.includes('RUNNING'));
    exec.kill('SIGKILL');
    await waitExit(exec);
    try {
      process.kill(child); // the command outlives its exec, as a process group does on POSIX
    } catch {
      /* already gone */
    }
    await waitExit(watch);
    expect(out).toContain('ABANDONED');
    expect(runStatus(dir).status).toBe('ABANDONED');
  });

  it('watch notices a killed exec within 1 s and exits 3 (no change notification on Windows: open legs are polled)', async () => {
    // The bound, written here: from the moment this process sees the exec end to the
    // moment watch's ABANDONED line reaches it. Windows has no change notification that tells of a
    // death (CONTRACT §5.8 rule 7), so this measures the poll of open legs, not a kernel event.
    const BOUND_MS = 1000;
    const root = tempDir();
    const exec = spawn(process.execPath, [CLI, 'exec', 'win-dies', '--root', root, '--', process.execPath, '-e', 'setInterval(() => {}, 1 << 30)'], { stdio: ['ignore', 'pipe', 'pipe'] });
    track(exec);
    const dir = join(root, 'win-dies');
    await until(() => existsSync(join(dir, 'exec.pgid')) && probeLock(join(dir, 'resume.lock')).liveness === 'held');
    const child = Number(readFileSync(join(dir, 'exec.pgid'), 'utf8').trim());
    const watch = spawn(process.execPath, [CLI, 'watch', 'win-dies', '--root', root], { stdio: ['ignore', 'pipe', 'pipe'] });
    track(watch);
    let out = '';
    let noticedAt: number | undefined;
    watch.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (noticedAt === undefined && out.includes('is ABANDONED')) noticedAt = performance.now();
    });
    let err = '';
    watch.stderr?.on('data', (d: Buffer) => (err += d.toString()));
    await until(() => out.includes('node command started'));
    const ended = new Promise<number>((r) => exec.once('exit', () => r(performance.now())));
    exec.kill('SIGKILL');
    const diedAt = await ended;
    await waitExit(watch);
    try {
      process.kill(child);
    } catch {
      /* already gone */
    }
    expect(watch.exitCode, err).toBe(3);
    expect(noticedAt).toBeDefined();
    expect((noticedAt as number) - diedAt, `watch noticed the death ${Math.round((noticedAt as number) - diedAt)} ms after it`).toBeLessThanOrEqual(BOUND_MS);
    expect(err).toContain('a leg started and never reported an end');
  });

  describe('Ctrl-C (a console control event, as a user at the console sends it)', () => {
    /**
     * Runs `args` under ctrlc.exe (scripts/wine/ctrlc.c): in a console of its own, whose Ctrl-C the
     * helper sends once `gate` exists; its output comes back here. Resolves with the exit code.
     */
    function underCtrlC(gate: string, args: string[]): { out: () => string; code: Promise<number | null> } {
      const proc = spawn(process.env['RUNWARDEN_TEST_CTRLC'] as string, [gate, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      track(proc);
      let out = '';
      proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
      proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
      return { out: () => out, code: new Promise((r) => proc.once('exit', (c) => r(c))) };
    }

    it('exec: the command gets it and ends as it chooses; exec waits, records that exit and passes it on', async (ctx) => {
      needs(ctx, 'ctrl-c');
      const root = tempDir();
      const gate = join(root, 'gate');
      const ready = join(root, 'ready');
      const child = join(root, 'child.js');
      writeFileSync(child, `process.on('SIGINT', () => process.exit(42)); require('fs').writeFileSync(${JSON.stringify(ready)}, ''); setInterval(() => {}, 1 << 30);`);
      const r = underCtrlC(gate, [process.execPath, CLI, 'exec', 'win-ctrlc', '--root', root, '--', process.execPath, child]);
      await until(() => existsSync(ready));
      writeFileSync(gate, '');
      expect(await r.code, r.out()).toBe(42);
      const dir = join(root, 'win-ctrlc');
      const lines = readFileSync(join(dir, 'events.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines.slice(-2)).toMatchObject([
        { event: 'node_failed', detail: 'exit code 42' },
        { event: 'run_finished', outcome: 'failed' },
      ]);
      expect(probeLock(join(dir, 'resume.lock'))).toEqual({ liveness: 'free', reason: 'flock-free' });
      expect(runStatus(dir).status).toBe('FAIL');
    });

    it('watch exits 130', async (ctx) => {
      needs(ctx, 'ctrl-c');
      const root = tempDir();
      const id = runId();
      const dir = join(root, id);
      mkdirSync(dir);
      writeFileSync(join(dir, 'events.jsonl'), openLeg(id));
      await startHolder(join(dir, 'resume.lock'));
      const gate = join(root, 'gate');
      const r = underCtrlC(gate, [process.execPath, CLI, 'watch', id, '--root', root]);
      await until(() => r.out().includes('node work started'));
      writeFileSync(gate, '');
      expect(await r.code, r.out()).toBe(130);
    });

    it('serve stops and exits 130', async (ctx) => {
      needs(ctx, 'ctrl-c');
      const root = tempDir();
      const gate = join(root, 'gate');
      const r = underCtrlC(gate, [process.execPath, CLI, 'serve', '--root', root, '--port', '0']);
      await until(() => /^runwarden serve: http:\/\/[^\s]+:\d+\/$/m.test(r.out()));
      writeFileSync(gate, '');
      expect(await r.code, r.out()).toBe(130);
    });
  });

  it('demo shows every status on Windows', async () => {
    const root = join(tempDir(), 'demo');
    const r = cli(['demo', '--root', root, '--hold-seconds', '1']);
    expect(r.status, r.stderr).toBe(0);
    for (const s of ['RUNNING', 'ABANDONED', 'PASS', 'FAIL']) expect(r.stdout).toContain(s);
    // The live holder ends by itself after --hold-seconds; its files stay open until then, and a
    // directory whose files another process holds open cannot be removed on Windows.
    await until(() => listRuns(root).runs.every((x) => x.status !== 'RUNNING' && x.status !== 'PLANNING'));
    const holders = listRuns(root).runs.map((x) => /^oh-my-graph-lock 1\n(\d+)\n/.exec(readFileSync(join(root, x.run_id, 'resume.lock'), 'latin1'))?.[1]);
    for (const pid of holders) if (pid !== undefined) await until(() => processPresence(Number(pid)) === 'gone');
  });

  it('serve follows a run live: RUNNING, then ABANDONED once its holder is ended', async () => {
    const root = tempDir();
    const id = runId();
    const dir = join(root, id);
    mkdirSync(dir);
    writeFileSync(join(dir, 'events.jsonl'), openLeg(id));
    const h = await startHolder(join(dir, 'resume.lock'));
    const serve: ChildProcess = spawn(process.execPath, [CLI, 'serve', '--root', root, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    track(serve);
    let out = '';
    serve.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    serve.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    const at = /^runwarden serve: (http:\/\/[^\s]+:\d+)\/$/m;
    await until(() => at.test(out));
    const url = (at.exec(out) as RegExpExecArray)[1];
    // node:http, not fetch: undici's connect fails under Wine 8 (connect UNKNOWN), node:http's does not.
    const status = (): Promise<string | undefined> =>
      new Promise((resolve, reject) => {
        get(`${url}/api/runs`, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (body += d));
          res.on('end', () => resolve((JSON.parse(body) as { runs: { run_id: string; status: string }[] }).runs.find((x) => x.run_id === id)?.status));
        }).on('error', reject);
      });
    expect(await status()).toBe('RUNNING');
    h.proc.kill('SIGKILL');
    await waitExit(h.proc);
    let last: string | undefined;
    for (let i = 0; i < 600 && last !== 'ABANDONED'; i++) {
      last = await status();
      if (last !== 'ABANDONED') await new Promise((r) => setTimeout(r, 100));
    }
    expect(last).toBe('ABANDONED');
  });
});
