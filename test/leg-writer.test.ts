/**
 * startLeg / startLegAsync: a leg written through the library reads like an
 * exec leg to every reader (the CLI in another process included), a leg
 * killed -9 or released without finishing reads ABANDONED, and a leg that
 * loses its run (lock file removed, replaced and held by someone else, run
 * directory gone) finds out at its next write and writes nothing more.
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AbortError,
  LockHeldError,
  LockLostError,
  runDetail,
  runStatus,
  startLeg,
  startLegAsync,
  StreamError,
  WriteError,
  type Leg,
} from '../src/index.js';
import { events } from './helpers/exec-procs.js';
import { CLI, cleanupTemp, killAll, ROOT, startFlock1, startHolder, tempDir, track, waitReady } from './helpers/lock-procs.js';
import { OPEN_NAME_UNDER_WINE } from './helpers/portable.js';
import { needs } from './helpers/prereq.js';
import { encodeEvents, eventLine } from './helpers/events.js';

afterEach(async () => {
  await killAll();
  cleanupTemp();
});

const LEG = join(ROOT, 'test', 'fixtures', 'leg.mjs');

function cli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, NO_COLOR: '1' } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The run's report as `runs --json` (another process) gives it. */
function listed(root: string, id: string): Record<string, unknown> {
  const r = cli(['runs', '--root', root, '--json']);
  expect(r.status, r.stderr).toBe(0);
  const doc = JSON.parse(r.stdout) as { runs: Record<string, unknown>[] };
  const row = doc.runs.find((x) => x['run_id'] === id);
  expect(row, `${id} in runs --json`).toBeDefined();
  return row as Record<string, unknown>;
}

function lines(dir: string): number {
  return readFileSync(join(dir, 'events.jsonl'), 'utf8').split('\n').filter((l) => l !== '').length;
}

function lostWith(fn: () => void): LockLostError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(LockLostError);
    return e as LockLostError;
  }
  throw new Error('expected a LockLostError');
}

