/**
 * One run, one id, one status, on every surface (CONTRACT §1.1 rule 6, §5.3):
 * a runs root whose directories carry names that need escaping (a tab, one
 * backslash, two backslashes, a literal `\x41`, a byte that is not UTF-8, a
 * bidi override), served by a real `runwarden serve`, must be listed the same
 * by `/api/dashboard`, `/api/runs`, serve's `/metrics`, `runwarden metrics` and
 * `runs --json`, each run once, once the files and the lock stop changing.
 * Runs made and finished by `runwarden exec` while serve runs, and runs held
 * for a short while by a process that locks through a read-only descriptor and
 * is then killed with SIGKILL, must end the same on every surface too.
 *
 * The references are the CLI's own documents (`runs --json`, `runwarden
 * metrics`), read fresh at each poll: `/api/runs`, the dashboard's cards and
 * its `order` are compared with the `runs --json` list id by id, in order;
 * the metrics' series by their labels. A held run reads RUNNING on every
 * surface while its holder lives, and ABANDONED once it is killed. the printing rule of the metrics text is
 * written here from the contract's words (§1.1 rule 7), not imported.
 */
import { execFile, spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { eventLine } from './helpers/events.js';
import { CLI, cleanupTemp, flockHolders, killAll, tempDir, track, until, waitExit, waitReady } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';
import { startServeCli } from './helpers/serve-cli.js';
import { getJson, raw } from './helpers/serve-client.js';

const run = promisify(execFile);

afterAll(async () => {
  await killAll();
  cleanupTemp();
});

/** How long the surfaces may take to agree: generous, it only ends a wait for what will never happen. */
const AGREE_MS = 150_000;

async function cli(args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [CLI, ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, timeout: 60_000 });
  return stdout;
}

/** A finished leg of `runwarden exec` in the run directory at `path` (a real leg: lock, events, release). */
async function execLeg(path: string): Promise<void> {
  await cli(['exec', path, '--', process.execPath, '-e', '']);
}

/**
 * Makes a run whose directory is named by the bytes `name`: a finished exec
 * leg (a real lock file, released), made under a plain name and renamed to
 * `name`, since a command line cannot carry bytes that are not UTF-8. With
 * `open`, a leg is then opened and never closed: its lock is free, so the
 * run reads ABANDONED.
 */
async function makeRun(root: string, name: Buffer, open: boolean, k: number): Promise<Buffer> {
  const plain = join(root, `tmp-${k}`);
  await execLeg(plain);
  const dir = Buffer.concat([Buffer.from(`${root}/`), name]);
  renameSync(plain, dir);
  if (open) {
    appendFileSync(
      Buffer.concat([dir, Buffer.from('/events.jsonl')]),
      eventLine({ event: 'run_started' }) + eventLine({ event: 'node_started', node_id: 'n1' }),
    );
  }
  return dir;
}

/** §1.1 rule 7, written from the contract: C0 and DEL as \xHH, C1 and the bidi controls as \u{HHHH}. */
function printed(s: string): string {
  return s.replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, (c) => {
    const n = c.charCodeAt(0);
    return n < 0x80 ? `\\x${n.toString(16).padStart(2, '0')}` : `\\u{${n.toString(16).padStart(4, '0')}}`;
  });
}

/** The label values of `runwarden_run_info` series (run_id → status), Prometheus escapes undone. */
function runInfo(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const unescape = (v: string): string => v.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  for (const line of text.split('\n')) {
    if (!line.startsWith('runwarden_run_info{')) continue;
    const id = /run_id="((?:[^"\\]|\\.)*)"/.exec(line)?.[1];
    const status = /status="((?:[^"\\]|\\.)*)"/.exec(line)?.[1];
    if (id === undefined || status === undefined) throw new Error(`unparsed series: ${line}`);
    const key = unescape(id);
    if (out.has(key)) throw new Error(`run_info twice for ${JSON.stringify(key)}`);
    out.set(key, unescape(status));
  }
  return out;
}

/** `runwarden_runs{status}` values. */
function runCounts(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^runwarden_runs\{status="([^"]*)"\} (\d+)$/gm)) out.set(m[1], Number(m[2]));
  return out;
}

const IN_FLIGHT_OR_ABANDONED = new Set(['RUNNING', 'PLANNING', 'PAUSED', 'ABANDONED']);

