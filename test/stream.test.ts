/**
 * The stream reader under every reading rule of CONTRACT §2.2. Each case is read
 * by BOTH readers (forward reference fold and backward tail reader), and
 * their last-leg answers must agree.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseEventLine } from '../src/contract/events.js';
import { readLastLeg } from '../src/read/tail.js';
import { readStream } from '../src/read/stream.js';
import { StreamError } from '../src/contract/errors.js';
import { StreamFold } from '../src/contract/fold.js';
import { cleanup, ev, tempDir } from './helpers/reading-fixtures.js';
import { encodeEvents, eventJsonOfBytes } from './helpers/events.js';
import { needs } from './helpers/prereq.js';

/** CONTRACT §2.2 rule 2, written here rather than taken from src/: a line of content over 1 MiB (1,048,576 bytes) makes the stream unreadable. */
const MAX_LINE_BYTES = 1_048_576;

afterAll(cleanup);

const dir = tempDir('rw-stream-');
let n = 0;
function file(content: string | Buffer): string {
  const p = join(dir, `s${++n}.jsonl`);
  writeFileSync(p, content);
  return p;
}

/** Reads with both readers, checks they agree, returns the forward facts. */
function both(content: string | Buffer) {
  const p = file(content);
  const fwd = readStream(p);
  const small = Buffer.byteLength(content) < 100_000;
  for (const chunkBytes of small ? [1, 7, 64, 16 * 1024] : [64, 16 * 1024]) {
    const tail = readLastLeg(p, { chunkBytes });
    const { legs: _legs, ...leg } = fwd.leg;
    expect(tail.leg).toEqual(leg);
  }
  for (const chunkBytes of small ? [1, 5, 4096] : [4096]) expect(readStream(p, { chunkBytes })).toEqual(fwd);
  return fwd;
}

function code(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    if (e instanceof StreamError) return e.code;
    throw e;
  }
  return undefined;
}

describe('the last leg', () => {
  it('a missing stream means no legs', () => {
    const p = join(dir, 'absent.jsonl');
    expect(readStream(p).leg).toMatchObject({ open: false, started: false, phase: '', lastOutcome: '', legOffset: -1, legs: 0 });
    expect(readLastLeg(p).leg).toMatchObject({ open: false, started: false, legOffset: -1 });
  });

  it('an empty stream means no legs', () => {
    expect(both('').leg).toMatchObject({ open: false, started: false, legs: 0 });
  });

  it('a started leg is open; a finish closes it with its outcome', () => {
    expect(both(ev('run_started') + ev('node_started', { node_id: 'a' })).leg).toMatchObject({ open: true, started: true, phase: '', lastOutcome: '' });
    expect(both(ev('run_started') + ev('run_finished', { outcome: 'passed' })).leg).toMatchObject({ open: false, lastOutcome: 'passed' });
    expect(both(ev('run_started') + ev('run_finished', { outcome: 'paused' })).leg).toMatchObject({ open: false, lastOutcome: 'paused' });
  });

  it('a resumed run: the last leg is open, and lastOutcome is the earlier leg\'s', () => {
    const s = ev('run_started') + ev('run_finished', { outcome: 'failed' }) + ev('run_started') + ev('node_started', { node_id: 'a' });
    const f = both(s);
    expect(f.leg).toMatchObject({ open: true, lastOutcome: 'failed', legs: 2, legOffset: Buffer.byteLength(ev('run_started') + ev('run_finished', { outcome: 'failed' })) });
  });

  it('an auto run writes a planning start then an untagged start in the same leg', () => {
    expect(both(ev('run_started', { phase: 'planning' })).leg).toMatchObject({ open: true, phase: 'planning' });
    expect(both(ev('run_started', { phase: 'planning' }) + ev('run_started')).leg).toMatchObject({ open: true, phase: '' });
  });

  it('a lone finish before any start changes nothing', () => {
    expect(both(ev('run_finished', { outcome: 'passed' })).leg).toMatchObject({ open: false, started: false, lastOutcome: '' });
    expect(both(ev('run_finished', { outcome: 'passed' }) + ev('run_started')).leg).toMatchObject({ open: true, lastOutcome: '' });
  });

  it('a duplicate finish changes nothing: the first finish after the start is the outcome', () => {
    const s = ev('run_started') + ev('run_finished', { outcome: 'passed' }) + ev('run_finished', { outcome: 'failed' });
    expect(both(s).leg).toMatchObject({ open: false, lastOutcome: 'passed' });
  });

  it('an exec leg carries its command', () => {
    expect(both(ev('run_started', { command: ['make', 'test'] })).leg.command).toEqual(['make', 'test']);
    expect(both(ev('run_started', { command: 'make' })).leg.command).toBeUndefined();
  });
});

