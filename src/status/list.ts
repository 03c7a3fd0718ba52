/**
 * Listing every run under a root (CONTRACT §1.1): one inspection per run
 * directory, newest first; every entry ends as a report or a named skip.
 */
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { RunIdError, RunUnreadableError, type SkipKind } from '../contract/errors.js';
import { showName } from '../contract/names.js';
import { IN_FLIGHT, JSON_SCHEMA, type RunReport, type RunsDocument, type SkippedRun } from '../contract/types.js';
import { runStatus, type RunStatusOptions } from './inspect.js';
import { checkSelection, needsReport, selectsName, selectsReport, type RunSelection } from './select.js';

/** A run listing entry that could not be reported: the `runs --json` shape plus a kind for grouping. */
export interface SkippedEntry extends SkippedRun {
  kind: SkipKind;
}

/** What {@link listRuns} returns. */
export interface RunList {
  /** The root, as an absolute path. */
  root: string;
  /** The root does not exist (an empty list, not an error). */
  missing: boolean;
  /** Reports, newest first (run ids in descending byte order). */
  runs: RunReport[];
  /** Entries that could not be reported, newest first, each with its reason. */
  skipped: SkippedEntry[];
  /**
   * With a `select.limit`: whether more selected runs follow this page. Ask
   * for them with `select.before` set to the last run's id. Always false
   * without a limit.
   */
  more: boolean;
}

/** Options for {@link listRuns}. */
export interface ListRunsOptions extends RunStatusOptions {
  /**
   * Replaces {@link runStatus} for each run directory (default: runStatus
   * with these options). For a caller that keeps per-run work of its own,
   * such as `serve` keeping each run's inspection; it must return what
   * runStatus returned for that directory, or throw as runStatus throws.
   */
  report?: (runDir: string) => RunReport;
  /**
   * Which runs to list (status, graph, id, a cursor and a page size); see
   * {@link RunSelection}. Names are tested before any run is read, so a
   * small page of a large root reads only what it shows.
   */
  select?: RunSelection;
}

/**
 * Reports every run directory under `root`, newest first (descending byte
 * order of the names). A name that is not valid UTF-8 is reported by its
 * shown form (`\xHH` per such byte, `\\` per backslash: contract/names.ts)
 * and read by its exact bytes. Each entry ends as
 * a report or a named skip: a symlink (never followed: nothing outside the
 * root is read), a non-directory, or a run that cannot be read. One bad run
 * never costs another its row. A missing root is an empty list with
 * `missing: true`. Throws RunIdError only if the root exists but is not a
 * readable directory.
 */
export function listRuns(root: string, options: ListRunsOptions = {}): RunList {
  const runs: RunReport[] = [];
  const { root: abs, missing, skipped, more } = visitRuns(root, options, (r) => runs.push(r));
  return { root: abs, missing, runs, skipped, more };
}

