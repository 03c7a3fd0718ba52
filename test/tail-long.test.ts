/**
 * The tail reader on long last legs, against real files: the leg's start and
 * end are found by byte search (not by parsing every line), and every answer
 * equals what CONTRACT §2.5 says (test/helpers/tail-reference.ts): the
 * forward fold's, except a closed leg that began more than CLOSED_LEG_BYTES
 * before the end (rule 7). Also the confirm re-read: unchanged bytes are not
 * read again, any write is.
 */
import { appendFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLOSED_LEG_BYTES, DENSE_BYTES, readLastLeg, rereadLastLeg } from '../src/read/tail.js';
import { referenceLastLeg } from './helpers/tail-reference.js';
import { readStream } from '../src/read/stream.js';
import { inspectRun } from '../src/status/inspect.js';
import { probeLock } from '../src/lock/probe.js';
import { native } from '../src/kernel/native.js';
import { mulberry32 } from './helpers/random.js';
import { byteByByte, searchCases } from './helpers/search-cases.js';
import { cleanup, ev, makeRun, runId, tempDir } from './helpers/reading-fixtures.js';
import { lacking, needs, testedPlatform, type Prereq } from './helpers/prereq.js';

afterAll(cleanup);

const dir = tempDir('rw-tail-long-');
let n = 0;

/** `count` node events of ~500 bytes: a long leg's body. */
function body(count: number, detail = 'd'.repeat(400)): string {
  let s = '';
  for (let i = 0; i < count; i++) s += ev(i % 2 ? 'node_passed' : 'node_started', { node_id: `n${i % 7}`, detail });
  return s;
}

/** Writes `content`, reads it both ways, checks the tail says what §2.5 says at every chunk size, and returns both. */
function both(content: string | Buffer) {
  const p = join(dir, `s${++n}.jsonl`);
  writeFileSync(p, content);
  const fwd = readStream(p);
  const ref = referenceLastLeg(p);
  for (const chunkBytes of [7, 4096, undefined]) {
    const tail = readLastLeg(p, chunkBytes === undefined ? {} : { chunkBytes });
    expect(tail.leg).toEqual(ref.leg);
    // Whatever rule 7 assumes, open or closed is the forward fold's: the lock is probed exactly when it would be.
    expect(tail.leg.open).toBe(fwd.leg.open);
  }
  return { tail: readLastLeg(p), fwd, path: p, bounded: ref.bounded };
}

const LONG = 2000; // ~1 MB of events: far longer than the dense region

