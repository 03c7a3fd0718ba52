/**
 * The live engine's first read of a long stream: a run
 * whose events.jsonl is megabytes of `{}` lines ending in `run_started`
 * must not hold the engine's event loop while it is read. Real files, a
 * real holder process on the lock; what is asserted is counted, never
 * timed: the stream bytes each step read (a bound), the number of steps and
 * of event-loop turns that passed during the read (the positive control
 * that it was sliced), the bytes read in all (the stream once, not twice),
 * and the report, which must equal the one `runs`/`status` give.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdirSync, openSync, closeSync, readFileSync, writeSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { needs } from './helpers/prereq.js';
import { LiveEngine, runStatus } from '../src/index.js';
import { LIVE_FIRST_READ_WHOLE_MAX, LIVE_STEP_BYTES } from '../src/live/engine.js';
import { cleanupTemp, killAll, ROOT, startHolder, tempDir, until } from './helpers/lock-procs.js';
import { eventLine } from './helpers/events.js';
import { RELEASED } from './helpers/portable.js';

const engines: LiveEngine[] = [];

afterEach(async () => {
  for (const e of engines.splice(0)) e.close();
  await killAll();
  cleanupTemp();
});

const line = (o: Record<string, unknown>) => eventLine(o, { ts: '2026-12-02T10:00:00Z' });

/** One read of the tail reader is at most a 1 MiB window and a few carried bytes; a step ends at the first read past its budget. */
const STEP_BOUND = LIVE_STEP_BYTES + 1024 * 1024 + 64;
/** What the tail reads twice of a long open leg: its dense region (16 KiB) and the 64 KiB read that finds its first line's start. */
const DENSE_REREAD = 128 * 1024;

/** Writes `mb` MiB of `{}` lines (filler: valid JSON, no event), then `tail`. */
function fillerStream(path: string, mb: number, tail: string): number {
  const block = Buffer.from('{}\n'.repeat((1024 * 1024) / 3));
  const fd = openSync(path, 'w', 0o600);
  try {
    for (let i = 0; i < mb; i++) writeSync(fd, block);
    writeSync(fd, tail);
  } finally {
    closeSync(fd);
  }
  return statSync(path).size;
}

function engine(root: string): LiveEngine {
  // Timers that cannot fire within a test: only the first read and notification act.
  const e = new LiveEngine({ root, safetyMs: 600_000, openRecheckMs: 600_000 });
  engines.push(e);
  return e;
}

/** Counts turns of the event loop (one per check phase) until stopped. */
function turnCounter(): { count: () => number; stop: () => void } {
  let n = 0;
  let on = true;
  const tick = (): void => {
    if (!on) return;
    n++;
    setImmediate(tick);
  };
  setImmediate(tick);
  return { count: () => n, stop: () => (on = false) };
}

function statusOf(e: LiveEngine, dir: string): string | null | undefined {
  return e.get(dir)?.report?.status;
}

