/**
 * `runs` (the table, not --json) prints as the reports arrive: it holds at
 * most a page of rows (TABLE_PAGE_ROWS), a column is as wide as its widest
 * cell so far, and a list no longer than a page is aligned as a whole.
 * Real run directories, real reports (forEachRun), the real CLI.
 */
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { RunsTable, TABLE_PAGE_ROWS, renderRuns } from '../src/cli/commands/runs.js';
import { forEachRun, listRuns } from '../src/status/list.js';
import type { RunReport } from '../src/contract/types.js';
import { cleanup, cli, ev, makeRun, snapshot, tempDir } from './helpers/reading-fixtures.js';

afterEach(cleanup);
afterAll(cleanup);

const finished = ev('run_started') + ev('node_started', { node_id: 'a' }) + ev('run_finished', { outcome: 'passed' });

/**
 * `pages` pages of runs and `extra` more, newest first by id. The newest page has short ids and graph names;
 * the oldest run has a long id and a long graph name, so its page's columns must be wider than the first page's.
 */
function bigRoot(pages: number, extra: number): { root: string; n: number; longId: string } {
  const root = tempDir('rw-table-');
  const n = pages * TABLE_PAGE_ROWS + extra;
  for (let i = 1; i < n; i++) makeRun(root, `r-${String(i).padStart(5, '0')}`, { events: finished, state: snapshot({ a: 'PASS' }, { name: i % 2 ? 'docs' : 'ci' }) });
  const longId = 'r-00000-the-oldest-run-with-a-long-name';
  makeRun(root, longId, { events: finished, state: snapshot({ a: 'PASS' }, { name: LONG_GRAPH }) });
  return { root, n, longId };
}

const LONG_GRAPH = 'a-graph-name-longer-than-any-other';
/** The graph cell: clipped to 28 characters. */
const LONG_CELL = `${LONG_GRAPH.slice(0, 27)}…`;

/** Where the STATUS column starts on a row line (after the last run of two or more spaces). */
const statusAt = (line: string): number => line.search(/ {2}PASS$/) + 2;

describe('runs table: bounded by a page, not by the list', () => {
  it(`holds at most ${TABLE_PAGE_ROWS} rows, and prints each page before the next report is read`, () => {
    const { root, n } = bigRoot(2, 41);
    const lines: string[] = [];
    const table = new RunsTable(root, (l) => lines.push(l), false);
    const printedBefore: number[] = []; // lines already printed when report k arrived
    const listed = forEachRun(root, {}, (r: RunReport) => {
      printedBefore.push(lines.length);
      table.add(r);
    });
    table.end(listed, { showSkipped: false });
    expect(printedBefore.length).toBe(n);
    // Positive control: the list really is longer than a page, so a page was printed mid-listing.
    expect(n).toBeGreaterThan(2 * TABLE_PAGE_ROWS);
    expect(table.maxHeld).toBe(TABLE_PAGE_ROWS);
    // Nothing before the first page is full; the header and the first page right after it.
    expect(printedBefore[TABLE_PAGE_ROWS - 1]).toBe(0);
    expect(printedBefore[TABLE_PAGE_ROWS]).toBe(2 + TABLE_PAGE_ROWS);
    expect(printedBefore[2 * TABLE_PAGE_ROWS]).toBe(2 + 2 * TABLE_PAGE_ROWS);
    // Every report k arrived with at most a page of earlier rows unprinted.
    printedBefore.forEach((p, k) => expect(k - Math.max(0, p - 2)).toBeLessThanOrEqual(TABLE_PAGE_ROWS - 1));
    expect(lines.length).toBe(2 + n + 1);
    expect(lines[lines.length - 1]).toBe(`${n} runs shown (${n} passed); none skipped.`);
  });

  it('the CLI prints the same table, aligned within each page; a wider cell in a later page widens its column from there on', () => {
    const { root, n, longId } = bigRoot(2, 41);
    const r = cli(['runs', '--root', root]);
    expect(r.status).toBe(0);
    expect(r.stderr).toBe('');
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`runs under ${root}`);
    expect(lines[1]).toMatch(/^RUN +GRAPH +NODES +COST +STATUS$/);
    const rows = lines.slice(2, 2 + n);
    expect(rows.every((l) => /^r-\d{5}/.test(l))).toBe(true);
    expect(lines[2 + n]).toBe(`${n} runs shown (${n} passed); none skipped.`);
    // Cells are the reports' (same split as runs.test.ts).
    expect(rows[0]?.split(/ {2,}/)).toEqual([`r-${String(n - 1).padStart(5, '0')}`, n % 2 === 0 ? 'docs' : 'ci', '1/1', '$0.2500', 'PASS']);
    expect(rows[n - 1]?.split(/ {2,}/)).toEqual([longId, LONG_CELL, '1/1', '$0.2500', 'PASS']);
    const first = rows.slice(0, TABLE_PAGE_ROWS);
    const last = rows.slice(2 * TABLE_PAGE_ROWS);
    // The header and the first two pages share one set of widths (their cells are alike).
    const at = statusAt(rows[0]);
    expect(lines[1]?.indexOf('STATUS')).toBe(at);
    expect(rows.slice(0, 2 * TABLE_PAGE_ROWS).every((l) => statusAt(l) === at)).toBe(true);
    // The last page holds the long id and graph: its rows are aligned with each other, and wider.
    const atLast = statusAt(last[0]);
    expect(last.every((l) => statusAt(l) === atLast)).toBe(true);
    expect(atLast).toBe(longId.length + 2 + LONG_CELL.length + 2 + 'NODES'.length + 2 + '$0.2500'.length + 2);
    expect(atLast).toBeGreaterThan(at);
    expect(first.length).toBe(TABLE_PAGE_ROWS);
    // Stable: the same root prints the same bytes again.
    expect(cli(['runs', '--root', root]).stdout).toBe(r.stdout);
  });

  it('a list of at most a page is aligned as a whole, as renderRuns over a whole listing gives it', () => {
    const root = tempDir('rw-table-small-');
    makeRun(root, 'r1', { events: finished, state: snapshot({ a: 'PASS' }, { name: 'g' }) });
    makeRun(root, 'r2-a-much-longer-id', { events: finished, state: snapshot({ a: 'PASS' }, { name: 'graph-two' }) });
    makeRun(root, 'r3', {});
    const r = cli(['runs', '--root', root]);
    expect(r.status).toBe(0);
    expect(r.stdout.trimEnd().split('\n')).toEqual(renderRuns(listRuns(root), { color: false, showSkipped: false }));
    const rows = r.stdout.split('\n').slice(1, 5);
    const status = rows.map((l) => l.search(/(STATUS|PASS|-)$/));
    expect(new Set(status).size).toBe(1);
  });

  it('an empty root, a missing root and a root of skipped runs only still print their one-line answers', () => {
    const empty = tempDir('rw-table-empty-');
    expect(cli(['runs', '--root', empty]).stdout).toBe(`No runs under ${empty}.\n`);
    expect(cli(['runs', '--root', join(empty, 'nope')]).stdout).toBe(`No runs: ${join(empty, 'nope')} does not exist (nothing has run under this root yet).\n`);
    const bad = tempDir('rw-table-bad-');
    makeRun(bad, 'r1', { events: finished, state: '{' });
    const lines = cli(['runs', '--root', bad, '--show-skipped']).stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`runs under ${bad}`);
    expect(lines[1]).toMatch(/^skipped r1: state\.json: not valid JSON/);
    expect(lines[2]).toBe('0 runs shown; 1 skipped (1 unreadable state.json).');
  });
});
