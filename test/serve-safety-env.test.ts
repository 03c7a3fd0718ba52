/**
 * RUNWARDEN_SERVE_SAFETY_MS, the interval of serve's safety pass (docs/cli.md,
 * "Environment variables"): unset or empty is the engine's default; a whole
 * number of ms from 1,000 to 2,147,483,647 is taken; anything else is refused
 * by `serve` as a usage error (exit 2, one line naming the variable) before it
 * listens.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { safetyMsFromEnv } from '../src/serve/limits.js';
import { CLI, tempDir, cleanupTemp } from './helpers/lock-procs.js';

afterAll(() => cleanupTemp());

describe('RUNWARDEN_SERVE_SAFETY_MS', () => {
  it('is read as a whole number of milliseconds in range, and refused otherwise', () => {
    expect(safetyMsFromEnv({})).toBeUndefined();
    expect(safetyMsFromEnv({ RUNWARDEN_SERVE_SAFETY_MS: '' })).toBeUndefined();
    expect(safetyMsFromEnv({ RUNWARDEN_SERVE_SAFETY_MS: '1000' })).toBe(1000);
    expect(safetyMsFromEnv({ RUNWARDEN_SERVE_SAFETY_MS: '3600000' })).toBe(3_600_000);
    expect(safetyMsFromEnv({ RUNWARDEN_SERVE_SAFETY_MS: '2147483647' })).toBe(2_147_483_647);
    for (const bad of ['999', '2147483648', '1e6', '-5000', '30 s', '0x1000', ' 5000']) {
      expect(() => safetyMsFromEnv({ RUNWARDEN_SERVE_SAFETY_MS: bad }), bad).toThrow(/^RUNWARDEN_SERVE_SAFETY_MS must be a whole number of milliseconds from 1000 to 2147483647/);
    }
  });

  it('a bad value is a usage error of serve, one line, before it listens', () => {
    const root = tempDir('rw-safety-env-');
    const r = spawnSync(process.execPath, [CLI, 'serve', '--root', root, '--port', '0'], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, RUNWARDEN_SERVE_SAFETY_MS: 'soon' } });
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toEqual(['runwarden: RUNWARDEN_SERVE_SAFETY_MS must be a whole number of milliseconds from 1000 to 2147483647, not "soon"']);
  });
});
