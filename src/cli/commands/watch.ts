/**
 * `runwarden watch RUN`: say what the run is, replay its stream, follow it to
 * the end of its last leg, and never wait on a corpse: an abandoned run is
 * refused at once, and while the stream is idle the run is re-derived (a
 * read-only probe) every 2 seconds, so a leg that dies mid-watch ends the
 * watch with the hint instead of hanging.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { RunUnreadableError, StreamError } from '../../contract/errors.js';
import type { StreamEvent } from '../../contract/events.js';
import { EVENTS_FILE } from '../../contract/files.js';
import type { StreamFold } from '../../contract/fold.js';
import type { RunReport } from '../../contract/types.js';
import { monotonicMs } from '../../kernel/clock.js';
import { followStream } from '../../read/follow.js';
import { runStatus } from '../../status/inspect.js';
import { err, Exit, out, UserError } from '../io.js';
import { printable, quietOnClosedPipe } from '../term.js';
import { runTarget } from '../target.js';

/** How long the stream may stay silent before the run is re-derived. */
export const IDLE_RECHECK_MS = 1000;

function clock(ts: unknown): string {
  if (typeof ts !== 'string') return '--:--:--';
  const m = /T(\d\d:\d\d:\d\d)/.exec(ts);
  return m ? (m[1] as string) : ts.slice(0, 8);
}

function money(v: unknown): string {
  return typeof v === 'number' && Number.isFinite(v) ? `  $${v.toFixed(4)}` : '';
}

function text(v: unknown): string {
  // Control characters from a hostile stream must not drive the terminal.
  return typeof v === 'string' ? printable(v) : '';
}

/** One readable line per event, or undefined for events not worth a line. */
export function describeEvent(ev: StreamEvent): string | undefined {
  const node = text(ev.node_id);
  const detail = text(ev['detail']);
  let what: string;
  switch (ev.event) {
    case 'run_started':
      what = ev.phase === 'planning' ? 'leg started (planning)' : 'leg started';
      if (Array.isArray(ev['command'])) what += `: ${(ev['command'] as unknown[]).map(text).join(' ')}`;
      break;
    case 'run_finished':
      what = `leg finished: ${text(ev.outcome) || 'no outcome'}${detail ? ` (${detail})` : ''}`;
      break;
    case 'node_started':
      what = `node ${node} started`;
      break;
    case 'node_passed':
      what = `node ${node} passed${ev['cost_unknown'] === true ? '  cost unknown' : money(ev['cost_usd'])}`;
      break;
    case 'node_failed':
      what = `node ${node} failed${detail ? `: ${detail}` : ''}${money(ev['cost_usd'])}`;
      break;
    case 'node_retried':
      what = `node ${node} retried${typeof ev['retries'] === 'number' ? ` (retry ${ev['retries']})` : ''}`;
      break;
    case 'gate_paused':
      what = `gate ${node} paused, waiting for a decision`;
      break;
    case 'gate_approved':
      what = `gate ${node} approved`;
      break;
    case 'gate_rejected':
      what = `gate ${node} rejected`;
      break;
    default:
      return undefined;
  }
  return `${clock(ev.ts)}  ${what}`;
}

function derive(runDir: string): RunReport | undefined {
  try {
    return runStatus(runDir);
  } catch (e) {
    if (e instanceof RunUnreadableError) return undefined;
    throw e;
  }
}

/**
 * Whether the run directory is affirmatively gone (removed, or no longer a
 * directory). Any other doubt (a permission error) is not "gone": watch
 * keeps waiting.
 */
function runDirGone(runDir: string): boolean {
  try {
    return !statSync(runDir).isDirectory();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR';
  }
}

function printHint(report: RunReport): void {
  if (report.hint === null) return;
  for (const line of report.hint.split('\n')) err(printable(line));
}

