/**
 * Bad input never crashes a listing or loses other rows:
 * every hostile case ends as a row or a named skip with its reason, through
 * the library and through the CLI, within a bounded time (a FIFO never hangs).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { listRuns } from '../src/status/list.js';
import type { RunReport } from '../src/contract/types.js';
import { buildHostileRoot, type Case } from './helpers/reading-cases.js';
import { BIN, cleanup, cli, ev, makeRun, snapshot, tempDir } from './helpers/reading-fixtures.js';
import { needs } from './helpers/prereq.js';

afterAll(cleanup);

function judge(cases: Case[], runs: RunReport[], skipped: { run_id: string; error: string }[]): void {
  expect(runs.length + skipped.length).toBe(cases.length);
  for (const c of cases) {
    const row = runs.find((r) => r.run_id === c.id);
    const skip = skipped.find((s) => s.run_id === c.id);
    if ('skip' in c.expect) {
      expect(row, `${c.what}: should be skipped`).toBeUndefined();
      expect(skip?.error, c.what).toMatch(c.expect.skip);
    } else {
      expect(skip, `${c.what}: should be a row, was skipped: ${skip?.error}`).toBeUndefined();
      expect(row?.status, c.what).toBe(c.expect.row);
      if (c.expect.warning) expect(row?.warnings.join('\n'), c.what).toMatch(c.expect.warning);
      if (c.expect.reason) expect(row?.reason, c.what).toBe(c.expect.reason);
    }
  }
}

describe('a root holding every hostile case', () => {
  const root = tempDir('rw-hostile-');
  const outside = tempDir('rw-outside-');
  const cases = buildHostileRoot(root, outside);

  it('the library lists it: every case a row or a named skip', () => {
    const list = listRuns(root);
    judge(cases, list.runs, list.skipped);
    // Newest first, rows and skips alike.
    expect(list.runs.map((r) => r.run_id)).toEqual([...list.runs.map((r) => r.run_id)].sort().reverse());
  });

  it('`runs --json` lists it the same way, in bounded time', () => {
    const r = cli(['runs', '--root', root, '--json']);
    expect(r.status).toBe(0);
    const json = JSON.parse(r.stdout) as { runs: RunReport[]; skipped: { run_id: string; error: string }[] };
    judge(cases, json.runs, json.skipped);
  });

  it('`runs --show-skipped` names each skipped run and its reason; the closing line counts them', () => {
    const r = cli(['runs', '--root', root, '--show-skipped']);
    expect(r.status).toBe(0);
    const skips = cases.filter((c) => 'skip' in c.expect);
    for (const c of skips) expect(r.stdout).toMatch(new RegExp(`^skipped ${c.id}: `, 'm'));
    const rows = cases.length - skips.length;
    expect(r.stdout).toMatch(new RegExp(`^${rows} runs shown \\(.*\\); ${skips.length} skipped \\(.*unreadable events\\.jsonl.*\\)\\.$`, 'm'));
    const plain = cli(['runs', '--root', root]);
    expect(plain.stdout).not.toMatch(/^skipped /m);
    expect(plain.stdout).toMatch(/--show-skipped names them\.$/m);
  });

  it('`status` on each case is a report, or a clear one-line error with no stack trace', () => {
    for (const c of cases) {
      const r = cli(['status', c.id, '--root', root, '--json']);
      expect(r.stderr, c.what).not.toMatch(/\n\s+at /);
      if ('skip' in c.expect) {
        expect([1, 2], c.what).toContain(r.status);
        expect(r.stderr.trim().split('\n'), c.what).toHaveLength(1);
      } else {
        expect(r.status, c.what).toBe(0);
        expect((JSON.parse(r.stdout) as RunReport).status, c.what).toBe(c.expect.row);
      }
    }
  }, 600_000);
});

/** Runs the CLI as an unprivileged user when we are root, so permissions really bite. */
function cliAsUser(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const asRoot = process.getuid?.() === 0;
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1' },
    timeout: 60_000,
    ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('unreadable directories and files', () => {
  it('an unreadable run directory or file is a named skip; readable runs keep their rows', (ctx) => {
    needs(ctx, 'posix: modes and another uid');
    const root = tempDir('rw-perm-');
    chmodSync(root, 0o755);
    const done = ev('run_started') + ev('run_finished', { outcome: 'passed' });
    const open = (id: string, spec: Parameters<typeof makeRun>[2]) => {
      const d = makeRun(root, id, spec);
      chmodSync(d, 0o755);
      // makeRun writes 0600 as a leg does; these runs are meant to be readable by anyone.
      for (const f of readdirSync(d)) chmodSync(join(d, f), 0o644);
      return d;
    };
    open('a-readable', { events: done, state: snapshot({ a: 'PASS' }) });
    const locked = makeRun(root, 'b-locked-dir', { events: done });
    chmodSync(locked, 0o700); // owner only: not ours when we run as nobody
    const d3 = open('c-locked-stream', { events: done });
    chmodSync(join(d3, 'events.jsonl'), 0o600);
    const d4 = open('d-locked-snapshot', { events: done, state: snapshot({ a: 'PASS' }) });
    chmodSync(join(d4, 'state.json'), 0o600);
    if (process.getuid?.() !== 0) {
      chmodSync(locked, 0o000);
      chmodSync(join(d3, 'events.jsonl'), 0o000);
      chmodSync(join(d4, 'state.json'), 0o000);
    }
    const r = cliAsUser(['runs', '--root', root, '--json']);
    expect(r.status).toBe(0);
    const json = JSON.parse(r.stdout) as { runs: RunReport[]; skipped: { run_id: string; error: string }[] };
    expect(json.runs.map((x) => [x.run_id, x.status])).toEqual([['a-readable', 'PASS']]);
    expect(json.skipped).toEqual([
      { run_id: 'd-locked-snapshot', error: 'cannot open state.json: EACCES' },
      { run_id: 'c-locked-stream', error: 'cannot open events.jsonl: EACCES' },
      { run_id: 'b-locked-dir', error: 'cannot open the run directory: EACCES' },
    ]);
    const human = cliAsUser(['runs', '--root', root]);
    expect(human.stdout).toMatch(/1 run shown \(1 passed\); 3 skipped \(3 permission denied\)/);
  });

  it('an unreadable root is a clear error (exit 2), not a crash', (ctx) => {
    needs(ctx, 'posix: modes and another uid');
    const base = tempDir('rw-permroot-');
    chmodSync(base, 0o755);
    const root = join(base, 'runs');
    mkdirSync(root, { mode: 0o700 });
    if (process.getuid?.() !== 0) chmodSync(root, 0o000);
    const r = cliAsUser(['runs', '--root', root]);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(`runwarden: cannot read runs root "${root}": EACCES\n`);
  });

  it('a root that is a file is a clear error (exit 2)', () => {
    const f = join(tempDir(), 'file');
    writeFileSync(f, '');
    const r = cli(['runs', '--root', f]);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(`runwarden: runs root "${f}" is not a directory\n`);
  });
});
