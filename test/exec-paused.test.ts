/**
 * `exec` on a run PAUSED at a gate: the run waits for
 * `oh-my-graph resume … --approve/--reject`; a leg would close with its own
 * run_finished and take that decision away. Without --force exec refuses:
 * exit 2, one line naming the gate and both resume commands, and nothing
 * under the run changes (helpers/tree.ts: names, contents, modes, mtimes,
 * ctimes, inodes; a refusal must not even touch an inode). With
 * --force the leg runs, after a warning.
 *
 * The paused run is written as oh-my-graph writes one (CONTRACT §2, §3.1):
 * events.jsonl with the gate's `gate_paused` and a closing
 * `run_finished {outcome: "paused"}`, and a schema-3 state.json.
 */
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runStatus } from '../src/index.js';
import { events, run } from './helpers/exec-procs.js';
import { cleanupTemp, killAll, tempDir } from './helpers/lock-procs.js';
import { exitWith, touching } from './helpers/portable.js';
import { ev, runDir, writeEvents, writeState } from './helpers/serve-fixtures.js';
import { fingerprint } from './helpers/tree.js';

afterEach(() => killAll());
afterAll(async () => {
  await killAll();
  cleanupTemp();
});

const GRAPH = [{ id: 'plan' }, { id: 'approve-deploy', depends_on: ['plan'] }, { id: 'deploy', depends_on: ['approve-deploy'] }];

/** A run paused at `gates` (each a gate_paused in the last leg), as oh-my-graph leaves one. */
function pausedRun(root: string, id: string, gates: string[]): string {
  const dir = runDir(root, id);
  writeEvents(dir, [
    ev(id, 'run_started'),
    ev(id, 'node_started', { node_id: 'plan' }),
    ev(id, 'node_passed', { node_id: 'plan', verdict: 'PASS', cost_usd: 0.1 }),
    ...gates.map((g) => ev(id, 'gate_paused', { node_id: g })),
    ev(id, 'run_finished', { outcome: 'paused' }),
  ]);
  writeState(dir, id, 'deploy-flow', GRAPH, { plan: { verdict: 'PASS', cost_usd: 0.1 } });
  return dir;
}

describe('exec on a run paused at a gate', () => {
  it('refuses without --force: exit 2, one line naming the gate and both resume commands, nothing changed, nothing run', async () => {
    const root = tempDir();
    const id = '20261201-100000.000000001-1';
    const dir = pausedRun(root, id, ['approve-deploy']);
    expect(runStatus(dir).status).toBe('PAUSED'); // the scenario: the run really reads PAUSED
    const marker = join(tempDir(), 'ran');
    const before = fingerprint(dir);
    const r = await run(['exec', id, '--root', root, '--', ...touching(marker)]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.split('\n').filter((l) => l !== '')).toEqual([
      `runwarden: run ${id} is PAUSED at gate approve-deploy, waiting for a decision: ` +
        `approve with \`oh-my-graph resume ${id} --approve approve-deploy\` or reject with \`oh-my-graph resume ${id} --reject approve-deploy\`; ` +
        'a leg started now would end the pause without one (nothing was run; start anyway with --force).',
    ]);
    expect(fingerprint(dir)).toEqual(before);
    expect(() => lstatSync(marker)).toThrow(/ENOENT/);
    expect(runStatus(dir).status).toBe('PAUSED');
  });

  it('two paused gates: both named, the commands take <gate-id>', async () => {
    const root = tempDir();
    const id = '20261201-100100.000000001-2';
    const dir = pausedRun(root, id, ['gate-a', 'gate-b']);
    const before = fingerprint(dir);
    const r = await run(['exec', id, '--root', root, '--', ...exitWith(0)]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('is PAUSED at gates gate-a, gate-b, waiting for a decision');
    expect(r.stderr).toContain(`\`oh-my-graph resume ${id} --approve <gate-id>\``);
    expect(r.stderr).toContain(`\`oh-my-graph resume ${id} --reject <gate-id>\``);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(fingerprint(dir)).toEqual(before);
  });

  it('with --force it warns once and runs the leg (the control: the same run, the same command)', async () => {
    const root = tempDir();
    const id = '20261201-100200.000000001-3';
    const dir = pausedRun(root, id, ['approve-deploy']);
    const marker = join(tempDir(), 'ran');
    const r = await run(['exec', id, '--root', root, '--force', '--', ...touching(marker)]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe(`runwarden: warning: run ${id} is PAUSED at gate approve-deploy; starting a leg anyway (--force) ends the pause without a decision.\n`);
    expect(lstatSync(marker).isFile()).toBe(true);
    const written = events(dir);
    expect(written.at(-1)).toMatchObject({ event: 'run_finished' });
    expect(written.filter((e) => e['event'] === 'run_started')).toHaveLength(2);
    expect(runStatus(dir).status).not.toBe('PAUSED');
  });

  it('a run that was paused and then resumed (a later leg recorded the decision and closed it) is not refused', async () => {
    const root = tempDir();
    const id = '20261201-100300.000000001-4';
    const dir = pausedRun(root, id, ['approve-deploy']);
    const { appendEvents } = await import('./helpers/serve-fixtures.js');
    appendEvents(dir, [ev(id, 'run_started'), ev(id, 'gate_approved', { node_id: 'approve-deploy' }), ev(id, 'run_finished', { outcome: 'failed' })]);
    expect(runStatus(dir).status).toBe('FAIL');
    const r = await run(['exec', id, '--root', root, '--', ...exitWith(0)]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });
});
