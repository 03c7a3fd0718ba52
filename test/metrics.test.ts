/**
 * GET /metrics (runwarden serve) and `runwarden metrics`, against a root
 * with real live and dead runs: live runs are held by real holder processes,
 * abandoned ones were held by holders that were SIGKILLed. Every number is
 * compared with what `runs --json` says about the same root at the same
 * moment, and the scraped text is checked by promtool.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { lstatSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cleanupTemp, killAll, tempDir, type Holder } from './helpers/lock-procs.js';
import { needs, underWine } from './helpers/prereq.js';
import { parseExposition, samplesOf, valueOf, type Exposition } from './helpers/prom-text.js';
import { raw } from './helpers/serve-client.js';
import { startServeCli, type ServeProcess } from './helpers/serve-cli.js';
import { DIAMOND, ev, holdRun, killedHolder, openRun, passedRun, runDir, writeEvents, writeState } from './helpers/serve-fixtures.js';
import { tree } from './helpers/tree.js';

const ID = {
  passed: '20261201-080000.000000001-1',
  failed: '20261201-080100.000000001-2',
  paused: '20261201-080200.000000001-3',
  abandoned: '20261201-080300.000000001-4',
  bare: '20261201-080400.000000001-5', // abandoned before any snapshot
  running: '20261201-080500.000000001-6',
  running2: '20261201-080550.000000001-6', // held, then killed by a test
  pending: '20261201-080600.000000001-7', // no status yet
  newer: '20261201-080700.000000001-8', // unreadable: newer schema
  longline: '20261201-080800.000000001-9', // unreadable: a line over 1 MiB
};
/** Status labels of runwarden_runs, in the order the contract lists status words, then no status. */
const LABELS = ['PLANNING', 'RUNNING', 'ABANDONED', 'PAUSED', 'PASS', 'FAIL', 'none'];

let root: string;
let serve: ServeProcess;
let doomed: Holder;
let before: string[];


async function scrape(port: number): Promise<{ text: string; exp: Exposition; contentType: string }> {
  const r = await raw(port, 'GET', '/metrics');
  expect(r.status, r.body).toBe(200);
  return { text: r.body, exp: parseExposition(r.body), contentType: String(r.headers['content-type']) };
}

