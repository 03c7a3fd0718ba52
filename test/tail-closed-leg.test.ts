/**
 * Why a closed last leg is not read in O(1) (issue 22 item 3; CONTRACT §2.5
 * "What a long last leg costs"): whether a stream's last `run_finished`
 * closes a leg, or is a duplicate finish (or a lone one, with no leg at
 * all), changes nothing (§2.3: a finish with no open leg changes nothing)
 * and is decided by the nearest leg event before it, which for one long leg
 * is its `run_started`, at the leg's very beginning. Three streams of the
 * same size and the same last 5 MiB show it: their statuses are FAIL, PASS
 * and none, so no reader that reads only their last 64 KiB (or any bounded
 * tail) can report all three as the forward fold does; the tail reader
 * does, because it searches the leg (without parsing it) for that event.
 */
import { closeSync, mkdirSync, openSync, readSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runStatus } from '../src/index.js';
import { readStream } from '../src/read/stream.js';
import { readLastLeg } from '../src/read/tail.js';
import { cleanup, tempDir } from './helpers/reading-fixtures.js';

afterAll(cleanup);

const ev = (o: Record<string, unknown>) => JSON.stringify({ schema: 3, ts: '2026-12-02T10:00:00Z', run_id: 'r', ...o }) + '\n';

/** The last `n` bytes of a file. */
function lastBytes(path: string, n: number): Buffer {
  const size = statSync(path).size;
  const buf = Buffer.alloc(n);
  const fd = openSync(path, 'r');
  try {
    readSync(fd, buf, 0, n, size - n);
  } finally {
    closeSync(fd);
  }
  return buf;
}

describe('a closed last leg needs its beginning', () => {
  it('three streams with the same size and the same last 5 MiB: FAIL, PASS, and no status', () => {
    const root = tempDir('rw-closed-');
    const node = ev({ event: 'node_started', node_id: 'n' }) + ev({ event: 'node_passed', node_id: 'n', detail: 'ok' });
    const body = Buffer.from(node.repeat(Math.ceil((6 * 1024 * 1024) / node.length)));
    const finishFailed = ev({ event: 'run_finished', outcome: 'failed' });
    // What differs lies in the first bytes only; each head is padded to the same length with node events' bytes of another node.
    const heads = {
      closes: ev({ event: 'run_started' }), // the last finish closes this leg: FAIL
      duplicate: ev({ event: 'run_started' }) + ev({ event: 'run_finished', outcome: 'passed' }), // it is a duplicate: PASS
      lone: '', // no leg at all: no status
    };
    const width = Math.max(...Object.values(heads).map((h) => Buffer.byteLength(h))) + 64;
    const paths: Record<string, string> = {};
    for (const [name, head] of Object.entries(heads)) {
      const dir = join(root, `20261202-13000${Object.keys(paths).length}-${name}`);
      mkdirSync(dir);
      const pad = width - Buffer.byteLength(head);
      const fd = openSync(join(dir, 'events.jsonl'), 'w');
      writeSync(fd, head + 'x'.repeat(pad - 1) + '\n'); // one skipped line that evens the sizes
      writeSync(fd, body);
      writeSync(fd, finishFailed);
      closeSync(fd);
      paths[name] = dir;
    }
    const events = (name: string) => join(paths[name] as string, 'events.jsonl');
    const size = statSync(events('closes')).size;
    const tail = lastBytes(events('closes'), 5 * 1024 * 1024);
    for (const name of ['duplicate', 'lone']) {
      expect(statSync(events(name)).size).toBe(size);
      expect(lastBytes(events(name), 5 * 1024 * 1024).equals(tail)).toBe(true);
    }
    // The forward fold (the reference) tells them apart, by their first lines.
    expect(readStream(events('closes')).leg).toMatchObject({ open: false, started: true, lastOutcome: 'failed' });
    expect(readStream(events('duplicate')).leg).toMatchObject({ open: false, started: true, lastOutcome: 'passed' });
    expect(readStream(events('lone')).leg).toMatchObject({ open: false, started: false, lastOutcome: '' });
    // So do the statuses every surface shows (no snapshot: §4.3 rows 6-7).
    expect(runStatus(paths['closes'] as string).status).toBe('FAIL');
    expect(runStatus(paths['duplicate'] as string).status).toBe('PASS');
    expect(runStatus(paths['lone'] as string).status).toBeNull();
    // And the tail reader agrees with the forward fold on each, having searched back to the leg's start.
    for (const name of Object.keys(heads)) {
      const { legs: _legs, ...forward } = readStream(events(name)).leg;
      expect(readLastLeg(events(name)).leg, name).toEqual(forward);
    }
  }, 120_000);
});
