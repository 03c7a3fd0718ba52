/**
 * `runwarden runs`: every run under the root, newest first, with its status
 * from the one shared derivation (runStatus via listRuns). Also the table
 * renderer and colour rules that `status` and `demo` reuse, so the three
 * print a run the same way.
 *
 * Invariants: the table and `--json` come from the same RunList; colour only
 * on a TTY and never when NO_COLOR is set; nothing here writes to disk.
 */
import type { Command } from 'commander';
import { listRuns, resolveRoot, RunIdError, STATUS_WORD, type RunList, type SkipKind } from '../../status/inspect.js';
import type { RunReport, Status } from '../../contract/types.js';
import { out, printJson, UserError } from '../io.js';

let guarded = false;
/**
 * A reader that stops early (`runwarden runs | head`) closes the pipe; the
 * next write then fails with EPIPE. For these read-only commands that is the
 * end of the output, not an error: exit quietly instead of with a stack trace.
 */
export function quietOnClosedPipe(): void {
  if (guarded) return;
  guarded = true;
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
    process.stderr.write(`runwarden: cannot write output: ${e.code ?? e.message}\n`);
    process.exit(1);
  });
}

/** Colour is used only when stdout is a terminal and NO_COLOR is not set (at all). */
export function useColor(stream: { isTTY?: boolean } = process.stdout, env: NodeJS.ProcessEnv = process.env): boolean {
  return stream.isTTY === true && env['NO_COLOR'] === undefined;
}

/** One colour per state (SPEC C.3), as 256-colour ANSI codes. */
const STATE_COLOR: Record<Status | 'pending', number> = {
  RUNNING: 214, // amber
  PASS: 34, // green
  FAIL: 160, // red
  PAUSED: 208, // orange
  PLANNING: 33, // blue
  pending: 245, // grey
  ABANDONED: 103, // muted grey-violet: nothing failed
};

/**
 * Makes a string from a run directory safe to print on a terminal: control
 * characters (C0, DEL, C1) become visible `\xNN` escapes. Run ids, graph
 * names, node ids and error texts come from files anyone could have written,
 * and must not be able to move the cursor or recolour the screen.
 */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** Paints text with a 256-colour code, or returns it unchanged without colour. */
export function paint(text: string, code: number, color: boolean): string {
  return color ? `\x1b[38;5;${code}m${text}\x1b[0m` : text;
}

function dim(text: string, color: boolean): string {
  return color ? `\x1b[2m${text}\x1b[0m` : text;
}

/** A status word in its state colour; `-` (grey) for a run with no status yet. */
export function statusWord(status: Status | null, color: boolean): string {
  return status === null ? paint('-', STATE_COLOR.pending, color) : paint(status, STATE_COLOR[status], color);
}

/** Cost as `$0.1234`; `+?` marks a total that leaves out costs that are unknown; `-` when there is no snapshot. */
export function formatCost(r: Pick<RunReport, 'cost_usd' | 'cost_unknown'>): string {
  if (r.cost_usd === null) return '-';
  if (r.cost_unknown) return r.cost_usd === 0 ? 'unknown' : `$${r.cost_usd.toFixed(4)}+?`;
  return `$${r.cost_usd.toFixed(4)}`;
}

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

/** The closing line: how many runs are shown (by status) and how many were skipped, and why. */
export function closingLine(list: RunList, showSkipped: boolean): string {
  const counts = new Map<string, number>();
  for (const r of list.runs) counts.set(String(r.status), (counts.get(String(r.status)) ?? 0) + 1);
  const parts = ORDER.filter((s) => counts.has(String(s))).map((s) => `${counts.get(String(s))} ${WORD[String(s)]}`);
  const n = list.runs.length;
  let line = `${n} run${n === 1 ? '' : 's'} shown${parts.length > 0 ? ` (${parts.join(', ')})` : ''}`;
  const m = list.skipped.length;
  if (m === 0) return `${line}; none skipped.`;
  const why = new Map<SkipKind, number>();
  for (const s of list.skipped) why.set(s.kind, (why.get(s.kind) ?? 0) + 1);
  const reasons = [...why].map(([k, c]) => `${c} ${SKIP_LABEL[k]}`).join(', ');
  line += `; ${m} skipped (${reasons})`;
  return showSkipped ? `${line}.` : `${line}; --show-skipped names them.`;
}

/** Renders the `runs` table (rows, hints, warnings, skipped names, closing line) as lines. */
export function renderRuns(list: RunList, opts: { color: boolean; showSkipped: boolean }): string[] {
  const { color } = opts;
  const lines: string[] = [];
  if (list.missing) {
    lines.push(`No runs: ${printable(list.root)} does not exist (nothing has run under this root yet).`);
    return lines;
  }
  if (list.runs.length === 0 && list.skipped.length === 0) {
    lines.push(`No runs under ${printable(list.root)}.`);
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

/** `runs --json`, exactly SPEC C.2: `{ root, runs: [RunReport…], skipped: [{ run_id, error }] }`. */
export function runsJson(list: RunList): { root: string; runs: RunReport[]; skipped: { run_id: string; error: string }[] } {
  return { root: list.root, runs: list.runs, skipped: list.skipped.map((s) => ({ run_id: s.run_id, error: s.error })) };
}

/** listRuns with library errors turned into user errors (exit 2). */
export function listRunsOrExplain(root: string): RunList {
  try {
    return listRuns(root);
  } catch (e) {
    if (e instanceof RunIdError) throw new UserError(e.message);
    throw e;
  }
}

/** The root from `--root` or the environment, with a bad `--root` as a user error. */
export function rootFrom(option: string | undefined): string {
  try {
    return resolveRoot(option);
  } catch (e) {
    if (e instanceof RunIdError) throw new UserError(e.message);
    throw e;
  }
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
        'Colour only on a terminal, never with NO_COLOR set. Reads only; writes nothing.',
    )
    .option('--root <dir>', 'runs root directory')
    .option('--json', 'print {"root","runs":[RunReport…],"skipped":[{"run_id","error"}]}')
    .option('--show-skipped', 'name every skipped run and why')
    .action((opts: { root?: string; json?: boolean; showSkipped?: boolean }) => {
      quietOnClosedPipe();
      const list = listRunsOrExplain(rootFrom(opts.root));
      if (opts.json) {
        if (list.missing) process.stderr.write(`runwarden: note: ${list.root} does not exist; no runs\n`);
        printJson(runsJson(list));
        return;
      }
      for (const line of renderRuns(list, { color: useColor(), showSkipped: opts.showSkipped === true })) out(line);
    });
}
