/**
 * Selecting runs (status/select.ts): `runs --status/--graph/--id/--limit/--before`
 * and `listRuns(root, { select })`, over real run directories and a real dead
 * holder. Pages are checked to neither repeat nor skip a run, and a small page of
 * a root inspects only the runs it needs (counted through listRuns' `report` seam).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { cleanup, cli, ev, makeRun, runId, snapshot, startHolder, tempDir } from './helpers/reading-fixtures.js';
import { listRuns } from '../src/status/list.js';
import { runStatus } from '../src/status/inspect.js';
import { parseLimit, parseStatusFilter } from '../src/status/select.js';

afterAll(cleanup);

const started = (id: string) => ev('run_started', { graph: 'g' }, id);
const finished = (id: string, outcome: string) => ev('run_finished', { outcome }, id);

async function mixedRoot(): Promise<{ root: string; ids: Record<string, string[]> }> {
  const root = tempDir('rw-select-');
  const ids: Record<string, string[]> = { pass: [], fail: [], abandoned: [], none: [] };
  for (let i = 0; i < 12; i++) {
    const id = runId();
    const kind = ['pass', 'fail', 'abandoned', 'none'][i % 4];
    ids[kind].push(id);
    if (kind === 'none') {
      makeRun(root, id, {});
      continue;
    }
    const verdict = kind === 'pass' ? 'PASS' : 'FAIL';
    makeRun(root, id, {
      events: kind === 'abandoned' ? started(id) : [started(id), finished(id, kind === 'pass' ? 'passed' : 'failed')],
      state: snapshot({ a: verdict }, { name: i < 6 ? 'alpha' : 'beta', runId: id }),
      lock: 'marked',
    });
  }
  return { root, ids };
}

describe('run selection', () => {
  it('parses status words case-insensitively, with none for no status, and refuses unknown words', () => {
    expect(parseStatusFilter('Abandoned,pass, none')).toEqual(['ABANDONED', 'PASS', null]);
    expect(() => parseStatusFilter('abandonned')).toThrow(/unknown status "abandonned"/);
    expect(() => parseStatusFilter(',')).toThrow(RangeError);
    expect(parseLimit('20')).toBe(20);
    for (const bad of ['0', '-1', '1.5', 'x', '10001', '']) expect(() => parseLimit(bad)).toThrow(RangeError);
  });

  it('filters by status, graph and id, and the table and --json agree', async () => {
    const { root, ids } = await mixedRoot();
    const abandoned = cli(['runs', '--root', root, '--status', 'abandoned', '--json']);
    expect(abandoned.status).toBe(0);
    const doc = JSON.parse(abandoned.stdout);
    expect(doc.runs.map((r: { run_id: string }) => r.run_id).sort()).toEqual([...ids['abandoned']].sort());
    expect(doc.runs.every((r: { status: string }) => r.status === 'ABANDONED')).toBe(true);
    expect(doc.more).toBe(false);

    const pass = JSON.parse(cli(['runs', '--root', root, '--status', 'PASS', '--json']).stdout);
    expect(pass.runs.map((r: { run_id: string }) => r.run_id).sort()).toEqual([...ids['pass']].sort());

    const none = JSON.parse(cli(['runs', '--root', root, '--status', 'none', '--json']).stdout);
    expect(none.runs.map((r: { run_id: string }) => r.run_id).sort()).toEqual([...ids['none']].sort());

    const beta = JSON.parse(cli(['runs', '--root', root, '--graph', 'beta', '--status', 'pass,fail', '--json']).stdout);
    expect(beta.runs.length).toBeGreaterThan(0);
    expect(beta.runs.every((r: { graph: string; status: string }) => r.graph === 'beta' && (r.status === 'PASS' || r.status === 'FAIL'))).toBe(true);

    const one = ids['fail'][0];
    const byId = JSON.parse(cli(['runs', '--root', root, '--id', one.slice(-12), '--json']).stdout);
    expect(byId.runs.map((r: { run_id: string }) => r.run_id)).toEqual([one]);

    const table = cli(['runs', '--root', root, '--status', 'abandoned']);
    expect(table.status).toBe(0);
    for (const id of ids['abandoned']) expect(table.stdout).toContain(id);
    expect(table.stdout).not.toContain(ids['pass'][0]);

    const nothing = cli(['runs', '--root', root, '--graph', 'no-such-graph']);
    expect(nothing.status).toBe(0);
    expect(nothing.stdout).toMatch(/matches the selection/);
  });

  it('pages with --limit and --before neither repeat nor skip a run', async () => {
    const { root } = await mixedRoot();
    const all = JSON.parse(cli(['runs', '--root', root, '--json']).stdout).runs.map((r: { run_id: string }) => r.run_id);
    expect(all.length).toBe(12);
    const seen: string[] = [];
    let before: string | undefined;
    let pages = 0;
    for (;;) {
      const args = ['runs', '--root', root, '--limit', '5', '--json', ...(before !== undefined ? ['--before', before] : [])];
      const doc = JSON.parse(cli(args).stdout);
      pages++;
      seen.push(...doc.runs.map((r: { run_id: string }) => r.run_id));
      if (!doc.more) {
        expect(doc.next_before).toBeUndefined();
        break;
      }
      expect(doc.next_before).toBe(doc.runs[doc.runs.length - 1].run_id);
      before = doc.next_before;
    }
    expect(pages).toBe(3);
    expect(seen).toEqual(all);
  });

  it('a page of a large root inspects only what it shows (plus nothing else)', () => {
    const root = tempDir('rw-select-big-');
    const ids: string[] = [];
    for (let i = 0; i < 300; i++) {
      const id = runId();
      ids.push(id);
      makeRun(root, id, { events: [started(id), finished(id, 'passed')], state: snapshot({ a: 'PASS' }, { runId: id }), lock: 'marked' });
    }
    let inspected = 0;
    const report = (dir: string) => {
      inspected++;
      return runStatus(dir);
    };
    const page = listRuns(root, { report, select: { limit: 10 } });
    expect(page.runs.length).toBe(10);
    expect(page.more).toBe(true);
    expect(inspected).toBe(10);
    // With a status filter the look-ahead reads until it finds the next match.
    inspected = 0;
    const passing = listRuns(root, { report, select: { limit: 10, status: ['PASS'] } });
    expect(passing.runs.length).toBe(10);
    expect(passing.more).toBe(true);
    expect(inspected).toBe(11);
  });

  it('a dead holder\'s run is selected as abandoned; a live one as running', async () => {
    const root = tempDir('rw-select-live-');
    const a = runId();
    const b = runId();
    const da = makeRun(root, a, { state: snapshot({ x: 'pending' }, { runId: a }) });
    const db = makeRun(root, b, { state: snapshot({ x: 'pending' }, { runId: b }) });
    const ha = await startHolder([{ dir: da, lines: started(a) }]);
    const hb = await startHolder([{ dir: db, lines: started(b) }]);
    try {
      await ha.kill();
      const abandoned = JSON.parse(cli(['runs', '--root', root, '--status', 'abandoned', '--json']).stdout);
      expect(abandoned.runs.map((r: { run_id: string }) => r.run_id)).toEqual([a]);
      const running = JSON.parse(cli(['runs', '--root', root, '--status', 'running', '--json']).stdout);
      expect(running.runs.map((r: { run_id: string }) => r.run_id)).toEqual([b]);
    } finally {
      await hb.kill();
    }
  });

  it('bad selections are usage errors (exit 2, one line, no stack)', () => {
    const root = tempDir('rw-select-bad-');
    for (const args of [['--status', 'done'], ['--limit', 'ten'], ['--limit', '0']]) {
      const r = cli(['runs', '--root', root, ...args]);
      expect(r.status).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).not.toMatch(/\bat /);
    }
  });
});
