/**
 * Bytes read from a long stream, counted by strace (`-P` on the stream, the
 * return values of read/pread64 summed), for `runs --json`, `status` and a
 * live engine in a process of its own (its own counter is checked too, but
 * is not the measure):
 * - a short closed last leg after 50 MiB of earlier legs is read in at most
 *   64 KiB, whatever the history's length;
 * - one closed leg of 50 MiB (outcome passed or failed) is read in at most
 *   64 KiB too: its start is not searched for past the last 32 KiB
 *   (CONTRACT §2.5 rule 7, test/tail-closed-leg.test.ts);
 * - the control: a 50 MiB leg closed `paused` (its gates are those after its
 *   start) is still searched whole, once;
 * - an open 50 MiB leg is searched back to its start (§2.5 rule 8: no bound
 *   keeps every status right for it), in one pass, never twice.
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { LiveEngine } from '../src/index.js';
import { needs } from './helpers/prereq.js';
import { CLI, cleanupTemp, killAll, ROOT, tempDir, track, until, waitExit } from './helpers/lock-procs.js';
import { eventLine } from './helpers/events.js';

const engines: LiveEngine[] = [];
afterEach(async () => {
  for (const e of engines.splice(0)) e.close();
  await killAll();
});
afterAll(cleanupTemp);

const line = (o: Record<string, unknown>) => eventLine(o, { ts: '2026-12-02T10:00:00Z' });
const MiB = 1024 * 1024;

/** A run directory whose stream is `body` repeated to `mib` MiB between `head` and `end`. */
function run(root: string, id: string, head: string, body: string, mib: number, end: string): { dir: string; events: string; size: number } {
  const dir = join(root, id);
  mkdirSync(dir);
  const events = join(dir, 'events.jsonl');
  const block = Buffer.from(body.repeat(Math.ceil(MiB / body.length)));
  const fd = openSync(events, 'w', 0o600);
  writeSync(fd, head);
  for (let i = 0; i < mib; i++) writeSync(fd, block);
  writeSync(fd, end);
  closeSync(fd);
  return { dir, events, size: statSync(events).size };
}

/** Runs the CLI under strace; the bytes it read from `file` and the command's stdout. */
function bytesRead(file: string, args: string[]): { bytes: number; calls: number; stdout: string } {
  const log = `${file}.strace`;
  const t = spawnSync('strace', ['-f', '-qq', '-e', 'trace=read,pread64', '-P', file, '-o', log, process.execPath, CLI, ...args], { encoding: 'utf8', timeout: 120_000 });
  expect(t.status, t.stderr).toBe(0);
  return { ...readsIn(log), stdout: t.stdout };
}

/** The strace log's read/pread64 calls: their count and the bytes they returned. */
function readsIn(log: string): { bytes: number; calls: number } {
  let bytes = 0;
  let calls = 0;
  for (const l of readFileSync(log, 'utf8').split('\n')) {
    const m = /(?:read|pread64)\(.*\)\s+=\s+(\d+)/.exec(l);
    if (m) {
      bytes += Number(m[1]);
      calls++;
    }
  }
  return { bytes, calls };
}

/**
 * A live engine in a process of its own (test/fixtures/holder-engine.mjs) under strace, started on
 * `root` until it reports `dir`'s status; that status and the bytes it read from `file`, by the kernel's count.
 */
async function engineBytes(root: string, dir: string, file: string): Promise<{ status: string | null; bytes: number; calls: number }> {
  const log = `${file}.engine.strace`;
  const p = spawn('strace', ['-f', '-qq', '-e', 'trace=read,pread64', '-P', file, '-o', log, process.execPath, join(ROOT, 'test', 'fixtures', 'holder-engine.mjs'), root, '600000'], { stdio: ['pipe', 'pipe', 'inherit'] });
  track(p);
  let out = '';
  p.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  const runLine = () => out.split('\n').find((l) => l.startsWith('{"type":"run"') && l.includes(JSON.stringify(dir.split('/').at(-1))));
  await until(() => out.includes('READY\n') && runLine() !== undefined, 120_000);
  p.stdin?.end();
  await waitExit(p);
  return { status: (JSON.parse(runLine() as string) as { status: string | null }).status, ...readsIn(log) };
}

/** `runs --json`, `status` and a live engine each report `expected` for the run `r`, having read at most 64 KiB of its stream. */
async function expectAtMost64KiB(root: string, r: { dir: string; events: string; size: number }, expected: string): Promise<void> {
  expect(r.size).toBeGreaterThan(50 * MiB);
  for (const args of [['runs', '--json', '--root', root], ['status', r.dir, '--json']]) {
    const got = bytesRead(r.events, args);
    const report = JSON.parse(got.stdout) as { status?: string; runs?: { status: string }[] };
    expect(report.runs?.[0]?.status ?? report.status, args[0]).toBe(expected);
    expect(got.calls, args[0]).toBeGreaterThan(0); // the control: strace saw the stream's reads
    expect(got.bytes, args[0]).toBeLessThanOrEqual(64 * 1024);
  }
  const e = new LiveEngine({ root, safetyMs: 600_000, openRecheckMs: 600_000, ref: false });
  engines.push(e);
  await e.start();
  expect(e.get(r.dir)?.report?.status).toBe(expected);
  expect(e.stats.bytesRead).toBeGreaterThan(0);
  expect(e.stats.bytesRead).toBeLessThanOrEqual(64 * 1024);
  // The engine's own counter is not the measure: the kernel's count of what it read is.
  const got = await engineBytes(root, r.dir, r.events);
  expect(got.status, 'engine').toBe(expected);
  expect(got.calls, 'engine').toBeGreaterThan(0);
  expect(got.bytes, 'engine').toBeLessThanOrEqual(64 * 1024);
}