describe('the live engine first reads a long stream in steps, with the tail reader', () => {
  it('24 MiB of {} lines ending in run_started: bounded bytes per step, many turns, read once, the listing’s report; then only appends are read', async () => {
    const root = tempDir('rw-first-');
    const big = join(root, '20261202-100000-big');
    const small = join(root, '20261202-090000-small');
    mkdirSync(big);
    mkdirSync(small);
    const size = fillerStream(join(big, 'events.jsonl'), 24, line({ event: 'run_started' }));
    writeFileSync(join(small, 'events.jsonl'), line({ event: 'run_started' }) + line({ event: 'run_finished', outcome: 'passed' }));
    // A live holder: the open leg is RUNNING (held), as for the listing.
    await startHolder(join(big, 'resume.lock'));

    const e = engine(root);
    const turns = turnCounter();
    await e.start();
    turns.stop();

    expect(statusOf(e, big)).toBe('RUNNING');
    expect(statusOf(e, small)).toBe('PASS');
    expect(e.get(big)?.report).toEqual(runStatus(big));
    expect(e.get(small)?.report).toEqual(runStatus(small));
    // The long stream went to the tail reader; the short one was read forward, whole.
    expect(e.stats.tailReads).toBe(1);
    expect(size).toBeGreaterThan(LIVE_FIRST_READ_WHOLE_MAX);
    // No step read more than its bound, and the read took many steps, each in its own turn.
    expect(e.stats.maxStepBytes).toBeLessThanOrEqual(STEP_BOUND);
    expect(e.stats.readSteps).toBeGreaterThanOrEqual(Math.floor(size / STEP_BOUND));
    expect(turns.count()).toBeGreaterThanOrEqual(Math.floor(size / STEP_BOUND));
    // An open leg after 24 MiB of lines that cannot be leg events: the tail searched all of it, once
    // (plus its dense region read again line by line: the last 16 KiB and the 64 KiB read that finds where its line starts).
    expect(e.stats.bytesRead).toBeGreaterThanOrEqual(size - 64);
    expect(e.stats.bytesRead).toBeLessThanOrEqual(size + DENSE_REREAD);

    // After the first read, only appended bytes are read (the incremental rule).
    const before = e.stats.bytesRead;
    const more = line({ event: 'node_started', node_id: 'a' }) + line({ event: 'node_passed', node_id: 'a' }) + line({ event: 'run_finished', outcome: 'passed' });
    appendFileSync(join(big, 'events.jsonl'), more);
    await until(() => statusOf(e, big) === 'PASS');
    expect(e.stats.bytesRead - before).toBe(Buffer.byteLength(more));
    expect(e.get(big)?.report).toEqual(runStatus(big));
  }, 120_000);

  it('an open leg with a free lock is ABANDONED, as the listing says, its read bounded per step', async () => {
    const root = tempDir('rw-first-');
    const big = join(root, '20261202-110000-dead');
    mkdirSync(big);
    const size = fillerStream(join(big, 'events.jsonl'), 8, line({ event: 'run_started', command: ['make', 'it'] }));
    // A lock file nobody holds.
    writeFileSync(join(big, 'resume.lock'), RELEASED);
    const e = engine(root);
    await e.start();
    expect(statusOf(e, big)).toBe('ABANDONED');
    expect(e.get(big)?.report).toEqual(runStatus(big));
    expect(e.stats.referenceDerivations).toBe(1);
    expect(e.stats.maxStepBytes).toBeLessThanOrEqual(STEP_BOUND);
    expect(e.stats.bytesRead).toBeLessThanOrEqual(size + DENSE_REREAD);
  }, 120_000);

  it('counted by strace: an engine process reads an ABANDONED run’s long stream once, its confirmation included', (ctx) => {
    needs(ctx, 'strace');
    const root = tempDir('rw-first-');
    const big = join(root, '20261202-115000-dead');
    mkdirSync(big);
    const events = join(big, 'events.jsonl');
    const size = fillerStream(events, 16, line({ event: 'run_started' }));
    writeFileSync(join(big, 'resume.lock'), RELEASED);
    const lib = pathToFileURL(join(ROOT, 'dist', 'index.js')).href;
    const script = `const { LiveEngine } = await import(${JSON.stringify(lib)});
      const e = new LiveEngine({ root: ${JSON.stringify(root)}, ref: false });
      await e.start();
      process.stdout.write(JSON.stringify({ status: e.get(${JSON.stringify(big)})?.report?.status, refs: e.stats.referenceDerivations }));
      e.close();`;
    const log = join(root, 'strace.log');
    const t = spawnSync('strace', ['-f', '-qq', '-e', 'trace=read,pread64', '-P', events, '-o', log, process.execPath, '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 120_000 });
    expect(t.status, t.stderr).toBe(0);
    // The positive control: the engine did take the reference path (read, probe free, confirm).
    expect(JSON.parse(t.stdout)).toEqual({ status: 'ABANDONED', refs: 1 });
    let bytes = 0;
    let calls = 0;
    for (const l of readFileSync(log, 'utf8').split('\n')) {
      const m = /(?:read|pread64)\(.*\)\s+=\s+(\d+)/.exec(l);
      if (m) {
        bytes += Number(m[1]);
        calls++;
      }
    }
    expect(calls).toBeGreaterThan(10);
    // Once by the stepped tail read (plus its dense region again), not a second time by the confirmation.
    expect(bytes).toBeGreaterThanOrEqual(size - 64);
    expect(bytes).toBeLessThanOrEqual(size + DENSE_REREAD + 64 * 1024);
  }, 120_000);

  it('a long closed leg, a paused one and one with skipped lines: the first report equals the listing’s', async () => {
    const root = tempDir('rw-first-');
    const mk = (name: string, head: string, body: string, end: string): string => {
      const dir = join(root, name);
      mkdirSync(dir);
      writeFileSync(join(dir, 'events.jsonl'), head + body.repeat(Math.ceil((3 * 1024 * 1024) / body.length)) + end);
      return dir;
    };
    const node = line({ event: 'node_started', node_id: 'n' }) + line({ event: 'node_passed', node_id: 'n' });
    const dirs = [
      mk('20261202-120000-closed', line({ event: 'run_started' }), node, line({ event: 'run_finished', outcome: 'failed' })),
      mk('20261202-120001-paused', line({ event: 'run_started' }) + line({ event: 'gate_paused', node_id: 'early' }), node, line({ event: 'gate_paused', node_id: 'late' }) + line({ event: 'run_finished', outcome: 'paused' })),
      mk('20261202-120002-skips', line({ event: 'run_started' }) + line({ event: 'run_finished', outcome: 'passed' }), 'garbage\n' + node, 'garbage\n' + line({ event: 'run_started' }) + 'garbage\n'),
    ];
    const e = engine(root);
    await e.start();
    expect(e.stats.tailReads).toBe(3);
    for (const dir of dirs) expect(e.get(dir)?.report, dir).toEqual(runStatus(dir));
    expect(statusOf(e, dirs[1])).toBe('PAUSED');
    expect(e.get(dirs[1])?.report?.hint).toContain('early');
    // Appends after the tail's read fold on from its fold: a new leg, then its end.
    const skips = dirs[2];
    appendFileSync(join(skips, 'events.jsonl'), 'garbage\n' + line({ event: 'run_finished', outcome: 'failed' }));
    await until(() => e.get(skips)?.report?.status === 'FAIL');
    expect(e.get(skips)?.report).toEqual(runStatus(skips));
  }, 120_000);
});
