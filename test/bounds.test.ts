/**
 * Hostile sizes in the readers (CONTRACT §2.2 rule 3 and §3.1):
 * JSON nesting is bounded before parsing, lines that cannot be events are
 * skipped (and counted) without being parsed, and a run drowned in junk
 * lines still gets the status its lock and real events say — read from real
 * files, with real holder processes for liveness.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, jsonDeeperThan } from '../dist/contract/depth.js';
import { readLastLeg, readSnapshot, readStream, runStatus } from '../dist/index.js';
import { runDetail } from '../dist/status/detail.js';
import { CLI, cleanupTemp, killAll, tempDir } from './helpers/lock-procs.js';
import { DIST_URL } from './helpers/portable.js';
import { DIAMOND, ev, holdRun, killedHolder, openRun, passedRun, runDir, writeEvents } from './helpers/serve-fixtures.js';
import { encodeEvents, eventJson } from './helpers/events.js';

afterAll(async () => {
  await killAll();
  cleanupTemp();
});

/** `depth` nested arrays around `inner`: `[[…inner…]]`. */
function nest(depth: number, inner = ''): string {
  return '['.repeat(depth) + inner + ']'.repeat(depth);
}

/** `depth` arrays, each the only element of the one around it: `[[...[]...]]` once encoded. */
function nestedArrays(depth: number): unknown[] {
  let a: unknown[] = [];
  for (let d = 1; d < depth; d++) a = [a];
  return a;
}

/** A schema-3 snapshot whose `extra` field nests arrays so that the document's depth is `depth` (≥ 2). */
function snapshotOfDepth(depth: number): string {
  return `{"schema":3,"run_id":"r","graph":{"name":"g","nodes":[{"id":"a"}]},"nodes":{"a":{"verdict":"PASS"}},"extra":${nest(depth - 1)}}`;
}

describe('the nesting bound (contract/depth.ts)', () => {
  it('counts brackets outside strings only, escapes included', () => {
    const b = (s: string) => Buffer.from(s);
    expect(jsonDeeperThan(b(nest(3)), 0, 6, 3)).toBe(false);
    expect(jsonDeeperThan(b(nest(4)), 0, 8, 3)).toBe(true);
    // Brackets and escaped quotes inside a string do not nest.
    const s = b(`[{"k":"[[[[\\"[[[[{{{{"}]`);
    expect(jsonDeeperThan(s, 0, s.length, 2)).toBe(false);
    expect(jsonDeeperThan(s, 0, s.length, 1)).toBe(true);
  });

  it('a snapshot at the bound is read; one level deeper is unreadable with the reason', () => {
    const dir = tempDir('rw-bounds-');
    const path = join(dir, 'state.json');
    writeFileSync(path, snapshotOfDepth(MAX_JSON_DEPTH));
    const ok = readSnapshot(path);
    expect(ok.kind).toBe('ok');
    writeFileSync(path, snapshotOfDepth(MAX_JSON_DEPTH + 1));
    expect(readSnapshot(path)).toEqual({ kind: 'error', error: `state.json: nested deeper than ${MAX_JSON_DEPTH} levels (refused before parsing)` });
    // Brackets inside strings are not nesting: a graph name of 10,000 '[' is fine.
    writeFileSync(path, `{"schema":3,"graph":{"name":"${'['.repeat(10_000)}","nodes":[{"id":"a"}]},"nodes":{}}`);
    expect(readSnapshot(path).kind).toBe('ok');
  });

  it('a 16 MiB nested snapshot under the size cap is refused without being parsed (bounded memory, in a real process)', () => {
    const root = tempDir('rw-bounds-');
    const id = '20261201-100000.000000001-1';
    const dir = passedRun(root, id, 'deep', DIAMOND);
    const half = 8 * 1024 * 1024 - 2;
    writeFileSync(join(dir, 'state.json'), nest(half));
    // Parsing this would build ~8 million arrays (hundreds of MB); the scan stops at byte 65.
    const script = `import { runStatus } from ${JSON.stringify(DIST_URL)};
      let out; try { runStatus(process.argv[1]); out = { ok: true }; } catch (e) { out = { ok: false, message: e.message }; }
      out.maxRssKb = process.resourceUsage().maxRSS; console.log(JSON.stringify(out));`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script, dir], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { ok: boolean; message?: string; maxRssKb: number };
    // A PASS needs the snapshot, so the run is unreadable, and says why.
    expect(out.ok).toBe(false);
    expect(out.message).toContain(`nested deeper than ${MAX_JSON_DEPTH} levels`);
    // Node itself plus the 16 MiB read buffer; parsing it took 878 MB before the bound.
    expect(out.maxRssKb).toBeLessThan(250 * 1024);
    // The CLI says the same, as a skipped run.
    const cli = spawnSync(process.execPath, [CLI, 'runs', '--json', '--root', root], { encoding: 'utf8' });
    expect(cli.status).toBe(0);
    expect(JSON.parse(cli.stdout).skipped).toEqual([{ run_id: id, error: `state.json: nested deeper than ${MAX_JSON_DEPTH} levels (refused before parsing)` }]);
  });

  it('a stream line deeper than the bound is skipped, one at the bound is an event, for every reader', () => {
    const root = tempDir('rw-bounds-');
    const id = '20261201-100000.000000002-1';
    const dir = runDir(root, id);
    // Depth = 1 (the event object) + the nested arrays of `extra`.
    const at = eventJson({ event: 'node_passed', node_id: 'a', extra: nestedArrays(MAX_JSON_DEPTH - 1) });
    const deeper = eventJson({ event: 'node_passed', node_id: 'b', extra: nestedArrays(MAX_JSON_DEPTH) });
    // Even a newer schema is only a malformed line when it is too deep to parse.
    const deepNewer = eventJson({ schema: 99, event: 'run_started', extra: nestedArrays(MAX_JSON_DEPTH) });
    expect(at).toContain(`"extra":${nest(MAX_JSON_DEPTH - 1)}}`);
    writeEvents(dir, [ev(id, 'run_started'), at, deeper, deepNewer, ev(id, 'run_finished', { outcome: 'passed' })]);
    const facts = readStream(join(dir, 'events.jsonl'));
    expect(facts.skippedLines).toBe(2);
    expect(facts.nodes.get('a')).toBe('passed');
    expect(facts.nodes.has('b')).toBe(false);
    expect(facts.leg).toMatchObject({ open: false, lastOutcome: 'passed', legs: 1 });
    const tail = readLastLeg(join(dir, 'events.jsonl'));
    expect(tail.skippedLines).toBe(2);
    expect(tail.leg).toMatchObject({ open: false, lastOutcome: 'passed' });
  });
});