const LEG = line({ event: 'run_started' }) + line({ event: 'node_started', node_id: 'a' }) + line({ event: 'node_passed', node_id: 'a', detail: 'x'.repeat(200) }) + line({ event: 'run_finished', outcome: 'failed' });
const NODE = line({ event: 'node_started', node_id: 'n' }) + line({ event: 'node_passed', node_id: 'n', detail: 'the node reports its verdict' });

describe('bytes read from a long stream', () => {
  const OUTCOMES: [string, string][] = [
    ['passed', 'PASS'],
    ['failed', 'FAIL'],
    ['paused', 'PAUSED'],
  ];
  it.for(OUTCOMES)('a short leg closed %s after 50 MiB of earlier legs: at most 64 KiB, for runs --json, status and the engine', { timeout: 180_000 }, async ([outcome, expected], ctx) => {
    needs(ctx, 'strace');
    const root = tempDir('rw-bytes-');
    const r = run(root, '20261202-150000-history', '', LEG, 50, line({ event: 'run_started' }) + NODE.repeat(20) + line({ event: 'gate_paused', node_id: 'g' }) + line({ event: 'run_finished', outcome }));
    await expectAtMost64KiB(root, r, expected);
  });

  const CLOSED: [string, string][] = [
    ['passed', 'PASS'],
    ['failed', 'FAIL'],
  ];
  it.for(CLOSED)('one leg of 50 MiB closed %s: at most 64 KiB, for runs --json, status and the engine', { timeout: 180_000 }, async ([outcome, expected], ctx) => {
    needs(ctx, 'strace');
    const root = tempDir('rw-bytes-');
    const r = run(root, '20261202-160000-oneleg', line({ event: 'run_started' }), NODE, 50, line({ event: 'run_finished', outcome }));
    await expectAtMost64KiB(root, r, expected);
  });

  it('one open leg of 50 MiB (CONTRACT §2.5 rule 8): searched back to its start once, never twice, by runs --json, status and the engine', async (ctx) => {
    needs(ctx, 'strace');
    const root = tempDir('rw-bytes-');
    const r = run(root, '20261202-170000-open', line({ event: 'run_started', command: ['make', 'all'] }), NODE, 50, line({ event: 'node_started', node_id: 'last' }));
    for (const args of [['runs', '--json', '--root', root], ['status', r.dir, '--json']]) {
      const got = bytesRead(r.events, args);
      // No lock file: the open leg reads RUNNING with unknown liveness, and its start (offset 0) was found.
      expect(got.stdout, args[0]).toContain('RUNNING');
      expect(got.bytes, args[0]).toBeGreaterThanOrEqual(r.size - 64 * 1024);
      expect(got.bytes, args[0]).toBeLessThanOrEqual(r.size + 128 * 1024);
      // In windows of up to 1 MiB (docs/implementation.md: 16 KiB doubling to 1 MiB): one read per MiB of
      // the leg, the doubling's seven and a few for the dense region's edge, not one per line or per 64 KiB.
      expect(got.calls, args[0]).toBeLessThanOrEqual(Math.ceil(r.size / MiB) + 12);
    }
    const got = await engineBytes(root, r.dir, r.events);
    expect(got.status, 'engine').toBe('RUNNING');
    expect(got.bytes, 'engine').toBeGreaterThanOrEqual(r.size - 64 * 1024);
    expect(got.bytes, 'engine').toBeLessThanOrEqual(r.size + 128 * 1024);
  }, 180_000);

  it('the control: one leg of 50 MiB closed paused is searched for its start once, and its gate named', (ctx) => {
    needs(ctx, 'strace');
    const root = tempDir('rw-bytes-');
    const r = run(root, '20261202-160000-paused', line({ event: 'run_started' }), NODE, 50, line({ event: 'gate_paused', node_id: 'review' }) + line({ event: 'run_finished', outcome: 'paused' }));
    for (const args of [['runs', '--json', '--root', root], ['status', r.dir, '--json']]) {
      const got = bytesRead(r.events, args);
      expect(got.stdout, args[0]).toContain('at gate review');
      // A paused leg's gates are those after its start (CONTRACT §2.5): the whole leg is searched, but only once.
      expect(got.bytes, args[0]).toBeGreaterThanOrEqual(r.size - 64 * 1024);
      expect(got.bytes, args[0]).toBeLessThanOrEqual(r.size + 128 * 1024);
    }
  }, 180_000);
});
