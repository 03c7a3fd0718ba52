/**
 * The shapes every surface shares (SPEC A.2, A.3, B.3, C.1, C.2). One
 * definition, so `runs`, `status`, `watch`, `exec` and `serve` cannot drift.
 */
import type { Liveness, ProbeReason } from '../lock/probe.js';

/** Status words (SPEC B.3). `null` in a report means "no status yet". */
export type Status = 'ABANDONED' | 'PLANNING' | 'RUNNING' | 'PAUSED' | 'PASS' | 'FAIL';

/** Per-node state from the stream fold (SPEC A.2 "Node states in a stream"). */
export type NodeState = 'running' | 'passed' | 'failed' | 'gate-paused' | 'abandoned';

/** The last leg, from the stream fold (SPEC A.2 "The last leg"). */
export interface LegFacts {
  /** The last leg is open: a run_started with no closing run_finished after it. */
  open: boolean;
  /** At least one run_started was seen. */
  started: boolean;
  /** The phase of the last run_started ("" or "planning"). */
  phase: string;
  /** The outcome of the run_finished that closed the last closed leg ("" if none). */
  lastOutcome: '' | 'passed' | 'failed' | 'paused' | string;
  /**
   * Byte offset in events.jsonl of the run_started that opened the last leg
   * (-1 if none). "Same position in the file" for SPEC B.3's read-probe-confirm.
   */
  legOffset: number;
  /** How many run_started lines the stream holds (legs, counted). */
  legs: number;
  /** The `command` array of the last run_started, when a `runwarden exec` leg wrote one. */
  command?: string[];
  /**
   * Gates paused in the last leg and not approved, rejected or re-run since:
   * node ids whose latest node event is a `gate_paused` after `legOffset`,
   * oldest first. Named in a PAUSED run's hint. Always set by runwarden's readers.
   */
  gates?: string[];
}

/** The whole result of reading events.jsonl. */
export interface StreamFacts {
  leg: LegFacts;
  /** Node id -> state, in first-seen order. */
  nodes: Map<string, NodeState>;
  /** Lines skipped as malformed (SPEC A.2, counted by runwarden). */
  skippedLines: number;
}

/** A report on one run: the single answer every surface shows (SPEC C.2). */
export interface RunReport {
  run_id: string;
  /** Status word, or null when the run has no status yet (no leg, no snapshot). */
  status: Status | null;
  /** The probe's answer, or null when the lock was not probed (last leg closed). */
  liveness: Liveness | null;
  /** The probe's reason, or null when not probed. */
  reason: ProbeReason | null;
  has_snapshot: boolean;
  /** The graph's name from the snapshot, or null. */
  graph: string | null;
  nodes_total: number | null;
  nodes_passed: number | null;
  cost_usd: number | null;
  cost_unknown: boolean;
  /** The recovery hint for ABANDONED and PAUSED runs, else null. */
  hint: string | null;
  /** Non-fatal problems found while reading (skipped lines, snapshot errors). */
  warnings: string[];
}

/** A run directory that could not be reported, and why. */
export interface SkippedRun {
  run_id: string;
  error: string;
}
