/**
 * Which runs a caller asked for: the one filter behind `runs --status/--graph/
 * --id/--limit/--before`, the dashboard API's `/api/runs?…` and the library's
 * `listRuns(root, { select })`.
 *
 * Invariants, and why:
 * - Name tests (`id`, `before`) come before any read, so a page of 20 runs out
 *   of 100,000 inspects only the runs it needs, not every run under the root.
 * - `before` is a cursor in the listing's own order (newest first, CONTRACT
 *   §1.1): the next page starts strictly after the last id of the previous
 *   one, so pages neither repeat nor skip a run that existed when both were read.
 * - The status filter speaks the status words of CONTRACT §4.3, plus `none`
 *   for a run with no status yet; anything else is refused, never ignored:
 *   a misspelt filter that silently matched nothing would read as "no runs".
 */
import { nameBytes } from '../contract/names.js';
import { STATUSES, type RunReport, type Status } from '../contract/types.js';

/** A selection of runs. Every field is optional; an empty selection selects every run. */
export interface RunSelection {
  /** Keep runs whose status is one of these; `null` stands for "no status yet". */
  status?: readonly (Status | null)[];
  /** Keep runs whose snapshot names exactly this graph. */
  graph?: string;
  /** Keep runs whose id contains this text. */
  id?: string;
  /** Keep only runs listed after this run id (newest first): the cursor for the next page. */
  before?: string;
  /** Stop after this many runs (1 to 10,000, `MAX_PAGE`); the listing says whether more were left. */
  limit?: number;
}

/** The largest page a caller may ask for. */
export const MAX_PAGE = 10_000;

/** The word for "no status yet" in a status filter (CLI and API). */
export const NO_STATUS_WORD = 'none';

/**
 * Parses a comma-separated status filter (`abandoned,running`, case-insensitive,
 * `none` for no status). Throws a RangeError naming the word it did not know.
 */
export function parseStatusFilter(text: string): (Status | null)[] {
  const out: (Status | null)[] = [];
  for (const raw of text.split(',')) {
    const word = raw.trim();
    if (word === '') continue;
    if (word.toLowerCase() === NO_STATUS_WORD) {
      out.push(null);
      continue;
    }
    const status = STATUSES.find((s) => s === word.toUpperCase());
    if (status === undefined) {
      throw new RangeError(`unknown status "${word}": use ${STATUSES.map((s) => s.toLowerCase()).join(', ')} or ${NO_STATUS_WORD}`);
    }
    out.push(status);
  }
  if (out.length === 0) throw new RangeError('the status filter names no status');
  return out;
}

/** Parses a page size; throws a RangeError unless it is a whole number from 1 to 10,000 (`MAX_PAGE`). */
export function parseLimit(text: string): number {
  const n = /^\d+$/.test(text.trim()) ? Number(text.trim()) : NaN;
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_PAGE) {
    throw new RangeError(`limit must be a whole number from 1 to ${MAX_PAGE}, not "${text}"`);
  }
  return n;
}

/** Checks a selection built by hand (library callers); throws TypeError/RangeError on a bad field. */
export function checkSelection(sel: RunSelection): void {
  if (sel.limit !== undefined && (!Number.isSafeInteger(sel.limit) || sel.limit < 1 || sel.limit > MAX_PAGE)) {
    throw new RangeError(`select.limit must be a whole number from 1 to ${MAX_PAGE}`);
  }
  if (sel.status !== undefined) {
    if (!Array.isArray(sel.status)) throw new TypeError('select.status must be an array of status words or null');
    for (const s of sel.status as readonly unknown[]) {
      if (s !== null && !(STATUSES as readonly unknown[]).includes(s)) throw new RangeError(`select.status: unknown status ${JSON.stringify(s)}`);
    }
  }
  for (const key of ['graph', 'id', 'before'] as const) {
    if (sel[key] !== undefined && typeof sel[key] !== 'string') throw new TypeError(`select.${key} must be a string`);
  }
}

/** Whether a run directory's name can be selected at all, before anything is read. */
export function selectsName(sel: RunSelection, name: string): boolean {
  // Compared as the bytes the shown names stand for: the order listRuns sorts by.
  if (sel.before !== undefined && Buffer.compare(nameBytes(sel.before), nameBytes(name)) <= 0) return false;
  if (sel.id !== undefined && !name.includes(sel.id)) return false;
  return true;
}

/** Whether a run's report matches the selection's status and graph tests. */
export function selectsReport(sel: RunSelection, report: RunReport): boolean {
  if (sel.status !== undefined && !sel.status.includes(report.status)) return false;
  if (sel.graph !== undefined && report.graph !== sel.graph) return false;
  return true;
}

/** Whether the selection needs a run's report (its status or graph) to decide; a skipped run then never matches. */
export function needsReport(sel: RunSelection): boolean {
  return sel.status !== undefined || sel.graph !== undefined;
}
