/**
 * The recovery hints (CONTRACT §4.4): what every surface prints beside an
 * ABANDONED or PAUSED run. One wording, written once, so the `runs` row,
 * `status`, `watch`'s refusal and the dashboard card say the same thing.
 *
 * Invariants this module keeps, and why:
 * - An abandoned hint always carries the orphan warning: a leg's lock is
 *   close-on-exec, so a child it started can outlive it and keep spending
 *   while the run reads ABANDONED. The wording is the mitigation.
 * - A run without a snapshot is never told to resume (resume loads the
 *   snapshot first and cannot continue it): it is told to run the graph again.
 * - A `runwarden exec` leg is told to run its own command again.
 * - The process-group evidence for an exec leg is read-only and evidence
 *   only: a process group id can be reused, so it authorises nothing.
 * - The evidence line says only what was checked. A process that left the
 *   group (setsid) is invisible to kill(-pgid, 0), so "the group is gone"
 *   never reads as "everything is gone": on linux the leg's environment mark
 *   (kernel/legmark.ts) is looked for as well, and the line says how far
 *   that search reached; where it cannot run, the line says that processes
 *   that left the group are not tracked.
 */
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { LEG_MARK_VAR, legMark, processesMarked, type MarkScan } from '../kernel/legmark.js';
import { groupPresence, type ProcessPresence } from '../kernel/presence.js';
import { RunFileError } from '../contract/errors.js';
import { printableText } from '../contract/names.js';
import { PGID_FILE } from '../contract/files.js';
import { runDirPath } from '../kernel/dirfd.js';
import { closeQuietly, openForRead, readAt } from '../kernel/open.js';

/** A pgid file is a handful of digits; anything longer is not one. */
const PGID_MAX_BYTES = 32;

/** The sentence every abandoned hint ends with. */
export const ORPHAN_WARNING =
  'Warning: a child process the dead leg started may still be running and still spending; check for one before you spend again.';

export type { MarkScan } from '../kernel/legmark.js';

/**
 * What the dead leg's recorded process group looks like now, and, when the
 * group shows no process, which processes still carry the leg's mark
 * (`escaped`; absent when no search was made).
 */
export type OrphanEvidence =
  | {
      /** The process group the leg recorded in `exec.pgid`. */
      pgid: number;
      /** Whether that group still has members, by the kernel's answer to `kill(-pgid, 0)`. */
      presence: ProcessPresence;
      /** Processes that left the group but carry the leg's mark; absent when no search was made. */
      escaped?: MarkScan | undefined;
    }
  | {
      /** Why `exec.pgid` could not be read or understood; nothing is said about the group then. */
      error: string;
    };

/** What an abandoned run's hint depends on. */
export interface AbandonedHintFacts {
  /** The run has a readable snapshot (so `resume --retry-failed` can continue it). */
  hasSnapshot: boolean;
  /** The `command` of the dead leg's `run_started`, when `runwarden exec` wrote it. */
  command?: string[] | undefined;
  /** The exec leg's process group evidence, when there is any. */
  orphan?: OrphanEvidence | undefined;
}

const SAFE_WORD = /^[A-Za-z0-9_./:=@%+,-]+$/;

