/**
 * Listing every run under a root (CONTRACT §1.1): one inspection per run
 * directory, newest first; every entry ends as a report or a named skip.
 */
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { RunIdError, RunUnreadableError, type SkipKind } from '../contract/errors.js';
import { compareNewestFirst } from '../contract/runid.js';
import { IN_FLIGHT, type RunReport, type SkippedRun } from '../contract/types.js';
import { runStatus, type RunStatusOptions } from './inspect.js';

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
}

/**
 * Reports every run directory under `root`, newest first. Each entry ends as
 * a report or a named skip: a symlink (never followed: nothing outside the
 * root is read), a non-directory, or a run that cannot be read. One bad run
 * never costs another its row. A missing root is an empty list with
 * `missing: true`. Throws RunIdError only if the root exists but is not a
 * readable directory.
 */
export function listRuns(root: string, options: ListRunsOptions = {}): RunList {
  const abs = resolve(root);
  let entries;
  try {
    entries = readdirSync(abs, { withFileTypes: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { root: abs, missing: true, runs: [], skipped: [] };
    if (code === 'ENOTDIR') throw new RunIdError(`runs root "${abs}" is not a directory`);
    throw new RunIdError(`cannot read runs root "${abs}": ${code ?? String(err)}`);
  }
  entries.sort((a, b) => compareNewestFirst(a.name, b.name));
  const runs: RunReport[] = [];
  const skipped: SkippedEntry[] = [];
  for (const e of entries) {
    const name = e.name;
    if (e.isSymbolicLink()) {
      skipped.push({ run_id: name, error: 'is a symlink; links under the runs root are not followed', kind: 'symlink' });
      continue;
    }
    if (!e.isDirectory()) {
      const what = e.isFile() ? 'a regular file' : e.isFIFO() ? 'a fifo' : e.isSocket() ? 'a socket' : 'not a directory';
      skipped.push({ run_id: name, error: `is ${what}, not a run directory`, kind: 'not-a-directory' });
      continue;
    }
    try {
      runs.push(options.report ? options.report(join(abs, name)) : runStatus(join(abs, name), options));
    } catch (err) {
      if (err instanceof RunUnreadableError) skipped.push({ run_id: name, error: err.message, kind: err.kind });
      else skipped.push({ run_id: name, error: err instanceof Error ? err.message : String(err), kind: 'error' });
    }
  }
  return { root: abs, missing: false, runs, skipped };
}

/**
 * "The run happening now" (`status` with no RUN): the newest run in flight
 * (PLANNING or RUNNING), never an abandoned one; else the newest run.
 * `runs` must be newest first, as {@link listRuns} returns them.
 */
export function pickCurrentRun(runs: readonly RunReport[]): RunReport | undefined {
  return runs.find((r) => r.status !== null && IN_FLIGHT.has(r.status)) ?? runs[0];
}