export function registerWatch(program: Command): void {
  program
    .command('watch')
    .summary('follow a run until its last leg ends; refuse an abandoned one')
    .description(
      'Print "run <id> is <STATUS>", replay the run\'s events, then follow new ones until the run_finished ' +
        'that closes its last leg (exit 0).\n\n' +
        'An ABANDONED run is refused at once with its recovery hint on stderr (exit 3). While no event ' +
        `arrives the run is re-derived every ${IDLE_RECHECK_MS / 1000} s with a read-only probe; if its leg dies ` +
        'mid-watch the hint is printed and watch exits 3. A run not started yet whose directory is removed while ' +
        'watch waits for its first leg ends the watch with exit 1. Malformed lines are warned about and skipped. ' +
        'Ctrl-C exits 130. watch never writes anything.',
    )
    .argument('<run>', 'run id or run directory path')
    .option('--root <dir>', 'runs root (default: $OMG_HOME/runs or ~/.oh-my-graph/runs)')
    .action(async (run: string, opts: { root?: string }) => {
      quietOnClosedPipe();
      const { runDir, runId: rawId } = runTarget(run, opts.root, true);
      const runId = printable(rawId);
      let first: RunReport;
      try {
        first = runStatus(runDir);
      } catch (e) {
        if (e instanceof RunUnreadableError) throw new UserError(`run ${runId} cannot be read: ${e.message}`, Exit.Error);
        throw e;
      }
      out(`run ${runId} is ${first.status ?? 'not started yet'}`);
      if (first.status === 'ABANDONED') {
        printHint(first);
        process.exitCode = Exit.Abandoned;
        return;
      }

      const abort = new AbortController();
      let interrupted = false;
      const onInt = () => {
        interrupted = true;
        abort.abort();
      };
      process.once('SIGINT', onInt);
      let lastCheck = monotonicMs();
      let outcome: 'finished' | 'abandoned' | 'vanished' | undefined;
      let dead: RunReport | undefined;
      const settledAtStart = first.status !== null && first.status !== 'RUNNING' && first.status !== 'PLANNING';
      try {
        await followStream(
          join(runDir, EVENTS_FILE),
          {
            onEvent(ev) {
              const line = describeEvent(ev);
              if (line !== undefined) out(line);
            },
            onSkip(offset) {
              err(`runwarden: warning: skipped a malformed line at byte ${offset} of events.jsonl`);
            },
            onNewerSchema(e) {
              err(`runwarden: warning: ${e.message}; such lines are skipped`);
            },
            onCaughtUp(fold: StreamFold, idleMs) {
              if ((fold.started && !fold.open) || (!fold.started && settledAtStart)) {
                outcome = 'finished';
                return true;
              }
              // Waiting for a first leg: a run directory that is removed meanwhile will never get one.
              // (Once the stream is open, its removal ends the follow with a StreamError instead.)
              if (!fold.started && runDirGone(runDir)) {
                outcome = 'vanished';
                return true;
              }
              if (idleMs >= IDLE_RECHECK_MS && monotonicMs() - lastCheck >= IDLE_RECHECK_MS) {
                lastCheck = monotonicMs();
                const now = derive(runDir);
                if (now?.status === 'ABANDONED') {
                  dead = now;
                  outcome = 'abandoned';
                  return true;
                }
              }
              return false;
            },
          },
          { signal: abort.signal },
        );
      } catch (e) {
        if (e instanceof StreamError) throw new UserError(`run ${runId}: ${e.message}`, Exit.Error);
        throw e;
      } finally {
        process.off('SIGINT', onInt);
      }
      if (interrupted) {
        process.exitCode = Exit.Interrupted;
        return;
      }
      if (outcome === 'vanished') {
        throw new UserError(`run ${runId}: its directory ${printable(runDir)} was removed while watch waited for its first leg`, Exit.Error);
      }
      if (outcome === 'abandoned' && dead !== undefined) {
        out(`run ${runId} is ABANDONED`);
        printHint(dead);
        process.exitCode = Exit.Abandoned;
        return;
      }
      const final = derive(runDir);
      out(`run ${runId} is ${final?.status ?? 'settled'}`);
    });
}
