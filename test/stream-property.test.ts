/**
 * Property: the backward tail reader gives the forward fold's answer.
 *
 * Over thousands of generated streams (seeded, so a failure reproduces):
 * legs opened and closed, planning starts, duplicate and lone finishes,
 * node and gate events, unknown events, garbage and wrong-shape lines,
 * CRLF endings, unterminated and partial final lines, older and newer
 * schemas, and over-long lines; each read forward and backward at several
 * chunk sizes. The claims checked for every stream:
 * 1. both readable ⇒ identical last-leg facts, and the tail's skipped count
 *    equals the forward fold's skipped lines inside the region it consulted;
 * 2. the tail refuses ⇒ the forward fold refuses too, no later in the file;
 * 3. only the forward fold refuses ⇒ the line it refused lies before
 *    everything the tail consulted (the tail never needed it);
 * 4. the tail's answer does not depend on its chunk size.
 * Long streams (legs far longer than the tail's dense region, so the walk
 * finds leg events by byte search) add: leg-event words inside quoted values
 * of other events and inside junk, leg events spelled with `\u` escapes,
 * `\u` escapes in other events, and paused gates early in a long leg.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readLastLeg, type TailFacts } from '../src/read/tail.js';
import { readStream } from '../src/read/stream.js';
import { StreamError } from '../src/contract/errors.js';
import type { StreamFacts } from '../src/contract/types.js';
import { cleanup, tempDir } from './helpers/reading-fixtures.js';
import { eventJson } from './helpers/events.js';
import { mulberry32 } from './helpers/random.js';
import { referenceLastLeg } from './helpers/tail-reference.js';

/** CONTRACT §2.2 rule 2, written here rather than taken from src/: the 1 MiB line cap. */
const MAX_LINE_BYTES = 1_048_576;

afterAll(cleanup);

/** Every generated stream is reproduced from its seed. */
const rng = mulberry32;

interface GenOptions {
  /** Probability weight of a newer-schema line. */
  newer: number;
  /** Include one over-long line at a random position. */
  longLine: boolean;
  maxLines: number;
}

function generate(seed: number, opt: GenOptions): Buffer {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const nodes = ['a', 'b', 'c', 'g1', 'g2'];
  const base = (event: string, extra: Record<string, unknown> = {}, schema: number = r() < 0.1 ? 2 : 3) => eventJson({ schema, event, ...extra }, { ts: '2026-08-06T10:00:00Z' });
  const line = (): string => {
    const x = r();
    if (x < 0.2) {
      const k = r();
      const extra: Record<string, unknown> = k < 0.3 ? { phase: 'planning' } : k < 0.4 ? { command: ['make', pick(['test', 'it'])] } : {};
      return base('run_started', extra);
    }
    if (x < 0.35) {
      const k = r();
      return base('run_finished', k < 0.8 ? { outcome: pick(['passed', 'failed', 'paused', 'weird']) } : {});
    }
    if (x < 0.7) return base(pick(['node_started', 'node_retried', 'node_passed', 'node_failed', 'gate_paused', 'gate_approved', 'gate_rejected']), { node_id: pick(nodes) });
    if (x < 0.75) return base('future_event', { node_id: pick(nodes) });
    if (x < 0.75 + opt.newer) return base(pick(['run_started', 'run_finished', 'node_started']), { node_id: 'a', outcome: 'passed' }, 4);
    // Malformed lines of many kinds.
    return pick([
      '',
      'garbage',
      '[1,2]',
      'null',
      '{"schema":"3","event":"run_started"}',
      '{"schema":3.5,"event":"run_finished","outcome":"passed"}',
      '{"schema":3,"event":"run_finished","outcome":1}',
      '{"schema":3,"event":"node_passed"}',
      '{"schema":3,"event":"run_started"',
      '\u0000\u0001\u00ff binary',
      '  {"schema":3,"event":"run_finished","outcome":"passed"}  ',
    ]);
  };
  const count = Math.floor(r() * opt.maxLines);
  const parts: string[] = [];
  const longAt = opt.longLine ? Math.floor(r() * (count + 1)) : -1;
  for (let i = 0; i < count; i++) {
    if (i === longAt) parts.push(eventJson({ event: 'run_started', pad: 'x'.repeat(MAX_LINE_BYTES) }));
    parts.push(line());
  }
  if (longAt === count) parts.push('x'.repeat(MAX_LINE_BYTES + 2));
  let out = '';
  for (const p of parts) out += p + (r() < 0.2 ? '\r\n' : '\n');
  const end = r();
  if (end < 0.15 && out.endsWith('\n')) out = out.slice(0, out.endsWith('\r\n') ? -2 : -1); // final line without '\n'
  else if (end < 0.25) out += line().slice(0, Math.floor(r() * 40)); // a partial final line
  return Buffer.from(out, 'utf8');
}