describe('reading rules', () => {
  it('CRLF line endings: one trailing \\r is dropped', () => {
    const s = (ev('run_started') + ev('run_finished', { outcome: 'passed' })).replace(/\n/g, '\r\n');
    const f = both(s);
    expect(f.leg).toMatchObject({ open: false, lastOutcome: 'passed' });
    expect(f.skippedLines).toBe(0);
  });

  it('a final line without \\n counts if it parses', () => {
    const s = ev('run_started') + ev('run_finished', { outcome: 'passed' }).trimEnd();
    expect(both(s).leg).toMatchObject({ open: false, lastOutcome: 'passed' });
  });

  it('a final partial line (a writer died mid-line) is skipped and counted', () => {
    const s = ev('run_started') + ev('run_finished', { outcome: 'passed' }).slice(0, 30);
    const f = both(s);
    expect(f.leg.open).toBe(true);
    expect(f.skippedLines).toBe(1);
  });

  it('lines of the wrong shape are skipped wherever they are, and counted', () => {
    const bad: (object | string)[] = [
      'not json',
      '[1,2,3]',
      'null',
      '"run_started"',
      { schema: '3', event: 'run_started' },
      { schema: 3.5, event: 'run_started' },
      { schema: 3, ts: 't' },
      { schema: 3, event: 'run_finished', outcome: 7 },
      { schema: 3, event: 'node_started' },
      { schema: 3, event: 'run_started', run_id: 12 },
      '',
      '{"schema":3,"event":"run_started"',
    ];
    const s = encodeEvents(bad) + ev('run_started') + encodeEvents(bad) + ev('node_started', { node_id: 'x' });
    const f = both(s);
    expect(f.skippedLines).toBe(bad.length * 2);
    expect(f.leg).toMatchObject({ open: true, legs: 1 });
  });

  it('binary garbage is skipped, not fatal', () => {
    const garbage = Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 37 + 11) % 256).filter((b) => b !== 0x0a));
    const s = Buffer.concat([Buffer.from(ev('run_started')), garbage, Buffer.from('\n'), Buffer.from(ev('run_finished', { outcome: 'failed' }))]);
    const f = both(s);
    expect(f.leg).toMatchObject({ open: false, lastOutcome: 'failed' });
    expect(f.skippedLines).toBe(1);
  });

  it('an unknown event type is ignored', () => {
    const f = both(ev('run_started') + ev('something_new', { node_id: 'a' }) + ev('run_finished', { outcome: 'passed' }));
    expect(f.leg.lastOutcome).toBe('passed');
    expect(f.skippedLines).toBe(0);
    expect(f.nodes.size).toBe(0);
  });

  it('older schemas are read; a newer schema makes the stream unreadable', () => {
    const two = ev('run_started', { schema: 2 });
    expect(both(two).leg.open).toBe(true);
    const four = file(ev('run_started') + ev('run_finished', { outcome: 'passed', schema: 4 }));
    expect(code(() => readStream(four))).toBe('ENEWERSCHEMA');
    expect(code(() => readLastLeg(four))).toBe('ENEWERSCHEMA');
    expect(() => readStream(four)).toThrow(/written by a newer version \(schema 4/);
  });

  it('a line of exactly 1 MiB is read; one byte more is "corrupt or foreign", never truncated', () => {
    const pad = (len: number) => eventJsonOfBytes({ event: 'x' }, len);
    const ok = pad(MAX_LINE_BYTES);
    expect(Buffer.byteLength(ok)).toBe(MAX_LINE_BYTES);
    expect(both(ev('run_started') + ok + '\n').leg.open).toBe(true);
    expect(both(ev('run_started') + ok + '\r\n').leg.open).toBe(true);
    for (const s of [ev('run_started') + pad(MAX_LINE_BYTES + 1) + '\n', ev('run_started') + pad(MAX_LINE_BYTES + 1), pad(2 * MAX_LINE_BYTES) + '\n' + ev('run_started')]) {
      const p = file(s);
      expect(code(() => readStream(p))).toBe('ELINETOOLONG');
      expect(code(() => readStream(p, { chunkBytes: 1000 }))).toBe('ELINETOOLONG');
      expect(code(() => readLastLeg(p))).toBe('ELINETOOLONG');
    }
    expect(() => readStream(file(pad(MAX_LINE_BYTES + 1)))).toThrow(/corrupt or foreign/);
  });

  it('a FIFO, a directory or a symlink in place of the stream is refused at once', (ctx) => {
    needs(ctx, 'posix: a FIFO (mkfifo)');
    const fifo = join(dir, 'fifo.jsonl');
    execFileSync('mkfifo', [fifo]);
    expect(code(() => readStream(fifo))).toBe('ENOTREGULAR');
    expect(code(() => readLastLeg(fifo))).toBe('ENOTREGULAR');
    expect(() => readLastLeg(fifo)).toThrow(/is a fifo, not a regular file/);
    const d = join(dir, 'dir.jsonl');
    mkdirSync(d);
    expect(code(() => readStream(d))).toBe('ENOTREGULAR');
    const target = file(ev('run_started'));
    const link = join(dir, 'link.jsonl');
    symlinkSync(target, link);
    expect(code(() => readLastLeg(link))).toBe('ENOTREGULAR');
    expect(() => readStream(link)).toThrow(/symlink/);
  });
});