/** `bytes` of junk lines (`{}` by default), appended to the run's stream. */
function appendJunk(dir: string, bytes: number, line = '{}'): void {
  const block = Buffer.from(`${line}\n`.repeat(Math.ceil(64 * 1024 / (line.length + 1))));
  const n = Math.ceil(bytes / block.length);
  for (let i = 0; i < n; i++) appendFileSync(join(dir, 'events.jsonl'), block);
}

function lineCount(dir: string): number {
  // What wc -l counts: the newline bytes.
  const bytes = readFileSync(join(dir, 'events.jsonl'));
  let n = 0;
  for (let i = bytes.indexOf(10); i >= 0; i = bytes.indexOf(10, i + 1)) n++;
  return n;
}

describe('junk lines (lines that cannot be events) cost a scan, and change no status', () => {
  it('every reader counts the same skipped lines, in bulk or line by line, at any chunk size', () => {
    const root = tempDir('rw-bounds-');
    const id = '20261201-110000.000000001-1';
    const dir = runDir(root, id);
    // Junk of several kinds between real events; the escaped key IS an event key, so that line is an event.
    const lines = [
      ev(id, 'run_started'),
      '{}',
      '',
      '{"note":"the word event, unquoted"}',
      '{"x":"\\"event\\" in a string is no key"}',
      ev(id, 'node_started', { node_id: 'a' }),
      '{"schema":3,"ev\\u0065nt":"node_passed","node_id":"a"}',
      '[1,2,3]',
      '{}\r',
      ev(id, 'run_finished', { outcome: 'failed' }),
      ev(id, 'run_started'),
      ...Array.from({ length: 5000 }, (_, i) => (i % 7 === 0 ? '{"a":{"b":[1,{}]}}' : '{}')),
      ev(id, 'node_started', { node_id: 'b' }),
      ...Array.from({ length: 3000 }, () => '{}'),
    ];
    writeFileSync(join(dir, 'events.jsonl'), encodeEvents(lines));
    const path = join(dir, 'events.jsonl');
    const perLine: number[] = [];
    const reference = readStream(path, { onSkip: (o) => perLine.push(o) }); // one call per skipped line: no bulk path
    const expectedSkips = lines.length - 6;
    expect(perLine.length).toBe(expectedSkips);
    expect(reference.nodes.get('a')).toBe('passed'); // the escaped key was read as an event
    for (const chunkBytes of [1, 2, 3, 7, 64, 4096, 65536, 2 * 1024 * 1024]) {
      const bulk = readStream(path, { chunkBytes });
      expect(bulk.skippedLines, `chunk ${chunkBytes}`).toBe(expectedSkips);
      expect(bulk.leg).toEqual(reference.leg);
      expect([...bulk.nodes]).toEqual([...reference.nodes]);
      const tail = readLastLeg(path, { chunkBytes });
      const { legs: _legs, ...leg } = reference.leg;
      expect(tail.leg, `tail chunk ${chunkBytes}`).toEqual({ ...leg, gates: [] });
      expect(tail.skippedLines).toBe(perLine.filter((o) => o >= tail.from).length);
    }
  });

  it('a stream of nothing but junk has no leg for the tail reader, and its skips agree with the forward fold', () => {
    const dir = tempDir('rw-bounds-');
    const path = join(dir, 'events.jsonl');
    const variants = ['{}\n'.repeat(3000), '{}\n'.repeat(3000) + '{"partial', '\n\n{}\r\n[1]\n', 'x', '{"run_started":1}\n{"a":"run_finished"}\n{}\n', '{}\n{"ev":"\\u0065"}\n{}\n'];
    for (const content of variants) {
      writeFileSync(path, content);
      const perLine: number[] = [];
      const fwd = readStream(path, { onSkip: (o) => perLine.push(o) });
      for (const chunkBytes of [1, 3, 64, 16 * 1024]) {
        const tail = readLastLeg(path, { chunkBytes });
        // The tail reader parses only from `from` (its dense region); its skips are the forward fold's from there.
        expect(tail.skippedLines, JSON.stringify(content.slice(0, 40)) + ` chunk ${chunkBytes}`).toBe(perLine.filter((o) => o >= tail.from).length);
        expect(tail.leg).toMatchObject({ open: false, started: false, legOffset: -1 });
        expect(fwd.skippedLines).toBe(perLine.length);
      }
    }
  });

  it('a live run under megabytes of {} lines is RUNNING, a dead one ABANDONED, a closed one PASS', async () => {
    const root = tempDir('rw-bounds-');
    const live = openRun(root, '20261201-120000.000000003-1', 'live', DIAMOND, 2);
    const dead = openRun(root, '20261201-120000.000000002-1', 'dead', DIAMOND, 2);
    const passed = passedRun(root, '20261201-120000.000000001-1', 'passed', DIAMOND);
    const junk = runDir(root, '20261201-120000.000000000-1');
    writeFileSync(join(junk, 'events.jsonl'), '');
    for (const d of [live, dead, passed, junk]) appendJunk(d, 8 * 1024 * 1024);
    await holdRun(live);
    await killedHolder(dead);
    expect(runStatus(live)).toMatchObject({ status: 'RUNNING', liveness: 'held' });
    expect(runStatus(dead)).toMatchObject({ status: 'ABANDONED', liveness: 'free' });
    expect(runStatus(passed)).toMatchObject({ status: 'PASS' });
    // Nothing but junk: no leg has started.
    expect(runStatus(junk)).toMatchObject({ status: null, liveness: null });
    // Nothing but junk: run detail's whole-stream fold counts every line.
    expect(runDetail(junk)).toMatchObject({ nodes: [], legs: [], legs_earlier: 0, skipped_lines: readStream(join(junk, 'events.jsonl')).skippedLines, stream_error: null });
    expect(runDetail(junk).skipped_lines).toBe(lineCount(junk));
    // The whole-stream fold (status's node list) agrees, and counts every junk line.
    const detail = runDetail(dead);
    expect(detail.report.status).toBe('ABANDONED');
    expect(detail.nodes.find((n) => n.id === 'impl-ui')?.state).toBe('abandoned');
    expect(detail.skipped_lines).toBe(lineCount(dead) - 6);
    // The CLI, in a real process, with the warning that names the count.
    const r = spawnSync(process.execPath, [CLI, 'runs', '--json', '--root', root], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    const doc = JSON.parse(r.stdout) as { runs: { run_id: string; status: string | null; warnings: string[] }[] };
    expect(doc.runs.map((x) => x.status)).toEqual(['RUNNING', 'ABANDONED', 'PASS', null]);
    const j = doc.runs[3];
    // The tail reader counts the skipped lines of the part it reads line by line, and says which part.
    const tail = readLastLeg(join(junk, 'events.jsonl'));
    const skips: number[] = [];
    readStream(join(junk, 'events.jsonl'), { onSkip: (o) => skips.push(o) });
    expect(tail.skippedLines).toBe(skips.filter((o) => o >= tail.from).length);
    expect(j.warnings).toEqual([`events.jsonl: skipped ${tail.skippedLines} malformed lines in its last ${tail.size - tail.from} bytes (the part read line by line)`]);
    const s = spawnSync(process.execPath, [CLI, 'status', '--root', root, '20261201-120000.000000002-1'], { encoding: 'utf8' });
    expect(s.status).toBe(0);
    expect(s.stdout).toContain('ABANDONED');
  });
});

describe('capped leg lists', () => {
  it('a run with many legs gives the latest legs and the count of earlier ones', () => {
    const root = tempDir('rw-bounds-');
    const id = '20261201-130000.000000001-1';
    const dir = runDir(root, id);
    const events = [];
    for (let i = 0; i < 450; i++) events.push(ev(id, 'run_started', { leg: i }), ev(id, 'run_finished', { outcome: i === 449 ? 'passed' : 'failed' }));
    writeEvents(dir, events);
    const d = runDetail(dir);
    expect(d.legs.length).toBe(200);
    expect(d.legs_earlier).toBe(250);
    expect(d.legs[199]).toMatchObject({ state: 'closed', outcome: 'passed' });
    expect(d.first_started_ts).toBe(events[0]['ts']);
    const few = runDetail(dir, { legs: 3 });
    expect(few.legs_earlier).toBe(447);
    expect(few.legs.map((l) => l.outcome)).toEqual(['failed', 'failed', 'passed']);
    // The human status counts every leg.
    const s = spawnSync(process.execPath, [CLI, 'status', '--root', root, id], { encoding: 'utf8' });
    expect(s.stdout).toMatch(/legs\s+450 \(last: closed, passed\)/);
  });
});
