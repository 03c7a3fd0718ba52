/**
 * The dashboard's HTTP API against a real server on an ephemeral port, over
 * a root built with real locks: live runs are held by real holder processes,
 * abandoned ones were held by holders that were SIGKILLed.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDetail, runStatus } from '../dist/index.js';
import { CLI, cleanupTemp, killAll, tempDir, until } from './helpers/lock-procs.js';
import { closeAll, getJson, raw, SseStream, startDashboard } from './helpers/serve-client.js';
import { DIAMOND, ev, holdRun, killedHolder, openRun, passedRun, runDir, writeEvents, writeState } from './helpers/serve-fixtures.js';
import type { Holder } from './helpers/lock-procs.js';
import { tree } from './helpers/tree.js';
import { underWine } from './helpers/prereq.js';

const ID = {
  passed: '20261130-080000.000000001-1',
  failed: '20261130-080100.000000001-2',
  paused: '20261130-080200.000000001-3',
  abandoned: '20261130-080300.000000001-4',
  bare: '20261130-080400.000000001-5', // abandoned before any snapshot
  running: '20261130-080500.000000001-6',
  pending: '20261130-080600.000000001-7',
  newer: '20261130-080700.000000001-8', // unreadable: newer schema
  longline: '20261130-080800.000000001-9', // unreadable: a line over 1 MiB
  huge: '20261130-080900.000000001-10', // a big stream, over the card cap in this test
  // Windows allows no < > in a name: there the attack is a quote that would end an attribute.
  hostile: process.platform === 'win32' ? "x' onerror='alert(1)' &" : '<img src=x onerror=alert(1)>',
};
const HOSTILE_NODE = '<script>window.__pwned=1</script>';
const HOSTILE_GRAPH = '</title><script>alert(2)</script>';

let root: string;
let outside: string;
let live: Holder;
let port: number;
let server: Awaited<ReturnType<typeof startDashboard>>;


beforeAll(async () => {
  root = tempDir('rw-serve-');
  outside = tempDir('rw-outside-');
  writeFileSync(join(outside, 'secret.txt'), 'not for the dashboard\n');

  passedRun(root, ID.passed, 'nightly-eval', DIAMOND);

  const failed = runDir(root, ID.failed);
  writeEvents(failed, [ev(ID.failed, 'run_started'), ev(ID.failed, 'node_started', { node_id: 'a' }), ev(ID.failed, 'node_failed', { node_id: 'a', verdict: 'FAIL', detail: 'tests red', cost_usd: 0.4 }), ev(ID.failed, 'run_finished', { outcome: 'failed' })]);
  writeState(failed, ID.failed, 'refactor', [{ id: 'a' }, { id: 'b', depends_on: ['a'] }], { a: { verdict: 'FAIL', cost_usd: 0.4 } });

  const paused = runDir(root, ID.paused);
  writeEvents(paused, [ev(ID.paused, 'run_started'), ev(ID.paused, 'node_started', { node_id: 'build' }), ev(ID.paused, 'node_passed', { node_id: 'build', verdict: 'PASS', cost_usd: 0.1 }), ev(ID.paused, 'gate_paused', { node_id: 'approve' }), ev(ID.paused, 'run_finished', { outcome: 'paused' })]);
  writeState(paused, ID.paused, 'deploy', [{ id: 'build' }, { id: 'approve', depends_on: ['build'] }], { build: { verdict: 'PASS', cost_usd: 0.1 } });

  await killedHolder(openRun(root, ID.abandoned, 'fragments', DIAMOND, 2));
  await killedHolder(openRun(root, ID.bare, 'never-settled', DIAMOND, 0));
  live = await holdRun(openRun(root, ID.running, 'release-notes', DIAMOND, 1));
  runDir(root, ID.pending);

  const newer = runDir(root, ID.newer);
  writeEvents(newer, [ev(ID.newer, 'run_started'), { ...ev(ID.newer, 'node_started', { node_id: 'x' }), schema: 4 }]);
  const longline = runDir(root, ID.longline);
  writeEvents(longline, [ev(ID.longline, 'run_started'), ev(ID.longline, 'node_started', { node_id: 'x', detail: 'x'.repeat(1_100_000) })]);

  const huge = runDir(root, ID.huge);
  const lines = [ev(ID.huge, 'run_started')];
  for (let i = 0; i < 3000; i++) lines.push(ev(ID.huge, 'node_retried', { node_id: 'big', retries: i, detail: 'y'.repeat(200) }));
  lines.push(ev(ID.huge, 'node_passed', { node_id: 'big', verdict: 'PASS', cost_usd: 1 }), ev(ID.huge, 'run_finished', { outcome: 'passed' }));
  writeEvents(huge, lines);
  writeState(huge, ID.huge, 'big-stream', [{ id: 'big' }], { big: { verdict: 'PASS', cost_usd: 1 } });

  const hostile = runDir(root, ID.hostile);
  writeEvents(hostile, [ev(ID.hostile, 'run_started'), ev(ID.hostile, 'node_started', { node_id: HOSTILE_NODE }), ev(ID.hostile, 'node_failed', { node_id: HOSTILE_NODE, verdict: 'FAIL', detail: '<b onmouseover=alert(3)>x</b>' }), ev(ID.hostile, 'run_finished', { outcome: 'failed' })]);
  writeState(hostile, ID.hostile, HOSTILE_GRAPH, [{ id: HOSTILE_NODE }], { [HOSTILE_NODE]: { verdict: 'FAIL' } });

  // Entries that are not runs: a stray file and a symlink to a directory outside the root.
  writeFileSync(join(root, 'notes.txt'), 'stray\n');
  if (!underWine()) symlinkSync(outside, join(root, '20261130-090000.000000001-99')); // (Wine makes no link)

  // The card cap is lowered so the 700 KB stream counts as huge here.
  server = await startDashboard(root, { intervalMs: 300, cardStreamMax: 256 * 1024 });
  port = server.port;
});

afterAll(async () => {
  await closeAll();
  await killAll();
  cleanupTemp();
});

describe('GET /api/runs', () => {
  it('is the runs --json document, run for run', async () => {
    const { status, body, headers } = await getJson(port, '/api/runs');
    expect(status).toBe(200);
    expect(headers['content-type']).toMatch(/^application\/json/);
    expect(Object.keys(body)).toEqual(['schema', 'root', 'runs', 'skipped', 'more']);
    expect(body.schema).toBe(1);
    const cli = spawnSync(process.execPath, [CLI, 'runs', '--json', '--root', root], { encoding: 'utf8' });
    expect(cli.status, cli.stderr).toBe(0);
    expect(body).toEqual(JSON.parse(cli.stdout));
  });

  it('takes the runs command\'s selection as a query, and equals runs --json with the same flags', async () => {
    const { status, body } = await getJson(port, '/api/runs?status=abandoned,running&limit=2');
    expect(status).toBe(200);
    expect(body.runs.length).toBeLessThanOrEqual(2);
    expect(body.runs.every((r: any) => r.status === 'ABANDONED' || r.status === 'RUNNING')).toBe(true);
    const cli = spawnSync(process.execPath, [CLI, 'runs', '--json', '--root', root, '--status', 'abandoned,running', '--limit', '2'], { encoding: 'utf8' });
    expect(body).toEqual(JSON.parse(cli.stdout));
    if (body.more) {
      const next = await getJson(port, `/api/runs?status=abandoned,running&before=${encodeURIComponent(body.next_before)}`);
      const ids = next.body.runs.map((r: any) => r.run_id);
      for (const r of body.runs) expect(ids).not.toContain(r.run_id);
    }
    for (const bad of ['status=done', 'limit=0', 'limit=x', 'colour=red']) {
      const r = await getJson(port, `/api/runs?${bad}`);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('bad-request');
    }
  });

  it('reports each state from the same derivation as runStatus', async () => {
    const { body } = await getJson(port, '/api/runs');
    const by = new Map<string, any>(body.runs.map((r: any) => [r.run_id, r]));
    expect(by.get(ID.abandoned).status).toBe('ABANDONED');
    expect(by.get(ID.bare).status).toBe('ABANDONED');
    expect(by.get(ID.running).status).toBe('RUNNING');
    expect(by.get(ID.running).liveness).toBe('held');
    expect(by.get(ID.passed).status).toBe('PASS');
    expect(by.get(ID.failed).status).toBe('FAIL');
    expect(by.get(ID.paused).status).toBe('PAUSED');
    expect(by.get(ID.pending).status).toBeNull();
    for (const id of [ID.abandoned, ID.bare, ID.passed, ID.paused]) expect(by.get(id)).toEqual(runStatus(join(root, id)));
    const skipped = body.skipped.map((s: any) => s.run_id);
    expect(skipped).toEqual(expect.arrayContaining([ID.newer, ID.longline, 'notes.txt', ...(underWine() ? [] : ['20261130-090000.000000001-99'])]));
  });
});

describe('GET /api/dashboard', () => {
  it('groups cards into sections with the report as listRuns gives it', async () => {
    const { body } = await getJson(port, '/api/dashboard');
    const card = (id: string) => body.runs.find((c: any) => c.run_id === id);
    expect(card(ID.abandoned)).toMatchObject({ state: 'abandoned', section: 'abandoned' });
    expect(card(ID.abandoned).report.hint).toBe(runStatus(join(root, ID.abandoned)).hint);
    expect(card(ID.abandoned).report.hint).toContain(ID.abandoned);
    expect(card(ID.running)).toMatchObject({ state: 'running', section: 'in-flight' });
    expect(card(ID.paused)).toMatchObject({ state: 'paused', section: 'settled' });
    expect(card(ID.pending)).toMatchObject({ state: 'pending', section: 'other' });
    expect(card(ID.newer)).toMatchObject({ state: 'unknown', section: 'other', report: null });
    expect(card(ID.newer).error).toMatch(/newer version/);
    expect(card(ID.longline).error).toMatch(/longer than 1 MiB/);
    // Not runs: counted in skipped, not drawn.
    expect(card('notes.txt')).toBeUndefined();
    expect(body.order).toEqual([...body.order].sort((a: string, b: string) => Buffer.compare(Buffer.from(b), Buffer.from(a))));
    expect(body.tallies).toMatchObject({ abandoned: 2, running: 1, passed: 2, failed: 2, paused: 1, pending: 1, unknown: 2 });
    expect(body.cost.unknown).toBe(true); // unreadable runs have no known cost
  });

  it('draws the node strip from the stream fold, abandoned nodes as abandoned', async () => {
    const { body } = await getJson(port, '/api/dashboard');
    const strip = (id: string) => Object.fromEntries(body.runs.find((c: any) => c.run_id === id).nodes.map((n: any) => [n.id, n.state]));
    expect(strip(ID.abandoned)).toEqual({ plan: 'passed', 'impl-api': 'passed', 'impl-ui': 'abandoned', review: 'pending', ship: 'pending' });
    expect(strip(ID.running)).toEqual({ plan: 'passed', 'impl-api': 'running', 'impl-ui': 'pending', review: 'pending', ship: 'pending' });
    // Same node states as runDetail, the run page's source.
    const d = runDetail(join(root, ID.abandoned));
    expect(strip(ID.abandoned)).toEqual(Object.fromEntries(d.nodes.map((n) => [n.id, n.state])));
  });

  it('does not fold a stream over the card cap; the strip shows the snapshot verdicts', async () => {
    const { body } = await getJson(port, '/api/dashboard');
    const huge = body.runs.find((c: any) => c.run_id === ID.huge);
    expect(huge.state).toBe('passed');
    expect(huge.nodes).toEqual([{ id: 'big', state: 'passed' }]);
    expect(huge.started_at).toBeNull(); // not folded
    const small = body.runs.find((c: any) => c.run_id === ID.passed);
    expect(small.started_at).not.toBeNull(); // folded
  });
});

describe('GET /api/runs/:id', () => {
  it('gives the report, node states, legs and last events of an abandoned run', async () => {
    const { status, body } = await getJson(port, `/api/runs/${ID.abandoned}`);
    expect(status).toBe(200);
    expect(body.report).toEqual(runStatus(join(root, ID.abandoned)));
    expect(body.state).toBe('abandoned');
    expect(body.layout).toBe('layers');
    expect(body.nodes.find((n: any) => n.id === 'impl-ui')).toMatchObject({ state: 'abandoned' });
    expect(body.nodes.find((n: any) => n.id === 'review').depends_on).toEqual(['impl-api', 'impl-ui']);
    expect(body.legs).toHaveLength(1);
    expect(body.legs[0]).toMatchObject({ n: 1, state: 'abandoned', outcome: null });
    expect(body.timeline.map((t: any) => t.event.event)).toEqual(['run_started', 'node_started', 'node_passed', 'node_started', 'node_passed', 'node_started']);
    expect(body.timeline.every((t: any) => t.leg === 1)).toBe(true);
  });

  it('serves an unreadable run as state unknown with its reason', async () => {
    const { status, body } = await getJson(port, `/api/runs/${ID.longline}`);
    expect(status).toBe(200);
    expect(body).toMatchObject({ state: 'unknown', report: null });
    expect(body.error).toMatch(/longer than 1 MiB/);
  });

  it('serves a hostile run id and node ids as data', async () => {
    const { status, body } = await getJson(port, `/api/runs/${encodeURIComponent(ID.hostile)}`);
    expect(status).toBe(200);
    expect(body.run_id).toBe(ID.hostile);
    expect(body.report.graph).toBe(HOSTILE_GRAPH);
    expect(body.nodes[0]).toMatchObject({ id: HOSTILE_NODE, state: 'failed', detail: '<b onmouseover=alert(3)>x</b>' });
  });
});

describe('refusals', () => {
  const bad: [string, number, string][] = [
    ['/api/runs/..', 400, 'bad-run-id'],
    ['/api/runs/%2E%2E', 400, 'bad-run-id'],
    ['/api/runs/.', 400, 'bad-run-id'],
    ['/api/runs/..%2F..%2Fetc', 400, 'bad-run-id'],
    ['/api/runs/a%2Fb', 400, 'bad-run-id'],
    ['/api/runs/a%5Cb', 404, 'not-found'], // a backslash starts an escape of a shown name (CONTRACT §1.1); a\b is just absent
    ['/api/runs/a%5Cx2fb', 400, 'bad-run-id'], // \x2f stands for "/": refused
    ['/api/runs/%5Cx2e%5Cx2e', 400, 'bad-run-id'], // stands for ".."
    ['/api/runs/a%5Cx00b', 400, 'bad-run-id'], // stands for NUL
    ['/api/runs/a%00b', 400, 'bad-run-id'],
    ['/api/runs/%E0%A4%A', 400, 'bad-request'],
    ['/api/runs/no-such-run', 404, 'not-found'],
    ['/api/runs/notes.txt', 404, 'not-found'],
    ['/api/runs/20261130-090000.000000001-99', 404, 'not-found'], // symlink to outside the root
    ['/api/runs/../../etc/passwd', 404, 'not-found'], // several segments: no such route, nothing resolved
    ['/api/events?run=..', 400, 'bad-run-id'],
    ['/api/events?run=a%2Fb', 400, 'bad-run-id'],
    ['/nothing/here', 404, 'not-found'],
    ['/assets/../../package.json', 404, 'not-found'],
  ];
  it.each(bad)('GET %s → %i %s', async (target, code, errorCode) => {
    const r = await raw(port, 'GET', target);
    expect(r.status).toBe(code);
    const body = JSON.parse(r.body);
    expect(Object.keys(body)).toEqual(['error']);
    expect(body.error.code).toBe(errorCode);
    expect(typeof body.error.message).toBe('string');
    expect(r.body).not.toContain('not for the dashboard');
  });

  it('refuses every method but GET and HEAD with 405 and Allow', async () => {
    for (const m of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE']) {
      const r = await raw(port, m, `/api/runs/${ID.abandoned}`);
      expect(r.status, m).toBe(405);
      expect(r.headers['allow']).toBe('GET, HEAD');
      if (m !== 'HEAD') expect(JSON.parse(r.body).error.code).toBe('method-not-allowed');
    }
  });

  it('answers HEAD with headers and no body', async () => {
    const r = await raw(port, 'HEAD', '/api/runs');
    expect(r.status).toBe(200);
    expect(r.body).toBe('');
    expect(Number(r.headers['content-length'])).toBeGreaterThan(0);
  });

  it('refuses a Host that is not this server (DNS rebinding)', async () => {
    const r = await raw(port, 'GET', '/api/runs', { Host: 'evil.example:80' });
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body).error.code).toBe('bad-host');
    const ok = await raw(port, 'GET', '/api/runs', { Host: `localhost:${port}` });
    expect(ok.status).toBe(200);
  });
});

describe('headers and pages', () => {
  it('sends CSP without inline script and nosniff on every response', async () => {
    for (const target of ['/', `/run/${ID.abandoned}`, '/api/runs', '/api/runs/..', '/assets/dashboard.js', '/assets/app.css', '/nope']) {
      const r = await raw(port, 'GET', target);
      const csp = String(r.headers['content-security-policy']);
      expect(csp, target).toContain("script-src 'self'");
      expect(csp, target).not.toContain('unsafe-inline');
      expect(csp, target).toContain("default-src 'none'");
      expect(r.headers['x-content-type-options'], target).toBe('nosniff');
    }
  });

  it('serves static pages with no inline script and no run data in them', async () => {
    for (const target of ['/', `/run/${encodeURIComponent(ID.hostile)}`]) {
      const r = await raw(port, 'GET', target);
      expect(r.status).toBe(200);
      expect(r.headers['content-type']).toMatch(/^text\/html/);
      expect(r.body).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
      expect(r.body).not.toMatch(/\son[a-z]+=/i);
      expect(r.body).not.toContain('onerror');
      expect(r.body).not.toContain('__pwned');
    }
  });

  it('answers a run page for a missing run with 404', async () => {
    expect((await raw(port, 'GET', '/run/no-such-run')).status).toBe(404);
    expect((await raw(port, 'GET', '/run/..')).status).toBe(400);
  });
});

describe('live updates', () => {
  it('pushes a snapshot, then the card turning abandoned when its holder dies', async () => {
    const sse = await SseStream.open(port, '/api/events');
    try {
      const snap = await sse.next((e) => e.event === 'snapshot');
      expect(snap.data.runs.find((c: any) => c.run_id === ID.running).state).toBe('running');
      await sse.next((e) => e.event === 'beat');
      live.proc.kill('SIGKILL');
      // A bound with room for a loaded machine: it only tells "pushed" from "never pushed".
      const patch = await sse.next((e) => e.event === 'patch' && e.data.upsert.some((c: any) => c.run_id === ID.running && c.state === 'abandoned'), 60_000);
      // Every event the stream recorded, in order, up to that patch: what the page was last sent of each card.
      const sent = new Map<string, string>();
      const resent: string[] = [];
      for (const e of sse.events.slice(0, sse.events.indexOf(patch) + 1)) {
        if (e.event === 'snapshot') for (const c of e.data.runs) sent.set(c.run_id, JSON.stringify(c));
        if (e.event !== 'patch') continue;
        for (const c of e.data.upsert) {
          const json = JSON.stringify(c);
          if (sent.get(c.run_id) === json) resent.push(c.run_id);
          sent.set(c.run_id, json);
        }
      }
      const card = patch.data.upsert.find((c: any) => c.run_id === ID.running);
      expect(card.report.hint).toContain(ID.running);
      expect(card.nodes.find((n: any) => n.id === 'impl-api').state).toBe('abandoned');
      expect(patch.data.tallies.running).toBe(0);
      // Only what changed is pushed: no card is sent again the same as the page already has it, and the runs whose
      // files and liveness stayed put keep their state on the page.
      expect(resent).toEqual([]);
      for (const id of [ID.passed, ID.failed, ID.paused, ID.abandoned, ID.bare, ID.pending, ID.hostile]) {
        expect(JSON.parse(sent.get(id) as string).state, id).toBe(snap.data.runs.find((c: any) => c.run_id === id).state);
      }
    } finally {
      sse.close();
    }
  });

  it('follows one run with ?run=', async () => {
    const sse = await SseStream.open(port, `/api/events?run=${ID.paused}`);
    const doc = await sse.next((e) => e.event === 'run');
    expect(doc.data.run_id).toBe(ID.paused);
    expect(doc.data.report.hint).toContain('--approve');
    sse.close();
  });

  it('forgets a page that went away, and stops deriving when none is left', async () => {
    const a = await SseStream.open(port, '/api/events');
    const b = await SseStream.open(port, `/api/events?run=${ID.passed}`);
    await a.next((e) => e.event === 'beat');
    await b.next((e) => e.event === 'beat');
    expect(server.hub.size).toBe(2);
    a.close();
    b.close();
    await until(() => server.hub.size === 0);
    expect(server.hub.idle).toBe(true);
  });

  it('sends a missing run as an error document and keeps the stream open', async () => {
    const sse = await SseStream.open(port, '/api/events?run=not-yet');
    const doc = await sse.next((e) => e.event === 'run');
    expect(doc.data.error.code).toBe('not-found');
    await sse.next((e) => e.event === 'beat');
    sse.close();
  });
});

describe('read-only', () => {
  it('creates, writes and removes nothing under the root', async () => {
    const before = tree(root);
    await getJson(port, '/api/runs');
    await getJson(port, '/api/dashboard');
    for (const id of Object.values(ID)) await raw(port, 'GET', `/api/runs/${encodeURIComponent(id)}`);
    const sse = await SseStream.open(port, '/api/events');
    await sse.next((e) => e.event === 'snapshot');
    sse.close();
    expect(tree(root)).toEqual(before);
    // The pending run has no lock file, and serving it did not make one.
    expect(readdirSync(join(root, ID.pending))).toEqual([]);
  });
});

it('keeps running when a run directory is created after start', async () => {
  const id = '20261130-100000.000000001-50';
  mkdirSync(join(root, id));
  const { body } = await getJson(port, '/api/dashboard');
  expect(body.runs.find((c: any) => c.run_id === id)).toMatchObject({ state: 'pending' });
});
