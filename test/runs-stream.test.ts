/**
 * `runs --json` is written a report at a time (writeRunsDocument); the text
 * must be exactly JSON.stringify(runsDocument(listRuns(...)), null, 2), for
 * every shape of listing: none, missing root, skips, a page with more.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { listRuns, runsDocument, writeRunsDocument, type ListRunsOptions } from '../src/status/list.js';
import { cleanup, ev, makeRun, runId, snapshot, tempDir } from './helpers/reading-fixtures.js';
import { underWine } from './helpers/prereq.js';

afterAll(cleanup);

function same(root: string, options: ListRunsOptions = {}): string {
  let text = '';
  writeRunsDocument(root, options, (t) => (text += t));
  expect(text).toBe(JSON.stringify(runsDocument(listRuns(root, options)), null, 2));
  return text;
}

describe('the streamed runs --json document', () => {
  it('equals the whole document for every shape of listing', () => {
    const empty = tempDir('rw-stream-');
    expect(JSON.parse(same(empty)).runs).toEqual([]);
    same(join(empty, 'missing'));
    const root = tempDir('rw-stream-');
    makeRun(root, runId(), { events: ev('run_started') + ev('run_finished', { outcome: 'passed' }), state: snapshot({ a: 'PASS' }), lock: 'marked' });
    makeRun(root, runId(), { events: ev('run_started') + 'garbage\n', lock: 'marked' }); // ABANDONED, a warning, a hint with a newline
    makeRun(root, runId(), { events: ev('run_started') + ev('run_finished', { outcome: 'paused' }) });
    makeRun(root, runId(), { events: 'x'.repeat(1_100_000) }); // unreadable: skipped
    writeFileSync(join(root, 'zz-file'), 'not a run');
    mkdirSync(join(root, 'elsewhere'));
    // A symlink, skipped, where links are made (Wine makes none: it reports one made).
    const links = !underWine();
    if (links) symlinkSync(join(root, 'elsewhere'), join(root, 'zz-link'));
    const all = JSON.parse(same(root));
    expect(all.runs.length).toBe(4);
    expect(all.skipped.length).toBe(links ? 3 : 2);
    const page = JSON.parse(same(root, { select: { limit: 2 } }));
    expect(page.more).toBe(true);
    expect(page.next_before).toBe(page.runs[1].run_id);
    same(root, { select: { status: ['ABANDONED'] } });
  });
});