/**
 * A long stream: the short generator's lines, with blocks of filler events
 * between them (some of which name leg events in their values, or hold `\u`
 * escapes) and leg events written with escapes, so legs run to tens or
 * hundreds of KiB and the tail must search rather than parse.
 */
function generateLong(seed: number): Buffer {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const short = generate(seed, { newer: seed % 7 === 0 ? 0.02 : 0, longLine: false, maxLines: 30 }).toString('utf8').split('\n');
  const filler = (): string => {
    const k = r();
    const detail = k < 0.1 ? `saw "run_started" and run_finished, gate_paused in the log` : k < 0.2 ? 'caf\u00e9 \u2603' : 'x'.repeat(100 + Math.floor(r() * 400));
    const ev = eventJson({ event: pick(['node_started', 'node_passed', 'node_failed']), node_id: pick(['a', 'b', 'n']), detail }, { ts: 'T' });
    // The encoder escapes the backslash; put a real \u escape back for the 'café' case.
    return k >= 0.1 && k < 0.2 ? ev.replace('\\\\u00e9', '\\u00e9').replace('\\\\u2603', '\\u2603') : ev;
  };
  const escaped = (): string =>
    pick([
      '{"schema":3,"event":"run\\u005fstarted","run_id":"r"}',
      '{"schema":3,"\\u0065vent":"run_finished","outcome":"failed"}',
      '{"schema":3,"event":"run_fin\\u0069shed","outcome":"paused"}',
      '{"schema":3,"event":"gate\\u005fpaused","node_id":"g1"}',
      '{"schema":3,"event":"run_started","phase":"pl\\u0061nning"}',
      'junk run_started \\u0041 not json',
      '{"schema":3,"event":"node_passed","node_id":"a","detail":"run_finished"}',
    ]);
  const parts: string[] = [];
  for (const l of short) {
    parts.push(l);
    const x = r();
    if (x < 0.3) for (let i = Math.floor(r() * 300); i > 0; i--) parts.push(filler());
    else if (x < 0.4) parts.push(escaped());
  }
  return Buffer.from(parts.join(r() < 0.2 ? '\r\n' : '\n'), 'utf8');
}

type Outcome<T> = { ok: true; value: T } | { ok: false; err: StreamError };
function attempt<T>(f: () => T): Outcome<T> {
  try {
    return { ok: true, value: f() };
  } catch (e) {
    if (e instanceof StreamError) return { ok: false, err: e };
    throw e;
  }
}

const dir = tempDir('rw-prop-');
let counter = 0;

/** Streams where CONTRACT §2.5 rule 7 applied (a closed leg begun before the last CLOSED_LEG_BYTES), and among them those whose answer differs from the forward fold's. */
const rule7 = { bounded: 0, differs: 0 };