describe('node states', () => {
  it('started/retried ⇒ running, passed, failed, gate_paused ⇒ gate-paused', () => {
    const s =
      ev('run_started') +
      ev('node_started', { node_id: 'a' }) +
      ev('node_passed', { node_id: 'a', verdict: 'PASS' }) +
      ev('node_started', { node_id: 'b' }) +
      ev('node_failed', { node_id: 'b', verdict: 'FAIL' }) +
      ev('node_retried', { node_id: 'b', retries: 1 }) +
      ev('node_started', { node_id: 'c' }) +
      ev('gate_paused', { node_id: 'g' });
    const f = both(s);
    expect([...f.nodes]).toEqual([
      ['a', 'passed'],
      ['b', 'running'],
      ['c', 'running'],
      ['g', 'gate-paused'],
    ]);
    expect(f.leg.gates).toEqual(['g']);
  });

  it('every run_started turns nodes still running from an earlier leg into abandoned', () => {
    const s = ev('run_started') + ev('node_started', { node_id: 'a' }) + ev('node_started', { node_id: 'b' }) + ev('node_passed', { node_id: 'b' }) + ev('run_started') + ev('node_started', { node_id: 'c' });
    expect([...both(s).nodes]).toEqual([
      ['a', 'abandoned'],
      ['b', 'passed'],
      ['c', 'running'],
    ]);
  });

  it('paused gates are those of the last leg not approved or rejected since', () => {
    const s =
      ev('run_started') +
      ev('gate_paused', { node_id: 'old' }) +
      ev('run_finished', { outcome: 'paused' }) +
      ev('run_started') +
      ev('gate_paused', { node_id: 'g1' }) +
      ev('gate_paused', { node_id: 'g2' }) +
      ev('gate_approved', { node_id: 'g1' }) +
      ev('gate_paused', { node_id: 'g3' }) +
      ev('run_finished', { outcome: 'paused' });
    const f = both(s);
    expect(f.leg.gates).toEqual(['g2', 'g3']);
    expect(f.nodes.get('g1')).toBe('gate-paused');
  });

  it('the fold can be driven line by line (for a follower)', () => {
    const fold = new StreamFold();
    let off = 0;
    for (const l of [ev('run_started'), 'junk\n', ev('node_started', { node_id: 'a' }), ev('run_finished', { outcome: 'passed' })]) {
      const e = parseEventLine(l.replace(/\n$/, ''));
      if (e === null) fold.skip();
      else fold.apply(e, off);
      off += Buffer.byteLength(l);
    }
    expect(fold.facts()).toMatchObject({ leg: { open: false, lastOutcome: 'passed', legs: 1 }, skippedLines: 1 });
    expect(() => parseEventLine(ev('run_started', { schema: 9 }))).toThrow(StreamError);
  });
});

describe('the tail reader reads only the tail', () => {
  it('on a long many-leg stream it consults only the last legs', () => {
    const leg = ev('run_started') + ev('node_started', { node_id: 'a' }) + ev('node_passed', { node_id: 'a' }) + ev('run_finished', { outcome: 'failed' });
    const s = leg.repeat(20_000) + ev('run_started') + ev('node_started', { node_id: 'z' });
    const p = file(s);
    const tail = readLastLeg(p);
    expect(tail.size).toBe(Buffer.byteLength(s));
    // Consulted: the open leg and the closed one before it, nothing more.
    expect(tail.size - tail.from).toBeLessThanOrEqual(Buffer.byteLength(leg) + Buffer.byteLength(ev('run_started') + ev('node_started', { node_id: 'z' })));
    expect(tail.leg).toMatchObject({ open: true, lastOutcome: 'failed' });
    const { legs, ...fwdLeg } = readStream(p).leg;
    expect(legs).toBe(20_001);
    expect(tail.leg).toEqual(fwdLeg);
  });

  it('a bad line before the tail does not reach the tail reader; the forward fold refuses it', () => {
    const s = ev('run_started', { schema: 4 }) + ev('run_started') + ev('run_finished', { outcome: 'passed' });
    const p = file(s);
    expect(code(() => readStream(p))).toBe('ENEWERSCHEMA');
    const tail = readLastLeg(p);
    expect(tail.from).toBeGreaterThan(0);
    expect(tail.leg).toMatchObject({ open: false, lastOutcome: 'passed' });
  });
});
