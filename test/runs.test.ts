/** `runwarden runs`: the table, its hints and closing line, `--json` per CONTRACT §5.2, colour rules, root resolution. */
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { BIN, cleanup, cli, ev, makeRun, snapshot, startHolder, tempDir } from './helpers/reading-fixtures.js';
import { needs } from './helpers/prereq.js';

afterEach(cleanup);
afterAll(cleanup);

const started = ev('run_started') + ev('node_started', { node_id: 'a' });
const finished = (o: string) => started + ev('run_finished', { outcome: o });

/** A root with one run per interesting shape; ids sort in the order created (oldest first). */
async function sampleRoot() {
  const root = tempDir('rw-runs-');
  makeRun(root, 'r1-pass', { events: finished('passed'), state: snapshot({ a: 'PASS', b: 'PASS' }, { name: 'docs', cost: 0.5 }) });
  makeRun(root, 'r2-paused', { events: started + ev('gate_paused', { node_id: 'review' }) + ev('run_finished', { outcome: 'paused' }), state: snapshot({ a: 'PASS', review: '' }, { name: 'notes' }) });
  makeRun(root, 'r3-none', {});
  makeRun(root, 'r4-dead', { events: started, lock: 'marked' });
  const live = makeRun(root, 'r5-live', { state: snapshot({ a: '' }, { name: 'ci', graph: ['a', 'b'] }) });
  const holder = await startHolder([{ dir: live, lines: started }]);
  makeRun(root, 'r0-broken', { events: finished('passed'), state: '{' });
  return { root, holder };
}

const REPORT_KEYS = ['run_id', 'status', 'liveness', 'reason', 'has_snapshot', 'graph', 'nodes_total', 'nodes_passed', 'cost_usd', 'cost_unknown', 'hint', 'warnings'];

describe('runs: the table', () => {
  it('newest first, `-` where a value does not exist, a hint under each ABANDONED and PAUSED row, a closing line', async () => {
    const { root } = await sampleRoot();
    const r = cli(['runs', '--root', root]);
    expect(r.status).toBe(0);
    expect(r.stderr).toBe('');
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`runs under ${root}`);
    expect(lines[1]).toMatch(/^RUN +GRAPH +NODES +COST +STATUS$/);
    const rows = lines.filter((l) => /^r\d/.test(l)).map((l) => l.split(/ {2,}/));
    expect(rows).toEqual([
      ['r5-live', 'ci', '0/2', '$0.2500', 'RUNNING'],
      ['r4-dead', '-', '-', '-', 'ABANDONED'],
      ['r3-none', '-', '-', '-', '-'],
      ['r2-paused', 'notes', '1/2', '$0.5000', 'PAUSED'],
      ['r1-pass', 'docs', '2/2', '$1.0000', 'PASS'],
    ]);
    const after = (id: string) => lines[lines.findIndex((l) => l.startsWith(id)) + 1] ?? '';
    expect(after('r4-dead')).toBe('    run r4-dead is ABANDONED: a leg started and never reported an end (the process running it is gone).');
    expect(after('r2-paused')).toBe('    run r2-paused is PAUSED at gate review, waiting for a decision.');
    expect(after('r5-live')).toMatch(/^r4-dead/);
    expect(r.stdout).toMatch(/^ {4}Warning: a child process the dead leg started may still be running/m);
    expect(lines[lines.length - 1]).toBe('5 runs shown (1 running, 1 abandoned, 1 paused, 1 passed, 1 without a status yet); 1 skipped (1 unreadable state.json); --show-skipped names them.');
    const shown = cli(['runs', '--root', root, '--show-skipped']).stdout;
    expect(shown).toMatch(/^skipped r0-broken: state\.json: not valid JSON/m);
    expect(shown.trimEnd().split('\n').pop()).toMatch(/1 skipped \(1 unreadable state\.json\)\.$/);
  });

  it('--json is exactly CONTRACT §5.2: { schema, root, runs: [RunReport…], skipped: [{ run_id, error }] }', async () => {
    const { root } = await sampleRoot();
    const r = cli(['runs', '--root', root, '--json']);
    expect(r.status).toBe(0);
    const json = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(Object.keys(json)).toEqual(['schema', 'root', 'runs', 'skipped', 'more']);
    expect(json['schema']).toBe(1);
    expect(json['root']).toBe(root);
    const runs = json['runs'] as Record<string, unknown>[];
    expect(runs.map((x) => x['run_id'])).toEqual(['r5-live', 'r4-dead', 'r3-none', 'r2-paused', 'r1-pass']);
    for (const x of runs) expect(Object.keys(x)).toEqual(REPORT_KEYS);
    expect(runs[2]).toEqual({
      run_id: 'r3-none', status: null, liveness: null, reason: null, has_snapshot: false, graph: null,
      nodes_total: null, nodes_passed: null, cost_usd: null, cost_unknown: false, hint: null, warnings: [],
    });
    expect(json['skipped']).toEqual([{ run_id: 'r0-broken', error: expect.stringMatching(/^state\.json: not valid JSON/) }]);
  });

  it('a missing root is an empty list with a one-line note, not a crash', () => {
    const root = join(tempDir(), 'not-yet');
    const r = cli(['runs', '--root', root]);
    expect(r).toMatchObject({ status: 0, stderr: '' });
    expect(r.stdout).toBe(`No runs: ${root} does not exist (nothing has run under this root yet).\n`);
    const j = cli(['runs', '--root', root, '--json']);
    expect(j.status).toBe(0);
    expect(JSON.parse(j.stdout)).toEqual({ schema: 1, root, runs: [], skipped: [], more: false });
    expect(j.stderr).toBe(`runwarden: note: ${root} does not exist; no runs\n`);
  });

  it('an empty root says so', () => {
    const root = tempDir();
    expect(cli(['runs', '--root', root]).stdout).toBe(`No runs under ${root}.\n`);
  });
});

