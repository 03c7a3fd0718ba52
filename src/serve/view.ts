/**
 * The documents the dashboard serves and pushes, and the one mapping from a
 * report's status word to what a card shows.
 *
 * Invariant: nothing here derives liveness or status. A card's state is a
 * renaming of `RunReport.status` (which runStatus/listRuns computed, the
 * same call the CLI makes), so the page and `runwarden runs` cannot disagree.
 */
import { STATUS_WORD, type NodeState, type RunReport, type SkippedRun, type Status } from '../contract/types.js';
import type { DetailLeg } from '../status/detail.js';
import type { ErrorBody } from './http.js';

/** What a card says: the status word in lower case, plus the two non-states. */
export type CardState = 'planning' | 'running' | 'abandoned' | 'paused' | 'passed' | 'failed' | 'pending' | 'unknown';

/** Where a card sits on the page (CONTRACT §5.3), with `other` for no-status and unreadable runs. */
export type Section = 'in-flight' | 'abandoned' | 'settled' | 'other';

/**
 * Every card state, in the order the header counts them. The only list of
 * them: the page receives it as /assets/states.js (static.ts), and shows the
 * states of section `other` only when some run has them.
 */
export const CARD_STATES: readonly CardState[] = ['planning', 'running', 'abandoned', 'paused', 'passed', 'failed', 'pending', 'unknown'];

const BY_STATUS: Record<Status, CardState> = STATUS_WORD;

/** The card state for a report; `null` status ("no status yet") is `pending`. */
export function cardState(report: RunReport | null): CardState {
  if (report === null) return 'unknown';
  return report.status === null ? 'pending' : BY_STATUS[report.status];
}

/** The section for a card state (CONTRACT §4.3: PLANNING/RUNNING in flight; PAUSED/PASS/FAIL settled). */
export function sectionOf(state: CardState): Section {
  switch (state) {
    case 'planning':
    case 'running':
      return 'in-flight';
    case 'abandoned':
      return 'abandoned';
    case 'paused':
    case 'passed':
    case 'failed':
      return 'settled';
    default:
      return 'other';
  }
}

/** A node's state as drawn: the stream fold's states, plus `pending` for a graph node never started. */
export type NodeView = NodeState | 'pending';

/** One cell of a card's node strip. */
export interface NodeChip {
  id: string;
  state: NodeView;
}

/** A run's times, from its events' `ts` (display only, never an ordering key). */
export interface RunTimes {
  /** `ts` of the first run_started. */
  started_at: string | null;
  /** `ts` of the run_finished that closed the last leg, when the last leg is closed. */
  ended_at: string | null;
  /** `ts` of the last event in the stream. */
  last_event_at: string | null;
}

/** One card on the dashboard. */
export interface RunCard extends RunTimes {
  run_id: string;
  state: CardState;
  section: Section;
  /** The report exactly as `runs --json` prints it; null only when the run could not be reported. */
  report: RunReport | null;
  /** Why the run could not be read (state `unknown`), else null. */
  error: string | null;
  /**
   * Null for an ordinary run, whose report is derived for every document.
   * For a run that is expensive to read (a very long last leg), which is
   * re-derived less often than the others: when its report was derived.
   */
  checked_at: string | null;
  /** The node strip, in graph order then first-seen order, capped at {@link STRIP_MAX}. */
  nodes: NodeChip[];
  /** How many nodes the cap left out of `nodes`. */
  nodes_more: number;
}

/** The most cells a card's strip shows. */
export const STRIP_MAX = 48;

/** Header figures. */
export interface Totals {
  tallies: Record<CardState, number>;
  /** Sum of every known cost; `unknown` is true when any run's cost is unknown (or the run is unreadable). */
  cost: { known_usd: number; unknown: boolean };
}

/**
 * How many runs of the Settled and No status sections the document leaves
 * out (the oldest): their cards are not sent; the page offers them through
 * /api/runs. In flight and Abandoned are always sent whole.
 */
export interface SectionMore {
  settled: number;
  other: number;
}

/** The dashboard, as sent in the `snapshot` event and from GET /api/dashboard: tallies over every run, cards for a bounded page. */
export interface DashboardDoc extends Totals {
  root: string;
  /** The root directory does not exist (yet): an empty dashboard, not an error. */
  root_missing: boolean;
  generated_at: string;
  /** Run ids of the cards sent, newest first (descending byte order of the directory names). */
  order: string[];
  runs: RunCard[];
  /** The runs each paged section leaves out. */
  more: SectionMore;
  /** Run directories that could not be read (each also appears as an `unknown` card). */
  skipped: SkippedRun[];
  /**
   * How many root entries are not reported: those in `skipped`, and the
   * entries that are not run directories at all (stray files, sockets,
   * symlinks), which are counted only, never listed here: a root holding
   * millions of them costs the document (and the live model) one number.
   * `GET /api/runs` (`runs --json`) lists them by name.
   */
  skipped_count: number;
}

