/**
 * The tail reader in steps (read/tail.ts TailStepper), as the live engine
 * uses it for a long stream's first read: over generated streams (seeded),
 * 1. its answer equals readLastLeg's for the same file, whatever the budget
 *    per step (so pausing between reads changes nothing);
 * 2. no step reads more than its budget plus one read (1 MiB and a few
 *    bytes), and a small budget really does take many steps (the control);
 * 3. the fold it ends with, given every line appended afterwards, reaches
 *    the same last-leg facts (paused gates included) as the forward fold of
 *    the whole stream: what the engine relies on when it folds appends into
 *    it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { StreamFold } from '../src/contract/fold.js';
import { LineSplitter, foldLines } from '../src/read/lines.js';
import { openStream, readStream } from '../src/read/stream.js';
import { readLastLeg, TailStepper, type SteppedTail } from '../src/read/tail.js';
import { cleanup, tempDir } from './helpers/reading-fixtures.js';
import { eventJson } from './helpers/events.js';
import { mulberry32 } from './helpers/random.js';

afterAll(cleanup);

/** Lines of a stream: leg events (duplicate and lone finishes, planning starts), node and gate events, junk, and long runs of node events. */
function generate(seed: number): string[] {
  const r = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const ev = (o: Record<string, unknown>): string => eventJson(o, { ts: 'T' });
  const lines: string[] = [];
  const n = 5 + Math.floor(r() * 40);
  for (let i = 0; i < n; i++) {
    const x = r();
    if (x < 0.2) lines.push(ev({ event: 'run_started', ...(r() < 0.3 ? { phase: 'planning' } : {}), ...(r() < 0.3 ? { command: ['make', 'it'] } : {}) }));
    else if (x < 0.35) lines.push(ev({ event: 'run_finished', outcome: pick(['passed', 'failed', 'paused']) }));
    else if (x < 0.6) lines.push(ev({ event: pick(['node_started', 'node_passed', 'node_failed', 'gate_paused', 'gate_approved', 'gate_rejected']), node_id: pick(['a', 'b', 'g1', 'g2']) }));
    else if (x < 0.7) lines.push(pick(['', 'garbage', '[1]', '{"schema":"3","event":"run_started"}', 'run_finished \\u0041']));
    else {
      // A long run of node events (some naming leg words in a value): the legs outgrow the dense region.
      for (let k = 100 + Math.floor(r() * 600); k > 0; k--) {
        lines.push(ev({ event: pick(['node_started', 'node_passed']), node_id: pick(['a', 'n', 'm']), detail: r() < 0.05 ? 'saw run_finished' : 'x'.repeat(Math.floor(r() * 200)) }));
      }
    }
  }
  return lines;
}

function stepAll(path: string, budget: number): { done: SteppedTail; steps: number; maxStep: number } {
  const file = openStream(path);
  if (file === undefined) throw new Error('no stream');
  const t = new TailStepper(file, path);
  try {
    let steps = 0;
    let maxStep = 0;
    for (;;) {
      const before = t.bytesRead;
      const done = t.step(budget);
      steps++;
      maxStep = Math.max(maxStep, t.bytesRead - before);
      if (done !== undefined) return { done, steps, maxStep };
    }
  } finally {
    t.close();
  }
}

/** The last leg of the lines of `path` from byte `from` on, folded inside a leg opened before them (CONTRACT §2.5 rule 7). */
function foldedFrom(path: string, from: number) {
  const fold = new StreamFold();
  fold.openedBefore();
  const buf = readFileSync(path);
  const lines = new LineSplitter(path, foldLines(fold, path), from);
  lines.push(buf.subarray(from), from);
  lines.end();
  return fold.lastLeg();
}

describe('TailStepper', () => {
  it('gives readLastLeg’s answer at any budget, a bounded read per step, and a fold that appends continue exactly', () => {
    const dir = tempDir('rw-stepped-');
    let manySteps = 0;
    let bounded = 0;
    for (let seed = 1; seed <= 60; seed++) {
      const lines = generate(seed);
      const r = mulberry32(seed * 7919);
      const cut = Math.floor(r() * (lines.length + 1));
      const head = lines.slice(0, cut).map((l) => l + '\n').join('');
      const tail = lines.slice(cut).map((l) => l + '\n').join('');
      const prefix = join(dir, `p${seed}.jsonl`);
      const whole = join(dir, `w${seed}.jsonl`);
      writeFileSync(prefix, head);
      writeFileSync(whole, head + tail);
      const expected = readLastLeg(prefix);
      for (const budget of [1, 4096, 1024 * 1024]) {
        const { done, steps, maxStep } = stepAll(prefix, budget);
        expect(done.facts, `seed ${seed} budget ${budget}`).toEqual(expected);
        expect(maxStep, `seed ${seed} budget ${budget}`).toBeLessThanOrEqual(budget + 1024 * 1024 + 64);
        if (budget === 1 && steps >= 4) manySteps++;
      }
      // The stepper's fold, with the appended lines folded into it, is the whole stream's last leg.
      const { done } = stepAll(prefix, 4096);
      const splitter = new LineSplitter(whole, foldLines(done.fold, whole), Buffer.byteLength(head));
      splitter.push(Buffer.from(tail), Buffer.byteLength(head));
      splitter.end();
      // (After a closed leg taken as begun before the tail's bound, CONTRACT §2.5 rule 7, that is the fold of the lines from where the tail began.)
      const { legs: _legs, ...forward } = readStream(whole).leg;
      // Rule 7 applied to the prefix's read (whatever the appended lines then do): what it folded, and every line after.
      const rule7 = done.facts.leg.started && done.facts.leg.legOffset < 0;
      const continued = rule7 ? foldedFrom(whole, done.facts.from) : forward;
      const { command, ...rest } = done.fold.lastLeg();
      expect({ ...rest, ...(command === undefined ? {} : { command }) }, `seed ${seed} cut ${cut}`).toEqual(continued);
      if (rule7) bounded++;
    }
    // The control: long streams really were read in many steps.
    expect(manySteps).toBeGreaterThan(10);
    expect(bounded).toBeGreaterThan(0);
  }, 300_000);
});