describe('runs: colour', () => {
  /** Runs the CLI under a pseudo-terminal (util-linux `script`), with NO_COLOR (and FORCE_COLOR) as given. */
  function onTty(args: string[], noColor: string | undefined, forceColor?: string): string {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== 'NO_COLOR' && k !== 'FORCE_COLOR') env[k] = v;
    if (noColor !== undefined) env['NO_COLOR'] = noColor;
    if (forceColor !== undefined) env['FORCE_COLOR'] = forceColor;
    const cmd = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    const r = spawnSync('script', ['-qec', cmd, '/dev/null'], { encoding: 'utf8', env, timeout: 60_000 });
    expect(r.status).toBe(0);
    return r.stdout;
  }

  it('state colours on a terminal; none with NO_COLOR (even empty); none when not a terminal', async (ctx) => {
    needs(ctx, 'script');
    const { root } = await sampleRoot();
    const tty = onTty(['runs', '--root', root], undefined);
    expect(tty).toContain('\x1b[38;5;214mRUNNING\x1b[0m'); // amber
    expect(tty).toContain('\x1b[38;5;103mABANDONED\x1b[0m'); // muted grey-violet
    expect(tty).toContain('\x1b[38;5;208mPAUSED\x1b[0m'); // orange
    expect(tty).toContain('\x1b[38;5;34mPASS\x1b[0m'); // green
    expect(onTty(['runs', '--root', root], '1')).not.toContain('\x1b[');
    expect(onTty(['runs', '--root', root], '')).not.toContain('\x1b[');
    const piped = cli(['runs', '--root', root], { NO_COLOR: undefined });
    expect(piped.stdout).toContain('ABANDONED');
    expect(piped.stdout).not.toContain('\x1b[');
  });

  it('FORCE_COLOR decides when set, as Node reads it: 1/2/3/true/empty colour even into a pipe and over NO_COLOR; 0/false never colour', async (ctx) => {
    const { root } = await sampleRoot();
    const amber = '\x1b[38;5;214mRUNNING\x1b[0m';
    for (const v of ['1', '2', '3', 'true', '']) {
      expect(cli(['runs', '--root', root], { NO_COLOR: undefined, FORCE_COLOR: v }).stdout, `FORCE_COLOR=${v}`).toContain(amber);
    }
    expect(cli(['runs', '--root', root], { NO_COLOR: '1', FORCE_COLOR: '1' }).stdout).toContain(amber);
    for (const v of ['0', 'false']) {
      expect(cli(['runs', '--root', root], { NO_COLOR: undefined, FORCE_COLOR: v }).stdout, `FORCE_COLOR=${v}`).not.toContain('\x1b[');
    }
    // status honours it too; --json never carries colour.
    expect(cli(['status', 'r5-live', '--root', root], { FORCE_COLOR: '1' }).stdout).toContain(amber);
    expect(cli(['runs', '--root', root, '--json'], { FORCE_COLOR: '1' }).stdout).not.toContain('\x1b[');
    needs(ctx, 'script');
    expect(onTty(['runs', '--root', root], undefined, '0')).not.toContain('\x1b[');
    expect(onTty(['runs', '--root', root], undefined, '1')).toContain(amber);
  });
});

