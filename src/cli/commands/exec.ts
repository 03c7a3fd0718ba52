/**
 * `runwarden exec RUN -- CMD…`: run a command as one leg of a run, so every
 * reader can tell whether it is alive. Refusals (the run is locked, or its
 * state cannot be judged) exit 75 and leave the run exactly as it was.
 */
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { LockFileError, LockHeldError, RunFileError, RunUnreadableError, StreamError, WriteError } from '../../contract/errors.js';
import { EVENTS_FILE, LOCK_FILE } from '../../contract/files.js';
import { readStream } from '../../read/stream.js';
import { runDirPath, runFilePath } from '../../kernel/dirfd.js';
import { shellQuote } from '../../status/hints.js';
import { runStatus } from '../../status/inspect.js';
import { CLOSING_RESERVE_BYTES, isDiskFull } from '../../write/append.js';
import { runLeg, type Unwritten } from '../../write/leg.js';
import { err, Exit, UserError } from '../io.js';
import { printable } from '../term.js';
import { runTarget } from '../target.js';

interface ExecOptions {
  root?: string;
  force?: boolean;
  name?: string;
}

function refuse(message: string): never {
  throw new UserError(message, Exit.Refused);
}

function lockFileExists(runDir: string): boolean {
  try {
    lstatSync(runFilePath(runDir, LOCK_FILE));
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    return true; // present but odd: acquire will name what it is
  }
}

/**
 * A run directory under the root that is a symlink is refused (exit 2, a bad
 * RUN, as `status` refuses it): its files would land wherever it points. The
 * leg itself opens the directory without following links, so one that
 * becomes a symlink after this check is refused there (exit 75), never
 * written through.
 */
function refuseLinkedRunDir(run: string, root: string, runDir: string): void {
  let linked: boolean;
  try {
    linked = lstatSync(runDirPath(runDir)).isSymbolicLink();
  } catch {
    return; // missing: the leg creates it
  }
  if (linked) throw new UserError(`run "${printable(run)}" under ${printable(root)} is a symlink; links under the runs root are not followed, and exec will not write through one`);
}

/**
 * A run PAUSED at a gate waits for a person's decision (`oh-my-graph resume
 * … --approve/--reject`). A leg started on it would close with its own
 * `run_finished`, and the run would read PASS or FAIL: the decision the gate
 * waits for would be taken away without anyone making it. So exec refuses
 * (exit 2, a request that does not fit the run; nothing written) unless
 * --force says the person means it. This is exec's rule, not startLeg's: a
 * library leg on a paused run is how a resume that records the decision
 * (`gate_approved` / `gate_rejected`) is written.
 */
function refusePausedRun(runId: string, gates: readonly string[], force: boolean): void {
  const id = shellQuote(runId);
  const gate = gates.length === 1 ? shellQuote(gates[0] as string) : '<gate-id>';
  const where = gates.length === 0 ? 'at a gate' : gates.length === 1 ? `at gate ${gates[0]}` : `at gates ${gates.join(', ')}`;
  if (force) {
    err(`runwarden: warning: run ${printable(runId)} is PAUSED ${printable(where)}; starting a leg anyway (--force) ends the pause without a decision.`);
    return;
  }
  throw new UserError(
    `run ${runId} is PAUSED ${where}, waiting for a decision: approve with \`oh-my-graph resume ${id} --approve ${gate}\` ` +
      `or reject with \`oh-my-graph resume ${id} --reject ${gate}\`; a leg started now would end the pause without one ` +
      `(nothing was run; start anyway with --force).`,
    Exit.Usage,
  );
}

/**
 * What must be said or refused before a leg may start on this run. The leg
 * facts come from the whole-file forward fold, the reference's own reading,
 * not from the tail reader: a writer starts one leg and can afford it, and
 * the tail reader's declared difference (CONTRACT §2.5 rule 7, §6.2 item 7:
 * a lone finish far after a pause reads as closing a leg) must never let a
 * leg end a pause the reference still holds.
 */
function preflight(runDir: string, runId: string, force: boolean): void {
  let open: boolean;
  try {
    const { leg } = readStream(join(runDir, EVENTS_FILE));
    open = leg.open;
    // CONTRACT §4.3 row 4: a closed last leg whose outcome is `paused` is PAUSED, whatever else the run holds.
    if (!open && leg.lastOutcome === 'paused') refusePausedRun(runId, leg.gates ?? [], force);
  } catch (e) {
    if (e instanceof StreamError) refuse(`cannot start a leg of run ${runId}: ${e.message}`);
    throw e;
  }
  if (!open) return;
  if (!lockFileExists(runDir)) {
    if (!force) {
      refuse(
        `run ${runId} has a leg that never reported an end, and no ${LOCK_FILE}: runwarden cannot tell whether ` +
          `that leg is still running (a missing lock is not evidence that it stopped). ` +
          `If you know it is not running, start anyway with --force.`,
      );
    }
    err(`runwarden: warning: run ${printable(runId)} has an open leg and no ${LOCK_FILE}; starting anyway (--force).`);
    return;
  }
  let report;
  try {
    report = runStatus(runDir);
  } catch (e) {
    if (e instanceof RunUnreadableError) return; // the lock decides below
    throw e;
  }
  if (report.status === 'ABANDONED' && report.hint !== null) {
    err(`runwarden: warning: starting a new leg of an abandoned run.`);
    for (const line of report.hint.split('\n')) err(`  ${printable(line)}`);
  }
}