/** Every surface read once; '' when they agree with `runs --json`, else what differs. */
async function disagreement(root: string, port: number): Promise<string> {
  const [reference, cliMetrics, api, dash, served] = await Promise.all([
    cli(['runs', '--json', '--root', root]),
    cli(['metrics', '--root', root, '--no-process-metrics']),
    getJson(port, '/api/runs'),
    getJson(port, '/api/dashboard'),
    raw(port, 'GET', '/metrics'),
  ]);
  const ref = JSON.parse(reference) as { runs: { run_id: string; status: string | null }[]; skipped: { run_id: string }[] };
  const want = new Map(ref.runs.map((r) => [r.run_id, r.status ?? 'none']));
  // The reference list, id by id in its order (newest first), each with its status: a run shown twice, one
  // missing, one out of place or a card without a report all differ from it.
  const wantList = JSON.stringify(ref.runs.map((r) => [r.run_id, r.status ?? 'none']));
  const problems: string[] = [];
  if (ref.skipped.length > 0) problems.push(`runs --json skips runs this test never makes unreadable: ${JSON.stringify(ref.skipped)}`);
  const sameList = (what: string, got: unknown[]): void => {
    const a = JSON.stringify(got);
    if (a !== wantList) problems.push(`${what}: ${a} != ${wantList}`);
  };
  const same = (what: string, got: Map<string, string>, expected: Map<string, string>): void => {
    const a = JSON.stringify([...got].sort());
    const b = JSON.stringify([...expected].sort());
    if (a !== b) problems.push(`${what}: ${a} != ${b}`);
  };
  if (api.status !== 200) problems.push(`/api/runs answered ${api.status}`);
  else sameList('/api/runs', (api.body.runs as { run_id: string; status: string | null }[]).map((r) => [r.run_id, r.status ?? 'none']));
  if (dash.status !== 200) problems.push(`/api/dashboard answered ${dash.status}`);
  else {
    const cards = dash.body.runs as { run_id: string; report: { status: string | null } | null }[];
    sameList('/api/dashboard cards', cards.map((c) => [c.run_id, c.report === null ? 'no report' : (c.report.status ?? 'none')]));
    sameList('/api/dashboard order', (dash.body.order as string[]).map((id) => [id, want.get(id) ?? 'not in runs --json']));
  }
  const expectedInfo = new Map([...want].filter(([, s]) => IN_FLIGHT_OR_ABANDONED.has(s)).map(([id, s]) => [printed(id), s]));
  try {
    same('serve /metrics run_info', runInfo(served.body), expectedInfo);
    same('runwarden metrics run_info', runInfo(cliMetrics), expectedInfo);
  } catch (e) {
    problems.push((e as Error).message);
  }
  const counts = new Map<string, string>();
  for (const s of want.values()) counts.set(s, String(Number(counts.get(s) ?? 0) + 1));
  const countsOf = (text: string): Map<string, string> => new Map([...runCounts(text)].filter(([, n]) => n > 0).map(([s, n]) => [s, String(n)]));
  same('serve /metrics runwarden_runs', countsOf(served.body), counts);
  same('runwarden metrics runwarden_runs', countsOf(cliMetrics), counts);
  return problems.join('\n');
}

/** Polls until every surface agrees with `runs --json`; fails with the last difference. */
async function agree(root: string, port: number, also: (ref: Map<string, string>) => string = () => ''): Promise<void> {
  const end = Date.now() + AGREE_MS;
  let last: string;
  for (;;) {
    last = await disagreement(root, port);
    if (last === '') {
      const ref = JSON.parse(await cli(['runs', '--json', '--root', root])) as { runs: { run_id: string; status: string | null }[] };
      last = also(new Map(ref.runs.map((r) => [r.run_id, r.status ?? 'none'])));
      if (last === '') return;
    }
    if (Date.now() > end) break;
    await new Promise((r) => setTimeout(r, 300));
  }
  expect(last).toBe('');
}

/** The names of the runs under test, as bytes. */
const NAMES: Buffer[] = [
  Buffer.from('tab\tid'),
  Buffer.from('back\\slash'),
  Buffer.from('a\\\\b'),
  Buffer.from('lit\\x41'),
  Buffer.from([0x62, 0x61, 0x64, 0xff, 0x2d, 0x31]), // "bad", 0xff, "-1": not UTF-8
  Buffer.from('rtl\u202eevil'),
  Buffer.from('plain-1'),
];

