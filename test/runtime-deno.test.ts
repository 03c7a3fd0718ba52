/**
 * Deno is refused when the addon would load, with one line naming what it
 * lacks (src/kernel/runtime.ts): never a dead process, never a wrong answer
 * (its node:fs rejects the descriptors the addon opens, so runs would read
 * as unreadable or be skipped). Run with Deno from scripts/runtime.sh.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanupTemp, ROOT, tempDir } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';
import { runtimePath } from './helpers/runtimes.js';
import { eventLine } from './helpers/events.js';
import { fingerprint } from './helpers/tree.js';

afterEach(() => cleanupTemp());

describe('under Deno', () => {
  it('the CLI and the library refuse with one line naming what Deno lacks, exit 1, and nothing under the root changes', (ctx) => {
    needs(ctx, 'deno');
    const deno = runtimePath('deno') as string;
    const root = tempDir('rw-deno-');
    mkdirSync(join(root, 'abandoned'));
    writeFileSync(join(root, 'abandoned', 'events.jsonl'), eventLine({ event: 'run_started' }, { runId: 'abandoned' }));
    const env = { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' };
    const before = fingerprint(root);
    const cli = spawnSync(deno, ['run', '-A', join(ROOT, 'bin', 'runwarden.js'), 'runs', '--root', root, '--json'], { encoding: 'utf8', env, timeout: 120_000 });
    expect({ status: cli.status, signal: cli.signal, stdout: cli.stdout }).toEqual({ status: 1, signal: null, stdout: '' });
    const lines = cli.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^runwarden: Deno [0-9.]+ cannot run runwarden: Deno's node:fs does not accept file descriptors opened outside it/);
    const lib = spawnSync(
      deno,
      ['eval', `import('${join(ROOT, 'dist', 'index.js')}').then((m) => { try { m.probeLock('${join(root, 'abandoned', 'resume.lock')}'); console.log('answered'); } catch (e) { console.log(e.name + ' ' + e.code + ' ' + e.message.split('\\n').length); } });`],
      { encoding: 'utf8', env, timeout: 120_000 },
    );
    expect(lib.stdout.trim(), lib.stderr).toBe('AddonLoadError ERR_RUNWARDEN_NATIVE 1');
    expect(fingerprint(root)).toEqual(before);
  });
});