describe('a long last leg is searched, not parsed', () => {
  it('closed: a start a megabyte back is not searched for, the outcome is the finish (§2.5 rule 7)', () => {
    const { tail, fwd, bounded } = both(ev('run_started', { command: ['make'] }) + body(LONG) + ev('run_finished', { outcome: 'passed' }));
    expect(bounded).toBe(true);
    expect(tail.leg).toMatchObject({ open: false, started: true, lastOutcome: 'passed', legOffset: -1 });
    expect(tail.leg.command).toBeUndefined(); // the start's facts are not known; a closed leg's report needs none
    expect(fwd.leg).toMatchObject({ open: false, started: true, lastOutcome: 'passed', legOffset: 0, command: ['make'] });
    // Only the last lines were parsed.
    expect(tail.size - tail.from).toBeLessThanOrEqual(CLOSED_LEG_BYTES);
  });

  it('closed, with its start within the last 32 KiB: found, as the forward fold finds it', () => {
    const { tail, bounded } = both(body(LONG) + ev('run_started', { command: ['make'] }) + body(40) + ev('run_finished', { outcome: 'failed' }));
    expect(bounded).toBe(false);
    expect(tail.leg).toMatchObject({ open: false, started: true, lastOutcome: 'failed', command: ['make'] });
    expect(tail.leg.legOffset).toBeGreaterThan(0);
  });

  it('open: the start is found, and the nearest closed leg before it gives lastOutcome', () => {
    const first = ev('run_started') + body(50) + ev('run_finished', { outcome: 'failed' });
    const { tail } = both(first + ev('run_started', { phase: 'planning' }) + body(LONG));
    expect(tail.leg).toMatchObject({ open: true, phase: 'planning', lastOutcome: 'failed', legOffset: Buffer.byteLength(first) });
    expect(tail.size - tail.from).toBeLessThan(DENSE_BYTES + 1024);
  });

  it('a run_started or run_finished inside a quoted value of another event is not a leg event', () => {
    const noisy = body(LONG / 2) + ev('node_passed', { node_id: 'a', detail: 'log: "event":"run_started" then run_finished' }) + body(LONG / 2);
    const closed = both(ev('run_started') + noisy + ev('run_finished', { outcome: 'failed' }));
    expect(closed.tail.leg).toMatchObject({ open: false, lastOutcome: 'failed' });
    const open = both(ev('run_started') + noisy);
    expect(open.tail.leg).toMatchObject({ open: true, legOffset: 0 });
  });

  it('a leg event spelled with \\u escapes far back is still found', () => {
    const start = '{"schema":3,"event":"run\\u005fstarted","command":["x"]}\n';
    const finish = '{"schema":3,"\\u0065vent":"run_finished","outcome":"paused"}\n';
    const { tail } = both(ev('run_started') + ev('run_finished', { outcome: 'passed' }) + start + body(LONG) + finish + body(LONG));
    expect(tail.leg).toMatchObject({ open: false, lastOutcome: 'paused', command: ['x'] });
  });

  it('escapes of anything but a leg word\'s letters make no candidate: a newer-schema line of them far back in an open leg is never read', () => {
    // A terminal's colours, a curly quote and a Latin letter, as an encoder that writes ASCII only spells them.
    const escapes = '{"schema":4,"ts":"2026-08-06T10:00:00Z","run_id":"r","event":"node_passed","node_id":"a","detail":"\\u001b[1mit\\u2019s caf\\u00e9\\u001b[0m \\\\u00"}\n';
    // The control: the same line with an escaped letter could spell a leg word, so it is a candidate and read.
    const letter = '{"schema":4,"ts":"2026-08-06T10:00:00Z","run_id":"r","event":"node_passed","node_id":"a","detail":"cod\\u0065"}\n';
    const read = (line: string) => {
      const p = join(dir, `s${++n}.jsonl`);
      writeFileSync(p, ev('run_started', { command: ['x'] }) + line + body(LONG));
      return () => readLastLeg(p);
    };
    expect(escapes).toContain('\\u001b');
    expect(read(escapes)().leg).toMatchObject({ open: true, legOffset: 0, command: ['x'] });
    expect(read(letter)).toThrow(/schema 4 at byte/);
  });

  it('a duplicate finish within 32 KiB of the first does not replace the outcome', () => {
    const { tail, fwd } = both(ev('run_started') + body(LONG) + ev('run_finished', { outcome: 'failed' }) + body(20) + ev('run_finished', { outcome: 'passed' }));
    expect(tail.leg).toMatchObject({ open: false, lastOutcome: 'failed' });
    expect(fwd.leg).toMatchObject({ open: false, lastOutcome: 'failed' });
  });

  it('a duplicate finish more than 32 KiB after the first is read as closing the leg: the one answer rule 7 changes', () => {
    const { tail, fwd, bounded } = both(ev('run_started') + body(LONG) + ev('run_finished', { outcome: 'failed' }) + body(LONG) + ev('run_finished', { outcome: 'passed' }));
    expect(bounded).toBe(true);
    expect(tail.leg).toMatchObject({ open: false, lastOutcome: 'passed' });
    expect(fwd.leg).toMatchObject({ open: false, lastOutcome: 'failed' });
  });

  it('an over-long line before the last 32 KiB of a closed leg is not read: the status stays readable (rules 3 and 7)', () => {
    const p = join(dir, `s${++n}.jsonl`);
    const huge = ev('x', { pad: 'z'.repeat(2 * 1024 * 1024) });
    writeFileSync(p, ev('run_started') + huge + ev('run_finished', { outcome: 'passed' }));
    expect(() => readStream(p)).toThrow(/corrupt or foreign/);
    expect(readLastLeg(p).leg).toMatchObject({ open: false, lastOutcome: 'passed' });
    // The control: after the finish, the same line is read, and the stream is unreadable.
    writeFileSync(p, ev('run_started') + ev('run_finished', { outcome: 'passed' }) + huge);
    expect(() => readLastLeg(p)).toThrow(/corrupt or foreign/);
  });

  it('a paused finish keeps the search going: its gates are those after its start', () => {
    const { tail, bounded } = both(ev('run_started') + ev('gate_paused', { node_id: 'g0' }) + body(LONG) + ev('run_finished', { outcome: 'paused' }));
    expect(bounded).toBe(false);
    expect(tail.leg).toMatchObject({ open: false, lastOutcome: 'paused', legOffset: 0, gates: ['g0'] });
  });

  it('a gate paused early in a long leg is still named, and one approved later is not', () => {
    const s = ev('run_started') + ev('gate_paused', { node_id: 'g1' }) + ev('gate_paused', { node_id: 'g2' }) + body(LONG) + ev('gate_approved', { node_id: 'g2' }) + ev('run_finished', { outcome: 'paused' });
    const { tail } = both(s);
    expect(tail.leg.gates).toEqual(['g1']);
    expect(tail.from).toBeLessThan(200); // the dense region reaches back to the first paused gate
  });

  it('junk, CRLF endings and a truncated last line: the same answer both ways', () => {
    const crlf = (ev('run_started') + body(LONG) + 'garbage run_finished\n' + '{"schema":3,"event":"run_finished"\n' + ev('node_started', { node_id: 'z' })).replace(/\n/g, '\r\n');
    const { tail, fwd } = both(crlf + '{"schema":3,"event":"run_fini');
    expect(tail.leg.open).toBe(true);
    // Skips counted are those in the dense region: here all three junk lines.
    expect(tail.skippedLines).toBe(3);
    expect(fwd.skippedLines).toBe(3);
  });

  it('junk deep in a long leg is not counted (only the dense region is parsed)', () => {
    const { tail, fwd } = both(ev('run_started') + 'garbage\n' + body(LONG) + ev('run_finished', { outcome: 'passed' }));
    expect(fwd.skippedLines).toBe(1);
    expect(tail.skippedLines).toBe(0);
    expect(tail.from).toBeGreaterThan(1000);
  });
});

