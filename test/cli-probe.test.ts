/** `runwarden probe`: output, --json shape, exit codes and help. */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanupTemp, CLI, killAll, startHolder, tempDir } from './helpers/lock-procs.js';
import { leftByLeg } from './helpers/portable.js';

afterEach(async () => {
  await killAll();
  cleanupTemp();
});

function run(...args: string[]) {
  return spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, NO_COLOR: '1' } });
}

describe('runwarden probe', () => {
  it('--json on a run directory prints exactly schema, path, liveness, reason', async () => {
    const dir = join(tempDir(), 'run-1');
    await startHolder(join(dir, 'resume.lock'));
    const r = run('probe', dir, '--json');
    expect(r.status).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(Object.keys(doc)).toEqual(['schema', 'path', 'liveness', 'reason']);
    expect(doc).toEqual({ schema: 1, path: join(dir, 'resume.lock'), liveness: 'held', reason: 'flock-held' });
  });

  it('a lock file path works too, and text output names liveness and reason', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'resume.lock'), leftByLeg(1));
    const r = run('probe', join(dir, 'resume.lock'));
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^free\s+\(flock-free\)/);
  });

  it('exit 0 for unknown too (a missing path is an answer, not an error)', () => {
    const r = run('probe', join(tempDir(), 'nothing-here'), '--json');
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ liveness: 'unknown', reason: 'missing' });
  });

  it('a directory in place of the lock is unknown, exit 0', () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'resume.lock'));
    const r = run('probe', join(dir, 'resume.lock'), '--json');
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ liveness: 'unknown', reason: 'not-regular-file' });
  });

  it('usage errors exit 2 without a stack trace', () => {
    for (const args of [['probe'], ['probe', 'a', 'b'], ['probe', '--bogus', 'x'], ['no-such-command']]) {
      const r = run(...args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it('--help explains the command and exits 0', () => {
    const r = run('probe', '--help');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('shared, non-blocking flock');
    expect(r.stdout).toContain('--json');
  });
});
