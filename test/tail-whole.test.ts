/**
 * The tail reader's one-pass path for a stream held whole in its first
 * window (up to DENSE_BYTES, the usual run): against real files, every
 * answer and every error equals the byte-search walk's (forced with a
 * small first read) and the forward fold's, at the window's edge too.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { StreamError } from '../src/contract/errors.js';
import { readStream } from '../src/read/stream.js';
import { DENSE_BYTES, readLastLeg, type TailFacts } from '../src/read/tail.js';
import { cleanup, tempDir } from './helpers/reading-fixtures.js';
import { eventLine } from './helpers/events.js';

afterAll(cleanup);

const dir = tempDir('rw-tail-whole-');
let n = 0;
const line = (event: string, f: Record<string, unknown> = {}, schema = 3) => eventLine({ schema, event, ...f });

type Outcome = { ok: true; tail: TailFacts } | { ok: false; message: string; code: string };
function attempt(path: string, chunkBytes?: number): Outcome {
  try {
    return { ok: true, tail: readLastLeg(path, chunkBytes === undefined ? {} : { chunkBytes }) };
  } catch (e) {
    if (e instanceof StreamError) return { ok: false, message: e.message, code: e.code };
    throw e;
  }
}

/** Writes `content` and reads it whole (default first window) and by the walk (1-byte and 64-byte first reads); all must agree. */
function both(content: string): Outcome {
  const p = join(dir, `s${++n}.jsonl`);
  writeFileSync(p, content);
  const whole = attempt(p);
  for (const chunk of [1, 64]) expect(attempt(p, chunk)).toEqual(whole);
  return whole;
}

describe('a stream held whole in the first window', () => {
  it('closed, open after a closed leg, paused: the same facts as the walk and the forward fold', () => {
    const legs = [
      line('run_started') + line('node_started', { node_id: 'a' }) + line('node_passed', { node_id: 'a' }) + line('run_finished', { outcome: 'passed' }),
      line('run_started') + line('run_finished', { outcome: 'failed' }) + line('run_started', { phase: 'planning' }) + line('node_started', { node_id: 'b' }),
      line('run_started') + line('gate_paused', { node_id: 'g' }) + line('run_finished', { outcome: 'paused' }),
      line('run_started') + 'not json\n\n' + line('node_started', { node_id: 'a' }) + '{"schema":3}\n' + line('run_finished', { outcome: 'passed' }),
      'junk before\n' + line('node_passed', { node_id: 'a' }) + line('run_started') + 'a final line without newline',
      '\n\n',
    ];
    for (const s of legs) {
      const got = both(s);
      if (!got.ok) throw new Error(got.message);
      const p = join(dir, `f${++n}.jsonl`);
      writeFileSync(p, s);
      const { legs: _l, ...fwd } = readStream(p).leg;
      expect(got.tail.leg).toEqual(fwd);
    }
    // Malformed lines are counted from the restart point on, as the walk counts them.
    const bad = both(line('run_started') + 'x\n' + line('run_finished', { outcome: 'passed' }) + line('run_started') + 'y\nz\n' + line('run_finished', { outcome: 'passed' }));
    expect(bad.ok && bad.tail.skippedLines).toBe(2);
    expect(bad.ok && bad.tail.from).toBeGreaterThan(0);
  });

  it('the same error as the walk: a candidate line of a newer schema wins over an earlier plain one, the oldest plain one otherwise', () => {
    // A node_passed line holds no needle (n_st, n_fi, te_pa, \u005, \u006, \u007): the walk never parses it, the dense fold does.
    const plain4 = line('node_passed', { node_id: 'a' }, 4);
    const start4 = line('run_started', {}, 5);
    const a = both(line('run_started') + plain4 + start4 + line('run_finished', { outcome: 'passed' }));
    expect(a.ok).toBe(false);
    if (!a.ok) expect(a.message).toMatch(/schema 5 at byte/);
    const b = both(line('run_started') + plain4 + line('node_passed', { node_id: 'b' }, 6) + line('run_finished', { outcome: 'passed' }));
    expect(b.ok).toBe(false);
    if (!b.ok) expect(b.message).toMatch(/schema 4 at byte/);
    // Before the restart point nothing is parsed: a newer line there is never seen.
    const c = both(plain4 + line('run_started') + line('run_finished', { outcome: 'passed' }));
    expect(c.ok).toBe(true);
  });

  it('at the edge of the window: a leg start just inside it and just beyond it is found either way', () => {
    const head = line('run_started') + line('run_finished', { outcome: 'failed' }) + line('run_started');
    const filler = (bytes: number) => {
      let s = '';
      while (s.length < bytes) s += line('node_started', { node_id: 'n', detail: 'd'.repeat(200) });
      return s;
    };
    for (const size of [DENSE_BYTES - 600, DENSE_BYTES + 600, 3 * DENSE_BYTES]) {
      const s = head + filler(size - head.length);
      const got = both(s);
      expect(got.ok).toBe(true);
      if (got.ok) {
        expect(got.tail.leg.open).toBe(true);
        expect(got.tail.leg.lastOutcome).toBe('failed');
        expect(got.tail.leg.legOffset).toBe(head.length - line('run_started').length);
      }
    }
  });
});
