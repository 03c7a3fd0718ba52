/**
 * What every command shares: exit codes, the error shapes that map to them,
 * and printing. User errors print one line, never a stack trace.
 */

import { AddonLoadError } from '../contract/errors.js';
import { printable } from './term.js';

/** Exit codes, stable across commands. */
export const Exit = {
  Ok: 0,
  /** An unexpected failure (a bug, or the kernel refusing something). */
  Error: 1,
  /** Bad arguments, an unknown command, a run that does not exist. */
  Usage: 2,
  /** The run is ABANDONED (watch refuses to follow a corpse). */
  Abandoned: 3,
  /** A leg could not start because the run is locked (EX_TEMPFAIL). */
  Refused: 75,
  /** Interrupted by Ctrl-C. */
  Interrupted: 130,
} as const;

/** An error the user can fix: printed as one line, exit 2 unless told otherwise. */
export class UserError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode: number = Exit.Usage) {
    super(message);
    this.name = 'UserError';
    this.exitCode = exitCode;
  }
}

/** Writes a line to stdout. */
export function out(line = ''): void {
  process.stdout.write(line + '\n');
}

/** Writes a line to stderr. */
export function err(line = ''): void {
  process.stderr.write(line + '\n');
}

/** Prints a value as stable, indented JSON on stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

/**
 * Messages can quote run files (ids, paths, parse errors), so each line is
 * escaped like every other such text; the message's own line breaks stay.
 */
function escapeLines(message: string): string {
  return message.split('\n').map(printable).join('\n');
}

/** Maps any thrown value to a message and exit code; stacks only with RUNWARDEN_DEBUG. */
export function reportFailure(e: unknown): number {
  if (e instanceof UserError) {
    err(`runwarden: ${escapeLines(e.message)}`);
    return e.exitCode;
  }
  let message = (e instanceof Error ? e.message : String(e)).replace(/^runwarden: /, '');
  // A broken install is one line like every other failure: the loader's list of attempts is joined.
  if (e instanceof AddonLoadError) message = message.split('\n').map((l) => l.trim()).filter((l) => l !== '').join(' ');
  err(`runwarden: ${escapeLines(message)}`);
  if (process.env['RUNWARDEN_DEBUG'] && e instanceof Error && e.stack) err(e.stack);
  return Exit.Error;
}