describe('runs: hostile names', () => {
  it('control characters from a run directory are shown escaped, never sent to the terminal', (ctx) => {
    needs(ctx, 'posix: control characters in a file name (Windows allows none, 1 to 31, in a name)');
    const root = tempDir();
    const id = 'evil\x1b[31mred';
    makeRun(root, id, { events: finished('passed'), state: snapshot({ 'n\x07': 'PASS' }, { name: 'g\x1b[2J' }) });
    const r = cli(['runs', '--root', root]);
    expect(r.stdout).not.toContain('\x1b');
    expect(r.stdout).toContain('evil\\x1b[31mred');
    expect(r.stdout).toContain('g\\x1b[2J');
    const s = cli(['status', id, '--root', root]);
    expect(s.stdout).not.toMatch(/[\x00-\x09\x0b-\x1f]/);
    expect(s.stdout).toContain('n\\x07');
    // JSON keeps the exact bytes (escaped by JSON itself).
    expect((JSON.parse(cli(['runs', '--root', root, '--json']).stdout) as { runs: { run_id: string }[] }).runs[0]?.run_id).toBe(id);
  });
});

describe('runs: a reader that stops early', () => {
  it('`runs | head -1` ends quietly: exit 0, no stack trace', (ctx) => {
    needs(ctx, 'posix: bash, head and a pipe that closes early');
    const root = tempDir();
    for (let i = 0; i < 3000; i++) mkdirSync(join(root, `run-${String(i).padStart(5, '0')}`)); // > 64 KiB of rows
    const script = '"$0" "$1" runs --root "$2" | head -n 1 >/dev/null; echo "${PIPESTATUS[0]}"';
    const r = spawnSync('bash', ['-c', script, process.execPath, BIN, root], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' }, timeout: 60_000 });
    expect(r.stdout.trim()).toBe('0');
    expect(r.stderr).toBe('');
  });
});

describe('runs: the root', () => {
  it('--root, then $OMG_HOME/runs, then $HOME/.oh-my-graph/runs', () => {
    const omg = tempDir();
    mkdirSync(join(omg, 'runs'));
    makeRun(join(omg, 'runs'), 'from-omg', {});
    const home = tempDir();
    makeRun(join(home, '.oh-my-graph', 'runs'), 'from-home', {});
    const ids = (env: Record<string, string | undefined>, args: string[] = []) =>
      (JSON.parse(cli(['runs', '--json', ...args], env).stdout) as { runs: { run_id: string }[] }).runs.map((x) => x.run_id);
    expect(ids({ OMG_HOME: omg, HOME: home })).toEqual(['from-omg']);
    expect(ids({ OMG_HOME: '', HOME: home })).toEqual(['from-home']);
    expect(ids({ OMG_HOME: undefined, HOME: home })).toEqual(['from-home']);
    expect(ids({ OMG_HOME: omg, HOME: home }, ['--root', join(home, '.oh-my-graph', 'runs')])).toEqual(['from-home']);
  });

  it('usage errors exit 2 with one line', () => {
    const r = cli(['runs', '--root', '']);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe('runwarden: --root must not be empty\n');
    expect(cli(['runs', '--bogus']).status).toBe(2);
    expect(cli(['runs', 'extra-arg']).status).toBe(2);
  });
});
