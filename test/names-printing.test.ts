/**
 * One printing rule for names (contract/names.ts printableText): C0 controls and DEL as `\xHH`, C1 and bidi controls as
 * `\u{HHHH}`, on every surface that prints a run id or graph name (the
 * `runs` table and its hint lines, `status`, `watch`, `exec`, `metrics`).
 * A directory named "x\nFAKE ROW …" cannot forge a row; U+202E cannot
 * reorder a line. And `metrics` stats each run by its exact bytes, so the run
 * named by the byte 0xff gets its own stream's mtime, not that of the run
 * literally named `\xff`, and ids with a backslash get their series.
 *
 * Every run here is a real directory made by its exact bytes, ABANDONED (an
 * open leg whose marked lock file no process holds), so each gets a hint and
 * per-run series.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { nameBytes, printableText, showName } from '../src/contract/names.js';
import { run } from './helpers/exec-procs.js';
import { cleanupTemp, tempDir } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';
import { parseExposition, samplesOf } from './helpers/prom-text.js';
import { eventLine } from './helpers/events.js';
import { RELEASED } from './helpers/portable.js';

afterAll(() => cleanupTemp());

/** An abandoned run at the exact name `name`, graph `graph`, its stream's mtime set to `mtimeSec`. */
function abandonedRun(root: string, name: Buffer, graph: string, mtimeSec: number): void {
  const dir = Buffer.concat([Buffer.from(root + '/'), name]);
  mkdirSync(dir, { mode: 0o700 });
  const file = (f: string): Buffer => Buffer.concat([dir, Buffer.from('/' + f)]);
  writeFileSync(file('events.jsonl'), eventLine({ event: 'run_started' }, { ts: '2026-12-01T10:00:00Z' }));
  writeFileSync(file('state.json'), JSON.stringify({ schema: 3, graph: { name: graph, nodes: [{ id: 'a' }] }, nodes: {} }));
  writeFileSync(file('resume.lock'), RELEASED);
  utimesSync(file('events.jsonl'), mtimeSec, mtimeSec);
}

/** Characters no printed line may hold: every C0 control but none, DEL, C1, bidi controls. */
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

describe('printableText, the one rule', () => {
  it('escapes C0, DEL, C1 and every bidi control, leaves the rest, and reads back through nameBytes', () => {
    expect(printableText('a\x1b[2Jb')).toBe('a\\x1b[2Jb');
    expect(printableText('x\nFAKE\r\0')).toBe('x\\x0aFAKE\\x0d\\x00');
    expect(printableText('\x7f\x85\x9b')).toBe('\\x7f\\u{0085}\\u{009b}');
    const bidi = ['\u061c', '\u200e', '\u200f', '\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069'];
    for (const c of bidi) expect(printableText(`a${c}b`)).toBe(`a\\u{${c.charCodeAt(0).toString(16).padStart(4, '0')}}b`);
    expect(printableText('été ✓ 日本 \u200d')).toBe('été ✓ 日本 \u200d'); // not a control: left alone
    // Printed shown names read back to the bytes they came from.
    const names = [Buffer.from('x\nFAKE ROW'), Buffer.from('r\u202eevil'), Buffer.from('c\u0085d'), Buffer.of(0x1b, 0x5c, 0xff, 0x0d), Buffer.from('\\u{41}')];
    for (const b of names) expect(nameBytes(printableText(showName(b))).equals(b), JSON.stringify(b.toString('latin1'))).toBe(true);
  });
});

