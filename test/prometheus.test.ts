/**
 * runwarden with the real monitoring engine: the shipped alert
 * rules pass their promtool unit tests, and a real Prometheus scraping two
 * `runwarden serve` instances (two "hosts", two roots) sees a run on host A
 * turn ABANDONED after its holder is SIGKILLed. Everything listens on
 * 127.0.0.1 and is stopped here. No timing is asserted: the engine is
 * polled through its HTTP query API with generous bounds.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { CLI, cleanupTemp, killAll, ROOT, tempDir, track, waitExit } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';
import { startServeCli } from './helpers/serve-cli.js';
import { DIAMOND, holdRun, killedHolder, openRun, passedRun } from './helpers/serve-fixtures.js';

const DEPLOY = join(ROOT, 'deploy', 'prometheus');

beforeEach((ctx) => {
  needs(ctx, 'prometheus');
});

afterAll(async () => {
  await killAll();
  cleanupTemp();
});

/** A port that was free a moment ago on 127.0.0.1 (Prometheus needs one named up front). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function httpGet(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = get(url, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

/** Polls `probe` until it returns a value other than undefined; throws after `ms`. */
async function eventually<T>(what: string, probe: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`${what}: not seen within ${ms} ms${last === undefined ? '' : ` (last error: ${last instanceof Error ? last.message : JSON.stringify(last)})`}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

interface Vector {
  metric: Record<string, string>;
  value: [number, string];
}

describe('promtool', () => {
  it('passes the unit tests of the shipped alert rules', () => {
    const r = spawnSync('promtool', ['test', 'rules', 'rules.test.yml'], { cwd: DEPLOY, encoding: 'utf8' });
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/SUCCESS/);
  });

  it('accepts the rule file and the example scrape config', () => {
    const rules = spawnSync('promtool', ['check', 'rules', 'runwarden-rules.yml'], { cwd: DEPLOY, encoding: 'utf8' });
    expect(rules.status, `${rules.stdout}${rules.stderr}`).toBe(0);
    expect(rules.stdout).toMatch(/3 rules found/);
    const config = spawnSync('promtool', ['check', 'config', 'prometheus.yml'], { cwd: DEPLOY, encoding: 'utf8' });
    expect(config.status, `${config.stdout}${config.stderr}`).toBe(0);
  });
});

describe('a real Prometheus scraping two hosts', () => {
  let prom: ChildProcess | undefined;

  afterAll(async () => {
    if (prom !== undefined && prom.exitCode === null && prom.signalCode === null) {
      prom.kill('SIGTERM');
      const done = waitExit(prom);
      const timer = setTimeout(() => prom?.kill('SIGKILL'), 30_000);
      await done;
      clearTimeout(timer);
    }
  });

  it('sees the in-flight run on host A, then one more ABANDONED summed over both hosts after its holder is killed', async () => {
    const id = '20261201-120000.000000001-1';
    // Host A: one run in flight (held by a real holder), one settled.
    const rootA = tempDir('rw-prom-a-');
    passedRun(rootA, '20261201-110000.000000001-1', 'nightly', DIAMOND);
    const holder = await holdRun(openRun(rootA, id, 'nightly', DIAMOND, 1));
    // Host B: one run abandoned already, one settled.
    const rootB = tempDir('rw-prom-b-');
    passedRun(rootB, '20261201-110000.000000001-2', 'eval', DIAMOND);
    await killedHolder(openRun(rootB, '20261201-115000.000000001-2', 'eval', DIAMOND, 2));
    const abandonedByCli = [rootA, rootB]
      .map((root) => {
        const r = spawnSync(process.execPath, [CLI, 'runs', '--json', '--root', root], { encoding: 'utf8' });
        expect(r.status, r.stderr).toBe(0);
        return (JSON.parse(r.stdout).runs as { status: string }[]).filter((x) => x.status === 'ABANDONED').length;
      })
      .reduce((a, b) => a + b, 0);
    expect(abandonedByCli).toBe(1);

    const a = await startServeCli(rootA);
    const b = await startServeCli(rootB);
    const hostA = `127.0.0.1:${a.port}`;
    const hostB = `127.0.0.1:${b.port}`;

    const dir = tempDir('rw-prom-engine-');
    const config = join(dir, 'prometheus.yml');
    writeFileSync(
      config,
      [
        'global:',
        '  scrape_interval: 1s',
        '  scrape_timeout: 1s',
        '  evaluation_interval: 1s',
        'scrape_configs:',
        '  - job_name: runwarden',
        '    static_configs:',
        `      - targets: ['${hostA}', '${hostB}']`,
        '',
      ].join('\n'),
    );
    const port = await freePort();
    const api = `http://127.0.0.1:${port}`;
    let log = '';
    prom = spawn(
      'prometheus',
      [`--config.file=${config}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
      { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    track(prom);
    prom.stdout?.on('data', (d: Buffer) => (log += d.toString()));
    prom.stderr?.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
    const exited = new Promise<never>((_, reject) => prom?.once('exit', (code, sig) => reject(new Error(`prometheus exited (code ${code}, signal ${sig}): ${log}`))));
    exited.catch(() => undefined);

    const query = async (q: string): Promise<Vector[]> => {
      const r = await httpGet(`${api}/api/v1/query?query=${encodeURIComponent(q)}`);
      if (r.status !== 200) throw new Error(`query ${q}: HTTP ${r.status} ${r.body}`);
      const doc = JSON.parse(r.body) as { status: string; data: { resultType: string; result: Vector[] } };
      expect(doc.status).toBe('success');
      expect(doc.data.resultType).toBe('vector');
      return doc.data.result;
    };
    const race = <T>(p: Promise<T>): Promise<T> => Promise.race([p, exited]);

    await race(eventually('prometheus ready', async () => ((await httpGet(`${api}/-/ready`)).status === 200 ? true : undefined)));
    // Both targets scraped successfully.
    await race(
      eventually('both runwarden targets up', async () => {
        const up = await query('up{job="runwarden"} == 1');
        const instances = up.map((v) => v.metric['instance']).sort();
        return JSON.stringify(instances) === JSON.stringify([hostA, hostB].sort()) ? instances : undefined;
      }),
    );
    // The in-flight run, on host A only.
    const info = await race(
      eventually('the in-flight run on host A', async () => {
        const v = await query(`runwarden_run_info{run_id="${id}"}`);
        return v.length === 1 && v[0]?.metric['status'] === 'RUNNING' ? v[0] : undefined;
      }),
    );
    expect(info.metric['instance']).toBe(hostA);
    expect(info.metric['graph']).toBe('nightly');
    // Before the kill: the sum over both hosts is what runs --json says.
    const sum = 'sum(runwarden_runs{job="runwarden",status="ABANDONED"})';
    const baseline = await race(
      eventually('the ABANDONED sum over both hosts', async () => {
        const v = await query(sum);
        return v.length === 1 ? Number(v[0]?.value[1]) : undefined;
      }),
    );
    expect(baseline).toBe(abandonedByCli);

    holder.proc.kill('SIGKILL');
    await waitExit(holder.proc);

    // The bound is three scrape intervals (3 s); polled up to 60 s so
    // that a loaded machine cannot fail it, and no duration is asserted.
    const after = await race(
      eventually('one more ABANDONED summed over both hosts', async () => {
        const v = await query(sum);
        const n = Number(v[0]?.value[1]);
        return n === baseline + 1 ? n : undefined;
      }),
    );
    expect(after).toBe(baseline + 1);
    const dead = await query(`runwarden_run_info{run_id="${id}",status="ABANDONED"}`);
    expect(dead.map((v) => v.metric['instance'])).toEqual([hostA]);
  }, 240_000);
});
