/**
 * `runwarden runs`: every run under the root, newest first, with its status
 * from the one shared derivation (runStatus via listRuns). Also the table
 * renderer that `demo` reuses, so the two print a run the same way.
 *
 * Invariants: the table and `--json` come from the same RunList; colour by
 * term.ts's one rule (FORCE_COLOR, NO_COLOR, a terminal); nothing here
 * writes to disk.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { SkipKind } from '../../contract/errors.js';
import { STATUS_WORD, type RunReport, type Status } from '../../contract/types.js';
import { forEachRun, writeRunsDocument, type RunList, type SkippedEntry } from '../../status/list.js';
import { threadsCap, writeRunsDocumentThreaded } from '../../status/list-threads.js';
import { err, Exit, UserError, writeStdoutSync } from '../io.js';
import { asUsage, asUsageAsync, once, rootFrom, selectionFrom } from '../target.js';
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
  'no-descriptors': 'no file descriptor to spare',
  error: 'unexpected error',
};

/**
 * A listing lists every run or fails: runs that could not be read for want
 * of file descriptors (EMFILE, after a retry alone) are named in one line on
 * stderr and the command exits 1, whatever else it printed. Answers whether
 * it did.
 */
export function failUnread(skipped: readonly SkippedEntry[]): boolean {
  const lacking = skipped.filter((s) => s.kind === 'no-descriptors').map((s) => s.run_id);
  if (lacking.length === 0) return false;
  const shown = lacking.slice(0, 5).map((id) => printable(id)).join(', ') + (lacking.length > 5 ? `, and ${lacking.length - 5} more` : '');
  err(`runwarden: ${lacking.length} ${lacking.length === 1 ? 'run' : 'runs'} could not be read: this process has no file descriptor to spare (EMFILE): ${shown}; raise its limit (ulimit -n) and list again`);
  process.exitCode = Exit.Error;
  return true;
}

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
  return closingLineOf({ counts, shown: list.runs.length, last: list.runs[list.runs.length - 1]?.run_id, skipped: list.skipped, more: list.more }, showSkipped);
}

/** What the closing line says, gathered as the rows go by: runs shown by status, the last id shown, the skips, whether more follow. */
interface Tally {
  counts: Map<string, number>;
  shown: number;
  last: string | undefined;
  skipped: readonly SkippedEntry[];
  more: boolean;
}

function closingLineOf(t: Tally, showSkipped: boolean): string {
  const parts = ORDER.filter((s) => t.counts.has(String(s))).map((s) => `${t.counts.get(String(s))} ${WORD[String(s)]}`);
  const n = t.shown;
  let line = `${n} run${n === 1 ? '' : 's'} shown${parts.length > 0 ? ` (${parts.join(', ')})` : ''}`;
  if (t.more && t.last !== undefined) line += `; more with --before ${printable(t.last)}`;
  const m = t.skipped.length;
  if (m === 0) return `${line}; none skipped.`;
  const why = new Map<SkipKind, number>();
  for (const s of t.skipped) why.set(s.kind, (why.get(s.kind) ?? 0) + 1);
  const reasons = [...why].map(([k, c]) => `${c} ${SKIP_LABEL[k]}`).join(', ');
  line += `; ${m} skipped (${reasons})`;
  return showSkipped ? `${line}.` : `${line}; --show-skipped names them.`;
}

/**
 * Rows the `runs` table holds before it prints them. A column is as wide as
 * its widest cell among the rows printed so far and the page being printed,
 * so a list of up to this many runs is aligned as a whole, and a longer one
 * costs a page of rows in memory instead of every report (which at 100,000
 * runs would be most of the command's memory). A wider cell in a later page widens its column from that
 * page on; the header keeps the first page's widths.
 */
export const TABLE_PAGE_ROWS = 256;

const HEAD = ['RUN', 'GRAPH', 'NODES', 'COST'];

/**
 * The `runs` table, printed as reports arrive: `add` each report (newest
 * first), then `end` with the listing's outcome. Lines go to `emit`; at most
 * {@link TABLE_PAGE_ROWS} rows are held at any time (`maxHeld` records the
 * most, for the test that bounds it).
 */
export class RunsTable {
  private page: { cells: string[]; report: RunReport }[] = [];
  private readonly width = HEAD.map((h) => h.length);
  private started = false;
  private readonly counts = new Map<string, number>();
  private shown = 0;
  private last: string | undefined;
  maxHeld = 0;

  constructor(
    private readonly root: string,
    private readonly emit: (line: string) => void,
    private readonly color: boolean,
  ) {}