describe('names on every surface', () => {
  let root: string;
  const T = 1_700_000_000;
  const NAMES: { bytes: Buffer; graph: string; mtime: number }[] = [
    { bytes: Buffer.from('x\nFAKE ROW  deploy  5  $0.0000  PASS'), graph: 'g\nFAKE', mtime: T + 1 },
    { bytes: Buffer.from('rtl\u202eevil'), graph: 'bidi\u2066g', mtime: T + 2 },
    { bytes: Buffer.of(0xff), graph: 'ff', mtime: T + 3 },
    { bytes: Buffer.from('\\xff'), graph: 'literal', mtime: T + 4 },
    { bytes: Buffer.from('back\\slash'), graph: 'bs', mtime: T + 5 },
    { bytes: Buffer.from('esc\x1b[31mred'), graph: 'esc\x1b]0;title\x07', mtime: T + 6 },
    { bytes: Buffer.from('cr\rnul'), graph: 'cr', mtime: T + 7 },
    { bytes: Buffer.of(0x61, 0xc3, 0x28), graph: 'bad-utf8', mtime: T + 8 },
  ];
  // Control characters, bidi controls in a name and bytes that are not UTF-8: POSIX systems' names.
  const POSIX_NAMES = 'posix: names holding control characters and bytes that are not UTF-8 (Windows allows neither in a name)';
  beforeAll(() => {
    root = tempDir();
    if (process.platform !== 'win32') for (const n of NAMES) abandonedRun(root, n.bytes, n.graph, n.mtime);
  });
  beforeEach((ctx) => needs(ctx, POSIX_NAMES));
  const printed = (b: Buffer): string => printableText(showName(b));

  it('runs: one row per run and its hint lines, no forged row, no raw control anywhere', async () => {
    const r = await run(['runs', '--root', root]);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    for (const l of lines) expect(l, JSON.stringify(l)).not.toMatch(RAW_CONTROL);
    // Rows start at column 0; hint lines are indented. Exactly one row per run, none forged.
    const rows = lines.slice(2).filter((l) => l !== '' && !l.startsWith(' ') && !/ shown/.test(l));
    expect(rows).toHaveLength(NAMES.length);
    expect(lines.filter((l) => l.trimStart().startsWith('FAKE'))).toEqual([]);
    for (const n of NAMES) {
      expect(rows.some((l) => l.startsWith(printed(n.bytes) + ' ')), printed(n.bytes)).toBe(true);
      // The hint names the run by the same printed id, on one line.
      expect(lines.some((l) => l.includes(`run ${printed(n.bytes)} is ABANDONED`))).toBe(true);
    }
  });

  it('status and watch print the id, the graph and the hint by the same rule', async () => {
    for (const n of [NAMES[0], NAMES[1], NAMES[5]] as const) {
      const s = await run(['status', printed(n.bytes), '--root', root]);
      expect(s.code, s.stderr).toBe(0);
      expect(s.stdout).not.toMatch(RAW_CONTROL);
      expect(s.stdout).toContain(`run ${printed(n.bytes)}  ABANDONED`);
      expect(s.stdout).toContain(printableText(n.graph));
      const w = await run(['watch', printed(n.bytes), '--root', root]);
      expect(w.code).toBe(3);
      expect(w.stdout + w.stderr).not.toMatch(RAW_CONTROL);
      expect(w.stdout + w.stderr).toContain(`run ${printed(n.bytes)}`);
    }
  });

  it('metrics: every run has its series, stat by its exact bytes, with labels printed by the rule', async () => {
    const r = await run(['metrics', '--no-process-metrics', '--root', root]);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(RAW_CONTROL);
    const exp = parseExposition(r.stdout);
    const last = new Map(samplesOf(exp, 'runwarden_run_last_event_timestamp_seconds').map((s) => [s.labels['run_id'], s.value]));
    const info = new Map(samplesOf(exp, 'runwarden_run_info').map((s) => [s.labels['run_id'], s.labels['graph']]));
    expect(last.size).toBe(NAMES.length);
    for (const n of NAMES) {
      // Each run's own mtime: the byte 0xff and the literal "\xff" are told apart.
      expect(last.get(printed(n.bytes)), printed(n.bytes)).toBe(n.mtime);
      expect(info.get(printed(n.bytes))).toBe(printableText(n.graph));
    }
  });

  it('promtool check metrics accepts that text', async (ctx) => {
    needs(ctx, 'prometheus');
    const r = await run(['metrics', '--no-process-metrics', '--root', root]);
    const check = spawnSync('promtool', ['check', 'metrics'], { input: r.stdout, encoding: 'utf8' });
    expect(check.status, `${check.stdout}${check.stderr}`).toBe(0);
  });
});
