/**
 * What every command shares: exit codes, the error shapes that map to them,
 * and printing. User errors print one line, never a stack trace.
 */

import { writeSync } from 'node:fs';
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

const sleeper = new Int32Array(new SharedArrayBuffer(4));

/**
 * The one way a command writes to stdout: every byte is written before this
 * returns, or the command ends. Invariants, and why:
 * - A short write is continued, never taken for the whole (Node's stream for
 *   a file took a write of 8,192 of 11,319 bytes on a full disk as done and
 *   `metrics` exited 0 with a truncated document, which `> F.$$ && mv`
 *   then installed).
 * - Any failure but EPIPE (ENOSPC, EDQUOT, EIO, EBADF …) ends the command:
 *   one line on stderr, exit 1. A document cut short is not a success.
 * - EPIPE (the reader closed the pipe: `runwarden runs | head`) ends the
 *   command quietly with the exit status it had so far: the reader chose to
 *   stop, as is conventional for a Unix filter.
 * - A pipe that cannot take more now (EAGAIN, a non-blocking stdout) is
 *   waited for, so a large document never queues in memory whole (at
 *   100,000 runs that would be hundreds of MB).
 */
export function writeStdoutSync(data: string | Uint8Array): void {
  const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  let off = 0;
  while (off < buf.length) {
    try {
      off += writeSync(1, buf, off, buf.length - off);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EAGAIN') {
        Atomics.wait(sleeper, 0, 0, 1);
        continue;
      }
      if (code === 'EPIPE') process.exit(typeof process.exitCode === 'number' ? process.exitCode : Exit.Ok);
      try {
        writeSync(2, `runwarden: cannot write output: ${code ?? String(e)}; what was written is incomplete\n`);
      } catch {
        /* stderr is gone too: the exit status still says it */
      }
      process.exit(Exit.Error);
    }
  }
}

/** Writes a line to stdout ({@link writeStdoutSync}). */
export function out(line = ''): void {
  writeStdoutSync(line + '\n');
}

/** Writes a line to stderr. */
export function err(line = ''): void {
  process.stderr.write(line + '\n');
}

/** Prints a value as stable, indented JSON on stdout ({@link writeStdoutSync}). */
export function printJson(value: unknown): void {
  writeStdoutSync(JSON.stringify(value, null, 2) + '\n');
}

/**
 * Every failure is one line. A user error's message is built by this CLI
 * from one line of wording, so any line break in it came from a run file
 * (a run id, a path, a parse error) and is escaped like every other such
 * text (contract/names.ts printableText). Another error's message may have
 * lines of its own (the addon loader lists what it tried): each is escaped,
 * and they are joined with spaces.
 */
function oneLine(e: unknown): string {
  if (e instanceof UserError) return printable(e.message);
  const message = (e instanceof Error ? e.message : String(e)).replace(/^runwarden: /, '');
  return message
    .split('\n')
    .map((l) => printable(l.trim()))
    .filter((l) => l !== '')
    .join(' ');
}

/** Maps any thrown value to a message and exit code; stacks only with RUNWARDEN_DEBUG. */
export function reportFailure(e: unknown): number {
  err(`runwarden: ${oneLine(e)}`);
  if (e instanceof UserError) return e.exitCode;
  if (process.env['RUNWARDEN_DEBUG'] && e instanceof Error && e.stack) err(e.stack);
  return Exit.Error;
}
