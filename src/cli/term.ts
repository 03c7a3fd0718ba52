/**
 * Printing to a terminal, the one way every command does it: colour rules,
 * the state colours, and the escaping of text that came from run files.
 *
 * Invariants:
 * - Colour by one rule (useColor): FORCE_COLOR decides when it is set, as
 *   Node itself reads it; otherwise NO_COLOR (set at all) turns it off;
 *   otherwise colour only on a terminal.
 * - Text from a run directory (run ids, graph and node names, commands,
 *   hints that quote them, error texts) goes through {@link printable}
 *   before it reaches a terminal, so a file cannot move the cursor, retitle
 *   the window or recolour the screen.
 */
import { printableText } from '../contract/names.js';
import type { RunReport, Status } from '../contract/types.js';

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

/** FORCE_COLOR values that turn colour on, as Node's own tty.hasColors() reads them (any other value turns it off). */
const FORCE_ON: ReadonlySet<string> = new Set(['', '1', '2', '3', 'true']);

/**
 * Whether to colour output on `stream`, first rule that applies:
 * 1. FORCE_COLOR is set: colour for `''`, `1`, `2`, `3` or `true`, even into
 *    a pipe or file; none for any other value (`0`, `false`). This is how
 *    Node itself reads it, and it wins over NO_COLOR, as in Node.
 * 2. NO_COLOR is set (to anything, even empty): no colour.
 * 3. Colour only when the stream is a terminal.
 */
export function useColor(stream: { isTTY?: boolean } = process.stdout, env: NodeJS.ProcessEnv = process.env): boolean {
  const force = env['FORCE_COLOR'];
  if (force !== undefined) return FORCE_ON.has(force);
  return stream.isTTY === true && env['NO_COLOR'] === undefined;
}

/** One colour per state (CONTRACT §5.3), as 256-colour ANSI codes. */
export const STATE_COLOR: Record<Status | 'pending', number> = {
  RUNNING: 214, // amber
  PASS: 34, // green
  FAIL: 160, // red
  PAUSED: 208, // orange
  PLANNING: 33, // blue
  pending: 245, // grey
  ABANDONED: 103, // muted grey-violet: nothing failed
};

/**
 * Makes a string from a run directory safe to print on a terminal: the one
 * rule, contract/names.ts printableText (C0, DEL as `\xHH`; C1 and the bidi
 * controls as `\u{HHHH}`).
 */
export const printable: (text: string) => string = printableText;

/** Paints text with a 256-colour code, or returns it unchanged without colour. */
export function paint(text: string, code: number, color: boolean): string {
  return color ? `\x1b[38;5;${code}m${text}\x1b[0m` : text;
}

/** Dims text, or returns it unchanged without colour. */
export function dim(text: string, color: boolean): string {
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
