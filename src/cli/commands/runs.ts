/**
 * `runwarden runs`: every run under the root, newest first, with its status
 * from the one shared derivation (runStatus via listRuns). Also the table
 * renderer that `demo` reuses, so the two print a run the same way.
 *
 * Invariants: the table and `--json` come from the same RunList; colour by
 * term.ts's one rule (FORCE_COLOR, NO_COLOR, a terminal); nothing here
 * writes to disk.
 */
import type { Command } from 'commander';
import type { SkipKind } from '../../contract/errors.js';
import { STATUS_WORD, type RunReport, type Status } from '../../contract/types.js';
import { writeRunsDocument, type RunList } from '../../status/list.js';
import { threadsCap, writeRunsDocumentThreaded } from '../../status/list-threads.js';
import { err, out, UserError, writeStdoutSync } from '../io.js';
import { asUsage, asUsageAsync, listRunsOrExplain, once, rootFrom, selectionFrom } from '../target.js';
import { dim, formatCost, paint, printable, quietOnClosedPipe, STATE_COLOR, statusWord, useColor } from '../term.js';

function nodesCell(r: RunReport): string {
  return r.nodes_total === null || r.nodes_passed === null ? '-' : `${r.nodes_passed}/${r.nodes_total}`;
}

function clip(s: string, max: number): string {
  return s.length <= max ? s : s.slice(0, max - 1) + '…';
}

const SKIP_LABEL: Record<SkipKind, string> = {
  'unreadable-stream': 'unreadable events.jsonl',
  'unreadable-snapshot': 'unreadable state.json',
  'permission-denied': 'permission denied',
  'not-a-directory': 'not a directory',
  symlink: 'symlink',
  error: 'unexpected error',
};

const ORDER: (Status | null)[] = ['PLANNING', 'RUNNING', 'ABANDONED', 'PAUSED', 'PASS', 'FAIL', null];
const WORD: Record<string, string> = { ...STATUS_WORD, null: 'without a status yet' };

/** The environment variable that sets how many threads inspect runs for `runs --json`, this one included (0 or 1: this one alone). */
export const THREADS_ENV = 'RUNWARDEN_THREADS';

/** `RUNWARDEN_THREADS` as a thread count, or undefined (the default: status/list-threads.ts threadsFor). */
function threadsFromEnv(): number | undefined {
  const v = process.env[THREADS_ENV];
  if (v === undefined || v === '') return undefined;
  if (!/^\d{1,2}$/.test(v)) throw new UserError(`${THREADS_ENV} must be a whole number from 0 to 99 (got ${JSON.stringify(v)})`);
  const cap = threadsCap();
  if (Number(v) > cap) err(`runwarden: note: ${THREADS_ENV}=${v} is more than this machine's ${cap} ${cap === 1 ? 'core' : 'cores'}; using ${cap}`);
  return Number(v);
}

/** The closing line: how many runs are shown (by status) and how many were skipped, and why. */
export function closingLine(list: RunList, showSkipped: boolean): string {
  const counts = new Map<string, number>();
  for (const r of list.runs) counts.set(String(r.status), (counts.get(String(r.status)) ?? 0) + 1);
  const parts = ORDER.filter((s) => counts.has(String(s))).map((s) => `${counts.get(String(s))} ${WORD[String(s)]}`);
  const n = list.runs.length;
  let line = `${n} run${n === 1 ? '' : 's'} shown${parts.length > 0 ? ` (${parts.join(', ')})` : ''}`;
  if (list.more) {
    const last = list.runs[list.runs.length - 1];
    if (last !== undefined) line += `; more with --before ${printable(last.run_id)}`;
  }
  const m = list.skipped.length;
  if (m === 0) return `${line}; none skipped.`;
  const why = new Map<SkipKind, number>();
  for (const s of list.skipped) why.set(s.kind, (why.get(s.kind) ?? 0) + 1);
  const reasons = [...why].map(([k, c]) => `${c} ${SKIP_LABEL[k]}`).join(', ');
  line += `; ${m} skipped (${reasons})`;
  return showSkipped ? `${line}.` : `${line}; --show-skipped names them.`;
}