function runsJson(dir: string): { runs: any[]; skipped: { run_id: string; error: string }[] } {
  const r = spawnSync(process.execPath, [CLI, 'runs', '--json', '--root', dir], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

/** What the metrics must say, worked out from a runs --json document. */
function expected(doc: { runs: any[] }) {
  const counts: Record<string, number> = Object.fromEntries(LABELS.map((l) => [l, 0]));
  for (const r of doc.runs) counts[r.status ?? 'none'] = counts[r.status ?? 'none'] + 1;
  const info = doc.runs
    .filter((r) => ['PLANNING', 'RUNNING', 'ABANDONED'].includes(r.status))
    .map((r) => `${r.run_id}|${r.graph ?? ''}|${r.status}`)
    .sort();
  return { counts, info };
}

function metricsCounts(exp: Exposition): Record<string, number | undefined> {
  return Object.fromEntries(LABELS.map((l) => [l, valueOf(exp, 'runwarden_runs', { status: l })]));
}

function metricsInfo(exp: Exposition): string[] {
  return samplesOf(exp, 'runwarden_run_info')
    .map((s) => {
      expect(s.value).toBe(1);
      return `${s.labels['run_id']}|${s.labels['graph']}|${s.labels['status']}`;
    })
    .sort();
}

function promtoolCheck(text: string): SpawnSyncReturns<string> {
  return spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
}

beforeAll(async () => {
  root = tempDir('rw-metrics-');
  passedRun(root, ID.passed, 'nightly-eval', DIAMOND);
  const failed = runDir(root, ID.failed);
  writeEvents(failed, [ev(ID.failed, 'run_started'), ev(ID.failed, 'node_started', { node_id: 'a' }), ev(ID.failed, 'node_failed', { node_id: 'a', verdict: 'FAIL', cost_usd: 0.4 }), ev(ID.failed, 'run_finished', { outcome: 'failed' })]);
  writeState(failed, ID.failed, 'refactor', [{ id: 'a' }], { a: { verdict: 'FAIL', cost_usd: 0.4 } });
  const paused = runDir(root, ID.paused);
  writeEvents(paused, [ev(ID.paused, 'run_started'), ev(ID.paused, 'gate_paused', { node_id: 'approve' }), ev(ID.paused, 'run_finished', { outcome: 'paused' })]);
  writeState(paused, ID.paused, 'deploy', [{ id: 'approve' }], {});
  await killedHolder(openRun(root, ID.abandoned, 'fragments', DIAMOND, 2));
  await killedHolder(openRun(root, ID.bare, 'never-settled', DIAMOND, 0));
  await holdRun(openRun(root, ID.running, 'release-notes', DIAMOND, 1));
  doomed = await holdRun(openRun(root, ID.running2, 'label "quoted"\\back', DIAMOND, 1));
  runDir(root, ID.pending);
  const newer = runDir(root, ID.newer);
  writeEvents(newer, [ev(ID.newer, 'run_started'), { ...ev(ID.newer, 'node_started', { node_id: 'x' }), schema: 4 }]);
  const longline = runDir(root, ID.longline);
  writeEvents(longline, [ev(ID.longline, 'run_started'), { schema: 3, event: 'node_started', node_id: 'x', detail: 'x'.repeat(1_100_000) }]);
  // Not runs: a stray file and a symlink. Listed as skipped by runs --json, but not scan errors.
  writeFileSync(join(root, 'notes.txt'), 'stray\n');
  // (Wine makes no symbolic link: it reports one made.)
  if (!underWine()) symlinkSync(tempDir('rw-outside-'), join(root, '20261201-090000.000000001-99'));
  before = tree(root);
  serve = await startServeCli(root);
});

afterAll(async () => {
  await killAll();
  cleanupTemp();
});

describe('GET /metrics', () => {
  it('says what runs --json says: runs per status (zeros included), one info series per run in flight or abandoned', async () => {
    const { exp, contentType } = await scrape(serve.port);
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    const doc = runsJson(root);
    const want = expected(doc);
    // The fixture covers every kind of row the comparison must get right.
    expect(want.counts['ABANDONED']).toBe(2);
    expect(want.counts['RUNNING']).toBe(2);
    expect(want.counts['none']).toBe(1);
    expect(want.counts['PLANNING']).toBe(0);
    expect(metricsCounts(exp)).toEqual(want.counts);
    expect(metricsInfo(exp)).toEqual(want.info);
    // Settled runs and runs without a status have no series of their own.
    const ids = new Set(samplesOf(exp, 'runwarden_run_info').map((s) => s.labels['run_id']));
    for (const id of [ID.passed, ID.failed, ID.paused, ID.pending]) expect(ids.has(id)).toBe(false);
    // The last event time of each tracked run is its stream's modification time.
    const last = samplesOf(exp, 'runwarden_run_last_event_timestamp_seconds');
    expect(last.map((s) => s.labels['run_id']).sort()).toEqual([...ids].sort());
    for (const s of last) expect(s.value).toBeCloseTo(lstatSync(join(root, s.labels['run_id'], 'events.jsonl')).mtimeMs / 1000, 3);
    expect(valueOf(exp, 'runwarden_root_readable')).toBe(1);
  });

  it('counts the probes and scan errors of the derivations it made, in the histogram too', async () => {
    const { exp } = await scrape(serve.port);
    const doc = runsJson(root);
    const held = valueOf(exp, 'runwarden_probes_total', { liveness: 'held' }) as number;
    const free = valueOf(exp, 'runwarden_probes_total', { liveness: 'free' }) as number;
    const unknown = valueOf(exp, 'runwarden_probes_total', { liveness: 'unknown' }) as number;
    // Every derivation so far probed each open leg once, except that the
    // model may reuse a slow run's report (serve/model.ts); `runwarden
    // metrics` below checks exact counts for one derivation.
    const heldRuns = doc.runs.filter((r) => r.liveness === 'held').length;
    const freeRuns = doc.runs.filter((r) => r.liveness === 'free').length;
    expect(heldRuns).toBe(2);
    expect(freeRuns).toBe(2);
    expect(held).toBeGreaterThanOrEqual(heldRuns);
    expect(free).toBeGreaterThanOrEqual(freeRuns);
    expect(unknown).toBe(0);
    // Scan errors: the two unreadable runs per derivation, not the stray file or the symlink.
    const unreadable = doc.skipped.filter((s) => s.run_id === ID.newer || s.run_id === ID.longline).length;
    expect(unreadable).toBe(2);
    expect(doc.skipped.length).toBe(underWine() ? 3 : 4);
    const errors = valueOf(exp, 'runwarden_scan_errors_total') as number;
    expect(errors).toBeGreaterThanOrEqual(unreadable);
    expect(errors % unreadable).toBe(0);
    expect(valueOf(exp, 'runwarden_probe_duration_seconds_count')).toBe(held + free + unknown);
    expect(valueOf(exp, 'runwarden_probe_duration_seconds_bucket', { le: '+Inf' })).toBe(held + free + unknown);
    expect(valueOf(exp, 'runwarden_probe_duration_seconds_sum')).toBeGreaterThan(0);
  });

  it('has the default process metrics, and promtool check metrics accepts the text', async (ctx) => {
    needs(ctx, 'prometheus');
    const { text, exp } = await scrape(serve.port);
    expect(valueOf(exp, 'process_start_time_seconds')).toBeGreaterThan(0);
    expect(samplesOf(exp, 'process_cpu_seconds_total').length).toBe(1);
    expect(exp.types.get('runwarden_probe_duration_seconds')).toBe('histogram');
    expect(exp.types.get('runwarden_probes_total')).toBe('counter');
    const r = promtoolCheck(text);
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
    expect(`${r.stdout}${r.stderr}`.trim()).toBe('');
  });

  it('turns a killed holder into one more ABANDONED and the run info into ABANDONED, as runs --json does', async () => {
    const first = (await scrape(serve.port)).exp;
    const abandoned = valueOf(first, 'runwarden_runs', { status: 'ABANDONED' }) as number;
    doomed.proc.kill('SIGKILL');
    let now: Exposition;
    const end = Date.now() + 60_000;
    for (;;) {
      now = (await scrape(serve.port)).exp;
      if (valueOf(now, 'runwarden_runs', { status: 'ABANDONED' }) === abandoned + 1) break;
      if (Date.now() > end) throw new Error('the killed holder never showed as ABANDONED on /metrics');
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(valueOf(now, 'runwarden_run_info', { run_id: ID.running2, status: 'ABANDONED' })).toBe(1);
    expect(valueOf(now, 'runwarden_run_info', { run_id: ID.running2, status: 'RUNNING' })).toBeUndefined();
    expect(samplesOf(now, 'runwarden_run_info').find((s) => s.labels['run_id'] === ID.running2)?.labels['graph']).toBe('label "quoted"\\back');
    const want = expected(runsJson(root));
    expect(metricsCounts(now)).toEqual(want.counts);
    expect(metricsInfo(now)).toEqual(want.info);
  });

  it('answers HEAD with the headers only, and writes nothing under the root', async () => {
    const r = await raw(serve.port, 'HEAD', '/metrics');
    expect(r.status).toBe(200);
    expect(r.body).toBe('');
    expect(String(r.headers['content-type'])).toMatch(/^text\/plain/);
    expect(tree(root)).toEqual(before);
  });

  it('drops every run series when the root cannot be listed, and says so with runwarden_root_readable 0', async () => {
    const other = tempDir('rw-metrics-b-');
    const r2 = join(other, 'runs');
    passedRun(r2, '20261201-100000.000000001-1', 'g', DIAMOND);
    const s = await startServeCli(r2);
    const ok = (await scrape(s.port)).exp;
    expect(valueOf(ok, 'runwarden_root_readable')).toBe(1);
    expect(valueOf(ok, 'runwarden_runs', { status: 'PASS' })).toBe(1);
    // The root's path now names a regular file: listing it fails with ENOTDIR.
    renameSync(r2, join(other, 'moved'));
    writeFileSync(r2, 'not a directory\n');
    let now: Exposition = ok;
    const end = Date.now() + 60_000;
    while (valueOf(now, 'runwarden_root_readable') !== 0) {
      if (Date.now() > end) throw new Error('runwarden_root_readable never went to 0');
      await new Promise((r) => setTimeout(r, 100));
      now = (await scrape(s.port)).exp;
    }
    expect(samplesOf(now, 'runwarden_runs')).toEqual([]);
    expect(samplesOf(now, 'runwarden_run_info')).toEqual([]);
    expect(valueOf(now, 'runwarden_scan_errors_total')).toBeGreaterThanOrEqual(1);
  });
});

describe('runwarden metrics', () => {
  it('prints the same families and numbers as GET /metrics', async (ctx) => {
    needs(ctx, 'prometheus');
    const r = spawnSync(process.execPath, [CLI, 'metrics', '--root', root], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const once = parseExposition(r.stdout);
    const served = (await scrape(serve.port)).exp;
    expect([...once.types.keys()].sort()).toEqual([...served.types.keys()].sort());
    const want = expected(runsJson(root));
    expect(metricsCounts(once)).toEqual(want.counts);
    expect(metricsInfo(once)).toEqual(want.info);
    expect(metricsCounts(served)).toEqual(want.counts);
    expect(metricsInfo(once)).toEqual(metricsInfo(served));
    // One derivation: each open leg probed once, each unreadable run counted once.
    expect(valueOf(once, 'runwarden_probes_total', { liveness: 'held' })).toBe(want.counts['RUNNING']);
    expect(valueOf(once, 'runwarden_probes_total', { liveness: 'free' })).toBe(want.counts['ABANDONED']);
    expect(valueOf(once, 'runwarden_scan_errors_total')).toBe(2);
    const check = promtoolCheck(r.stdout);
    expect(check.status, `${check.stdout}${check.stderr}`).toBe(0);
    expect(tree(root)).toEqual(before);
  });

  it('--no-process-metrics leaves out process_* and nodejs_*', () => {
    const r = spawnSync(process.execPath, [CLI, 'metrics', '--root', root, '--no-process-metrics'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const names = [...parseExposition(r.stdout).types.keys()];
    expect(names.length).toBeGreaterThan(0);
    expect(names.filter((n) => !n.startsWith('runwarden_'))).toEqual([]);
    expect(names).toContain('runwarden_runs');
  });

  it('reports a root it cannot list as runwarden_root_readable 0, exit 0, with a note', () => {
    const file = join(tempDir('rw-metrics-file-'), 'runs');
    writeFileSync(file, 'x\n');
    const r = spawnSync(process.execPath, [CLI, 'metrics', '--root', file], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stderr).toMatch(/not a directory; printing runwarden_root_readable 0/);
    const exp = parseExposition(r.stdout);
    expect(valueOf(exp, 'runwarden_root_readable')).toBe(0);
    expect(samplesOf(exp, 'runwarden_runs')).toEqual([]);
    expect(valueOf(exp, 'runwarden_scan_errors_total')).toBe(1);
  });

  it('says in --help what it prints and how to feed a textfile collector', () => {
    const r = spawnSync(process.execPath, [CLI, 'metrics', '--help'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/textfile/);
    expect(r.stdout).toMatch(/--no-process-metrics/);
    expect(r.stdout).toMatch(/runwarden_run_info/);
  });
});

describe('the metrics module and the model', () => {
  it('registers nothing globally: each instance has its own registry', async () => {
    const prom = await import('prom-client');
    const { RunwardenMetrics } = await import('../dist/serve/metrics.js');
    const none = async () => ({ root: '/nonexistent', missing: true, runs: [], skipped: [] });
    const a = new RunwardenMetrics(none, { processMetrics: false });
    const b = new RunwardenMetrics(none, { processMetrics: false });
    expect(prom.register.getMetricsAsArray()).toHaveLength(0);
    expect(a.registry).not.toBe(b.registry);
    expect(a.registry.getSingleMetric('runwarden_runs')).toBeDefined();
    expect(parseExposition(await a.text()).samples.filter((x) => x.name === 'runwarden_runs')).toHaveLength(7);
    expect(prom.register.getMetricsAsArray()).toHaveLength(0);
  });

  it('a scrape reuses the model\'s latest list while it is fresh, and concurrent scrapes share one derivation', async () => {
    const { DashboardModel } = await import('../dist/serve/model.js');
    let scans = 0;
    let probes = 0;
    // Nothing counts as expensive here, so every derivation probes every open leg.
    const model = new DashboardModel(root, { expensiveMs: Number.POSITIVE_INFINITY, observer: { probed: () => void probes++, scanned: () => void scans++ } });
    await model.dashboard();
    expect(scans).toBe(1);
    const afterDashboard = probes;
    expect(afterDashboard).toBeGreaterThan(0);
    const fresh = await model.currentReports(3_600_000);
    expect(scans).toBe(1);
    expect(probes).toBe(afterDashboard);
    expect(fresh.runs.map((r) => r.run_id)).toEqual(runsJson(root).runs.map((r) => r.run_id));
    const [x, y] = await Promise.all([model.currentReports(0), model.currentReports(0)]);
    expect(scans).toBe(2);
    expect(x).toBe(y);
    expect(probes).toBe(2 * afterDashboard);
  });
});
