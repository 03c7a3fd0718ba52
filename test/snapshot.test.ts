/** The snapshot reader (CONTRACT §3.1): every answer, every refusal, and no hang on hostile files. */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, ftruncateSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readSnapshot, type SnapshotRead } from '../src/read/snapshot.js';
import { cleanup, snapshot, tempDir } from './helpers/reading-fixtures.js';
import { needs } from './helpers/prereq.js';

/** CONTRACT §3.1 (runwarden addition 13), written here rather than taken from src/: a snapshot over 16 MiB is unreadable. */
const SNAPSHOT_MAX_BYTES = 16 * 1024 * 1024;

afterAll(cleanup);
const dir = tempDir('rw-snap-');
let n = 0;
function read(content: string | object): SnapshotRead {
  const p = join(dir, `state${++n}.json`);
  writeFileSync(p, typeof content === 'string' ? content : JSON.stringify(content));
  return readSnapshot(p);
}
function error(r: SnapshotRead): string {
  if (r.kind !== 'error') throw new Error(`expected an error, got ${r.kind}`);
  return r.error;
}
function ok(r: SnapshotRead) {
  if (r.kind !== 'ok') throw new Error(`expected ok, got ${JSON.stringify(r)}`);
  return r.snapshot;
}

describe('readSnapshot', () => {
  it('a missing snapshot is a fact, not an error', () => {
    expect(readSnapshot(join(dir, 'nope.json'))).toEqual({ kind: 'missing' });
  });

  it('reads the graph name, node counts and cost', () => {
    const s = ok(read(snapshot({ a: 'PASS', b: 'FAIL', c: '' }, { name: 'release', cost: 0.5 })));
    expect(s).toMatchObject({ graph: 'release', nodes_total: 3, nodes_passed: 1, all_passed: false, cost_usd: 1.5, cost_unknown: false, stray_ids: [] });
  });

  it('"all passed" is set membership over graph.nodes, not a count match', () => {
    const s = ok(read(snapshot({ a: 'PASS', stray: 'PASS' }, { graph: ['a', 'b'] })));
    expect(s).toMatchObject({ nodes_total: 2, nodes_passed: 1, all_passed: false, stray_ids: ['stray'] });
    expect(ok(read(snapshot({ a: 'PASS', b: 'PASS' }))).all_passed).toBe(true);
    expect(ok(read(snapshot({}, { graph: [] }))).all_passed).toBe(false); // a graph needs ≥ 1 node
  });

  it('duplicate graph node ids count once', () => {
    const s = ok(read(snapshot({ a: 'PASS' }, { graph: ['a', 'a'] })));
    expect(s).toMatchObject({ nodes_total: 1, all_passed: true });
  });

  it('an unknown or non-numeric cost makes the total a lower bound', () => {
    const base = snapshot({ a: 'PASS' }) as { nodes: Record<string, Record<string, unknown>> };
    base.nodes['a'] = { verdict: 'PASS', cost_usd: 1, cost_unknown: true };
    expect(ok(read(base))).toMatchObject({ cost_usd: 1, cost_unknown: true });
    base.nodes['a'] = { verdict: 'PASS', cost_usd: 'lots' };
    expect(ok(read(base))).toMatchObject({ cost_usd: 0, cost_unknown: true });
  });

  it('schema must be exactly 3', () => {
    expect(error(read({ ...snapshot({ a: 'PASS' }), schema: 2 }))).toMatch(/incompatible snapshot schema 2/);
    expect(error(read({ ...snapshot({ a: 'PASS' }), schema: 4 }))).toMatch(/incompatible snapshot schema 4/);
    expect(error(read({ ...snapshot({ a: 'PASS' }), schema: '3' }))).toMatch(/incompatible snapshot schema "3"/);
    expect(error(read({ graph: { nodes: [] } }))).toMatch(/incompatible snapshot schema missing/);
  });

  it('refuses a malformed graph or node map, saying what is wrong', () => {
    expect(error(read({ schema: 3, graph: { nodes: { a: {} } } }))).toMatch(/graph\.nodes is not a list \(it is an object\)/);
    expect(error(read({ schema: 3, graph: { nodes: 'a' } }))).toMatch(/graph\.nodes is not a list/);
    expect(error(read({ schema: 3 }))).toMatch(/"graph" is not an object/);
    expect(error(read({ schema: 3, graph: { nodes: [{ name: 'x' }] } }))).toMatch(/graph\.nodes\[0\] has no string "id"/);
    expect(error(read({ schema: 3, graph: { nodes: [] }, nodes: [] }))).toMatch(/"nodes" is not a map/);
    expect(error(read({ schema: 3, graph: { nodes: [] }, nodes: { a: 'PASS' } }))).toMatch(/nodes\["a"\] is not a record/);
    expect(error(read('[]'))).toMatch(/not a JSON object/);
  });

  it('an empty file and invalid JSON are unreadable', () => {
    expect(error(read(''))).toMatch(/state\.json: empty file/);
    expect(error(read('{"schema":3,'))).toMatch(/state\.json: not valid JSON/);
    expect(error(read('\u0000\u0001garbage'))).toMatch(/not valid JSON/);
  });

  it('a FIFO, a directory or a symlink is refused at once, without blocking', (ctx) => {
    needs(ctx, 'posix: a FIFO (mkfifo)');
    const fifo = join(dir, 'fifo.json');
    execFileSync('mkfifo', [fifo]);
    expect(error(readSnapshot(fifo))).toMatch(/state\.json is a fifo, not a regular file/);
    const d = join(dir, 'd.json');
    mkdirSync(d);
    expect(error(readSnapshot(d))).toMatch(/is a directory/);
    const real = join(dir, 'real.json');
    writeFileSync(real, JSON.stringify(snapshot({ a: 'PASS' })));
    const link = join(dir, 'link.json');
    symlinkSync(real, link);
    expect(error(readSnapshot(link))).toMatch(/is a symlink/);
  });

  it(`refuses a snapshot over the ${SNAPSHOT_MAX_BYTES / 1024 / 1024} MiB cap before reading it`, () => {
    const p = join(dir, 'huge.json');
    const fd = openSync(p, 'w');
    ftruncateSync(fd, SNAPSHOT_MAX_BYTES + 1); // sparse: nothing is written but the size
    closeSync(fd);
    expect(error(readSnapshot(p))).toMatch(/over the 16 MiB limit/);
  });
});
