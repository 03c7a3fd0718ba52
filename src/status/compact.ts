/**
 * Keeping many reports at once (the live engine's and the dashboard's state
 * at 100,000 runs): strings that repeat across runs are kept once, and an
 * empty list of warnings is one shared array.
 *
 * Invariants:
 * - A compacted report is the same report: every field holds an equal
 *   value, in the same order (JSON.stringify gives the same text); only the
 *   string and array objects behind them may be shared with other reports.
 * - The table of kept strings is bounded ({@link INTERN_MAX} strings of at
 *   most {@link INTERN_LEN_MAX} characters); past it a string is kept as it
 *   is, so a root of a million distinct graph names costs no more than
 *   keeping every string apart.
 * - The shared empty array is frozen: a caller that tried to add a warning
 *   to it would throw rather than give every run that warning.
 */
import type { RunReport } from '../contract/types.js';

/** Most distinct strings kept once. */
export const INTERN_MAX = 4096;
/** Longest string kept once (characters); longer ones are per-run text anyway. */
export const INTERN_LEN_MAX = 256;

const table = new Map<string, string>();

/** The one kept copy of `s` (the first one seen), or `s` itself past the table's bounds. */
export function intern<T extends string | null>(s: T): T {
  if (s === null || s.length > INTERN_LEN_MAX) return s;
  const kept = table.get(s);
  if (kept !== undefined) return kept as T;
  if (table.size < INTERN_MAX) table.set(s, s);
  return s;
}

/** The empty warnings list every report without warnings shares. */
export const NO_WARNINGS: string[] = Object.freeze([]) as unknown as string[];

/**
 * `report` as a new object of one fixed shape, every field in the object
 * itself (buildReport's spread leaves most of them in a separate property
 * array: about 45 bytes more per report), its repeating strings (graph
 * name, warnings) interned, its run id replaced by `id` when they are equal
 * (the caller's copy of the name), and an empty warnings list replaced by
 * {@link NO_WARNINGS}. The keys are in the report's own order, so its JSON
 * is the same text.
 */
export function compactReport(report: RunReport, id?: string): RunReport {
  return {
    run_id: id !== undefined && report.run_id === id ? id : report.run_id,
    status: report.status,
    liveness: report.liveness,
    reason: report.reason,
    has_snapshot: report.has_snapshot,
    graph: intern(report.graph),
    nodes_total: report.nodes_total,
    nodes_passed: report.nodes_passed,
    cost_usd: report.cost_usd,
    cost_unknown: report.cost_unknown,
    hint: report.hint,
    warnings: report.warnings.length === 0 ? NO_WARNINGS : report.warnings.map((w) => intern(w)),
  } as RunReport;
}
