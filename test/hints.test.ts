/**
 * Hints (CONTRACT §4.4), including the exec-leg variant and its process-group
 * evidence, read from a real process group that is really alive, then really gone.
 */
import { spawn, spawnSync, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { needs } from './helpers/prereq.js';
import { abandonedHint, ORPHAN_WARNING, orphanEvidence, parsePgid, pausedHint, shellQuote, type OrphanEvidence } from '../src/status/hints.js';
import { legMark, processesMarked } from '../src/kernel/legmark.js';
import { runStatus } from '../src/status/inspect.js';
import { cleanup, ev, makeRun, REPO, runId, startHolder, tempDir } from './helpers/reading-fixtures.js';

/** The built legmark module, for a reader started as a process of its own. */
const LEGMARK_JS = pathToFileURL(join(REPO, 'dist', 'kernel', 'legmark.js')).href;

const groups: ChildProcess[] = [];
afterEach(async () => {
  for (const g of groups.splice(0)) {
    if (g.exitCode === null && g.signalCode === null) {
      const gone = new Promise((r) => g.once('exit', r));
      process.kill(-g.pid!, 'SIGKILL');
      await gone;
    }
  }
  await cleanup();
});
afterAll(cleanup);

/** A process leading its own group (pgid = pid), sleeping until killed. */
function startGroup(): Promise<ChildProcess> {
  const c = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { detached: true, stdio: 'ignore' });
  groups.push(c);
  return new Promise((res, rej) => {
    c.once('spawn', () => res(c));
    c.once('error', rej);
  });
}

describe('abandonedHint', () => {
  it('with a snapshot: names the run, says the leg never reported an end, resume --retry-failed, orphan warning', () => {
    const h = abandonedHint('20260806-1', { hasSnapshot: true });
    expect(h).toContain('run 20260806-1 is ABANDONED');
    expect(h).toContain('a leg started and never reported an end');
    expect(h).toContain('oh-my-graph resume 20260806-1 --retry-failed');
    expect(h).toContain(ORPHAN_WARNING);
  });

  it('without a snapshot: nothing to resume from, run the graph again, never a resume command', () => {
    const h = abandonedHint('r1', { hasSnapshot: false });
    expect(h).toContain('nothing to resume from: run the graph again');
    expect(h).not.toMatch(/resume r1|--retry-failed/);
    expect(h).toContain(ORPHAN_WARNING);
  });

  it('an exec leg: run the same runwarden exec command again, quoted for a shell', () => {
    const h = abandonedHint('r1', { hasSnapshot: true, command: ['sh', '-c', "echo 'hi' && sleep 1"] });
    expect(h).toContain(`run \`runwarden exec r1 -- sh -c 'echo '\\''hi'\\'' && sleep 1'\` again`);
    expect(h).not.toContain('oh-my-graph resume');
    expect(h).toContain(ORPHAN_WARNING);
  });

  it('the orphan evidence line says only what was checked', () => {
    const facts = (orphan: OrphanEvidence) => abandonedHint('r1', { hasSnapshot: false, command: ['job'], orphan });
    // No search for processes that left the group: the line says they are not tracked.
    for (const escaped of [undefined, { kind: 'unavailable', detail: 'no /proc on darwin' } as const]) {
      const h = facts({ pgid: 77, presence: 'gone', escaped });
      expect(h).toContain("No process is left in its command's process group (pgid 77); processes that left the group are not tracked.");
    }
    // A search that found carriers: they are named, capped at five.
    const found = facts({ pgid: 77, presence: 'gone', escaped: { kind: 'scanned', pids: [5, 6, 7, 8, 9, 10], unreadable: 0 } });
    expect(found).toContain('but processes it started still run outside the group (pids 5, 6, 7, 8, 9, … (6 in all), carrying');
    expect(found).toContain('may still be working and spending');
    // A search that found none says how far it reached.
    const none = facts({ pgid: 77, presence: 'gone', escaped: { kind: 'scanned', pids: [], unreadable: 3 } });
    expect(none).toContain("and no process this user can read carries the leg's RUNWARDEN_LEG mark; 3 other processes could not be read.");
    expect(none).toContain('cleaned environment would not carry it');
    // A group that could not be checked stays unchecked, unless carriers were found.
    expect(facts({ pgid: 77, presence: 'unknown', escaped: { kind: 'scanned', pids: [], unreadable: 0 } })).toContain('process group could not be checked (pgid 77).');
    expect(facts({ pgid: 77, presence: 'unknown', escaped: { kind: 'scanned', pids: [5], unreadable: 0 } })).toContain('could not be checked (pgid 77), but processes it started still run outside the group (pid 5,');
    for (const h of [found, none]) expect(h).toContain(ORPHAN_WARNING);
  });

  it('quotes only what a shell would misread', () => {
    expect(shellQuote('make')).toBe('make');
    expect(shellQuote('a b')).toBe("'a b'");
    expect(shellQuote('')).toBe("''");
    expect(shellQuote('$HOME')).toBe("'$HOME'");
  });
});

describe('pausedHint', () => {
  it('names --retry-failed, --approve/--reject with the gate, and watch', () => {
    const h = pausedHint('r1', ['review']);
    for (const s of ['--retry-failed', '--approve review', '--reject review', 'runwarden watch r1', 'PAUSED at gate review']) expect(h).toContain(s);
  });
  it('without a known gate shows the <gate-id> placeholder', () => {
    expect(pausedHint('r1', [])).toContain('--approve <gate-id>');
    expect(pausedHint('r1', ['a', 'b'])).toContain('at gates a, b');
  });
});

