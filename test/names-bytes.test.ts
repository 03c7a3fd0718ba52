/**
 * Names are bytes (CONTRACT §1.1): a run directory whose name is
 * not valid UTF-8 (the byte 0xff) is read by its exact name and shown
 * escaped (`\xff`), and never confused with a directory really named U+FFFD
 * (the bytes ef bf bd, which is what decoding 0xff with replacement gives).
 * Both sit side by side, one live (its lock held by a real flock(1)) and one
 * not (an open leg, its lock free), and each row, on every surface, reports
 * its own state; then the roles are swapped.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { nameBytes, showName } from '../src/contract/names.js';
import { run } from './helpers/exec-procs.js';
import { cleanupTemp, killAll, tempDir, track, waitReady } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';
import { getJson } from './helpers/serve-client.js';
import { startServeCli } from './helpers/serve-cli.js';
import { eventLine } from './helpers/events.js';
import { mulberry32 } from './helpers/random.js';
import { RELEASED } from './helpers/portable.js';

const FF = Buffer.of(0xff);
const FFFD = Buffer.from('\ufffd', 'utf8');
const SHOWN_FF = '\\xff'; // four characters: backslash, x, f, f

afterEach(() => killAll());
afterAll(async () => {
  await killAll();
  cleanupTemp();
});

/** Writes a run with an open leg under `root` at the exact name `name`; the lock file is marked and free. */
function openLegRun(root: string, name: Buffer, graph: string): void {
  const dir = Buffer.concat([Buffer.from(root + '/'), name]);
  mkdirSync(dir, { mode: 0o700 });
  const file = (f: string): Buffer => Buffer.concat([dir, Buffer.from('/' + f)]);
  writeFileSync(file('events.jsonl'), eventLine({ event: 'run_started', command: ['sleep', '600'] }, { ts: '2026-12-01T10:00:00Z' }));
  writeFileSync(file('state.json'), JSON.stringify({ schema: 3, graph: { name: graph, nodes: [{ id: 'a' }] }, nodes: {} }));
  writeFileSync(file('resume.lock'), RELEASED);
}