describe('serve: one run, one id, one status on every surface', () => {
  it('lists runs whose names need escaping once, as runs --json and runwarden metrics do, before and after runs are made and finished while it runs', async (ctx) => {
    needs(ctx, 'posix: names holding a tab, a backslash or bytes that are not UTF-8 (Windows allows none of them in a name)');
    const root = tempDir('rw-one-owner-');
    mkdirSync(root, { recursive: true });
    let k = 0;
    // The first three as the report found them: open legs, locks free. The rest both ways.
    for (const [i, name] of NAMES.entries()) await makeRun(root, name, i < 3 || i % 2 === 0, k++);
    await makeRun(root, Buffer.from('settled\\one'), false, k++);
    const serve = await startServeCli(root);
    await agree(root, serve.port, (ref) => (ref.size === NAMES.length + 1 ? '' : `runs --json lists ${ref.size} runs`));
    // Made and finished while serve runs: exec legs in runs named with backslashes, and one more renamed into place.
    // A RUN path's last component is read by the inverse rule (§1.1 rule 6): `new\back` names the bytes
    // `new\back` (a lone backslash stands for itself), `new\\two` the bytes `new\two`.
    await execLeg(join(root, 'new\\back'));
    await execLeg(join(root, 'new\\\\two'));
    await makeRun(root, Buffer.from([0x6e, 0x65, 0x77, 0xfe]), false, k);
    await agree(root, serve.port, (ref) => {
      for (const id of ['new\\\\back', 'new\\\\two', 'new\\xfe']) if (ref.get(id) !== 'PASS') return `${id} reads ${ref.get(id)} in runs --json`;
      return '';
    });
    // A second leg of a run serve already shows settled, and a leg opened again in another.
    await execLeg(join(root, 'back\\slash'));
    appendFileSync(join(root, 'new\\back', 'events.jsonl'), eventLine({ event: 'run_started' }));
    await agree(root, serve.port, (ref) => (ref.get('back\\\\slash') === 'PASS' && ref.get('new\\\\back') === 'ABANDONED' ? '' : 'the second legs are not in runs --json yet'));
  }, 600_000);

  it('turns a run held for a moment by a read-only holder, then killed with SIGKILL, back to ABANDONED everywhere, every time', async (ctx) => {
    needs(ctx, 'flock');
    const root = tempDir('rw-one-owner-hold-');
    mkdirSync(root, { recursive: true });
    const names = ['held-plain', 'held\\slash'];
    for (const [i, name] of names.entries()) await makeRun(root, Buffer.from(name), true, i);
    await makeRun(root, Buffer.from('quiet'), false, 9);
    const serve = await startServeCli(root);
    const abandoned = (ref: Map<string, string>): string =>
      ['held-plain', 'held\\\\slash'].every((id) => ref.get(id) === 'ABANDONED') ? '' : `not ABANDONED yet: ${JSON.stringify([...ref])}`;
    await agree(root, serve.port, abandoned);
    for (let round = 0; round < 6; round++) {
      // flock(1) opens the lock file read-only and holds an exclusive flock through that descriptor:
      // its death closes no writable descriptor, so no close-write is ever told.
      const holders = [];
      for (const name of names) {
        const lock = join(root, name, 'resume.lock');
        const proc = spawn('flock', ['-x', '-n', lock, 'sh', '-c', 'echo READY; exec sleep 600'], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
        track(-(proc.pid as number));
        track(proc);
        await waitReady(proc);
        expect(flockHolders(lock).exclusive.length).toBeGreaterThan(0);
        holders.push(proc);
      }
      // While held, every surface says RUNNING, as runs --json does (a holder that stays alive is never a death).
      const running = (ref: Map<string, string>): string =>
        ['held-plain', 'held\\\\slash'].every((id) => ref.get(id) === 'RUNNING') ? '' : `not RUNNING while held: ${JSON.stringify([...ref])}`;
      await agree(root, serve.port, running);
      for (const name of names) expect(flockHolders(join(root, name, 'resume.lock')).exclusive.length, `${name} still held`).toBeGreaterThan(0);
      // About three seconds, a little more or less each round.
      await new Promise((r) => setTimeout(r, 2500 + 250 * round));
      for (const proc of holders) {
        process.kill(-(proc.pid as number), 'SIGKILL');
        await waitExit(proc);
      }
      for (const name of names) await until(() => flockHolders(join(root, name, 'resume.lock')).exclusive.length === 0, 30_000);
      await agree(root, serve.port, abandoned);
    }
  }, 900_000);
});
