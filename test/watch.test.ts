/**
 * `runwarden watch` with real legs: it follows to the end of the LAST leg,
 * refuses a corpse at once, and notices a leg that dies mid-watch.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { run, start } from './helpers/exec-procs.js';
import { cleanupTemp, killAll, startHolder, tempDir, until } from './helpers/lock-procs.js';
import { encodeEvents, eventLine } from './helpers/events.js';
import { exitWith, RUNS_ON, untilExists } from './helpers/portable.js';
import { needs } from './helpers/prereq.js';

afterEach(async () => {
  await killAll();
  cleanupTemp();
});

const ev = (o: Record<string, unknown>) => eventLine(o, { ts: '2026-11-30T10:00:00Z' });

describe('runwarden watch', () => {
  it('follows a live exec run to the end across two legs, and not past the first leg\'s finish', async () => {
    const r = tempDir('rw-watch-');
    const dir = join(r, 'two');
    expect((await run(['exec', '--root', r, 'two', '--', ...exitWith(0)])).code).toBe(0);
    // The second leg runs until the test lets it finish, once watch is following it.
    const go = join(r, 'go');
    const leg2 = start(['exec', '--root', r, 'two', '--name', 'second', '--', ...untilExists(go)]);
    // (exec.pgid already exists from the first leg: wait for the second leg's own event.)
    await until(() => readFileSync(join(dir, 'events.jsonl'), 'utf8').includes('"node_id":"second"'));
    const watching = start(['watch', '--root', r, 'two']);
    await until(() => watching.stdout().includes('node second started'));
    writeFileSync(go, '');
    const w = await watching.done;
    expect(w.code).toBe(0);
    expect((await leg2.done).code).toBe(0);
    const lines = w.stdout.trim().split('\n');
    expect(lines[0]).toBe('run two is RUNNING');
    expect(lines.filter((l) => l.includes('leg started')).length).toBe(2);
    expect(lines.filter((l) => l.includes('leg finished: passed')).length).toBe(2);
    expect(w.stdout).toContain('node second passed');
    expect(lines[lines.length - 1]).toBe('run two is PASS');
  });

  it('a settled run: replays and exits 0 at once', async () => {
    const r = tempDir('rw-watch-');
    await run(['exec', '--root', r, 'done', '--', ...exitWith(4)]);
    const w = await run(['watch', '--root', r, 'done']);
    expect(w.code).toBe(0);
    expect(w.stdout).toContain('run done is FAIL');
    expect(w.stdout).toContain('node command failed: exit code 4');
  });

  it('exits 3 when the leg it follows is killed with SIGKILL', async () => {
    const r = tempDir('rw-watch-');
    const dir = join(r, 'dies');
    const leg = start(['exec', '--root', r, 'dies', '--', ...RUNS_ON]);
    await until(() => existsSync(join(dir, 'exec.pgid')));
    const w = start(['watch', '--root', r, 'dies']);
    await until(() => w.stdout().includes('node command started'));
    leg.proc.kill('SIGKILL');
    // Waited on, with room: how soon it notices is a bench matter, not a unit test's (a loaded
    // machine may be slow); a watch that never notices fails the bound.
    const res = await Promise.race([w.done, new Promise<'late'>((r) => setTimeout(() => r('late'), 60_000).unref())]);
    if (res === 'late') throw new Error(`watch had not ended 60 s after the kill; stdout: ${w.stdout()}`);
    expect(res.code).toBe(3);
    expect(res.stdout).toContain('run dies is ABANDONED');
    expect(res.stderr).toContain('a leg started and never reported an end');
    // Its command outlives it in its process group, which POSIX systems can look for (Windows has none: §5.8 rule 5).
    if (process.platform !== 'win32') expect(res.stderr).toContain('still has live processes');
  });

  it('refuses an already ABANDONED run immediately: hint on stderr, exit 3', async () => {
    const r = tempDir('rw-watch-');
    const dir = join(r, 'corpse');
    const h = await startHolder(join(dir, 'resume.lock'));
    writeFileSync(join(dir, 'events.jsonl'), ev({ event: 'run_started' }) + ev({ event: 'node_started', node_id: 'dev' }));
    h.proc.kill('SIGKILL');
    await new Promise((res) => h.proc.once('exit', res));
    const w = await run(['watch', '--root', r, 'corpse']);
    expect(w.code).toBe(3);
    expect(w.stdout.trim()).toBe('run corpse is ABANDONED');
    expect(w.stderr).toContain('run the graph again');
  });

  it('warns about and skips malformed lines, warns once about a newer schema, and follows to the end', async () => {
    const r = tempDir('rw-watch-');
    const dir = join(r, 'odd');
    await startHolder(join(dir, 'resume.lock'));
    writeFileSync(join(dir, 'events.jsonl'), ev({ event: 'run_started' }) + 'not json at all\n');
    const w = start(['watch', '--root', r, 'odd']);
    await until(() => w.stdout().includes('leg started'));
    appendFileSync(join(dir, 'events.jsonl'), encodeEvents([{ schema: 4, event: 'x' }, { schema: 4, event: 'y' }]));
    appendFileSync(join(dir, 'events.jsonl'), ev({ event: 'node_started', node_id: '<b>n1</b>' }));
    appendFileSync(join(dir, 'events.jsonl'), ev({ event: 'node_passed', node_id: '<b>n1</b>', cost_usd: 0.5 }));
    appendFileSync(join(dir, 'events.jsonl'), ev({ event: 'run_finished', outcome: 'passed' }));
    const res = await w.done;
    expect(res.code).toBe(0);
    expect(res.stderr).toContain('skipped a malformed line at byte');
    expect(res.stderr.match(/newer version/g)?.length).toBe(1);
    expect(res.stdout).toContain('node <b>n1</b> passed  $0.5000');
    expect(res.stdout).toContain('leg finished: passed');
  });

  it('a run with no stream yet waits for its leg, then follows it', async () => {
    const r = tempDir('rw-watch-');
    const dir = join(r, 'later');
    mkdirSync(dir);
    const w = start(['watch', '--root', r, 'later']);
    await until(() => w.stdout().includes('run later is'));
    expect(w.stdout()).toContain('run later is not started yet');
    expect((await run(['exec', '--root', r, 'later', '--', ...exitWith(0)])).code).toBe(0);
    const res = await w.done;
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('leg finished: passed');
  });

  it('a run not started yet whose directory is removed while watch waits: exit 1, one line saying so', async () => {
    const r = tempDir('rw-watch-');
    const dir = join(r, 'gone');
    mkdirSync(dir);
    const w = start(['watch', '--root', r, 'gone']);
    await until(() => w.stdout().includes('run gone is not started yet'));
    rmSync(dir, { recursive: true });
    // Bounded only so that a watch that waits for ever fails here instead of hanging the file.
    const timer = setTimeout(() => w.proc.kill('SIGKILL'), 60_000);
    const res = await w.done;
    clearTimeout(timer);
    expect(res.signal).toBeNull();
    expect(res.code).toBe(1);
    expect(res.stderr.trim().split('\n')).toEqual([`runwarden: run gone: its directory ${dir} was removed while watch waited for its first leg`]);
  });

  it('Ctrl-C exits 130 cleanly', async (ctx) => {
    needs(ctx, 'posix: a SIGINT sent to another process (Windows has no signal to send; its kill is TerminateProcess)');
    const r = tempDir('rw-watch-');
    const dir = join(r, 'live');
    await startHolder(join(dir, 'resume.lock'));
    writeFileSync(join(dir, 'events.jsonl'), ev({ event: 'run_started' }));
    const w = start(['watch', '--root', r, 'live']);
    await until(() => w.stdout().includes('leg started'));
    w.proc.kill('SIGINT');
    const res = await w.done;
    expect(res.code).toBe(130);
    expect(res.stderr).not.toMatch(/\n\s+at /);
  });

  it('a bad run id is a usage error (exit 2)', async () => {
    const r = tempDir('rw-watch-');
    const res = await run(['watch', '--root', r, '..']);
    expect(res.code).toBe(2);
  });
});