/**
 * Every path of the addon's byte search this CPU has, each run by name on the same cases and held to a
 * byte-by-byte search: AVX-512 VBMI (64 bytes a step), AVX2 (32) and the 16-byte path, SSE2 here (NEON, the
 * arm64 one, runs in test/scan-arm64.test.ts under qemu). A path this CPU lacks (by /proc/cpuinfo) is skipped
 * with that reason through the prerequisite helper; the test names the path it ran.
 */
const PATHS: Array<{ path: string; needs: Prereq }> = [
  { path: 'avx512vbmi', needs: 'avx512vbmi' },
  { path: 'avx2', needs: 'avx2' },
  { path: 'sse2', needs: 'sse2' },
];

describe("the addon's lastMatch", () => {
  it('takes the widest path this CPU has, and has every path /proc/cpuinfo says it can (no more)', (ctx) => {
    if (process.platform === 'win32') needs(ctx, "posix: the CPU's flags as /proc/cpuinfo lists them, the reference for the paths");
    const paths = native().searchPaths();
    console.log(`lastMatch paths in this process: ${paths.join(', ')}; lastMatch takes ${paths[0]}`);
    // What the CPU says, beside what the addon found: a detection that missed a path would leave it untested.
    const expected = PATHS.filter((p) => lacking(p.needs).length === 0).map((p) => p.path);
    expect(paths).toEqual(testedPlatform() === 'darwin' ? expected.filter((p) => p !== 'avx512vbmi') : expected);
    const packed = Buffer.from([1, 0x78]);
    expect(() => native().lastMatch(Buffer.from('x'), 1, packed, 'no-such-path')).toThrow(RangeError);
    expect(native().lastMatch(Buffer.from('axbx'), 4, packed, paths[0])).toBe(3);
  });

  for (const { path, needs: need } of PATHS) {
    it(`on the ${path} path: the last start of any needle below end, as a byte-by-byte search finds it`, (ctx) => {
      needs(ctx, need);
      expect(native().searchPaths()).toContain(path);
      const needles = ['n_st', 'n_fi', 'te_pa', '\\u'];
      const packed = Buffer.concat(needles.flatMap((x) => [Buffer.from([x.length]), Buffer.from(x)]));
      const r = mulberry32(7);
      const rand = (k: number): number => Math.floor(r() * k);
      const alphabet = 'n_stfiepa\\ux';
      for (let t = 0; t < 3000; t++) {
        const len = rand(120);
        let text = '';
        for (let i = 0; i < len; i++) text += alphabet[rand(alphabet.length)];
        const hay = Buffer.from(text, 'latin1');
        const end = rand(len + 1);
        const want = byteByByte(hay, end, needles.map((x) => Buffer.from(x, 'latin1')));
        expect(native().lastMatch(hay, end, packed, path), `${path}: ${text} end ${end}`).toBe(want);
      }
      expect(() => native().lastMatch(Buffer.from('abc'), 4, packed, path)).toThrow(RangeError);
      console.log(`lastMatch ran on the ${path} path: 3000 short haystacks`);
    });

    it(`on the ${path} path: long buffers, any needle set, any alignment, bytes of 128 or more, as a byte-by-byte search`, (ctx) => {
      needs(ctx, need);
      const cases = searchCases(20261204, 400);
      for (const c of cases) expect(native().lastMatch(c.outer.subarray(c.off, c.off + c.len), c.end, c.packed, path), `${path}: ${c.label}`).toBe(c.want);
      // The cases are not all misses.
      expect(cases.filter((c) => c.want >= 0).length).toBeGreaterThan(800);
      console.log(`lastMatch ran on the ${path} path: ${cases.length} long cases`);
    });
  }
});