function check(content: Buffer, label: string): 'equal' | 'both-refuse' | 'prefix-refused' {
  const p = join(dir, `p${++counter % 64}.jsonl`);
  writeFileSync(p, content);
  const skips: number[] = [];
  const fwd: Outcome<StreamFacts> = attempt(() => readStream(p, { onSkip: (o) => skips.push(o) }));
  const tails: Outcome<TailFacts>[] = [1, 3, 64, 16 * 1024].map((chunkBytes) => attempt(() => readLastLeg(p, { chunkBytes })));
  const tail = tails[0];
  // 4. chunk size does not matter
  for (const t of tails) {
    expect(t.ok, label).toBe(tail.ok);
    if (t.ok && tail.ok) expect(t.value, label).toEqual(tail.value);
    // The same error, byte offset and all: the whole-window pass (16 KiB) and the byte-search walk (1, 3, 64) agree.
    if (!t.ok && !tail.ok) expect(t.err.message, label).toBe(tail.err.message);
  }
  if (tail.ok && fwd.ok) {
    // 1. same answer: the forward fold's, or what rule 7 says for a closed leg begun before its bound
    const { legs: _legs, ...leg } = fwd.value.leg;
    const ref = referenceLastLeg(p);
    if (!ref.bounded) expect(ref.leg, label).toEqual(leg);
    expect(tail.value.leg, label).toEqual(ref.leg);
    // Never a different open or closed: the lock is probed exactly when the forward fold would probe it.
    expect(tail.value.leg.open, label).toBe(leg.open);
    if (ref.bounded) {
      rule7.bounded++;
      if (ref.leg.lastOutcome !== leg.lastOutcome || ref.leg.started !== leg.started) rule7.differs++;
    }
    expect(tail.value.skippedLines, label).toBe(skips.filter((o) => o >= tail.value.from).length);
    return 'equal';
  }
  if (!tail.ok) {
    // 2. the tail refuses only what the forward fold refuses too
    expect(fwd.ok, label).toBe(false);
    if (!fwd.ok) expect(fwd.err.offset!, label).toBeLessThanOrEqual(tail.err.offset!);
    return 'both-refuse';
  }
  // 3. the forward fold refused a line the tail never consulted
  expect(fwd.ok).toBe(false);
  if (!fwd.ok) expect(fwd.err.offset!, label).toBeLessThan(tail.value.from);
  return 'prefix-refused';
}

describe('tail reader ≡ forward fold', () => {
  it('on 4000 generated streams of every shape', () => {
    const seen = { equal: 0, 'both-refuse': 0, 'prefix-refused': 0 };
    for (let seed = 1; seed <= 4000; seed++) {
      const content = generate(seed, { newer: seed % 4 === 0 ? 0.01 : 0, longLine: false, maxLines: seed % 10 === 0 ? 400 : 40 });
      seen[check(content, `seed ${seed}`)]++;
    }
    // The generator really exercises every branch of the claim.
    expect(seen.equal).toBeGreaterThan(3000);
    expect(seen['both-refuse']).toBeGreaterThan(10);
    expect(seen['prefix-refused']).toBeGreaterThan(10);
  });

  it('on streams holding one over-long line somewhere', () => {
    const seen = { equal: 0, 'both-refuse': 0, 'prefix-refused': 0 };
    for (let seed = 9001; seed <= 9030; seed++) seen[check(generate(seed, { newer: 0, longLine: true, maxLines: 30 }), `long seed ${seed}`)]++;
    expect(seen.equal).toBe(0); // the forward fold refuses every one of them
    expect(seen['both-refuse']).toBeGreaterThan(0);
    expect(seen['prefix-refused']).toBeGreaterThan(0);
  });

  it('on long streams, where the tail searches the last leg instead of parsing it', () => {
    const seen = { equal: 0, 'both-refuse': 0, 'prefix-refused': 0 };
    let searched = 0;
    for (let seed = 30_001; seed <= 30_400; seed++) {
      const content = generateLong(seed);
      seen[check(content, `long-leg seed ${seed}`)]++;
      // The leg's start lies before the dense region: found by the byte search, not by parsing every line.
      const p = join(dir, 'searched.jsonl');
      writeFileSync(p, content);
      const t = attempt(() => readLastLeg(p));
      if (t.ok && t.value.leg.legOffset >= 0 && t.value.leg.legOffset < t.value.from) searched++;
    }
    expect(seen.equal).toBeGreaterThan(300);
    expect(searched).toBeGreaterThan(100);
    // Rule 7 was exercised, including streams whose answer it changes (a duplicate or lone finish).
    expect(rule7.bounded).toBeGreaterThan(20);
    expect(rule7.differs).toBeGreaterThan(0);
  });

  it('on well-formed streams only, the answers are always equal', () => {
    for (let seed = 20_001; seed <= 21_000; seed++) {
      const content = generate(seed, { newer: 0, longLine: false, maxLines: 60 });
      expect(check(content, `clean seed ${seed}`)).toBe('equal');
    }
  });
});