describe('a leg written through the library', () => {
  it('reads RUNNING (held) while open and PASS once finished, to runs --json and status in another process', () => {
    const root = tempDir('rw-leg-');
    const dir = join(root, 'lib-run');
    const leg = startLeg(dir);
    try {
      leg.append({ event: 'node_started', node_id: 'build' });
      expect(listed(root, 'lib-run')).toMatchObject({ status: 'RUNNING', liveness: 'held', reason: 'flock-held' });
      leg.append({ event: 'node_passed', node_id: 'build', cost_usd: 0.25, tokens: 7 });
      leg.finish('passed');
    } finally {
      leg.release();
    }
    expect(leg.state).toBe('finished');
    expect(listed(root, 'lib-run')).toMatchObject({ status: 'PASS', liveness: null, hint: null });
    const human = cli(['status', 'lib-run', '--root', root]);
    expect(human.stdout).toMatch(/^run lib-run {2}PASS$/m);
    expect(events(dir)).toEqual([
      { schema: 3, run_id: 'lib-run', event: 'run_started' },
      { schema: 3, run_id: 'lib-run', event: 'node_started', node_id: 'build' },
      { schema: 3, run_id: 'lib-run', event: 'node_passed', node_id: 'build', cost_usd: 0.25, tokens: 7, verdict: 'PASS' },
      { schema: 3, run_id: 'lib-run', event: 'run_finished', outcome: 'passed' },
    ]);
    // Windows applies no mode (CONTRACT §5.8 rule 4).
    if (process.platform !== 'win32') expect(statSync(join(dir, 'events.jsonl')).mode & 0o777).toBe(0o600);
    expect(runDetail(dir).nodes).toMatchObject([{ id: 'build', state: 'passed' }]);
  });

  it('failed reads FAIL; a paused gate reads PAUSED with its hint; planning reads PLANNING until endPlanning', () => {
    const root = tempDir('rw-leg-');
    {
      using leg = startLeg(join(root, 'f'));
      leg.append({ event: 'node_started', node_id: 'x' });
      leg.append({ event: 'node_failed', node_id: 'x', detail: 'tests failed' });
      leg.finish('failed', 'x failed');
    }
    expect(listed(root, 'f')).toMatchObject({ status: 'FAIL' });
    {
      using leg = startLeg(join(root, 'p'), { phase: 'planning' });
      expect(runStatus(join(root, 'p'))).toMatchObject({ status: 'PLANNING', liveness: 'held' });
      leg.endPlanning();
      expect(runStatus(join(root, 'p'))).toMatchObject({ status: 'RUNNING', liveness: 'held' });
      expect(() => leg.endPlanning()).toThrow(RangeError);
      leg.append({ event: 'gate_paused', node_id: 'review' });
      leg.finish('paused');
    }
    const p = listed(root, 'p');
    expect(p).toMatchObject({ status: 'PAUSED' });
    expect(p['hint']).toContain('--approve review');
    expect(runDetail(join(root, 'p')).legs).toHaveLength(1);
  });

  it('a leg killed -9 mid-leg reads ABANDONED, with the recovery hint', async () => {
    const root = tempDir('rw-leg-');
    const dir = join(root, 'killed');
    const proc = spawn(process.execPath, [LEG, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    track(proc);
    await waitReady(proc);
    expect(listed(root, 'killed')).toMatchObject({ status: 'RUNNING', liveness: 'held' });
    proc.kill('SIGKILL');
    await new Promise((r) => proc.once('exit', r));
    const row = listed(root, 'killed');
    expect(row).toMatchObject({ status: 'ABANDONED', liveness: 'free', reason: 'flock-free' });
    expect(row['hint']).toContain('run killed is ABANDONED');
    expect(row['hint']).toContain('run the graph again');
  });

  it('released or disposed without finish: the leg stays open with its lock free, so it reads ABANDONED', () => {
    const root = tempDir('rw-leg-');
    {
      using leg = startLeg(join(root, 'dropped'));
      leg.append({ event: 'node_started', node_id: 'a' });
    }
    expect(listed(root, 'dropped')).toMatchObject({ status: 'ABANDONED', liveness: 'free' });
    const leg = startLeg(join(root, 'thrown'));
    leg.release();
    leg.release(); // idempotent
    expect(leg.state).toBe('released');
    expect(() => leg.append({ event: 'node_started', node_id: 'late' })).toThrow(WriteError);
    expect(() => leg.finish('passed')).toThrow(expect.objectContaining({ code: 'ECLOSED' }));
    expect(listed(root, 'thrown')).toMatchObject({ status: 'ABANDONED' });
    // A later leg of the same run starts normally and settles it.
    using again = startLeg(join(root, 'thrown'));
    again.finish('passed');
    expect(listed(root, 'thrown')).toMatchObject({ status: 'PASS' });
  });

  it('refuses a second leg while one is live in another process (ELOCKHELD), and writes nothing', async () => {
    const root = tempDir('rw-leg-');
    const dir = join(root, 'busy');
    const h = await startHolder(join(dir, 'resume.lock'));
    writeFileSync(join(dir, 'events.jsonl'), '');
    const e = (() => {
      try {
        startLeg(dir);
      } catch (x) {
        return x;
      }
    })();
    expect(e).toBeInstanceOf(LockHeldError);
    expect((e as LockHeldError).pid).toBe(h.pid);
    expect(readFileSync(join(dir, 'events.jsonl'), 'utf8')).toBe('');
    // The async start waits without writing, and an abort ends the wait with ABORT_ERR.
    const ac = new AbortController();
    const waiting = startLegAsync(dir, { timeoutMs: Infinity, signal: ac.signal });
    setTimeout(() => ac.abort(), 20);
    await expect(waiting).rejects.toBeInstanceOf(AbortError);
    expect(readFileSync(join(dir, 'events.jsonl'), 'utf8')).toBe('');
  });

  it('startLegAsync takes the run once the other leg is killed, and the leg reads PASS', async () => {
    const root = tempDir('rw-leg-');
    const dir = join(root, 'next');
    const h = await startHolder(join(dir, 'resume.lock'));
    const starting = startLegAsync(dir, { timeoutMs: Infinity });
    h.proc.kill('SIGKILL');
    await using leg = await starting;
    leg.append({ event: 'node_started', node_id: 'n' });
    leg.append({ event: 'node_passed', node_id: 'n' });
    leg.finish('passed');
    expect(listed(root, 'next')).toMatchObject({ status: 'PASS' });
  });

  it('like exec, refuses an open leg whose lock file is missing unless forced', () => {
    const root = tempDir('rw-leg-');
    const dir = join(root, 'orphan');
    mkdirSync(dir);
    writeFileSync(join(dir, 'events.jsonl'), eventLine({ event: 'run_started' }, { runId: 'orphan', ts: '2026-01-01T00:00:00Z' }));
    expect(() => startLeg(dir)).toThrow(LockHeldError);
    expect(existsSync(join(dir, 'resume.lock'))).toBe(false);
    using leg = startLeg(dir, { force: true });
    leg.finish('passed');
    expect(runStatus(dir).status).toBe('PASS');
  });

  it('refuses events readers would skip or misread, and a line over 1 MiB, writing nothing', () => {
    const dir = join(tempDir('rw-leg-'), 'strict');
    using leg = startLeg(dir);
    const before = lines(dir);
    const bad: unknown[] = [
      null,
      { event: 'run_started' },
      { event: 'run_finished', outcome: 'passed' },
      { event: 'made_up', node_id: 'a' },
      { event: 'node_started' },
      { event: 'node_started', node_id: '' },
      { event: 'node_started', node_id: 'a', run_id: 'other' },
      { event: 'node_started', node_id: 'a', schema: 9 },
      { event: 'node_started', node_id: 'a', phase: 1 },
    ];
    for (const ev of bad) expect(() => leg.append(ev as never), JSON.stringify(ev)).toThrow(TypeError);
    expect(() => leg.append({ event: 'node_failed', node_id: 'a', detail: 'x'.repeat(1_100_000) })).toThrow(RangeError);
    expect(() => leg.finish('done' as never)).toThrow(TypeError);
    expect(lines(dir)).toBe(before);
    expect(leg.state).toBe('open');
  });

  it('an unreadable stream refuses the start (StreamError) and leaves nothing held', () => {
    const dir = join(tempDir('rw-leg-'), 'bad');
    mkdirSync(dir);
    writeFileSync(join(dir, 'events.jsonl'), encodeEvents([{ schema: 99, event: 'run_started' }]));
    expect(() => startLeg(dir)).toThrow(StreamError);
    using leg = startLeg(join(dir, '..', 'good'));
    leg.release();
  });
});

describe('a leg that loses its run', () => {
  it('resume.lock removed while held: the next append throws ELOCKLOST (lock-missing) and writes nothing, then every write does', (ctx) => {
    needs(ctx, OPEN_NAME_UNDER_WINE);
    const root = tempDir('rw-leg-');
    const dir = join(root, 'rm');
    const leg: Leg = startLeg(dir);
    try {
      leg.append({ event: 'node_started', node_id: 'a' });
      const before = lines(dir);
      unlinkSync(join(dir, 'resume.lock'));
      const e = lostWith(() => leg.append({ event: 'node_passed', node_id: 'a' }));
      expect(e.code).toBe('ELOCKLOST');
      expect(e.reason).toBe('lock-missing');
      expect(leg.state).toBe('lost');
      expect(lostWith(() => leg.finish('passed')).reason).toBe('lock-missing');
      expect(lostWith(() => leg.check()).reason).toBe('lock-missing');
      expect(lines(dir)).toBe(before);
      // Readers never call it dead meanwhile: a missing lock is unknown, so the open leg is RUNNING.
      expect(listed(root, 'rm')).toMatchObject({ status: 'RUNNING', liveness: 'unknown', reason: 'missing' });
    } finally {
      leg.release();
    }
  });

  it('resume.lock replaced by a file another process holds: the next append throws ELOCKLOST (lock-replaced)', async (ctx) => {
    needs(ctx, 'flock');
    const dir = join(tempDir('rw-leg-'), 'stolen');
    using leg = startLeg(dir, { guard: false });
    leg.append({ event: 'node_started', node_id: 'a' });
    const before = lines(dir);
    // A restore puts a new file at the path, and a second owner locks it.
    const lockPath = join(dir, 'resume.lock');
    copyFileSync(lockPath, `${lockPath}.new`);
    renameSync(`${lockPath}.new`, lockPath);
    await startFlock1(lockPath, '-x');
    const e = lostWith(() => leg.append({ event: 'node_passed', node_id: 'a' }));
    expect(e.reason).toBe('lock-replaced');
    expect(lines(dir)).toBe(before);
  });

  it('resume.lock replaced by a file nobody holds: the leg retakes it and goes on; readers see it held', (ctx) => {
    needs(ctx, OPEN_NAME_UNDER_WINE);
    const root = tempDir('rw-leg-');
    const dir = join(root, 'restored');
    using leg = startLeg(dir, { guard: false });
    leg.append({ event: 'node_started', node_id: 'a' });
    const lockPath = join(dir, 'resume.lock');
    copyFileSync(lockPath, `${lockPath}.new`);
    renameSync(`${lockPath}.new`, lockPath);
    expect(listed(root, 'restored')).toMatchObject({ status: 'RUNNING', liveness: 'unknown', reason: 'lock-replaced' });
    leg.append({ event: 'node_passed', node_id: 'a' });
    expect(leg.retaken).toBe(1);
    expect(listed(root, 'restored')).toMatchObject({ status: 'RUNNING', liveness: 'held' });
    leg.finish('passed');
    expect(listed(root, 'restored')).toMatchObject({ status: 'PASS' });
  });

  it('the run directory removed: the next append throws ELOCKLOST (run-dir-gone)', (ctx) => {
    needs(ctx, OPEN_NAME_UNDER_WINE);
    const dir = join(tempDir('rw-leg-'), 'gone');
    using leg = startLeg(dir);
    rmSync(dir, { recursive: true });
    expect(lostWith(() => leg.append({ event: 'node_started', node_id: 'a' })).reason).toBe('run-dir-gone');
    expect(existsSync(dir)).toBe(false);
  });
});
