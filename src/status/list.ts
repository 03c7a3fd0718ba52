/**
 * Listing every run under a root (CONTRACT §1.1): one inspection per run
 * directory, newest first; every entry ends as a report or a named skip.
 */
import { join, resolve } from 'node:path';
import { RunIdError, RunUnreadableError, type SkipKind } from '../contract/errors.js';
import { isPlainName, showName } from '../contract/names.js';
import { errnoCode } from '../kernel/dirfd.js';
import { readDirSorted } from '../kernel/listdir.js';
import { loadAddon } from '../kernel/native.js';
import { IN_FLIGHT, JSON_SCHEMA, type RunReport, type RunsDocument, type SkippedRun } from '../contract/types.js';
import { inspectBatch, runStatus, type BatchResult, type RunStatusOptions } from './inspect.js';
import { checkSelection, needsReport, selectsName, selectsReport, type RunSelection } from './select.js';

/** A run listing entry that could not be reported: the `runs --json` shape plus a kind for grouping. */
export interface SkippedEntry extends SkippedRun {
  /** Why, in the groups the listing's closing line counts. */
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
 * followed, or anything but a directory), or undefined for a directory, from
 * a dirent or an lstat result (serve's live model): {@link entrySkip} on its
 * kind letter, so both paths share the one wording.
 */
export function strayEntry(e: EntryType, name: string): SkippedEntry | undefined {
  const kind = e.isSymbolicLink() ? 'l' : e.isDirectory() ? 'd' : e.isFile() ? 'f' : e.isFIFO() ? 'p' : e.isSocket() ? 's' : '?';
  return entrySkip(kind, name);
}

/**
 * {@link listRuns}, handing each report to `onRun` as it is made instead of
 * keeping them (newest first): memory does not grow with the number of runs.
 * Throws as listRuns does, before the first report.
 */
/**
 * The entries of a runs root, newest first: entry i is `names[i]`, its
 * exact bytes as a latin1 string (one character per byte), of the kind
 * `kinds[i]` (d directory, l symlink, f file, p fifo, s socket, c/b device,
 * ? unknown).
 */
export interface RootEntries {
  names: string[];
  kinds: string;
}

/**
 * The entries of the runs root `abs`, newest first (descending byte order
 * of the names), or undefined when there is no root. Throws RunIdError
 * when the root exists but is not a readable directory. Read by the addon
 * in one call (native readDirSorted): no Buffer or Dirent per entry, which
 * at 100,000 runs would be tens of MB.
 */
export function rootEntries(abs: string): RootEntries | undefined {
  let listed;
  loadAddon(); // outside the try: an addon that cannot load is a broken install, not an unreadable root
  try {
    // Names are bytes: read them as the kernel gives them, never decoded with replacement.
    listed = readDirSorted(abs);
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT') return undefined;
    if (code === 'ENOTDIR') throw new RunIdError(`runs root "${abs}" is not a directory`);
    throw new RunIdError(`cannot read runs root "${abs}": ${code}`);
  }
  // Newest first is descending byte order of the names themselves.
  return { names: listed.names.reverse(), kinds: [...listed.kinds].reverse().join('') };
}

/** The shown name (contract/names.ts) of the name whose bytes are the latin1 string `raw`. */
export function shownName(raw: string): string {
  return isPlainName(raw) ? raw : showName(Buffer.from(raw, 'latin1'));
}

/** Why a root entry of kind `kind` (see {@link RootEntries}) is skipped (a symlink is never followed), or undefined for a directory: the one wording of these skips. */
export function entrySkip(kind: string, name: string): SkippedEntry | undefined {
  if (kind === 'd') return undefined;
  if (kind === 'l') return { run_id: name, error: 'is a symlink; links under the runs root are not followed', kind: 'symlink' };
  const what = kind === 'f' ? 'a regular file' : kind === 'p' ? 'a fifo' : kind === 's' ? 'a socket' : 'not a directory';
  return { run_id: name, error: `is ${what}, not a run directory`, kind: 'not-a-directory' };
}

/** The skip entry for a run directory whose inspection threw `err`. */
export function inspectionSkip(name: string, err: unknown): SkippedEntry {
  if (err instanceof RunUnreadableError) return { run_id: name, error: err.message, kind: err.kind };
  return { run_id: name, error: err instanceof Error ? err.message : String(err), kind: 'error' };
}

/** Run directories inspected together by a listing (inspect.ts inspectBatch): one lock-table read per batch. */
const BATCH_RUNS = 256;

/**
 * The report of root entry `i` (a directory named `name`), or what its
 * inspection threw. Without a page size every selected directory is read,
 * so they are inspected in batches of {@link BATCH_RUNS} in listing order
 * (entry i and the next directories the selection keeps by name); with
 * one, or with a caller's own `report`, one at a time, so that a small
 * page reads only what it shows.
 */
function inspector(abs: string, entries: RootEntries, sel: RunSelection, options: ListRunsOptions): (i: number, name: string) => RunReport {
  const own = options.report;
  if (own !== undefined) return (_i, name) => own(join(abs, name));
  if (sel.limit !== undefined) return (_i, name) => runStatus(join(abs, name), options);
  let batch = new Map<number, BatchResult>();
  /** Inspects entry i and the next directories the selection keeps by name, as one batch; answers i's result. */
  const inspectFrom = (i: number, name: string): BatchResult => {
    const at: number[] = [];
    const dirs: string[] = [];
    for (let j = i; j < entries.names.length && at.length < BATCH_RUNS; j++) {
      if (entries.kinds[j] !== 'd') continue;
      const shown = j === i ? name : shownName(entries.names[j] as string);
      if (!selectsName(sel, shown)) continue;
      at.push(j);
      dirs.push(join(abs, shown));
    }
    const results = inspectBatch(dirs, options);
    batch = new Map(at.map((j, k) => [j, results[k] as BatchResult]));
    return batch.get(i) as BatchResult;
  };
  return (i, name) => {
    const got = batch.get(i) ?? inspectFrom(i, name);
    if (!got.ok) throw got.error;
    return got.inspection.report;
  };
}

function visitRuns(root: string, options: ListRunsOptions, onRun: (report: RunReport) => void): Omit<RunList, 'runs'> & { count: number; last: string | undefined } {
  const abs = resolve(root);
  const entries = rootEntries(abs);
  if (entries === undefined) return { root: abs, missing: true, skipped: [], more: false, count: 0, last: undefined };
  const sel = options.select ?? {};
  checkSelection(sel);
  const byReport = needsReport(sel);
  let count = 0;
  let last: string | undefined;
  const skipped: SkippedEntry[] = [];
  let more = false;
  const inspect = inspector(abs, entries, sel, options);
  for (let i = 0; i < entries.names.length; i++) {
    // The shown name (contract/names.ts): the run id every surface reports, and
    // the one the reading layer turns back into these exact bytes.
    const name = shownName(entries.names[i] as string);
    if (!selectsName(sel, name)) continue;
    // Once the page is full, look ahead only far enough to say whether another selected run follows.
    const full = sel.limit !== undefined && count >= sel.limit;
    const notDir = entrySkip(entries.kinds[i] as string, name);
    if (notDir !== undefined) {
      if (!full && !byReport) skipped.push(notDir);
      continue;
    }
    if (full && !byReport) {
      more = true;
      break;
    }
    let report: RunReport;
    try {
      report = inspect(i, name);
    } catch (err) {
      const skip = inspectionSkip(name, err);
      // A run not read for want of descriptors is never dropped, whatever the selection: the listing is incomplete.
      if ((full || byReport) && skip.kind !== 'no-descriptors') continue;
      skipped.push(skip);
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
 * Visits the runs under `root` as {@link listRuns} lists them, newest first,
 * handing each report to `onRun` and keeping none, for a printer that
 * streams (the `runs` table). Returns what listRuns would, without `runs`.
 * Throws as listRuns does, before any report is handed over.
 */
export function forEachRun(root: string, options: ListRunsOptions, onRun: (report: RunReport) => void): Omit<RunList, 'runs'> {
  const r = visitRuns(root, options, onRun);
  return { root: r.root, missing: r.missing, skipped: r.skipped, more: r.more };
}

/**
 * Lists the runs under `root` and writes their `runs --json` document
 * (CONTRACT §5.2) through `write`, a report at a time, byte for byte what
 * `JSON.stringify(runsDocument(listRuns(root, options)), null, 2)` gives,
 * without holding every report or the whole text: at 100,000 runs those
 * would be most of the CLI's memory. Returns what listRuns would, without
 * `runs`. Throws as listRuns does, before anything is written.
 */
export function writeRunsDocument(root: string, options: ListRunsOptions, write: (text: string) => void): Omit<RunList, 'runs'> {
  const doc = new RunsDocumentWriter(resolve(root), write);
  const r = visitRuns(root, options, (report) => doc.run(reportText(report)));
  doc.end(r.skipped, r.more, r.last);
  return { root: r.root, missing: r.missing, skipped: r.skipped, more: r.more };
}

/** A report as the `runs` array of the document holds it: nested two levels deep, every line after the first indented by four more spaces. */
export function reportText(report: RunReport): string {
  return JSON.stringify(report, null, 2).replace(/\n/g, '\n    ');
}

/**
 * Writes the `runs --json` document a piece at a time: the opening with the
 * first run, each run's {@link reportText}, then the skips and the cursor.
 * Byte for byte `JSON.stringify(runsDocument(list), null, 2)`.
 */
export class RunsDocumentWriter {
  private opened = false;

  constructor(
    private readonly abs: string,
    private readonly write: (text: string) => void,
  ) {}

  private opening(): string {
    return `{\n  "schema": ${JSON.stringify(JSON_SCHEMA)},\n  "root": ${JSON.stringify(this.abs)},\n  "runs": [`;
  }

  /** One run, as {@link reportText} gave it. */
  run(text: string): void {
    if (!this.opened) {
      this.opened = true;
      this.write(this.opening() + '\n    ' + text);
    } else {
      this.write(',\n    ' + text);
    }
  }

  /** The rest of the document: the skips (newest first), `more`, and `next_before` after `last` when there is more. */
  end(skippedEntries: readonly SkippedEntry[], more: boolean, last: string | undefined): void {
    let tail = this.opened ? '\n  ],\n' : this.opening() + '],\n';
    const skipped = skippedEntries.map((s) => ({ run_id: s.run_id, error: s.error }));
    tail += `  "skipped": ${JSON.stringify(skipped, null, 2).replace(/\n/g, '\n  ')},\n  "more": ${JSON.stringify(more)}`;
    if (more && last !== undefined) tail += `,\n  "next_before": ${JSON.stringify(last)}`;
    this.write(tail + '\n}');
  }
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
