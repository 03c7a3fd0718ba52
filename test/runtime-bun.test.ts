/**
 * The guard of `npm run test:bun` (scripts/test-bun.mjs): when that lane runs
 * the suite, this process and the processes tests start with process.execPath
 * must be Bun, or the lane would pass on Node without saying so. Under
 * `npm test` (Node) it checks the same of Node.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

describe('the runtime the suite runs on', () => {
  it('is Bun under test:bun, itself and in the children it starts; Node otherwise', () => {
    const bun = process.env['RUNWARDEN_TEST_RUNTIME'] === 'bun';
    expect(process.versions['bun'] !== undefined).toBe(bun);
    const r = spawnSync(process.execPath, ['-e', 'console.log(process.versions.bun ? "bun" : "node")'], { encoding: 'utf8' });
    expect(r.stdout.trim()).toBe(bun ? 'bun' : 'node');
  });
});