  add(r: RunReport): void {
    this.page.push({ cells: [printable(r.run_id), clip(printable(r.graph ?? '-'), 28), nodesCell(r), formatCost(r)], report: r });
    this.maxHeld = Math.max(this.maxHeld, this.page.length);
    this.shown++;
    this.last = r.run_id;
    this.counts.set(String(r.status), (this.counts.get(String(r.status)) ?? 0) + 1);
    if (this.page.length >= TABLE_PAGE_ROWS) this.flush();
  }

  private flush(): void {
    const color = this.color;
    for (const row of this.page) row.cells.forEach((c, i) => (this.width[i] = Math.max(this.width[i] as number, c.length)));
    const pad = (cells: string[]): string => cells.map((c, i) => c.padEnd(this.width[i] as number)).join('  ');
    if (!this.started) {
      this.started = true;
      this.emit(dim(`runs under ${printable(this.root)}`, color));
      this.emit(dim(pad(HEAD) + '  STATUS', color));
    }
    for (const { cells, report: r } of this.page) {
      this.emit(pad(cells) + '  ' + statusWord(r.status, color));
      if (r.hint !== null) for (const h of r.hint.split('\n')) this.emit('    ' + paint(printable(h), r.status === null ? STATE_COLOR.pending : STATE_COLOR[r.status], color));
      for (const w of r.warnings) this.emit('    ' + dim(`note: ${printable(w)}`, color));
    }
    this.page = [];
  }

  /** The rest of the table: the last page, the skipped runs when asked for, the closing line; or the one line for a missing or empty root. */
  end(listed: Omit<RunList, 'runs'>, opts: { showSkipped: boolean; filtered?: boolean }): void {
    if (listed.missing) {
      this.emit(`No runs: ${printable(listed.root)} does not exist (nothing has run under this root yet).`);
      return;
    }
    if (this.shown === 0 && listed.skipped.length === 0) {
      this.emit(opts.filtered === true ? `No run under ${printable(listed.root)} matches the selection.` : `No runs under ${printable(listed.root)}.`);
      return;
    }
    if (this.shown > 0) this.flush();
    else this.emit(dim(`runs under ${printable(this.root)}`, this.color));
    if (opts.showSkipped) for (const s of listed.skipped) this.emit(`skipped ${printable(s.run_id)}: ${printable(s.error)}`);
    this.emit(closingLineOf({ counts: this.counts, shown: this.shown, last: this.last, skipped: listed.skipped, more: listed.more }, opts.showSkipped));
  }
}

/** Renders the `runs` table (rows, hints, warnings, skipped names, closing line) of a listing already made, as lines; {@link RunsTable} prints the same as reports arrive. */
export function renderRuns(list: RunList, opts: { color: boolean; showSkipped: boolean; filtered?: boolean }): string[] {
  const lines: string[] = [];
  const table = new RunsTable(list.root, (l) => lines.push(l), opts.color);
  for (const r of list.runs) table.add(r);
  table.end(list, opts);
  return lines;
}

/**
 * Text for stdout gathered into a 1 MiB buffer written when full (and by
 * `flush`), so each piece dies young and a slow reader is waited for, not
 * queued for in memory (writeStdoutSync).
 */
function stdoutBuffer(): { put: (text: string) => void; flush: () => void } {
  const buf = Buffer.allocUnsafe(1 << 20);
  let used = 0;
  return {
    put(text: string): void {
      const n = Buffer.byteLength(text);
      if (used + n > buf.length) {
        writeStdoutSync(buf.subarray(0, used));
        used = 0;
      }
      if (n > buf.length) writeStdoutSync(Buffer.from(text));
      else used += buf.write(text, used);
    },
    flush(): void {
      writeStdoutSync(buf.subarray(0, used));
      used = 0;
    },
  };
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
        const { put, flush } = stdoutBuffer();
        // Every run listed: the inspections may be spread over worker threads (status/list-threads.ts).
        const listed =
          select === undefined
            ? await asUsageAsync(() => writeRunsDocumentThreaded(rootFrom(opts.root), put, threadsFromEnv()))
            : asUsage(() => writeRunsDocument(rootFrom(opts.root), { select }, put));
        if (listed.missing) process.stderr.write(`runwarden: note: ${listed.root} does not exist; no runs\n`);
        put('\n');
        flush();
        failUnread(listed.skipped);
        return;
      }
      // The table, printed a page of rows at a time as the reports arrive (RunsTable).
      const { put, flush } = stdoutBuffer();
      const root = rootFrom(opts.root);
      const table = new RunsTable(resolve(root), (line) => put(line + '\n'), useColor());
      const listed = asUsage(() => forEachRun(root, select === undefined ? {} : { select }, (r) => table.add(r)));
      table.end(listed, { showSkipped: opts.showSkipped === true, filtered: select !== undefined });
      flush();
      failUnread(listed.skipped);
    });
}
