/**
 * Soak of the ordering invariant (CONTRACT §4.1): a leg takes the lock before its
 * first event and releases it after its last, so a reader never sees an open
 * leg without a held lock. 200 consecutive real `runwarden exec` legs on one
 * run while several reader processes poll its status in tight loops; no
 * reader may ever observe ABANDONED, or an open leg with no lock file.
 * (bench/soak.mjs runs a larger version.)
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runStatus } from '../src/index.js';
import { run } from './helpers/exec-procs.js';
import { cleanupTemp, killAll, tempDir, track } from './helpers/lock-procs.js';

afterEach(() => {
  killAll();
  cleanupTemp();
});

const LEGS = 200;
const READERS = 3;
const READER = new URL('./fixtures/soak-reader.mjs', import.meta.url).pathname;

describe('ordering invariant soak', () => {
  it(`${LEGS} consecutive exec legs under ${READERS} polling readers: never ABANDONED, never an open leg without a lock`, async () => {
    const root = tempDir('rw-soak-');
    const dir = join(root, 'soak');
    const stop = join(root, 'stop');
    // The first leg creates the run; readers start polling once it exists.
    expect((await run(['exec', '--root', root, 'soak', '--', 'true'])).code).toBe(0);
    const readers = Array.from({ length: READERS }, () => {
      const p = spawn(process.execPath, [READER, dir, stop], { stdio: ['ignore', 'pipe', 'inherit'] });
      track(p.pid as number);
      let out = '';
      p.stdout.on('data', (d: Buffer) => (out += d.toString()));
      return new Promise<{ polls: number; seen: Record<string, number>; violations: string[] }>((resolve, reject) =>
        p.on('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`reader exited ${code}`)))),
      );
    });
    for (let i = 1; i < LEGS; i++) {
      const r = await run(['exec', '--root', root, 'soak', '--', 'true']);
      expect(r.code, r.stderr).toBe(0);
    }
    writeFileSync(stop, '');
    const results = await Promise.all(readers);
    for (const r of results) {
      expect(r.violations).toEqual([]);
      // The readers really did see legs in flight, not only settled states.
      expect(r.polls).toBeGreaterThan(100);
    }
    const sawRunning = results.reduce((n, r) => n + (r.seen['RUNNING'] ?? 0), 0);
    expect(sawRunning).toBeGreaterThan(0);
    expect(runStatus(dir).status).toBe('PASS');
  }, 120_000);
});