/**
 * The one line for closing events a full disk kept out of the stream: what
 * was not written, where, and what readers will say. The exit status stays
 * the command's own: the command did its work; only the record is missing.
 */
function diskFullLine(runId: string, u: Unwritten, exitCode: number): string {
  const why = u.errno === 'EDQUOT' ? 'EDQUOT, the disk quota is exhausted' : 'ENOSPC';
  const kept =
    u.reserve.state === 'kept'
      ? `they did not fit in the ${CLOSING_RESERVE_BYTES / 1024} KiB kept for them`
      : `this filesystem cannot keep room for them (${u.reserve.why})`;
  return (
    `runwarden: disk full: could not write ${u.events.join(' and ')} to ${printable(u.path)} (${why}; ${kept}); ` +
    `the command exited ${exitCode}, but run ${printable(runId)} will read ABANDONED.`
  );
}

export function registerExec(program: Command): void {
  program
    .command('exec')
    .summary('run a command as one leg of a run, holding its lock')
    .description(
      'Run CMD as one leg of RUN: take the run lock, append run_started and node_started to ' +
        'events.jsonl, run CMD in its own process group with stdio passed through, forward SIGINT, ' +
        'SIGTERM and SIGHUP to it, append its verdict and run_finished, release the lock, and exit ' +
        'with its exit code (128+N if signal N ended it).\n\n' +
        'RUN is a run id under the runs root, or a path containing "/" (on Windows also a drive letter or "\\"); the run directory is created if missing.\n\n' +
        'Refuses (exit 75, nothing appended, nothing run) when a leg of the run is in flight, when the ' +
        'lock file was written by a pre-flock or newer version, or when the stream shows an open leg and ' +
        'the lock file is missing (override that last case only with --force). Warns first when the run is abandoned.\n\n' +
        'Refuses (exit 2, nothing appended, nothing run) a run PAUSED at a gate: it waits for ' +
        '`oh-my-graph resume RUN --approve GATE` or `--reject GATE`, and a leg would end the pause without that ' +
        'decision; --force starts it anyway, with a warning.\n\n' +
        'A full disk: the leg keeps 16 KiB allocated past the end of events.jsonl for its closing events, so a ' +
        'command that fills the disk still gets its verdict recorded. If they cannot be written even so, exec says ' +
        '"disk full" in one line and still exits with the command\'s status; a disk too full to start a leg exits 1 ' +
        'and runs nothing.',
    )
    .argument('<run>', 'run id or run directory path')
    .argument('<command...>', 'the command and its arguments (after --)')
    .option('--root <dir>', 'runs root (default: $OMG_HOME/runs or ~/.oh-my-graph/runs)')
    .option('--force', 'start even though an open leg has no lock file, or the run is paused at a gate')
    .option('--name <node>', 'node id for the command in the stream', 'command')
    .action(async (run: string, command: string[], opts: ExecOptions) => {
      if (command.length === 0) throw new UserError('exec needs a command after --');
      if (command[0] === '') throw new UserError('exec needs a command after --, and the command name given is empty');
      const { root, runDir, runId } = runTarget(run, opts.root);
      const nodeId = opts.name ?? 'command';
      if (nodeId === '') throw new UserError('--name must not be empty');
      refuseLinkedRunDir(run, root, runDir);
      preflight(runDir, runId, opts.force === true);
      let result;
      try {
        result = await runLeg(runDir, command, { runId, nodeId });
      } catch (e) {
        // ELOCKIO (the kernel refused the directory or file: EACCES, EROFS …) is no
        // refusal of a busy run; it is an error (exit 1).
        if (e instanceof LockHeldError || (e instanceof LockFileError && e.code !== 'ELOCKIO') || e instanceof RunFileError) refuse(e.message);
        if (e instanceof WriteError && isDiskFull(e.errno)) {
          throw new UserError(
            `disk full: could not start a leg of run ${printable(runId)}: no room in ${printable(runDir)} for its first events and the ` +
              `${CLOSING_RESERVE_BYTES / 1024} KiB kept for its closing events (${e.errno}); the command was not run.`,
            Exit.Error,
          );
        }
        throw e;
      }
      if (result.runDirLost) {
        err(`runwarden: run ${printable(runId)}: its directory was removed or replaced while the leg ran, so the leg's verdict is not recorded where readers look.`);
        // The command's own failure wins; a success that readers cannot see is not a success.
        process.exitCode = result.exitCode !== 0 ? result.exitCode : Exit.Error;
        return;
      }
      if (result.unwritten !== undefined) err(diskFullLine(runId, result.unwritten, result.exitCode));
      process.exitCode = result.exitCode;
    });
}
