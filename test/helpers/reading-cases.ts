/**
 * A runs root holding every hostile or odd case a listing must survive,
 * each with the outcome it must end in: a row with a given status, or a
 * named skip whose reason matches.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Status } from '../../src/contract/types.js';
import { ev, makeRun, snapshot } from './reading-fixtures.js';

export type Expect = { row: Status | null; warning?: RegExp; reason?: string } | { skip: RegExp };

export interface Case {
  id: string;
  what: string;
  expect: Expect;
}

const S = ev('run_started') + ev('node_started', { node_id: 'a' });
const DONE = S + ev('node_passed', { node_id: 'a', verdict: 'PASS' }) + ev('run_finished', { outcome: 'passed' });

function fifo(path: string): void {
  execFileSync('mkfifo', [path]);
}

/** FIFOs and symbolic links: the cases that need them are built on POSIX systems only (Windows has no FIFO, and Wine makes no link). */
const POSIX = process.platform !== 'win32';

/**
 * Builds the cases under `root` (ids sort in the order listed). `outside` is
 * a directory outside the root for symlink targets. Returns the cases.
 */
export function buildHostileRoot(root: string, outside: string): Case[] {
  const cases: Case[] = [];
  let n = 0;
  const add = (what: string, expect: Expect, build: (dir: string, id: string) => void) => {
    const id = `case-${String(++n).padStart(2, '0')}`;
    build(join(root, id), id);
    cases.push({ id, what, expect });
  };
  const addPosix: typeof add = (...args) => {
    if (POSIX) add(...args);
  };

  add('a healthy passed run', { row: 'PASS' }, (_d, id) => makeRun(root, id, { events: DONE, state: snapshot({ a: 'PASS' }) }));
  add('a run "directory" that is a regular file', { skip: /is a regular file, not a run directory/ }, (d) => writeFileSync(d, 'not a run\n'));
  addPosix('a symlink to a run directory outside the root', { skip: /is a symlink; links under the runs root are not followed/ }, (d) => {
    makeRun(outside, 'real-run', { events: DONE, state: snapshot({ a: 'PASS' }) });
    symlinkSync(join(outside, 'real-run'), d);
  });
  addPosix('a symlink to /etc', { skip: /is a symlink/ }, (d) => symlinkSync('/etc', d));
  addPosix('a FIFO where a run directory should be', { skip: /is a fifo, not a run directory/ }, (d) => fifo(d));
  add('binary garbage in events.jsonl', { row: null, warning: /events\.jsonl: skipped \d+ malformed lines?/ }, (d, id) => {
    const bytes = Buffer.from(Array.from({ length: 8192 }, (_, i) => (i * 131 + 7) % 256));
    makeRun(root, id, {});
    writeFileSync(join(d, 'events.jsonl'), bytes);
  });
  // After the finish, so that the tail reader reads it (a closed leg is read from its last 32 KiB, CONTRACT §2.5 rule 7;
  // an over-long line it does not read leaves the status readable, rule 3).
  add('a 2 MB line in events.jsonl', { skip: /corrupt or foreign/ }, (_d, id) =>
    makeRun(root, id, { events: S + ev('run_finished', { outcome: 'passed' }) + '{"schema":3,"event":"x","pad":"' + 'z'.repeat(2 * 1024 * 1024) + '"}\n' }),
  );
  add('schema 4 in events.jsonl', { skip: /written by a newer version \(schema 4/ }, (_d, id) => makeRun(root, id, { events: S + ev('run_finished', { outcome: 'passed' }).replace('"schema":3', '"schema":4') }));
  add('a snapshot with schema 2 on a settled run', { skip: /incompatible snapshot schema 2/ }, (_d, id) => makeRun(root, id, { events: DONE, state: { ...snapshot({ a: 'PASS' }), schema: 2 } }));
  add('a snapshot with schema 2 beside a dead open leg', { row: 'ABANDONED', warning: /incompatible snapshot schema 2/ }, (_d, id) =>
    makeRun(root, id, { events: S, state: { ...snapshot({ a: 'PASS' }), schema: 2 }, lock: 'marked' }),
  );
  add('graph.nodes not a list', { skip: /graph\.nodes is not a list/ }, (_d, id) => makeRun(root, id, { events: DONE, state: { schema: 3, graph: { name: 'g', nodes: { a: {} } }, nodes: {} } }));
  add('node ids not in the graph', { row: 'FAIL', warning: /ids not in graph\.nodes/ }, (_d, id) => makeRun(root, id, { events: DONE, state: snapshot({ x: 'PASS', y: 'PASS' }, { graph: ['a', 'b'] }) }));
  add('an empty events.jsonl', { row: null }, (_d, id) => makeRun(root, id, { events: '' }));
  add('an empty state.json on a settled run', { skip: /state\.json: empty file/ }, (_d, id) => makeRun(root, id, { events: DONE, state: '' }));
  add('an empty resume.lock beside an open leg', { row: 'RUNNING', reason: 'empty-file' }, (_d, id) => makeRun(root, id, { events: S, lock: '' }));
  addPosix('a FIFO in place of events.jsonl', { skip: /events\.jsonl is a fifo, not a regular file/ }, (d, id) => {
    makeRun(root, id, {});
    fifo(join(d, 'events.jsonl'));
  });
  addPosix('a FIFO in place of state.json on a settled run', { skip: /state\.json is a fifo/ }, (d, id) => {
    makeRun(root, id, { events: DONE });
    fifo(join(d, 'state.json'));
  });
  addPosix('a FIFO in place of state.json beside a dead open leg', { row: 'ABANDONED', warning: /state\.json is a fifo/ }, (d, id) => {
    makeRun(root, id, { events: S, lock: 'marked' });
    fifo(join(d, 'state.json'));
  });
  addPosix('a FIFO in place of resume.lock beside an open leg', { row: 'RUNNING', reason: 'not-regular-file' }, (d, id) => {
    makeRun(root, id, { events: S });
    fifo(join(d, 'resume.lock'));
  });
  add('a directory in place of events.jsonl', { skip: /events\.jsonl is a directory/ }, (d, id) => {
    makeRun(root, id, {});
    mkdirSync(join(d, 'events.jsonl'));
  });
  addPosix('a symlink in place of events.jsonl', { skip: /events\.jsonl is a symlink/ }, (d, id) => {
    makeRun(root, id, {});
    writeFileSync(join(outside, 'ev.jsonl'), DONE);
    symlinkSync(join(outside, 'ev.jsonl'), join(d, 'events.jsonl'));
  });
  addPosix('a symlink in place of state.json on a settled run', { skip: /state\.json is a symlink/ }, (d, id) => {
    makeRun(root, id, { events: DONE });
    writeFileSync(join(outside, 'st.json'), JSON.stringify(snapshot({ a: 'PASS' })));
    symlinkSync(join(outside, 'st.json'), join(d, 'state.json'));
  });
  addPosix('a FIFO in place of exec.pgid of a dead exec leg', { row: 'ABANDONED' }, (d, id) => {
    makeRun(root, id, { events: ev('run_started', { command: ['make'] }), lock: 'marked' });
    fifo(join(d, 'exec.pgid'));
  });
  add('an empty run directory', { row: null }, (_d, id) => makeRun(root, id, {}));
  return cases;
}
