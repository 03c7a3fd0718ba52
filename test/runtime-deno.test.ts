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

/** A Deno version as Deno.version.deno gives it (scripts/runtime.sh pins one; any release's form is accepted). */
const DENO_VERSION = '\\d+\\.\\d+\\.\\d+';

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
    // What it names: the runtime and its version, what it lacks, why runwarden needs it, and what runs it instead.
    const says = (prefix: string): RegExp =>
      new RegExp(
        `^${prefix}Deno ${DENO_VERSION} cannot run runwarden: Deno's node:fs does not accept file descriptors opened outside it, ` +
          'and runwarden reads the run files through descriptors its native addon opens; run it with Node\\.js or Bun\\.$',
      );
    expect(lines[0]).toMatch(says('runwarden: '));
    const lib = spawnSync(
      deno,
      ['eval', `import('${join(ROOT, 'dist', 'index.js')}').then((m) => { try { m.probeLock('${join(root, 'abandoned', 'resume.lock')}'); console.log('answered'); } catch (e) { console.log(JSON.stringify({ name: e.name, code: e.code, message: e.message })); } });`],
      { encoding: 'utf8', env, timeout: 120_000 },
    );
    const refused = JSON.parse(lib.stdout.trim() || 'null') as { name: string; code: string; message: string } | null;
    expect(refused, lib.stderr).toMatchObject({ name: 'AddonLoadError', code: 'ERR_RUNWARDEN_NATIVE' });
    expect(refused?.message).toMatch(says(''));
    expect(fingerprint(root)).toEqual(before);
  });
});
