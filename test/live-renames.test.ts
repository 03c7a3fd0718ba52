/**
 * Renames inside a followed root: a run's watch follows its directory's
 * inode, not its name, so after two runs are exchanged (`renameat2`
 * RENAME_EXCHANGE), a run is moved onto an empty run directory, or one run
 * is renamed away and back hundreds of times, the live engine follows each
 * directory at its name now, with its own status, without the safety pass
 * (pushed out of reach here) or a listing of the root.
 *
 * The reference is written here: which runs are at which names, and the
 * status each one's files and lock give (CONTRACT §5.1).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LiveEngine } from '../src/index.js';
import { encodeEvents, eventObject } from './helpers/events.js';
import { cleanupTemp, killAll, startHolder, tempDir, until } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';
import { RELEASED } from './helpers/portable.js';

const engines: LiveEngine[] = [];
afterEach(async () => {
  for (const e of engines.splice(0)) e.close();
  await killAll();
  cleanupTemp();
});

/** A run at `root/name`: settled (one closed leg: FAIL without a graph) or with an open leg. */
function makeRun(root: string, name: string, settled: boolean): void {
  const dir = join(root, name);
  mkdirSync(dir);
  const lines = [eventObject({ event: 'run_started', command: ['x'] })];
  if (settled) lines.push(eventObject({ event: 'run_finished', outcome: 'completed', exit_code: 0 }));
  writeFileSync(join(dir, 'events.jsonl'), encodeEvents(lines));
  writeFileSync(join(dir, 'resume.lock'), RELEASED);
}

/** renameat2(RENAME_EXCHANGE) through Python's ctypes (coreutils' `mv --exchange` is newer than Debian 12's). */
function exchange(a: string, b: string): void {
  execFileSync('python3', ['-c', 'import ctypes,sys,os\nl=ctypes.CDLL(None,use_errno=True)\nif l.renameat2(-100,os.fsencode(sys.argv[1]),-100,os.fsencode(sys.argv[2]),2)!=0: sys.exit(ctypes.get_errno())', a, b]);
}

async function engineOn(root: string): Promise<LiveEngine> {
  const e = new LiveEngine({ root, safetyMs: 1e9 });
  engines.push(e);
  await e.start();
  return e;
}

/** The engine's runs as `name:STATUS`, in its order. */
function statuses(e: LiveEngine): string[] {
  return e.runs().map((r) => `${r.runId}:${r.report?.status ?? (r.error === null ? 'none' : 'error')}`);
}

async function expectRuns(e: LiveEngine, want: string[]): Promise<void> {
  await until(() => JSON.stringify(statuses(e)) === JSON.stringify(want), 60_000).catch(() => undefined);
  expect(statuses(e)).toEqual(want);
  expect(e.stats.runs).toBe(want.length);
}

describe('renames inside a followed root', () => {
  it('two runs exchanged: each name shows the run now there', async (ctx) => {
    needs(ctx, 'linux: inotify tells each name of an exchange');
    const root = tempDir('rw-renames-');
    makeRun(root, 'run-1', true);
    makeRun(root, 'run-0', false);
    const e = await engineOn(root);
    await expectRuns(e, ['run-1:FAIL', 'run-0:ABANDONED']);
    const listings = e.stats.rootListings;
    exchange(join(root, 'run-1'), join(root, 'run-0'));
    await expectRuns(e, ['run-1:ABANDONED', 'run-0:FAIL']);
    expect(e.stats.rootListings).toBe(listings);
  });

  it('a held run exchanged with an abandoned one: the abandoned name reads ABANDONED, the held one RUNNING', async (ctx) => {
    needs(ctx, 'linux: inotify tells each name of an exchange');
    const root = tempDir('rw-renames-');
    makeRun(root, 'held', false);
    makeRun(root, 'dead', false);
    await startHolder(join(root, 'held', 'resume.lock'));
    const e = await engineOn(root);
    await expectRuns(e, ['held:RUNNING', 'dead:ABANDONED']);
    exchange(join(root, 'held'), join(root, 'dead'));
    await expectRuns(e, ['held:ABANDONED', 'dead:RUNNING']);
  });

  it('a run moved onto an empty run directory: the name shows the run, the old name is gone', async (ctx) => {
    needs(ctx, 'linux: inotify tells each name of a rename');
    const root = tempDir('rw-renames-');
    makeRun(root, 'b-run', true);
    mkdirSync(join(root, 'a-empty'));
    const e = await engineOn(root);
    await expectRuns(e, ['b-run:FAIL', 'a-empty:none']);
    renameSync(join(root, 'b-run'), join(root, 'a-empty'));
    await expectRuns(e, ['a-empty:FAIL']);
  });

  it('300 quick renames away and back: every run is followed at its name, once', async (ctx) => {
    needs(ctx, 'linux: inotify tells each name of a rename');
    const root = tempDir('rw-renames-');
    for (let i = 0; i < 10; i++) makeRun(root, `run-${i}`, i !== 3);
    const e = await engineOn(root);
    const want = Array.from({ length: 10 }, (_, k) => `run-${9 - k}:${9 - k === 3 ? 'ABANDONED' : 'FAIL'}`);
    await expectRuns(e, want);
    for (let i = 0; i < 300; i++) {
      const from = join(root, `run-${i % 10}`);
      renameSync(from, join(root, 'moving'));
      renameSync(join(root, 'moving'), from);
    }
    await expectRuns(e, want);
  });
});

describe('a run named by bytes that are not UTF-8', () => {
  it('is watched by its exact bytes: an append and an exchange are told with polling and the safety pass out of reach', async (ctx) => {
    needs(ctx, 'linux: inotify tells each name of an exchange');
    const root = tempDir('rw-renames-');
    const ff = Buffer.concat([Buffer.from(root + '/'), Buffer.of(0xff)]);
    const file = (dir: Buffer, f: string): Buffer => Buffer.concat([dir, Buffer.from('/' + f)]);
    mkdirSync(ff);
    writeFileSync(file(ff, 'events.jsonl'), encodeEvents([eventObject({ event: 'run_started', command: ['x'] })]));
    writeFileSync(file(ff, 'resume.lock'), RELEASED);
    makeRun(root, 'plain', false);
    const e = new LiveEngine({ root, safetyMs: 1e9, pollMs: 1e9, openRecheckMs: 1e9 });
    engines.push(e);
    await e.start();
    await expectRuns(e, ['\\xff:ABANDONED', 'plain:ABANDONED']);
    expect(e.stats.unwatched).toBe(0);
    writeFileSync(file(ff, 'events.jsonl'), encodeEvents([eventObject({ event: 'run_started', command: ['x'] }), eventObject({ event: 'run_finished', outcome: 'completed', exit_code: 0 })]));
    await expectRuns(e, ['\\xff:FAIL', 'plain:ABANDONED']);
    execFileSync('python3', ['-c', 'import ctypes,sys\nl=ctypes.CDLL(None,use_errno=True)\nif l.renameat2(-100,bytes.fromhex(sys.argv[1]),-100,bytes.fromhex(sys.argv[2]),2)!=0: sys.exit(ctypes.get_errno())', ff.toString('hex'), Buffer.from(join(root, 'plain')).toString('hex')]);
    await expectRuns(e, ['\\xff:ABANDONED', 'plain:FAIL']);
    expect(e.stats.unwatched).toBe(0);
  });
});
