/**
 * `runwarden status [RUN]`: one run's full report. The report is one
 * inspection's (the same object `runs --json` lists), so the two commands
 * cannot disagree about a run; the human form adds the detail built from
 * that same inspection.
 */
import type { Command } from 'commander';
import { RunUnreadableError } from '../../contract/errors.js';
import { JSON_SCHEMA } from '../../contract/types.js';
import { detailOf, type RunDetail } from '../../status/detail.js';
import { inspectRun } from '../../status/inspect.js';
import { pickCurrentRun } from '../../status/list.js';
import { Exit, out, printJson, UserError } from '../io.js';
import { listRunsOrExplain, rootFrom, runDirFromArg } from '../target.js';
import { formatCost, paint, printable, quietOnClosedPipe, statusWord, useColor } from '../term.js';

const NODE_COLOR: Record<string, number> = { running: 214, passed: 34, failed: 160, 'gate-paused': 208, abandoned: 103, pending: 245 };

/** The human form of one run's report. */
export function renderStatus(d: RunDetail, color: boolean): string[] {
  const r = d.report;
  const lines = [`run ${printable(r.run_id)}  ${statusWord(r.status, color)}`];
  const row = (k: string, v: string) => lines.push(`  ${k.padEnd(9)} ${v}`);
  row('liveness', r.liveness === null ? 'not probed (last leg closed)' : `${r.liveness} (${r.reason})`);
  row('graph', printable(r.graph ?? '-'));
  row('nodes', r.nodes_total === null ? '-' : `${r.nodes_passed}/${r.nodes_total} passed`);
  row('cost', formatCost(r));
  row('snapshot', r.has_snapshot ? 'yes' : 'none readable');
  if (d.legs.length > 0) {
    const last = d.legs[d.legs.length - 1]!;
    const extra = `${last.outcome ? `, ${last.outcome}` : ''}${last.phase ? `, ${last.phase}` : ''}`;
    row('legs', `${d.legs_earlier + d.legs.length} (last: ${last.state}${printable(extra)})`);
  } else {
    row('legs', 'none');
  }
  if (d.nodes.length > 0) row('nodes by state', '');
  for (const n of d.nodes) lines.push(`    ${printable(n.id).padEnd(20)} ${paint(n.state, NODE_COLOR[n.state] ?? 245, color)}`);
  if (d.stream_error !== null) lines.push(`  note: the whole stream could not be read for node states: ${printable(d.stream_error)}`);
  if (r.hint !== null) {
    lines.push('hint:');
    for (const h of r.hint.split('\n')) lines.push(`  ${printable(h)}`);
  }
  if (r.warnings.length > 0) {
    lines.push('warnings:');
    for (const w of r.warnings) lines.push(`  ${printable(w)}`);
  }
  return lines;
}

export function registerStatus(program: Command): void {
  program
    .command('status')
    .summary("one run's report")
    .description(
      "Print one run's full report: status, liveness and the probe's reason, graph, nodes, cost, legs, " +
        'node states, and the hint for an ABANDONED or PAUSED run.\n\n' +
        'RUN is a run id under the runs root, or (when it contains "/", or on Windows a drive letter or "\\") a path to a run directory. ' +
        'Without RUN: the run happening now, i.e. the newest PLANNING or RUNNING run (never an ' +
        'ABANDONED one), else the newest run. Runs root, first match wins: --root DIR; $OMG_HOME/runs; ' +
        '$HOME/.oh-my-graph/runs.\n\n' +
        'Exit 0 for every status; 2 for a bad or unknown RUN; 1 when the run cannot be read. Writes nothing.',
    )
    .argument('[run]', 'run id under the root, or a path to a run directory')
    .option('--root <dir>', 'runs root directory')
    .option('--json', 'print the RunReport (the same object `runs --json` lists) with "schema" first')
    .action((run: string | undefined, opts: { root?: string; json?: boolean }) => {
      quietOnClosedPipe();
      const root = rootFrom(opts.root);
      let dir: string;
      if (run === undefined) {
        const list = listRunsOrExplain(root);
        const current = pickCurrentRun(list.runs);
        if (current === undefined) {
          const why = list.missing ? `${root} does not exist` : list.skipped.length > 0 ? `none of the ${list.skipped.length} entries under ${root} could be read` : `${root} is empty`;
          throw new UserError(`no runs to report: ${why}`);
        }
        dir = runDirFromArg(current.run_id, root);
      } else {
        dir = runDirFromArg(run, root);
      }
      let inspection;
      try {
        inspection = inspectRun(dir);
      } catch (e) {
        if (e instanceof RunUnreadableError) throw new UserError(`run ${printable(e.runId)} cannot be read: ${printable(e.message)}`, Exit.Error);
        throw e;
      }
      // The report alone needs only the tail; the human form also shows node states and legs.
      if (opts.json) {
        printJson({ schema: JSON_SCHEMA, ...inspection.report });
        return;
      }
      for (const line of renderStatus(detailOf(inspection, { events: 0 }), useColor())) out(line);
    });
}