/** Quotes one word for a POSIX shell only when it needs it. */
export function shellQuote(word: string): string {
  if (SAFE_WORD.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

function pidList(pids: readonly number[]): string {
  const shown = pids.slice(0, 5).join(', ') + (pids.length > 5 ? `, … (${pids.length} in all)` : '');
  return `${pids.length === 1 ? 'pid' : 'pids'} ${shown}`;
}

function orphanLine(orphan: OrphanEvidence | undefined): string | undefined {
  if (orphan === undefined) return undefined;
  if ('error' in orphan) return `Its command's process group could not be checked (${printableText(orphan.error)}).`;
  const { pgid, presence, escaped } = orphan;
  if (presence === 'present') {
    return `Its command's process group still has live processes (pgid ${pgid}): they may still be working and spending. (Evidence only: a group id can be reused.)`;
  }
  const group = presence === 'gone' ? `No process is left in its command's process group (pgid ${pgid})` : `Its command's process group could not be checked (pgid ${pgid})`;
  if (escaped?.kind === 'scanned' && escaped.pids.length > 0) {
    return (
      `${group}, but processes it started still run outside the group (${pidList(escaped.pids)}, carrying the leg's ${LEG_MARK_VAR} mark): ` +
      'they may still be working and spending. (Evidence only: a mark can be copied.)'
    );
  }
  if (presence !== 'gone') return `${group}.`;
  if (escaped?.kind === 'scanned') {
    const unread = escaped.unreadable > 0 ? `; ${escaped.unreadable} other ${escaped.unreadable === 1 ? 'process' : 'processes'} could not be read` : '';
    return `${group}, and no process this user can read carries the leg's ${LEG_MARK_VAR} mark${unread}. A process started with a cleaned environment would not carry it.`;
  }
  return `${group}; processes that left the group are not tracked.`;
}

/**
 * The hint for an ABANDONED run (CONTRACT §4.4): names the run, says a leg started
 * and never reported an end, gives the recovery (resume with a snapshot; run
 * the graph again without one; the same `runwarden exec` command for an exec
 * leg), and always warns about an orphaned child. Lines are separated by "\n".
 */
export function abandonedHint(shownRunId: string, facts: AbandonedHintFacts): string {
  // Lines are split on "\n" by every surface, so nothing from a run file may carry one (contract/names.ts printableText).
  const runId = printableText(shownRunId);
  const lines = [`run ${runId} is ABANDONED: a leg started and never reported an end (the process running it is gone).`];
  const id = shellQuote(runId);
  if (facts.command !== undefined && facts.command.length > 0) {
    lines.push(`To recover, run \`runwarden exec ${id} -- ${facts.command.map((w) => shellQuote(printableText(w))).join(' ')}\` again.`);
  } else if (facts.hasSnapshot) {
    lines.push(`To recover, continue it with \`oh-my-graph resume ${id} --retry-failed\`.`);
  } else {
    lines.push('It never wrote a snapshot, so there is nothing to resume from: run the graph again.');
  }
  const evidence = orphanLine(facts.orphan);
  if (evidence !== undefined) lines.push(evidence);
  lines.push(ORPHAN_WARNING);
  return lines.join('\n');
}

/**
 * The hint for a PAUSED run (CONTRACT §4.4): how to approve or reject the gate it
 * waits at, how to retry failed nodes, and how to follow it. `gates` are the
 * paused gate ids from the stream; with none known the placeholder
 * `<gate-id>` is shown.
 */
export function pausedHint(shownRunId: string, shownGates: readonly string[] = []): string {
  const runId = printableText(shownRunId);
  const gates = shownGates.map(printableText);
  const id = shellQuote(runId);
  const gate = gates.length === 1 ? shellQuote(gates[0] as string) : '<gate-id>';
  const where = gates.length === 0 ? 'at a gate' : gates.length === 1 ? `at gate ${gates[0]}` : `at gates ${gates.join(', ')}`;
  return [
    `run ${runId} is PAUSED ${where}, waiting for a decision.`,
    `Approve with \`oh-my-graph resume ${id} --approve ${gate}\` or reject with \`oh-my-graph resume ${id} --reject ${gate}\`.`,
    `Retry failed nodes with \`oh-my-graph resume ${id} --retry-failed\`; follow the run with \`runwarden watch ${id}\`.`,
  ].join('\n');
}

/** Strict parse of a pgid file: digits without a leading zero, one optional "\n", value 2..2^31-1. */
export function parsePgid(bytes: Buffer): number | undefined {
  const text = bytes.toString('latin1');
  const m = /^([1-9][0-9]{0,9})\n?$/.exec(text);
  if (m === null) return undefined;
  const v = Number(m[1]);
  return v >= 2 && v <= 2 ** 31 - 1 ? v : undefined;
}

/**
 * Reads `exec.pgid` in `runDir` read-only (same care as any run file: no
 * follow, non-blocking, regular files only, at most 32 bytes) and asks the
 * kernel whether that process group still has members (`kill(-pgid, 0)`).
 * When it shows none (or cannot tell), also looks on linux for processes
 * that left the group but carry the leg's mark (`escaped`). Returns
 * undefined when there is no such file.
 */
export function orphanEvidence(runDir: string): OrphanEvidence | undefined {
  let file;
  try {
    file = openForRead(join(runDir, PGID_FILE), PGID_FILE);
  } catch (err) {
    if (err instanceof RunFileError) return { error: err.message };
    throw err;
  }
  if (file === undefined) return undefined;
  let pgid: number | undefined;
  try {
    if (file.size > PGID_MAX_BYTES) return { error: `${PGID_FILE} is ${file.size} bytes, too long to be a process group id` };
    const buf = Buffer.alloc(PGID_MAX_BYTES + 1);
    const n = readAt(file.fd, buf, 0, PGID_MAX_BYTES + 1, 0, PGID_FILE);
    pgid = parsePgid(buf.subarray(0, n));
  } catch (err) {
    if (err instanceof RunFileError) return { error: err.message };
    throw err;
  } finally {
    closeQuietly(file.fd);
  }
  if (pgid === undefined) return { error: `${PGID_FILE} does not hold a process group id` };
  const presence = groupPresence(pgid);
  if (presence === 'present') return { pgid, presence };
  return { pgid, presence, escaped: markedProcesses(runDir, pgid) };
}

/** Who still carries the mark of the leg that had group `pgid` in `runDir` (kernel/legmark.ts). */
function markedProcesses(runDir: string, pgid: number): MarkScan {
  let st;
  try {
    st = lstatSync(runDirPath(runDir), { bigint: true });
  } catch (e) {
    return { kind: 'unavailable', detail: `the run directory: ${(e as NodeJS.ErrnoException).code ?? String(e)}` };
  }
  return processesMarked(legMark(st.dev, st.ino, pgid));
}