/** Holds an exclusive flock on `<root>/<name>/resume.lock` with flock(1); the name reaches it as bytes through a shell escape. */
async function holdLock(root: string, name: Buffer): Promise<void> {
  const escaped = [...name].map((b) => `\\x${b.toString(16).padStart(2, '0')}`).join('');
  const proc = spawn('bash', ['-c', `exec flock -x -n $'${escaped}'/resume.lock -c 'echo READY; exec sleep 600'`], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  track(-(proc.pid as number));
  track(proc);
  await waitReady(proc);
}

describe('the escaping rule', () => {
  it('shows 0xff as \\xff and U+FFFD as itself, and reads each back to its own bytes', () => {
    expect(showName(FF)).toBe(SHOWN_FF);
    expect(showName(FFFD)).toBe('\ufffd');
    expect(nameBytes(SHOWN_FF).equals(FF)).toBe(true);
    expect(nameBytes('\ufffd').equals(FFFD)).toBe(true);
    // A real backslash is doubled, so a directory literally named "\xff" is not the byte 0xff.
    expect(showName(Buffer.from('\\xff'))).toBe('\\\\xff');
    expect(nameBytes('\\\\xff').equals(Buffer.from('\\xff'))).toBe(true);
  });

  it('round-trips every byte string it is given (random names over the awkward bytes)', () => {
    const alphabet = [0x5c, 0x78, 0x66, 0x30, 0xff, 0xfe, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xed, 0xa0, 0xf0, 0x9f, 0x98, 0x80, 0x0a];
    const r = mulberry32(12345);
    const below = (n: number): number => Math.floor(r() * n);
    const seen = new Map<string, string>();
    for (let i = 0; i < 20000; i++) {
      const name = Buffer.from(Array.from({ length: 1 + below(8) }, () => alphabet[below(alphabet.length)]));
      const shown = showName(name);
      expect(nameBytes(shown).equals(name)).toBe(true);
      const hex = name.toString('hex');
      const other = seen.get(shown);
      if (other !== undefined) expect(other, `two names shown as ${JSON.stringify(shown)}`).toBe(hex);
      seen.set(shown, hex);
    }
  });
});

describe('a name that is not UTF-8 beside one named U+FFFD', () => {
  for (const live of ['0xff', 'U+FFFD'] as const) {
    it(`each row reports its own state (${live} live, the other abandoned)`, async (ctx) => {
      needs(ctx, 'flock');
      const root = tempDir('rw-names-');
      openLegRun(root, FF, 'graph-ff');
      openLegRun(root, FFFD, 'graph-fffd');
      await holdLock(root, live === '0xff' ? FF : FFFD);
      const expected: Record<string, { status: string; graph: string }> = {
        [SHOWN_FF]: { status: live === '0xff' ? 'RUNNING' : 'ABANDONED', graph: 'graph-ff' },
        '\ufffd': { status: live === 'U+FFFD' ? 'RUNNING' : 'ABANDONED', graph: 'graph-fffd' },
      };

      // runs --json: two rows, each with its own id, graph and status.
      const json = await run(['runs', '--json', '--root', root]);
      expect(json.code, json.stderr).toBe(0);
      const doc = JSON.parse(json.stdout) as { runs: { run_id: string; status: string; graph: string }[]; skipped: unknown[] };
      expect(doc.skipped).toEqual([]);
      expect(Object.fromEntries(doc.runs.map((r) => [r.run_id, { status: r.status, graph: r.graph }]))).toEqual(expected);

      // runs (the table): the escaped name on its row, with its status.
      const table = await run(['runs', '--root', root]);
      expect(table.code, table.stderr).toBe(0);
      for (const [id, want] of Object.entries(expected)) {
        const row = table.stdout.split('\n').find((l) => l.includes(id) && l.includes(want.graph));
        expect(row, `a row for ${JSON.stringify(id)} in:\n${table.stdout}`).toBeDefined();
        expect(row).toContain(want.status);
      }

      // status RUN, by the shown id.
      for (const [id, want] of Object.entries(expected)) {
        const s = await run(['status', id, '--json', '--root', root]);
        expect(s.code === 0 || s.code === 3, s.stderr).toBe(true);
        const report = JSON.parse(s.stdout) as { run_id: string; status: string; graph: string };
        expect({ run_id: report.run_id, status: report.status, graph: report.graph }).toEqual({ run_id: id, ...want });
      }

      // serve: the list and each run's page, the id percent-encoded as the page links it.
      const serve = await startServeCli(root);
      const list = await getJson<{ runs: { run_id: string; status: string; graph: string }[] }>(serve.port, '/api/runs');
      expect(Object.fromEntries(list.body.runs.map((r) => [r.run_id, { status: r.status, graph: r.graph }]))).toEqual(expected);
      for (const [id, want] of Object.entries(expected)) {
        const page = await getJson<{ run_id: string; report: { status: string; graph: string } | null; error: string | null }>(serve.port, `/api/runs/${encodeURIComponent(id)}`);
        expect(page.status, JSON.stringify(page.body)).toBe(200);
        expect({ run_id: page.body.run_id, status: page.body.report?.status, graph: page.body.report?.graph }).toEqual({ run_id: id, ...want });
      }
    });
  }
});

describe('exec and a name that is not UTF-8', () => {
  it('exec of the shown id writes the directory with the exact byte, and every reader finds it there', async (ctx) => {
    needs(ctx, 'posix: a name that is not UTF-8 (Windows names are UTF-16 text)');
    const root = tempDir('rw-names-exec-');
    openLegRun(root, FFFD, 'graph-fffd'); // a neighbour that must stay untouched
    const r = await run(['exec', SHOWN_FF, '--root', root, '--', 'true']);
    expect(r.code, r.stderr).toBe(0);
    const names = readdirSync(root, { encoding: 'buffer' }).map((b) => b.toString('hex')).sort();
    expect(names, 'one directory named by the byte 0xff, beside the U+FFFD one; none named "\\xff" literally').toEqual([FF.toString('hex'), FFFD.toString('hex')].sort());
    const s = await run(['status', SHOWN_FF, '--json', '--root', root]);
    expect(JSON.parse(s.stdout)).toMatchObject({ run_id: SHOWN_FF, status: 'PASS' });
    const other = await run(['status', '\ufffd', '--json', '--root', root]);
    expect(JSON.parse(other.stdout)).toMatchObject({ run_id: '\ufffd', status: 'ABANDONED', graph: 'graph-fffd' });
  });
});

