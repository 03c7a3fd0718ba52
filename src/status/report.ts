/**
 * A RunReport (CONTRACT §5.2) from what an inspection read: the status from
 * the derivation, the snapshot's figures, the hint, and every warning.
 * Reads nothing itself except the exec leg's process-group evidence for an
 * ABANDONED run's hint.
 */
import { isPermissionErrno, RunUnreadableError } from '../contract/errors.js';
import type { ReportLiveness, RunReport, Status } from '../contract/types.js';
import type { ProbeResult } from '../lock/probe.js';
import type { SnapshotRead } from '../read/snapshot.js';
import type { TailFacts } from '../read/tail.js';
import { deriveStatus } from './derive.js';
import { abandonedHint, orphanEvidence, pausedHint } from './hints.js';

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/**
 * The status, liveness and reason of a report, paired as CONTRACT §4.3
 * makes them: a probe is taken only for an open leg, whose status is
 * ABANDONED exactly when the answer is free. Anything else is a bug here,
 * not a fact about the run.
 */
function pairing(status: Status | null, probe: ProbeResult | null): ReportLiveness {
  if (probe === null) {
    if (status === null || status === 'PAUSED' || status === 'PASS' || status === 'FAIL') return { status, liveness: null, reason: null };
  } else if (status === 'ABANDONED') {
    if (probe.liveness === 'free') return { status, liveness: 'free', reason: probe.reason };
  } else if (status === 'RUNNING' || status === 'PLANNING') {
    if (probe.liveness === 'held') return { status, liveness: 'held', reason: probe.reason };
    if (probe.liveness === 'unknown') return { status, liveness: 'unknown', reason: probe.reason };
  }
  throw new Error(`internal error: status ${String(status)} with liveness ${probe?.liveness ?? 'not probed'} (CONTRACT §4.3)`);
}

/**
 * Builds the report for run `runId` in `runDir`. `probe` is null when the
 * lock was not probed (the last leg is closed); `extra` are warnings the
 * inspection itself raised. Throws RunUnreadableError when the status needs
 * a snapshot that cannot be read.
 */
export function buildReport(runId: string, runDir: string, tail: TailFacts, snapshot: SnapshotRead, probe: ProbeResult | null, extra: string[]): RunReport {
  const derived = deriveStatus({ leg: tail.leg, snapshot }, probe?.liveness ?? null);
  if (derived.unreadable !== null) {
    const denied = snapshot.kind === 'error' && isPermissionErrno(snapshot.errno);
    throw new RunUnreadableError(runId, derived.unreadable, denied ? 'permission-denied' : 'unreadable-snapshot');
  }
  const status = derived.status;
  const warnings = [...extra];
  // The tail reader parses every line only from `from` on (its dense region, CONTRACT §2.5): before
  // it, a skipped line is not counted, so the count says where it was taken.
  if (tail.skippedLines > 0) {
    const where = tail.from > 0 ? ` in its last ${plural(tail.size - tail.from, 'byte')} (the part read line by line)` : '';
    warnings.push(`events.jsonl: skipped ${plural(tail.skippedLines, 'malformed line')}${where}`);
  }
  if (snapshot.kind === 'error') warnings.push(snapshot.error);
  const snap = snapshot.kind === 'ok' ? snapshot.snapshot : null;
  if (snap !== null) {
    if (snap.stray_ids.length > 0) {
      const shown = snap.stray_ids.slice(0, 5).join(', ') + (snap.stray_ids.length > 5 ? ', …' : '');
      warnings.push(`state.json: ${plural(snap.stray_ids.length, 'node record')} for ids not in graph.nodes (${shown}), not counted`);
    }
    if (snap.run_id !== null && snap.run_id !== runId) warnings.push(`state.json: records run_id ${JSON.stringify(snap.run_id)}, not this directory's name`);
  }
  let hint: string | null = null;
  if (status === 'ABANDONED') {
    const command = tail.leg.command;
    hint = abandonedHint(runId, {
      hasSnapshot: snap !== null,
      command,
      orphan: command !== undefined ? orphanEvidence(runDir) : undefined,
    });
  } else if (status === 'PAUSED') {
    hint = pausedHint(runId, tail.leg.gates);
  }
  return {
    run_id: runId,
    ...pairing(status, probe),
    has_snapshot: snap !== null,
    graph: snap?.graph ?? null,
    nodes_total: snap?.nodes_total ?? null,
    nodes_passed: snap?.nodes_passed ?? null,
    cost_usd: snap?.cost_usd ?? null,
    cost_unknown: snap?.cost_unknown ?? false,
    hint,
    warnings,
  };
}
