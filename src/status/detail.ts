/**
 * What a run page shows beyond the report: node states, leg history and the
 * last events, from one forward fold of the whole stream. Built FROM an
 * inspection, so the report is derived (and the lock probed) once, and the
 * snapshot the inspection read is the one used.
 */
import { StreamError } from '../contract/errors.js';
import type { LegRecord } from '../contract/fold.js';
import type { StreamEvent } from '../contract/events.js';
import { EVENTS_FILE } from '../contract/files.js';
import type { NodeState, RunReport } from '../contract/types.js';
import { join } from 'node:path';
import { foldStream } from '../read/stream.js';
import { inspectRun, type Inspection, type RunStatusOptions } from './inspect.js';

/** A node on a run's page: its id, its state, and its dependencies when the snapshot lists them. */
export interface DetailNode {
  /** The node's id. */
  id: string;
  /** Its state from the stream fold, or `pending` when only the snapshot's graph names it. */
  state: NodeState | 'pending';
  /** The ids it depends on, when the snapshot lists them, else []. */
  depends_on: string[];
}

/**
 * One leg of a run, from the stream (the fold's {@link LegRecord}): where it
 * starts, how it began and ended. `state` is `closed`, `open` (the last leg,
 * still running) or `abandoned` (it never reported an end: an earlier leg a
 * later one superseded, or the last leg of an ABANDONED run).
 */
export type DetailLeg = LegRecord;

/** Most legs a detail lists (the latest ones); the rest are counted in `legs_earlier`. */
export const DETAIL_LEGS_MAX = 200;

/** Everything a run page shows: the shared report plus the stream's details. */
export interface RunDetail {
  /** The same report every other surface shows for this run. */
  report: RunReport;
  /** Graph nodes in graph order (state `pending` when the stream has not named them), then nodes only the stream names. */
  nodes: DetailNode[];
  /** The latest legs, oldest first: at most `legs` of them (default 200, `DETAIL_LEGS_MAX`). */
  legs: DetailLeg[];
  /** How many earlier legs are not in `legs` (0 when it holds them all); the run has `legs_earlier + legs.length` legs. */
  legs_earlier: number;
  /** When the run's first leg started (its `run_started` ts), also when that leg is not in `legs`. */
  first_started_ts: string | null;
  /** The last events of the stream (at most `events` of them), oldest first, with their byte offsets. */
  events: {
    /** Byte offset of the line in `events.jsonl`. */
    offset: number;
    /** The event as read. */
    event: StreamEvent;
  }[];
  /** Lines skipped in the whole stream. */
  skipped_lines: number;
  /** Why the whole stream could not be folded (the report may still stand on its tail), else null. */
  stream_error: string | null;
}

/** Options for {@link runDetail}. */
export interface RunDetailOptions extends RunStatusOptions {
  /** How many of the latest events to return (default 200). */
  events?: number;
  /** How many of the latest legs to return (default 200, `DETAIL_LEGS_MAX`). */
  legs?: number;
}

/**
 * The detail for an inspection already made: one forward fold of the whole
 * stream with leg history, the last `events` events and the last `legs`
 * legs kept (the fold walks every leg; only the answer is capped). In an ABANDONED
 * run, nodes still running and the open last leg are abandoned.
 */
export function detailOf(inspection: Inspection, options: { events?: number; legs?: number } = {}): RunDetail {
  const keep = Math.max(0, options.events ?? 200);
  const keepLegs = Math.max(0, options.legs ?? DETAIL_LEGS_MAX);
  const { report, runDir } = inspection;
  const ring: { offset: number; event: StreamEvent }[] = [];
  let legs: DetailLeg[] = [];
  let legsEarlier = 0;
  let firstStarted: string | null = null;
  let nodes = new Map<string, NodeState>();
  let skipped = 0;
  let streamError: string | null = null;
  const eventsPath = join(runDir, EVENTS_FILE);
  try {
    const fold = foldStream(eventsPath, {
      history: true,
      onEvent(event, offset) {
        if (keep === 0) return;
        ring.push({ offset, event });
        if (ring.length > keep) ring.shift();
      },
    });
    if (report.status === 'ABANDONED') fold.markAbandoned();
    const all = fold.history ?? [];
    // A run page stays small however many legs the run had: the latest ones, and a count of the rest.
    legsEarlier = Math.max(0, all.length - keepLegs);
    legs = all.slice(legsEarlier);
    firstStarted = all[0]?.started_ts ?? null;
    nodes = fold.nodes;
    skipped = fold.skippedLines;
  } catch (err) {
    if (!(err instanceof StreamError)) throw err;
    streamError = err.message;
    ring.length = 0;
  }
  return assemble(inspection, nodes, legs, legsEarlier, firstStarted, ring, skipped, streamError);
}

/** A {@link RunDetail} from the fold's results: graph nodes in graph order, then nodes only the stream names. */
function assemble(
  inspection: Inspection,
  nodes: Map<string, NodeState>,
  legs: DetailLeg[],
  legsEarlier: number,
  firstStarted: string | null,
  ring: { offset: number; event: StreamEvent }[],
  skipped: number,
  streamError: string | null,
): RunDetail {
  const { report, snapshot } = inspection;
  const out: DetailNode[] = [];
  const listed = new Set<string>();
  if (snapshot.kind === 'ok') {
    for (const n of snapshot.snapshot.graphNodes) {
      out.push({ id: n.id, state: nodes.get(n.id) ?? 'pending', depends_on: n.depends_on });
      listed.add(n.id);
    }
  }
  for (const [id, state] of nodes) if (!listed.has(id)) out.push({ id, state, depends_on: [] });
  return { report, nodes: out, legs, legs_earlier: legsEarlier, first_started_ts: firstStarted, events: ring, skipped_lines: skipped, stream_error: streamError };
}

/**
 * The report plus node states and leg history for one run: what the
 * dashboard's run page draws. The report is {@link runStatus}'s, so it agrees
 * with every other surface. Throws RunUnreadableError like runStatus.
 */
export function runDetail(runDir: string, options: RunDetailOptions = {}): RunDetail {
  return detailOf(inspectRun(runDir, options), options);
}
