/**
 * The derivation table (CONTRACT §4.3) as a pure function: the same facts
 * always give the same status. Callers that need the read-probe-confirm
 * guarantee use `runStatus` (inspect.ts), which calls this.
 */
import type { LastLeg } from '../contract/fold.js';
import type { Liveness, Status } from '../contract/types.js';
import type { SnapshotRead } from '../read/snapshot.js';

/** The facts the derivation reads: the stream's last leg and the snapshot. */
export interface RunFacts {
  /** The last leg, from the stream (whole or tail: they agree). */
  leg: LastLeg;
  /** The snapshot, read or found missing or unreadable; consulted only where the table needs it. */
  snapshot: SnapshotRead;
}

/**
 * What {@link deriveStatus} concludes: a status (null for "no status yet"),
 * or, when the answer needs the snapshot (table rows 5–7) and it cannot be
 * read, no status and the reason (`unreadable`). Checking `unreadable`
 * narrows `status`.
 */
export type Derivation =
  | {
      /** The status, or null for a run with no status yet. */
      status: Status | null;
      /** Null: the answer did not need an unreadable snapshot. */
      unreadable: null;
    }
  | {
      /** Null: with the snapshot unreadable, any status would be a guess. */
      status: null;
      /** Why the snapshot the answer needs cannot be read. */
      unreadable: string;
    };

/**
 * CONTRACT §4.3, first match wins. `liveness` is the probe's answer for an
 * open leg (null or anything but `free` reads as alive: every doubt is in
 * flight).
 */
export function deriveStatus(facts: RunFacts, liveness: Liveness | null): Derivation {
  const { leg, snapshot } = facts;
  if (leg.open) {
    if (liveness === 'free') return { status: 'ABANDONED', unreadable: null };
    if (leg.phase === 'planning') return { status: 'PLANNING', unreadable: null };
    return { status: 'RUNNING', unreadable: null };
  }
  if (leg.lastOutcome === 'paused') return { status: 'PAUSED', unreadable: null };
  if (snapshot.kind === 'error') return { status: null, unreadable: snapshot.error };
  if (!leg.started && snapshot.kind === 'missing') return { status: null, unreadable: null };
  if (snapshot.kind === 'ok' && snapshot.snapshot.all_passed) return { status: 'PASS', unreadable: null };
  if (snapshot.kind === 'missing' && leg.lastOutcome === 'passed') return { status: 'PASS', unreadable: null };
  return { status: 'FAIL', unreadable: null };
}
