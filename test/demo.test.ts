/**
 * `runwarden demo`: one run in each state, made by real locks — a detached
 * live holder, SIGKILLed holders, finished legs — and the holder stops when
 * told and by itself.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runStatus } from '../src/status/inspect.js';
import type { RunReport } from '../src/contract/types.js';
import { cleanup, cli, tempDir } from './helpers/reading-fixtures.js';
import { needs } from './helpers/prereq.js';

const holders: number[] = [];

/** Alive and not a zombie (an exited, unreaped process is not alive for this purpose). */
function alive(pid: number): boolean {
  if (process.platform === 'win32') {
    // No /proc and no zombies: Node's kill(pid, 0) asks whether the process is still running.
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

async function waitGone(pid: number, ms = 60_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (!alive(pid)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return !alive(pid);
}

afterEach(async () => {
  for (const pid of holders.splice(0)) {
    if (alive(pid)) {
      process.kill(pid, 'SIGKILL');
      await waitGone(pid);
    }
  }
  await cleanup();
});

function runDemo(args: string[], env: Record<string, string> = {}) {
  const r = cli(['demo', ...args], env, 60_000);
  const m = /held by pid (\d+)/.exec(r.stdout);
  if (m) holders.push(Number(m[1]));
  return { ...r, pid: m ? Number(m[1]) : undefined };
}

describe('runwarden demo', () => {
  it('creates one run in each state from real locks and prints the runs table', async (ctx) => {
    needs(ctx, 'linux: reads /proc/<pid>/stat');
    const root = join(tempDir('rw-demo-'), 'demo');
    const r = runDemo(['--root', root, '--hold-seconds', '600']); // the test stops it itself
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`Created 9 demo runs under ${root}`);
    expect(r.stdout).toMatch(/^RUN +GRAPH +NODES +COST +STATUS$/m);
    expect(r.stdout).toMatch(/^8 runs shown \(1 planning, 1 running, 3 abandoned, 1 paused, 1 passed, 1 failed\); 1 skipped \(1 unreadable state\.json\)\.$/m);
    expect(r.stdout).toContain(`kill ${r.pid}`);
    expect(alive(r.pid!)).toBe(true);
    // Detached: the holder leads its own session, so closing the terminal does not touch it.
    const stat = readFileSync(`/proc/${r.pid}/stat`, 'utf8');
    expect(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[3])).toBe(r.pid);

    const json = JSON.parse(cli(['runs', '--root', root, '--json']).stdout) as { runs: RunReport[]; skipped: { run_id: string; error: string }[] };
    const by = (s: string) => json.runs.filter((x) => x.status === s);
    expect(json.runs.map((x) => x.status)).toEqual(['RUNNING', 'PLANNING', 'ABANDONED', 'ABANDONED', 'ABANDONED', 'PAUSED', 'FAIL', 'PASS']);
    expect(by('RUNNING')[0]).toMatchObject({ liveness: 'held', reason: 'flock-held', graph: 'ci-pipeline' });
    expect(by('PLANNING')[0]).toMatchObject({ liveness: 'held', has_snapshot: false });
    const [noSnap, withSnap, legacy] = by('ABANDONED') as [RunReport, RunReport, RunReport];
    expect(noSnap).toMatchObject({ reason: 'flock-free', has_snapshot: false });
    expect(noSnap.hint).toContain('run the graph again');
    expect(withSnap).toMatchObject({ reason: 'flock-free', has_snapshot: true });
    expect(withSnap.hint).toContain('--retry-failed');
    expect(legacy).toMatchObject({ reason: 'legacy-pid-gone', liveness: 'free' });
    expect(by('PAUSED')[0]?.hint).toContain('--approve review');
    expect(json.skipped).toHaveLength(1);
    expect(json.skipped[0]?.error).toMatch(/^state\.json: not valid JSON/);

    // The printed stop command works, and the held runs then read ABANDONED.
    process.kill(r.pid!, 'SIGTERM');
    expect(await waitGone(r.pid!)).toBe(true);
    expect(runStatus(join(root, json.runs[0].run_id)).status).toBe('ABANDONED');
    expect(runStatus(join(root, json.runs[1].run_id)).status).toBe('ABANDONED');
  });

  it('its holder exits by itself when its time is up', async () => {
    const root = join(tempDir('rw-demo-'), 'demo');
    const r = runDemo(['--root', root, '--hold-seconds', '1']);
    expect(r.status).toBe(0);
    expect(await waitGone(r.pid!)).toBe(true);
    const json = JSON.parse(cli(['runs', '--root', root, '--json']).stdout) as { runs: RunReport[] };
    expect(json.runs[0]?.status).toBe('ABANDONED');
  });

  it('defaults to a fresh directory under the system temp directory, and prints it', () => {
    const tmp = tempDir('rw-demotmp-');
    // The system temp directory: TMPDIR on POSIX, TEMP (or TMP) on Windows.
    const r = runDemo(['--hold-seconds', '5'], { TMPDIR: tmp, TEMP: tmp, TMP: tmp });
    expect(r.status).toBe(0);
    const m = /^Created 9 demo runs under (.+)$/m.exec(r.stdout);
    expect(m?.[1]?.startsWith(join(tmp, 'runwarden-demo-'))).toBe(true);
    expect(existsSync(m![1])).toBe(true);
  });

  it('refuses a non-empty root, a bad hold time, and keeps the 10-minute ceiling', () => {
    const root = tempDir('rw-demo-');
    writeFileSync(join(root, 'keep.txt'), 'mine');
    const r = runDemo(['--root', root]);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(`runwarden: ${root} is not empty; demo writes only into a new or empty directory\n`);
    expect(readFileSync(join(root, 'keep.txt'), 'utf8')).toBe('mine');
    expect(runDemo(['--hold-seconds', '601']).status).toBe(2);
    expect(runDemo(['--hold-seconds', 'x']).status).toBe(2);
    expect(cli(['demo', '--help']).stdout.replace(/\s+/g, ' ')).toMatch(/default and maximum 600/);
  });
});