/** Renders the `runs` table (rows, hints, warnings, skipped names, closing line) as lines. */
export function renderRuns(list: RunList, opts: { color: boolean; showSkipped: boolean; filtered?: boolean }): string[] {
  const { color } = opts;
  const lines: string[] = [];
  if (list.missing) {
    lines.push(`No runs: ${printable(list.root)} does not exist (nothing has run under this root yet).`);
    return lines;
  }
  if (list.runs.length === 0 && list.skipped.length === 0) {
    lines.push(opts.filtered === true ? `No run under ${printable(list.root)} matches the selection.` : `No runs under ${printable(list.root)}.`);
    return lines;
  }
  lines.push(dim(`runs under ${printable(list.root)}`, color));
  if (list.runs.length > 0) {
    const rows = list.runs.map((r) => [printable(r.run_id), clip(printable(r.graph ?? '-'), 28), nodesCell(r), formatCost(r)]);
    const head = ['RUN', 'GRAPH', 'NODES', 'COST'];
    const width = head.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] as string).length)));
    const pad = (cells: string[]) => cells.map((c, i) => c.padEnd(width[i] as number)).join('  ');
    lines.push(dim(pad(head) + '  STATUS', color));
    list.runs.forEach((r, i) => {
      lines.push(pad(rows[i] as string[]) + '  ' + statusWord(r.status, color));
      if (r.hint !== null) for (const h of r.hint.split('\n')) lines.push('    ' + paint(printable(h), r.status === null ? STATE_COLOR.pending : STATE_COLOR[r.status], color));
      for (const w of r.warnings) lines.push('    ' + dim(`note: ${printable(w)}`, color));
    });
  }
  if (opts.showSkipped) for (const s of list.skipped) lines.push(`skipped ${printable(s.run_id)}: ${printable(s.error)}`);
  lines.push(closingLine(list, opts.showSkipped));
  return lines;
}

export function registerRuns(program: Command): void {
  program
    .command('runs')
    .summary('list every run, newest first, with its status')
    .description(
      'List every run directory under the runs root, newest first: id, graph, nodes passed/total, cost ' +
        'and status (PLANNING, RUNNING, ABANDONED, PAUSED, PASS, FAIL, or - for none yet). An ABANDONED ' +
        'or PAUSED run is followed by its hint. A run that cannot be read is skipped, never lost silently: ' +
        'the closing line counts skipped runs by reason and --show-skipped names them.\n\n' +
        'Runs root, first match wins: --root DIR; $OMG_HOME/runs; $HOME/.oh-my-graph/runs. ' +
        'Cost "+?" means some node costs are unknown and left out; "-" means there is no value. ' +
        'Colour only on a terminal and never with NO_COLOR set, unless FORCE_COLOR says otherwise ' +
          '(FORCE_COLOR=1 colours even into a pipe, FORCE_COLOR=0 never colours). Reads only; writes nothing.\n\n' +
        'Selecting: --status, --graph and --id narrow the list; --limit N shows the newest N that match ' +
        'and says whether more are left; --before ID continues after the run ID a previous page ended with ' +
        '(--json prints it as "next_before"). Example: runs --status abandoned --limit 20',
    )
    .option('--root <dir>', 'runs root directory')
    .option('--json', 'print {"schema","root","runs":[RunReport…],"skipped":[{"run_id","error"}],"more"[,"next_before"]}')
    .option('--show-skipped', 'name every skipped run and why')
    .option('--status <words>', 'only these statuses, comma-separated: planning, running, abandoned, paused, pass, fail, none', once('--status'))
    .option('--graph <name>', 'only runs of this graph (exact name)', once('--graph'))
    .option('--id <text>', 'only runs whose id contains this text', once('--id'))
    .option('--limit <n>', 'at most N runs (1 to 10000), newest first', once('--limit'))
    .option('--before <run-id>', 'only runs listed after this one (the next page)', once('--before'))
    .action(async (opts: { root?: string; json?: boolean; showSkipped?: boolean; status?: string; graph?: string; id?: string; limit?: string; before?: string }) => {
      quietOnClosedPipe();
      const select = selectionFrom(opts);
      if (opts.json) {
        // Streamed a report at a time (status/list.ts writeRunsDocument), encoded at once into a
        // 1 MiB buffer written when full: each report's text dies young, so the heap stays small.
        const buf = Buffer.allocUnsafe(1 << 20);
        let used = 0;
        const put = (text: string): void => {
          if (used + Buffer.byteLength(text) > buf.length) {
            writeStdoutSync(buf.subarray(0, used));
            used = 0;
          }
          if (Buffer.byteLength(text) > buf.length) writeStdoutSync(Buffer.from(text));
          else used += buf.write(text, used);
        };
        // Every run listed: the inspections may be spread over worker threads (status/list-threads.ts).
        const listed =
          select === undefined
            ? await asUsageAsync(() => writeRunsDocumentThreaded(rootFrom(opts.root), put, threadsFromEnv()))
            : asUsage(() => writeRunsDocument(rootFrom(opts.root), { select }, put));
        if (listed.missing) process.stderr.write(`runwarden: note: ${listed.root} does not exist; no runs\n`);
        put('\n');
        writeStdoutSync(buf.subarray(0, used));
        return;
      }
      const list = listRunsOrExplain(rootFrom(opts.root), select);
      for (const line of renderRuns(list, { color: useColor(), showSkipped: opts.showSkipped === true, filtered: select !== undefined })) out(line);
    });
}
