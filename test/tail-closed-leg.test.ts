/**
 * A closed last leg costs O(1) (CONTRACT §2.5 rule 7), and
 * what that costs in exactness. Whether a stream's last `run_finished`
 * closes a leg, or is a duplicate finish (or a lone one, with no leg at
 * all), is decided by the nearest leg event before it, which for one long
 * leg is its `run_started`, at the leg's very beginning. Three streams of
 * the same size and the same last 5 MiB show it: the forward fold says FAIL,
 * PASS and none. The tail reader does not search past its last
 * CLOSED_LEG_BYTES for that start: it reads each as the finish closing a leg
 * (FAIL), in a bounded number of bytes. The first is every real run's shape
 * (a leg closed by its own finish) and reads as the forward fold reads it;
 * the other two are the streams rule 7 answers differently.
 */
import { closeSync, mkdirSync, openSync, readSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runStatus } from '../src/index.js';
import { readStream } from '../src/read/stream.js';
import { CLOSED_LEG_BYTES, readLastLeg } from '../src/read/tail.js';
import { referenceLastLeg } from './helpers/tail-reference.js';
import { cleanup, tempDir } from './helpers/reading-fixtures.js';
import { eventLine } from './helpers/events.js';

afterAll(cleanup);

const ev = (o: Record<string, unknown>) => eventLine(o, { ts: '2026-12-02T10:00:00Z' });

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

describe('a closed last leg is read from its end', () => {
  it('three streams with the same size and the same last 5 MiB: the forward fold says FAIL, PASS and none; the tail reads FAIL in at most 64 KiB', () => {
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
    const events = (name: string) => join(paths[name], 'events.jsonl');
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
    // Every status surface reads the tail: FAIL for all three, the first as the forward fold says it.
    for (const name of Object.keys(heads)) expect(runStatus(paths[name]).status, name).toBe('FAIL');
    for (const name of Object.keys(heads)) {
      const tail = readLastLeg(events(name));
      expect(tail.leg, name).toEqual(referenceLastLeg(events(name)).leg);
      expect(tail.leg, name).toMatchObject({ open: false, started: true, lastOutcome: 'failed', legOffset: -1 });
      expect(tail.size - tail.from, name).toBeLessThanOrEqual(CLOSED_LEG_BYTES);
    }
    // The control: with the same bytes and its start moved within the bound, a duplicate finish is told apart again.
    const near = join(root, '20261202-130009-near');
    mkdirSync(near);
    const fd = openSync(join(near, 'events.jsonl'), 'w');
    writeSync(fd, body);
    writeSync(fd, ev({ event: 'run_started' }) + ev({ event: 'run_finished', outcome: 'passed' }) + node.repeat(10) + finishFailed);
    closeSync(fd);
    expect(readStream(join(near, 'events.jsonl')).leg.lastOutcome).toBe('passed');
    expect(readLastLeg(join(near, 'events.jsonl')).leg.lastOutcome).toBe('passed');
    expect(runStatus(near).status).toBe('PASS');
  }, 120_000);
});
