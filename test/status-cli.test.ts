/**
 * `runwarden status [RUN]`, RUN resolution (CONTRACT §1.1), and the agreement of
 * every surface: `runs --json`, `status --json`, runStatus, runDetail and
 * listRuns give the same report for every run, because they are one function.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { listRuns } from '../src/status/list.js';
import { isRunPath, resolveRunArg, runDirForId } from '../src/contract/runid.js';
import { runDetail } from '../src/status/detail.js';
import { RunIdError } from '../src/contract/errors.js';
import { runStatus } from '../src/status/inspect.js';
import type { RunReport } from '../src/contract/types.js';
import { buildHostileRoot } from './helpers/reading-cases.js';
import { cleanup, cli, ev, makeRun, snapshot, startHolder, tempDir } from './helpers/reading-fixtures.js';
import { needs } from './helpers/prereq.js';

afterEach(cleanup);
afterAll(cleanup);

const started = ev('run_started') + ev('node_started', { node_id: 'a' });

describe('status [RUN]', () => {
  it('without RUN: the newest in-flight run, never an abandoned one; else the newest', async () => {
    const root = tempDir();
    makeRun(root, 'a-pass', { events: started + ev('run_finished', { outcome: 'passed' }) });
    const live = makeRun(root, 'b-live', {});
    makeRun(root, 'c-dead', { events: started, lock: 'marked' });
    const h = await startHolder([{ dir: live, lines: started }]);
    const now = cli(['status', '--root', root, '--json']);
    expect(now.status).toBe(0);
    expect(JSON.parse(now.stdout)).toMatchObject({ run_id: 'b-live', status: 'RUNNING' });
    await h.kill();
    // Nothing in flight any more: the newest run, abandoned or not.
    expect(JSON.parse(cli(['status', '--root', root, '--json']).stdout)).toMatchObject({ run_id: 'c-dead', status: 'ABANDONED' });
  });

  it('RUN is an id under the root, or a path when it contains "/" (on Windows, a drive letter or a backslash too)', () => {
    const root = tempDir();
    const dir = makeRun(root, 'r1', { events: started + ev('gate_paused', { node_id: 'g' }) + ev('run_finished', { outcome: 'paused' }), state: snapshot({ a: 'PASS' }) });
    const byId = cli(['status', 'r1', '--root', root, '--json']);
    const byPath = cli(['status', dir, '--json']);
    const bySlash = cli(['status', dir + '/', '--json']);
    expect(byId.status).toBe(0);
    expect(byPath.stdout).toBe(byId.stdout);
    expect(bySlash.stdout).toBe(byId.stdout);
    const human = cli(['status', 'r1', '--root', root]);
    expect(human.stdout).toMatch(/^run r1 {2}PAUSED$/m);
    expect(human.stdout).toMatch(/^ {2}liveness +not probed \(last leg closed\)$/m);
    expect(human.stdout).toMatch(/^hint:\n {2}run r1 is PAUSED at gate g/m);
    expect(human.stdout).toMatch(/^ {4}g +gate-paused$/m);
    if (process.platform === 'win32') {
      // dir is C:\...\r1: a path by its drive letter and backslashes; forward slashes name it too.
      expect(dir).toMatch(/^[A-Za-z]:\\/);
      expect(cli(['status', dir.replace(/\\/g, '/'), '--json']).stdout).toBe(byId.stdout);
    }
  });

  it('refuses an empty id, ".", "..", an unknown run and a file (exit 2, one line)', () => {
    const root = tempDir();
    makeRun(root, 'r1', {});
    writeFileSync(join(root, 'plain'), '');
    const cases: [string[], string][] = [
      [['status', '', '--root', root], 'runwarden: a run id must not be empty\n'],
      [['status', '.', '--root', root], 'runwarden: "." is not a run id\n'],
      [['status', '..', '--root', root], 'runwarden: ".." is not a run id\n'],
      [['status', 'nope', '--root', root], `runwarden: no run "nope" under ${root}\n`],
      [['status', 'plain', '--root', root], `runwarden: run "plain" under ${root} is not a directory\n`],
      [['status', join(root, 'missing') + '/'], `runwarden: no run directory at ${join(root, 'missing')}\n`],
      [['status', '--root', join(root, 'none')], `runwarden: no runs to report: ${join(root, 'none')} does not exist\n`],
    ];
    for (const [args, message] of cases) {
      const r = cli(args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toBe(message);
    }
  });

  it('refuses a symlinked id (exit 2, one line)', (ctx) => {
    needs(ctx, 'not-wine: symbolic links (Wine 8 reports one made and makes nothing)');
    const root = tempDir();
    makeRun(root, 'r1', {});
    symlinkSync(join(root, 'r1'), join(root, 'alias'));
    const r = cli(['status', 'alias', '--root', root]);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(`runwarden: run "alias" under ${root} is a symlink; links under the runs root are not followed\n`);
  });

  it('an unreadable run: exit 1 and the reason', () => {
    const root = tempDir();
    makeRun(root, 'r1', { events: started + ev('run_finished', { outcome: 'passed' }), state: '{"schema":2}' });
    const r = cli(['status', 'r1', '--root', root]);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe('runwarden: run r1 cannot be read: state.json: incompatible snapshot schema 2 (this version reads schema 3)\n');
  });
});

describe('run id resolution (CONTRACT §1.1)', () => {
  it('ids never escape the root', () => {
    for (const bad of ['', '.', '..', 'a/b', '../x', 'x\0y']) expect(() => runDirForId('/r', bad)).toThrow(RunIdError);
    // resolve('/r') is /r on POSIX systems, the current drive's \r on Windows.
    expect(runDirForId('/r', 'a..b')).toBe(join(resolve('/r'), 'a..b'));
    expect(runDirForId('/r/', '...')).toBe(join(resolve('/r'), '...'));
    expect(resolveRunArg('../elsewhere/run', '/r')).toMatch(/[\\/]elsewhere[\\/]run$/); // a path, used as given
    expect(() => resolveRunArg('..', '/r')).toThrow(RunIdError);
  });

  it('a path or an id: "/" everywhere; on Windows a drive letter or a backslash standing for itself too, never an escape', () => {
    for (const p of ['linux', 'darwin', 'win32'] as const) {
      expect(isRunPath('a/b', p), p).toBe(true);
      expect(isRunPath('r1', p), p).toBe(false);
      // \xff is an escape of a shown name (CONTRACT §1.1 rule 6): an id on every system.
      expect(isRunPath('run-\\xff', p), p).toBe(false);
    }
    expect(isRunPath('C:\\runs\\r1', 'win32')).toBe(true);
    expect(isRunPath('C:r1', 'win32')).toBe(true);
    expect(isRunPath('\\\\server\\share\\r1', 'win32')).toBe(true);
    expect(isRunPath('runs\\r1', 'win32')).toBe(true);
    expect(isRunPath('run-\\\\x', 'win32')).toBe(true); // an escaped backslash stands for a backslash
    expect(isRunPath('C:\\runs\\r1', 'linux')).toBe(false);
    expect(isRunPath('runs\\r1', 'darwin')).toBe(false);
  });
});

describe('every surface agrees', () => {
  it('runs --json, status --json, runStatus, runDetail and listRuns give the same report for every run', async () => {
    const root = tempDir('rw-agree-');
    const outside = tempDir('rw-agree-out-');
    buildHostileRoot(root, outside);
    const live = makeRun(root, 'z-live', { state: snapshot({ a: '' }) });
    const planning = makeRun(root, 'z-planning', {});
    const dead = makeRun(root, 'z-dead', { state: snapshot({ a: 'PASS' }, { graph: ['a', 'b'] }) });
    mkdirSync(join(root, 'z-empty'));
    const h = await startHolder([
      { dir: live, lines: started },
      { dir: planning, lines: ev('run_started', { phase: 'planning' }) },
    ]);
    const victim = await startHolder([{ dir: dead, lines: started }]);
    await victim.kill();

    const list = listRuns(root);
    const json = JSON.parse(cli(['runs', '--root', root, '--json']).stdout) as { runs: RunReport[]; skipped: { run_id: string; error: string }[] };
    expect(json.runs).toEqual(list.runs);
    expect(json.skipped).toEqual(list.skipped.map(({ run_id, error }) => ({ run_id, error })));
    const statuses = new Set(list.runs.map((r) => r.status));
    for (const s of ['RUNNING', 'PLANNING', 'ABANDONED', 'PASS', 'FAIL', null]) expect(statuses.has(s as RunReport['status'])).toBe(true);
    for (const row of list.runs) {
      const dir = join(root, row.run_id);
      expect(runStatus(dir), row.run_id).toEqual(row);
      expect(runDetail(dir).report, row.run_id).toEqual(row);
      // status --json is the same report, with the document's schema version first.
      const doc = JSON.parse(cli(['status', row.run_id, '--root', root, '--json']).stdout) as Record<string, unknown>;
      expect(Object.keys(doc)[0]).toBe('schema');
      expect(doc, row.run_id).toEqual({ schema: 1, ...row });
    }
    await h.kill();
  }, 600_000);
});