describe('exec legs: the orphan evidence from exec.pgid', () => {
  const execLeg = ev('run_started', { command: ['node', 'job.js'] }) + ev('node_started', { node_id: 'command' });

  it('a dead exec leg whose child group is alive, then gone', async (ctx) => {
    needs(ctx, 'linux: the gone wording needs the search of /proc/<pid>/environ for the leg mark');
    const root = tempDir();
    const id = runId();
    const dir = makeRun(root, id, {});
    const group = await startGroup();
    const pgid = group.pid!;
    writeFileSync(join(dir, 'exec.pgid'), `${pgid}\n`);
    const leg = await startHolder([{ dir, lines: execLeg }]);
    await leg.kill(); // the leg dies; its child's group lives on

    const alive = runStatus(dir);
    expect(alive.status).toBe('ABANDONED');
    expect(alive.hint).toContain(`runwarden exec ${id} -- node job.js`);
    expect(alive.hint).toContain(`still has live processes (pgid ${pgid})`);
    expect(alive.hint).toContain(ORPHAN_WARNING);

    const gone = new Promise((r) => group.once('exit', r));
    process.kill(-pgid, 'SIGKILL');
    await gone;
    const after = runStatus(dir);
    expect(after.hint).toContain(`No process is left in its command's process group (pgid ${pgid}), and no process this user can read carries the leg's RUNWARDEN_LEG mark`);
    expect(after.hint).toContain(ORPHAN_WARNING); // the warning stays: a child may have left the group
  });

  it('processesMarked finds a process carrying a mark in its environment, whatever its group, and not the reader', async (ctx) => {
    needs(ctx, 'linux: /proc/<pid>/environ');
    const mark = legMark(1n, 2n, 424242);
    const c = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { detached: true, stdio: 'ignore', env: { ...process.env, RUNWARDEN_LEG: mark } });
    groups.push(c);
    await new Promise((res) => c.once('spawn', res));
    let scan = processesMarked(mark);
    for (let i = 0; i < 2000 && scan.kind === 'scanned' && !scan.pids.includes(c.pid!); i++) {
      await new Promise((res) => setTimeout(res, 20)); // a census is reused for a quarter second
      scan = processesMarked(mark);
    }
    expect(scan).toMatchObject({ kind: 'scanned' });
    if (scan.kind !== 'scanned') throw new Error(`no census: ${scan.kind}`); // unreachable past the expect; narrows the type
    expect(scan.pids).toEqual([c.pid]);
    expect(processesMarked(legMark(1n, 2n, 424243))).toMatchObject({ kind: 'scanned', pids: [] });
    // The reader itself is never evidence, even when it carries the mark. Setting process.env here
    // would not change this process's /proc/self/environ (fixed at exec), so a reader is started with
    // the mark in its environment, and scans from there: it must see the other marked process (the
    // scan works) and not itself.
    const reader = spawnSync(
      process.execPath,
      ['--input-type=module', '-e', `const m = await import(${JSON.stringify(LEGMARK_JS)}); console.log(JSON.stringify({ self: process.pid, scan: m.processesMarked(process.env.RUNWARDEN_LEG) }));`],
      { env: { ...process.env, RUNWARDEN_LEG: mark }, encoding: 'utf8', timeout: 60_000 },
    );
    expect(reader.stderr).toBe('');
    const seen = JSON.parse(reader.stdout) as { self: number; scan: { kind: string; pids?: number[] } };
    expect(readFileSync(`/proc/${c.pid!}/environ`, 'latin1').split('\0')).toContain(`RUNWARDEN_LEG=${mark}`);
    expect(seen.scan.kind).toBe('scanned');
    expect(seen.scan.pids, 'the reader sees the other marked process').toContain(c.pid);
    expect(seen.scan.pids, 'and never itself').not.toContain(seen.self);
  });

  it('a run that is not an exec leg never reads exec.pgid', async () => {
    const root = tempDir();
    const dir = makeRun(root, runId(), { events: ev('run_started') + ev('node_started', { node_id: 'a' }), lock: 'marked', pgid: '12345\n' });
    const r = runStatus(dir);
    expect(r.status).toBe('ABANDONED');
    expect(r.hint).not.toContain('pgid');
  });

  it('a hostile exec.pgid is reported, never trusted, never blocks', () => {
    const root = tempDir();
    const dir = join(root, 'x');
    mkdirSync(dir);
    const p = join(dir, 'exec.pgid');
    expect(orphanEvidence(dir)).toBeUndefined();
    for (const bad of ['', 'abc\n', '0\n', '1\n', '-5\n', '007\n', '12 \n', '12\n\n', '2147483648\n', '9'.repeat(40)]) {
      writeFileSync(p, bad);
      expect(orphanEvidence(dir), JSON.stringify(bad)).toHaveProperty('error');
    }
    writeFileSync(p, '4242');
    expect(parsePgid(Buffer.from('4242'))).toBe(4242);
    // A FIFO and a symbolic link in its place: POSIX systems (Windows has no FIFO; Wine makes no link).
    if (process.platform !== 'win32') {
      execFileSync('rm', [p]);
      execFileSync('mkfifo', [p]);
      expect(orphanEvidence(dir)).toEqual({ error: 'exec.pgid is a fifo, not a regular file' });
      execFileSync('rm', [p]);
      symlinkSync('/etc/hostname', p);
      expect(orphanEvidence(dir)).toEqual({ error: 'exec.pgid is a symlink, not a regular file' });
    }
  });

  it('an abandoned exec run with a broken exec.pgid says so in its hint', () => {
    const root = tempDir();
    const dir = makeRun(root, runId(), { events: execLeg, lock: 'marked', pgid: 'garbage' });
    expect(runStatus(dir).hint).toContain('could not be checked (exec.pgid does not hold a process group id)');
  });
});