describe('the confirm re-read', () => {
  it('returns the same facts for an untouched stream, and reads again after an append', () => {
    const p = join(dir, 'confirm.jsonl');
    writeFileSync(p, ev('run_started') + body(LONG));
    const first = readLastLeg(p);
    expect(rereadLastLeg(p, first)).toBe(first);
    appendFileSync(p, ev('run_finished', { outcome: 'passed' }));
    const again = rereadLastLeg(p, first);
    expect(again).not.toBe(first);
    expect(again.leg).toMatchObject({ open: false, lastOutcome: 'passed' });
    // A file of the same size put in its place (a restore, a sync) is read again too.
    const q = join(dir, 'confirm2.jsonl');
    writeFileSync(q, ev('run_started', { phase: 'aaaaaaaa' }) + body(10));
    const before = readLastLeg(q);
    writeFileSync(q + '.new', ev('run_started', { phase: 'xlanning' }) + body(10));
    renameSync(q + '.new', q);
    expect(rereadLastLeg(q, before).leg.phase).toBe('xlanning');
  });

  it('a long open leg with a free lock is ABANDONED; one finished between read and probe is not', () => {
    const root = tempDir('rw-tail-confirm-');
    const dead = makeRun(root, runId(), { events: ev('run_started') + body(LONG), lock: 'marked' });
    expect(inspectRun(dead).report.status).toBe('ABANDONED');
    const racing = makeRun(root, runId(), { events: ev('run_started') + body(LONG), lock: 'marked' });
    const report = inspectRun(racing, {
      probe: (lockPath) => {
        appendFileSync(join(racing, 'events.jsonl'), ev('run_finished', { outcome: 'passed' }));
        return probeLock(lockPath);
      },
    }).report;
    expect(report.status).toBe('PASS');
  });
});
