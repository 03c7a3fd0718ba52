/**
 * An auto run writes a planning `run_started`, then an untagged one, in the
 * same leg (CONTRACT §2.3): every reader counts that as one leg, not two, and
 * never shows the planning half as an abandoned leg of its own.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readStream, runDetail } from '../src/index.js';
import { cleanupTemp, tempDir } from './helpers/lock-procs.js';
import { eventLine } from './helpers/events.js';

afterEach(() => cleanupTemp());

const line = (o: Record<string, unknown>) => eventLine(o, { runId: 'auto', ts: '2026-11-30T10:00:00Z' });

function run(lines: string[]): string {
  const dir = join(tempDir(), 'auto');
  mkdirSync(dir);
  writeFileSync(join(dir, 'events.jsonl'), lines.join(''));
  return dir;
}

describe('auto run: planning start then untagged start', () => {
  it('is one leg in the fold and in runDetail', () => {
    const dir = run([
      line({ event: 'run_started', phase: 'planning' }),
      line({ event: 'run_started' }),
      line({ event: 'node_started', node_id: 'a' }),
      line({ event: 'node_passed', node_id: 'a', verdict: 'PASS' }),
      line({ event: 'run_finished', outcome: 'passed' }),
    ]);
    const facts = readStream(join(dir, 'events.jsonl'));
    expect(facts.leg).toMatchObject({ open: false, legs: 1, phase: '', lastOutcome: 'passed' });
    const d = runDetail(dir);
    expect(d.legs).toHaveLength(1);
    expect(d.legs[0]).toMatchObject({ phase: '', state: 'closed', outcome: 'passed' });
  });

  it('a second planning start after a finished leg is a new leg', () => {
    const dir = run([
      line({ event: 'run_started', phase: 'planning' }),
      line({ event: 'run_started' }),
      line({ event: 'run_finished', outcome: 'failed' }),
      line({ event: 'run_started', phase: 'planning' }),
      line({ event: 'run_started' }),
      line({ event: 'run_finished', outcome: 'passed' }),
    ]);
    expect(readStream(join(dir, 'events.jsonl')).leg.legs).toBe(2);
    expect(runDetail(dir).legs.map((l) => l.outcome)).toEqual(['failed', 'passed']);
  });

  it('an untagged start after an untagged open leg is still a new leg (the old one never ended)', () => {
    const dir = run([line({ event: 'run_started' }), line({ event: 'run_started' }), line({ event: 'run_finished', outcome: 'passed' })]);
    expect(readStream(join(dir, 'events.jsonl')).leg.legs).toBe(2);
    expect(runDetail(dir).legs.map((l) => l.state)).toEqual(['abandoned', 'closed']);
  });
});
