/**
 * `runwarden watch RUN`: say what the run is, replay its stream, follow it to
 * the end of its last leg, and never wait on a corpse: an abandoned run is
 * refused at once; on linux the kernel announces the leg's death (its lock
 * file's close after writing) and appends (inotify), so the run is
 * re-derived at once; and an open leg is probed again every second anyway,
 * the safety net where the kernel cannot tell. The following itself is the
 * library's `followRun` (live/follow.ts), on the live engine the dashboard
 * uses, so watch, serve and library followers read and derive alike.
 */
import type { Command } from 'commander';
import { AbortError, RunUnreadableError, StreamError } from '../../contract/errors.js';
import type { StreamEvent } from '../../contract/events.js';
import type { RunReport } from '../../contract/types.js';
import { followRun } from '../../live/follow.js';
import { runStatus } from '../../status/inspect.js';
import { err, Exit, out, UserError } from '../io.js';
import { printable, quietOnClosedPipe } from '../term.js';
import { runTarget } from '../target.js';

/** The follower's safety net: how often an open leg is probed again anyway (ms). */
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

/** Resolves once stdout and stderr have handed everything written so far to the kernel. */
function flushed(): Promise<void> {
  const drain = (stream: NodeJS.WriteStream): Promise<void> =>
    new Promise((resolve) => {
      if (stream.destroyed || !stream.writable) return resolve();
      stream.write('', () => resolve());
    });
  return Promise.all([drain(process.stdout), drain(process.stderr)]).then(() => undefined);
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
        'An ABANDONED run is refused at once with its recovery hint on stderr (exit 3). If its leg dies ' +
        'mid-watch the hint is printed and watch exits 3: on linux the kernel reports the death (inotify sees the ' +
        'leg\'s lock file closed) and the run is re-derived at once; an open leg is also probed again ' +
        `every ${IDLE_RECHECK_MS / 1000} s (read-only), where the kernel cannot tell. ` +
        'A run not started yet whose directory is removed while ' +
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
      out(`run ${printable(runId)} is ${first.status ?? 'not started yet'}`);
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
      let final: RunReport | undefined;
      let vanished = false;
      try {
        // The library's follower (followRun): replay, follow to the end of the
        // last leg; its final status says how the run ended (ABANDONED: the leg died).
        for await (const item of followRun(runDir, { until: 'leg-end', signal: abort.signal, recheckMs: IDLE_RECHECK_MS })) {
          switch (item.kind) {
            case 'event': {
              const line = describeEvent(item.event);
              if (line !== undefined) out(line);
              break;
            }
            case 'skipped':
              err(`runwarden: warning: skipped a malformed line at byte ${item.offset} of events.jsonl`);
              break;
            case 'newer-schema':
              err(`runwarden: warning: ${item.error.message}; such lines are skipped`);
              break;
            case 'status':
              // Changes on the way are not printed (the first line said what the run was).
              if (item.final) final = item.report;
              break;
            case 'vanished':
              vanished = true;
              break;
          }
        }
      } catch (e) {
        if (e instanceof AbortError && interrupted) {
          process.exitCode = Exit.Interrupted;
          return;
        }
        if (e instanceof StreamError) throw new UserError(`run ${runId}: ${e.message}`, Exit.Error);
        throw e;
      } finally {
        process.off('SIGINT', onInt);
      }
      if (vanished) {
        throw new UserError(`run ${runId}: its directory ${printable(runDir)} was removed while watch waited for its first leg`, Exit.Error);
      }
      if (final?.status === 'ABANDONED') {
        out(`run ${printable(runId)} is ABANDONED`);
        printHint(final);
        // The news is out: leave at once (once both streams have taken what
        // was written) rather than after node's unhurried teardown, so a
        // death ends the watch in milliseconds (bench/RESULTS.md "live").
        await flushed();
        process.exit(Exit.Abandoned);
      }
      // No final status: the run could not be derived at the end (a newer-schema stream); ask once more.
      const settled = final ?? derive(runDir);
      out(`run ${printable(runId)} is ${settled?.status ?? 'settled'}`);
    });
}