/**
 * The dashboard document from its parts: the one place its fields are
 * assembled, for the live model and the whole derivation alike.
 * `generated_at` is wall-clock time on purpose: a timestamp for people.
 */
export function dashboardDoc(root: string, rootMissing: boolean, cards: RunCard[], more: SectionMore, skipped: readonly { run_id: string; error: string }[], strays: number, sums: Totals): DashboardDoc {
  return {
    root,
    root_missing: rootMissing,
    generated_at: new Date().toISOString(),
    order: cards.map((c) => c.run_id),
    runs: cards,
    more,
    skipped: skipped.map((s) => ({ run_id: s.run_id, error: s.error })),
    skipped_count: skipped.length + strays,
    ...sums,
  };
}

/** What changed since the last push (the `patch` event). */
export interface DashboardPatch extends Totals {
  root: string;
  root_missing: boolean;
  /** How many root entries are not runs (stray files, symlinks) or could not be read. */
  skipped_count: number;
  generated_at: string;
  upsert: RunCard[];
  remove: string[];
  more: SectionMore;
  /** Present when the set or order of runs changed. */
  order?: string[];
}

/** The `beat` event: sent on every tick; `error` says why the root could not be read this time. */
export interface Beat {
  t: string;
  error?: string;
}

/** Every server-sent event the pages receive, by event name, with its data. */
export interface StreamEvents {
  snapshot: DashboardDoc;
  patch: DashboardPatch;
  beat: Beat;
  /** A run page's document, or the error document when its id does not name a run. */
  run: RunPage | ErrorBody;
}

/**
 * A leg of a run: the reading layer's `DetailLeg` (runDetail) with its
 * 1-based number. `state` is `closed` (a run_finished closed it), `open` (the
 * last leg, in flight) or `abandoned` (it never reported an end).
 */
export type LegView = DetailLeg & { n: number };

/** A node on the run page. */
export interface NodeDetail {
  id: string;
  state: NodeView;
  /** From the snapshot's graph.nodes[*].depends_on ([] when it lists none). */
  depends_on: string[];
  /** The node's record in state.json, when it has one. */
  cost_usd: number | null;
  cost_unknown: boolean;
  /** The detail of the node's last verdict among the timeline's events, when there is one. */
  detail: string | null;
}

/** One event on the timeline, with the leg it belongs to and its byte offset. */
export interface TimelineItem {
  leg: number | null;
  offset: number;
  event: Record<string, unknown>;
}

/** GET /api/runs/:id and the run page's `run` event. */
export interface RunPage extends RunTimes {
  root: string;
  run_id: string;
  state: CardState;
  section: Section;
  /** The report exactly as `status --json` gives it; null when the run cannot be reported. */
  report: RunReport | null;
  /** Why the run cannot be reported (state `unknown`), else null. */
  error: string | null;
  /** The first PAGE_NODES_MAX nodes (serve/model.ts), each with at most PAGE_DEPS_MAX `depends_on`. */
  nodes: NodeDetail[];
  /** Nodes not in `nodes`: the page says "N more nodes not shown". */
  nodes_more: number;
  /** `layers` when any node has depends_on (the page lays nodes out by dependency depth), else `list`. */
  layout: 'layers' | 'list';
  /** The latest legs (at most DETAIL_LEGS_MAX, status/detail.ts), numbered from the run's first leg. */
  legs: LegView[];
  /** Earlier legs not in `legs`: the page says "N earlier legs not shown". */
  legs_earlier: number;
  /** The last events of the stream, oldest first, strings cut to a readable length. */
  timeline: TimelineItem[];
  /** A sentence on what the timeline leaves out, or "". */
  events_note: string;
  /** Malformed lines skipped in the whole stream. */
  skipped_lines: number;
  /** Why the whole stream could not be folded (the report may still stand on its tail), else null. */
  stream_error: string | null;
  /** As on {@link RunCard}: null when derived just now, else when the reused report was derived. */
  checked_at: string | null;
}

/** Sums tallies and cost over runs (each a card's state and report). */
export function totals(cards: readonly Pick<RunCard, 'state' | 'report'>[]): Totals {
  const tallies = Object.fromEntries(CARD_STATES.map((s) => [s, 0])) as Record<CardState, number>;
  let known = 0;
  let unknown = false;
  for (const c of cards) {
    tallies[c.state]++;
    // An unreadable run's cost is not known either.
    if (c.report === null) {
      unknown = true;
      continue;
    }
    if (c.report.cost_unknown) unknown = true;
    if (typeof c.report.cost_usd === 'number') known += c.report.cost_usd;
  }
  return { tallies, cost: { known_usd: Math.round(known * 1e6) / 1e6, unknown } };
}
