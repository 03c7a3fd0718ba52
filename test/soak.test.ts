/**
 * Soak of the ordering invariant (CONTRACT §4.1): a leg takes the lock before its
 * first event and releases it after its last, so a reader never sees an open
 * leg without a held lock. At least 200 consecutive real `runwarden exec` legs
 * on one run while several reader processes poll its status in tight loops;
 * no reader may ever observe ABANDONED, or an open leg with no lock file.
 * (bench/soak.mjs runs a larger version.)
 *
 * Nothing here is timed: the test counts legs and observations. The legs start
 * once every reader is polling, and go on past 200 until every reader has made
 * more than 100 polls and some reader has seen a leg in flight (up to a cap,
 * so a starved reader fails the assertions below instead of hanging). Every
 * process it starts is killed and reaped after it, however it ends.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runStatus } from '../src/index.js';
import { run } from './helpers/exec-procs.js';
import { cleanupTemp, killAll, tempDir, track, until } from './helpers/lock-procs.js';

afterEach(async () => {
  await killAll();
  cleanupTemp();
});

const LEGS = 200;
const MAX_LEGS = 10 * LEGS;
const READERS = 3;
const MIN_POLLS = 100;
const READER = new URL('./fixtures/soak-reader.mjs', import.meta.url).pathname;

interface Result {
  polls: number;
  seen: Record<string, number>;
  violations: string[];
}

interface Reader {
  proc: ChildProcess;
  polling: boolean;
  polls: number;
  running: number;
  /** Settles when the reader exits; rejects if it failed. Already handled, so a kill never goes unhandled. */
  result: Promise<Result>;
}

function startReader(dir: string, stop: string): Reader {
  const proc = spawn(process.execPath, [READER, dir, stop], { stdio: ['ignore', 'pipe', 'inherit'] });
  track(proc);
  const reader: Reader = { proc, polling: false, polls: 0, running: 0, result: Promise.resolve({ polls: 0, seen: {}, violations: [] }) };
  let buf = '';
  let last = '';
  proc.stdout?.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      const m = /^progress (\d+) (\d+)$/.exec(line);
      if (line === 'polling') reader.polling = true;
      else if (m) {
        reader.polls = Number(m[1]);
        reader.running = Number(m[2]);
      } else last = line;
    }
  });
  reader.result = new Promise<Result>((resolve, reject) => {
    proc.once('error', reject);
    proc.once('close', (code, signal) => (code === 0 ? resolve(JSON.parse(last) as Result) : reject(new Error(`reader exited (code ${code}, signal ${signal})`))));
  });
  reader.result.catch(() => {}); // awaited below; this only keeps a killed reader from being an unhandled rejection
  return reader;
}

describe('ordering invariant soak', () => {
  it(`at least ${LEGS} consecutive exec legs under ${READERS} polling readers: never ABANDONED, never an open leg without a lock`, async () => {
    const root = tempDir('rw-soak-');
    const dir = join(root, 'soak');
    const stop = join(root, 'stop');
    // The first leg creates the run; readers start polling once it exists.
    expect((await run(['exec', '--root', root, 'soak', '--', 'true'])).code).toBe(0);
    const readers = Array.from({ length: READERS }, () => startReader(dir, stop));
    const exitedEarly = () => readers.some((r) => r.proc.exitCode !== null || r.proc.signalCode !== null);
    await until(() => readers.every((r) => r.polling) || exitedEarly());
    const enough = () => readers.every((r) => r.polls > MIN_POLLS) && readers.some((r) => r.running > 0);
    let legs = 1;
    while ((legs < LEGS || !enough()) && legs < MAX_LEGS && !exitedEarly()) {
      const r = await run(['exec', '--root', root, 'soak', '--', 'true']);
      expect(r.code, r.stderr).toBe(0);
      legs++;
    }
    writeFileSync(stop, '');
    const results = await Promise.all(readers.map((r) => r.result));
    expect(legs).toBeGreaterThanOrEqual(LEGS);
    for (const r of results) {
      expect(r.violations).toEqual([]);
      // The readers really did see legs in flight, not only settled states.
      expect(r.polls).toBeGreaterThan(100);
    }
    const sawRunning = results.reduce((n, r) => n + (r.seen['RUNNING'] ?? 0), 0);
    expect(sawRunning).toBeGreaterThan(0);
    expect(runStatus(dir).status).toBe('PASS');
  }, 900_000);
});
