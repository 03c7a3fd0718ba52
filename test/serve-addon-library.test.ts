/**
 * For library users: constructing the dashboard's model or the metrics with
 * an addon that cannot load throws the loader's AddonLoadError
 * (ERR_RUNWARDEN_NATIVE) at once, as the CLI answers. Reporting the root as
 * unreadable instead (a scrape saying `runwarden_root_readable 0`) would be
 * a false fact about a root nobody has looked at. Each case runs in a child
 * process, since a process loads its addon once.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanupTemp, ROOT, tempDir } from './helpers/lock-procs.js';
import { eventLine } from './helpers/events.js';

let root: string;
let textFile: string;

beforeAll(() => {
  const dir = tempDir();
  root = join(dir, 'runs');
  mkdirSync(join(root, 'r1'), { recursive: true });
  writeFileSync(join(root, 'r1', 'events.jsonl'), eventLine({ event: 'run_started' }, { runId: 'r1', ts: '2026-12-01T00:00:00Z' }));
  textFile = join(dir, 'text.node');
  writeFileSync(textFile, 'this is not a shared object\n');
});
afterAll(() => cleanupTemp());

/** Constructs `what` in a child with RUNWARDEN_ADDON set to `addon` (or unset), and says what it threw. */
function construct(what: 'model' | 'metrics', addon: string | undefined): { name: string; code: string | undefined; message: string } {
  const script = `
    const { DashboardModel } = await import(${JSON.stringify(join(ROOT, 'dist/serve/model.js'))});
    const { RunwardenMetrics } = await import(${JSON.stringify(join(ROOT, 'dist/serve/metrics.js'))});
    let out;
    try {
      if (${JSON.stringify(what)} === 'model') new DashboardModel(${JSON.stringify(root)}).close();
      else new RunwardenMetrics(async () => ({ root: ${JSON.stringify(root)}, missing: false, runs: [], skipped: [] }));
      out = { name: 'none', code: undefined, message: '' };
    } catch (e) {
      out = { name: e.name, code: e.code, message: e.message };
    }
    process.stdout.write(JSON.stringify(out));
    process.exit(0);
  `;
  const env = { ...process.env };
  delete env['RUNWARDEN_ADDON'];
  if (addon !== undefined) env['RUNWARDEN_ADDON'] = addon;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000, env });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

describe('the library classes check the addon first', () => {
  it.each(['model', 'metrics'] as const)('%s: a text file as the addon throws AddonLoadError, not a root answer', (what) => {
    const got = construct(what, textFile);
    expect(got.name).toBe('AddonLoadError');
    expect(got.code).toBe('ERR_RUNWARDEN_NATIVE');
    expect(got.message).toContain(textFile);
    // Positive control: with the built addon the same construction throws nothing.
    expect(construct(what, undefined).name).toBe('none');
  });
});