/** What a root entry's type says (a dirent or an lstat result). */
export interface EntryType {
  isSymbolicLink(): boolean;
  isDirectory(): boolean;
  isFile(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
}

/**
 * The skip for a root entry that is not a run directory (a symlink, never
 * followed, or anything but a directory), or undefined for a directory. The
 * one wording of these skips, shared by listRuns and serve's live model.
 */
export function strayEntry(e: EntryType, name: string): SkippedEntry | undefined {
  if (e.isSymbolicLink()) return { run_id: name, error: 'is a symlink; links under the runs root are not followed', kind: 'symlink' };
  if (e.isDirectory()) return undefined;
  const what = e.isFile() ? 'a regular file' : e.isFIFO() ? 'a fifo' : e.isSocket() ? 'a socket' : 'not a directory';
  return { run_id: name, error: `is ${what}, not a run directory`, kind: 'not-a-directory' };
}

/**
 * {@link listRuns}, handing each report to `onRun` as it is made instead of
 * keeping them (newest first): memory does not grow with the number of runs.
 * Throws as listRuns does, before the first report.
 */
function visitRuns(root: string, options: ListRunsOptions, onRun: (report: RunReport) => void): Omit<RunList, 'runs'> & { count: number; last: string | undefined } {
  const abs = resolve(root);
  let entries;
  try {
    // Names are bytes: read them as the kernel gives them, never decoded with replacement.
    entries = readdirSync(abs, { withFileTypes: true, encoding: 'buffer' });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { root: abs, missing: true, skipped: [], more: false, count: 0, last: undefined };
    if (code === 'ENOTDIR') throw new RunIdError(`runs root "${abs}" is not a directory`);
    throw new RunIdError(`cannot read runs root "${abs}": ${code ?? String(err)}`);
  }
  // Newest first is descending byte order of the names themselves.
  entries.sort((a, b) => Buffer.compare(b.name, a.name));
  const sel = options.select ?? {};
  checkSelection(sel);
  const byReport = needsReport(sel);
  let count = 0;
  let last: string | undefined;
  const skipped: SkippedEntry[] = [];
  let more = false;
  for (const e of entries) {
    // The shown name (contract/names.ts): the run id every surface reports, and
    // the one the reading layer turns back into these exact bytes.
    const name = showName(e.name);
    if (!selectsName(sel, name)) continue;
    // Once the page is full, look ahead only far enough to say whether another selected run follows.
    const full = sel.limit !== undefined && count >= sel.limit;
    const stray = strayEntry(e, name);
    if (stray !== undefined) {
      if (!full && !byReport) skipped.push(stray);
      continue;
    }
    if (full && !byReport) {
      more = true;
      break;
    }
    let report: RunReport;
    try {
      report = options.report ? options.report(join(abs, name)) : runStatus(join(abs, name), options);
    } catch (err) {
      if (full || byReport) continue;
      if (err instanceof RunUnreadableError) skipped.push({ run_id: name, error: err.message, kind: err.kind });
      else skipped.push({ run_id: name, error: err instanceof Error ? err.message : String(err), kind: 'error' });
      continue;
    }
    if (!selectsReport(sel, report)) continue;
    if (full) {
      more = true;
      break;
    }
    count++;
    last = report.run_id;
    onRun(report);
  }
  return { root: abs, missing: false, skipped, more, count, last };
}

/**
 * Lists the runs under `root` and writes their `runs --json` document
 * (CONTRACT §5.2) through `write`, a report at a time, byte for byte what
 * `JSON.stringify(runsDocument(listRuns(root, options)), null, 2)` gives,
 * without holding every report or the whole text: at 100,000 runs those
 * were most of the CLI's memory. Returns what listRuns would, without
 * `runs`. Throws as listRuns does, before anything is written.
 */
export function writeRunsDocument(root: string, options: ListRunsOptions, write: (text: string) => void): Omit<RunList, 'runs'> {
  let head: string | undefined;
  const opening = (abs: string): string => `{\n  "schema": ${JSON.stringify(JSON_SCHEMA)},\n  "root": ${JSON.stringify(abs)},\n  "runs": [`;
  let abs = resolve(root);
  const r = visitRuns(root, options, (report) => {
    if (head === undefined) {
      head = opening(abs);
      write(head + '\n    ');
    } else {
      write(',\n    ');
    }
    // Nested two levels deep: every line after the first is indented by four more spaces.
    write(JSON.stringify(report, null, 2).replace(/\n/g, '\n    '));
  });
  abs = r.root;
  let tail = head === undefined ? opening(abs) + '],\n' : '\n  ],\n';
  const skipped = r.skipped.map((s) => ({ run_id: s.run_id, error: s.error }));
  tail += `  "skipped": ${JSON.stringify(skipped, null, 2).replace(/\n/g, '\n  ')},\n  "more": ${JSON.stringify(r.more)}`;
  if (r.more && r.last !== undefined) tail += `,\n  "next_before": ${JSON.stringify(r.last)}`;
  write(tail + '\n}');
  return { root: r.root, missing: r.missing, skipped: r.skipped, more: r.more };
}

/**
 * "The run happening now" (`status` with no RUN): the newest run in flight
 * (PLANNING or RUNNING), never an abandoned one; else the newest run.
 * `runs` must be newest first, as {@link listRuns} returns them.
 */
export function pickCurrentRun(runs: readonly RunReport[]): RunReport | undefined {
  return runs.find((r) => r.status !== null && IN_FLIGHT.has(r.status)) ?? runs[0];
}

/**
 * The `runs --json` document for a listing (CONTRACT §5.2): `{ schema, root,
 * runs, skipped, more }` (plus `next_before` when a limit left more), each
 * skip reduced to `{ run_id, error }`. `runs --json` prints it and
 * `GET /api/runs` serves it, so the two cannot differ.
 */
export function runsDocument(list: RunList): RunsDocument {
  const doc: RunsDocument = {
    schema: JSON_SCHEMA,
    root: list.root,
    runs: list.runs,
    skipped: list.skipped.map((s) => ({ run_id: s.run_id, error: s.error })),
    more: list.more,
  };
  const last = list.runs[list.runs.length - 1];
  if (list.more && last !== undefined) doc.next_before = last.run_id;
  return doc;
}
