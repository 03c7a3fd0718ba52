/**
 * `exec`'s paused check folds the whole stream, as the reference
 * (oh-my-graph) does, whatever the tail reader's bound. A run paused at a
 * gate whose stream then holds, more than 32 KiB later, a stray lone
 * `run_finished` reads PAUSED to the reference (a finish with no open leg
 * changes nothing, CONTRACT §2.3) but PASS to the tail reader (§2.5 rule 7,
 * §6.2 item 7: the declared difference). A leg started there would end a
 * pause the reference still holds, so exec refuses it (exit 2, nothing
 * written, nothing run); --force still starts it (the control).
 */
import { lstatSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { readStream, runStatus } from '../src/index.js';
import { run } from './helpers/exec-procs.js';
import { cleanupTemp, killAll, tempDir } from './helpers/lock-procs.js';
import { touching } from './helpers/portable.js';
import { ev, runDir, writeEvents } from './helpers/serve-fixtures.js';
import { encodeEvents } from './helpers/events.js';

afterEach(() => killAll());
afterAll(async () => {
  await killAll();
  cleanupTemp();
});

/**
 * A run paused at gate `review`, then `fillBytes` of events the fold ignores (an unknown event, with no
 * leg or gate word in it), then a lone `run_finished` with outcome passed.
 */
function pausedThenStray(root: string, id: string, fillBytes: number): string {
  const dir = runDir(root, id);
  const filler = ev(id, 'heartbeat', { note: 'x'.repeat(400) });
  const fillerBytes = Buffer.byteLength(encodeEvents([filler]));
  const lines: Record<string, unknown>[] = [
    ev(id, 'run_started'),
    ev(id, 'node_started', { node_id: 'build' }),
    ev(id, 'node_passed', { node_id: 'build', verdict: 'PASS' }),
    ev(id, 'gate_paused', { node_id: 'review' }),
    ev(id, 'run_finished', { outcome: 'paused' }),
  ];
  for (let n = 0; n < fillBytes; n += fillerBytes) lines.push(filler);
  lines.push(ev(id, 'run_finished', { outcome: 'passed' }));
  writeEvents(dir, lines);
  return dir;
}

describe('exec on a run the whole-file fold holds paused, past the tail reader\'s bound', () => {
  for (const [what, fill] of [['40 KiB', 40 * 1024], ['2 MiB', 2 * 1024 * 1024]] as const) {
    it(`a lone finish ${what} after the pause: refused without --force, exit 2, nothing written`, async () => {
      const root = tempDir();
      const id = `20261202-10000${fill > 65536 ? 1 : 0}.000000001-1`;
      const dir = pausedThenStray(root, id, fill);
      // The scenario: the reference's fold says paused at review; the tail reader (status) says PASS.
      expect(readStream(join(dir, 'events.jsonl')).leg).toMatchObject({ open: false, lastOutcome: 'paused', gates: ['review'] });
      expect(runStatus(dir).status).toBe('PASS');
      const before = readFileSync(join(dir, 'events.jsonl'));
      const marker = join(tempDir(), 'ran');
      const r = await run(['exec', id, '--root', root, '--', ...touching(marker)]);
      expect(r.stderr).toContain(`run ${id} is PAUSED at gate review, waiting for a decision`);
      expect(r.code).toBe(2);
      expect(readFileSync(join(dir, 'events.jsonl'))).toEqual(before);
      expect(() => lstatSync(marker)).toThrow(/ENOENT/);
    });
  }

  it('with --force the leg runs, after the paused warning (the control)', async () => {
    const root = tempDir();
    const id = '20261202-100002.000000001-1';
    const dir = pausedThenStray(root, id, 40 * 1024);
    const marker = join(tempDir(), 'ran');
    const r = await run(['exec', id, '--root', root, '--force', '--', ...touching(marker)]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`run ${id} is PAUSED at gate review; starting a leg anyway (--force)`);
    expect(lstatSync(marker).isFile()).toBe(true);
    expect(readStream(join(dir, 'events.jsonl')).leg.lastOutcome).toBe('passed');
  });
});
