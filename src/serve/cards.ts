/**
 * Cards and run pages: what the dashboard shows of one run, built from that
 * run's inspection (its report, the snapshot, the stream) by the reading
 * layer's `detailOf`. Both dashboard models build them here: the one-shot
 * model (oneshot.ts) and the live index (liveindex.ts).
 *
 * Invariants, and why:
 * - No status, liveness or hint is derived here: each card and page carries
 *   the report it was given, so the page and the CLI cannot disagree.
 * - The whole-stream fold behind node states, legs and times is cached per
 *   run and status. A fold is fresh while the files it read are unchanged:
 *   the caller says so, by a signature of the files (the one-shot model) or
 *   by invalidating the run when the engine announced a change (the live
 *   index). When the files changed but the status did not, the fold is
 *   redone no sooner than {@link BACKOFF}× its last duration after the last
 *   one (a 300 ms fold waits 3 s; the older answer is served meanwhile); a
 *   status change always refolds at once, and so does the first change after
 *   a run's first fold (that fold's duration is not its cost: it pays for
 *   start-up), so back-off costs a run at most one unbacked refold.
 * - A card never folds a stream over `cardStreamMax` bytes (its strip then
 *   shows the snapshot's verdicts).
 * - A run page's size does not follow the run's: it holds the latest legs
 *   (DETAIL_LEGS_MAX, with `legs_earlier`), the last {@link TIMELINE_MAX}
 *   events and the first {@link PAGE_NODES_MAX} nodes (with `nodes_more`);
 *   timeline strings are cut to {@link FIELD_MAX} characters.
 * - Reads only, through the reading layer; a fold that fails becomes the
 *   card's or page's `stream_error`, never an exception.
 */
import { lstatSync } from 'node:fs';
import { EVENTS_FILE } from '../contract/files.js';
import type { RunReport, Status } from '../contract/types.js';
import { runFilePath } from '../kernel/dirfd.js';
import { monotonicMs } from '../kernel/clock.js';
import type { SnapshotRead } from '../read/snapshot.js';
import { detailOf, type DetailLeg, type RunDetail } from '../status/detail.js';
import type { Inspection } from '../status/inspect.js';
import { cardState, sectionOf, STRIP_MAX, type LegView, type NodeChip, type NodeDetail, type RunCard, type RunPage, type RunTimes, type TimelineItem } from './view.js';

/** Most events a run page's timeline shows. */
export const TIMELINE_MAX = 200;
/** Most nodes a run page lists (graph order first); the rest are counted in `nodes_more`. */
export const PAGE_NODES_MAX = 1000;
/** Most `depends_on` ids a run page gives one node. */
export const PAGE_DEPS_MAX = 100;
/** Longest string kept in a timeline event or node detail. */
export const FIELD_MAX = 2000;
/** A changed stream waits this many times its last fold's duration before it is folded again. */
export const BACKOFF = 10;
/** Streams above this size are not folded for a card (32 MiB). */
export const CARD_STREAM_MAX = 32 * 1024 * 1024;
/** How many cards the dashboard sends for each of the Settled and No status sections (newest first). */
export const SECTION_PAGE = 50;

export const EMPTY_TIMES: RunTimes = { started_at: null, ended_at: null, last_event_at: null };

function clip(v: unknown, depth = 0): unknown {
  if (typeof v === 'string') return v.length > FIELD_MAX ? v.slice(0, FIELD_MAX) + '…' : v;
  if (depth > 6) return null;
  if (Array.isArray(v)) return v.slice(0, 100).map((x) => clip(x, depth + 1));
  if (typeof v === 'object' && v !== null) {
    const out: Record<string, unknown> = {};
    let n = 0;
    for (const [k, x] of Object.entries(v)) {
      if (n++ >= 100) break;
      out[k] = clip(x, depth + 1);
    }
    return out;
  }
  return v;
}

function fileSize(dir: string, file: string): number {
  try {
    return lstatSync(runFilePath(dir, file)).size;
  } catch {
    return 0;
  }
}

/**
 * The reading layer's legs, numbered from 1 (from `earlier + 1` when the
 * first `earlier` legs were left out of a capped detail). (runDetail already folds an
 * auto run's planning start and the untagged start after it into one leg.)
 */
export function numberLegs(legs: readonly DetailLeg[], earlier = 0): LegView[] {
  return legs.map((l, i) => ({ ...l, n: earlier + i + 1 }));
}

/** Times from the legs and the last event (ts is display only). */
function timesOf(detail: RunDetail, legs: readonly LegView[], lastEvent: { event: Record<string, unknown> } | undefined): RunTimes {
  const last = legs[legs.length - 1];
  const ts = lastEvent?.event['ts'];
  return {
    started_at: detail.first_started_ts,
    ended_at: last !== undefined && last.state === 'closed' ? last.finished_ts : null,
    last_event_at: typeof ts === 'string' ? ts : null,
  };
}

/** Each node's cost record in a snapshot (empty without one). */
function recordsOf(s: SnapshotRead): Map<string, { cost_usd: number | null; cost_unknown: boolean }> {
  return s.kind === 'ok' ? s.snapshot.records : new Map<string, { cost_usd: number | null; cost_unknown: boolean }>();
}

/** One fold of a run's stream (see the module comment). */
interface FoldEntry {
  /** The signature of the files it read (the one-shot model's), or '' (the live index's). */
  sig: string;
  /** The live index was told that the run's files changed since. */
  stale: boolean;
  status: Status | null;
  detail: RunDetail | null;
  error: string | null;
  at: number;
  cost: number;
}

/** The card of a run that cannot be read. */
export function unreadableCard(id: string, error: string | null, checkedAt: string | null): RunCard {
  return { run_id: id, state: 'unknown', section: 'other', report: null, error, checked_at: checkedAt, nodes: [], nodes_more: 0, ...EMPTY_TIMES };
}

/** Builds cards and run pages, keeping each run's last folds (see the module comment). */
export class CardMaker {
  private readonly cardFolds = new Map<string, FoldEntry>();
  private readonly pageFolds = new Map<string, FoldEntry>();

  constructor(
    readonly root: string,
    private readonly cardStreamMax: number = CARD_STREAM_MAX,
  ) {}

  /** The files of the run at `dir` changed (the live engine said so): its folds are done again, within the back-off. */
  invalidate(dir: string): void {
    const c = this.cardFolds.get(dir);
    if (c !== undefined) c.stale = true;
    const p = this.pageFolds.get(dir);
    if (p !== undefined) p.stale = true;
  }

  /** Forgets a run. */
  forget(dir: string): void {
    this.cardFolds.delete(dir);
    this.pageFolds.delete(dir);
  }

  /** Forgets every run whose directory `keep` does not hold (after a whole listing). */
  keepOnly(keep: ReadonlySet<string>): void {
    for (const m of [this.cardFolds, this.pageFolds]) for (const k of m.keys()) if (!keep.has(k)) m.delete(k);
  }

  /** When a card of `dir` built now from a backed-off fold should be built again (monotonic ms), or undefined when its fold is fresh. */
  staleCardDue(dir: string): number | undefined {
    const f = this.cardFolds.get(dir);
    return f !== undefined && f.stale ? f.at + BACKOFF * f.cost + 1 : undefined;
  }

  /** A run's card. `sig`: the signature of its files (one-shot), or undefined when freshness is told by {@link CardMaker.invalidate}. */
  card(inspection: Inspection, checkedAt: string | null, sig?: string): RunCard {
    const { report, runDir: dir } = inspection;
    const state = cardState(report);
    const base: RunCard = { run_id: report.run_id, state, section: sectionOf(state), report, error: null, checked_at: checkedAt, nodes: [], nodes_more: 0, ...EMPTY_TIMES };
    let chips: NodeChip[];
    let times: RunTimes = EMPTY_TIMES;
    if (fileSize(dir, EVENTS_FILE) > this.cardStreamMax) {
      // Too large to fold for a card: the snapshot's settled verdicts only.
      const s = inspection.snapshot;
      chips =
        s.kind === 'ok'
          ? s.snapshot.graphNodes.map((n) => {
              const v = s.snapshot.records.get(n.id)?.verdict;
              return { id: n.id, state: v === 'PASS' ? 'passed' : v === 'FAIL' ? 'failed' : 'pending' };
            })
          : [];
    } else {
      const fold = this.fold(this.cardFolds, inspection, 1, sig);
      if (fold.detail === null) return base;
      chips = fold.detail.nodes.map((n) => ({ id: n.id, state: n.state }));
      times = timesOf(fold.detail, numberLegs(fold.detail.legs, fold.detail.legs_earlier), fold.detail.events[fold.detail.events.length - 1]);
    }
    return { ...base, ...times, nodes: chips.slice(0, STRIP_MAX), nodes_more: Math.max(0, chips.length - STRIP_MAX) };
  }

  /** A run's page document. `sig` as for {@link CardMaker.card}. */
  page(id: string, inspection: Inspection, checkedAt: string | null, sig?: string): RunPage {
    const report = inspection.report;
    const fold = this.fold(this.pageFolds, inspection, TIMELINE_MAX, sig);
    const detail = fold.detail;
    if (detail === null) {
      return { ...this.basePage(id, report), stream_error: fold.error, checked_at: checkedAt };
    }
    const legs = numberLegs(detail.legs, detail.legs_earlier);
    const timeline: TimelineItem[] = detail.events.map(({ offset, event }) => {
      let leg: number | null = null;
      for (const l of legs) if (l.offset <= offset) leg = l.n;
      return { leg, offset, event: clip(event) as Record<string, unknown> };
    });
    const records = recordsOf(inspection.snapshot);
    const lastVerdict = new Map<string, string>();
    for (const { event } of timeline) {
      const kind = event['event'];
      if ((kind === 'node_passed' || kind === 'node_failed') && typeof event['node_id'] === 'string') {
        lastVerdict.set(event['node_id'], typeof event['detail'] === 'string' ? event['detail'] : '');
      }
    }
    // A page stays small whatever the graph's size: the first PAGE_NODES_MAX nodes, and a count of the rest.
    const nodes: NodeDetail[] = detail.nodes.slice(0, PAGE_NODES_MAX).map((n) => {
      const rec = records.get(n.id);
      const d = lastVerdict.get(n.id);
      return {
        id: n.id,
        state: n.state,
        depends_on: n.depends_on.slice(0, PAGE_DEPS_MAX),
        cost_usd: rec?.cost_usd ?? null,
        cost_unknown: rec?.cost_unknown ?? false,
        detail: d === undefined || d === '' ? null : d,
      };
    });
    const full = detail.events.length >= TIMELINE_MAX;
    return {
      ...this.basePage(id, report),
      nodes,
      nodes_more: Math.max(0, detail.nodes.length - PAGE_NODES_MAX),
      layout: nodes.some((n) => n.depends_on.length > 0) ? 'layers' : 'list',
      legs,
      legs_earlier: detail.legs_earlier,
      timeline,
      events_note: full ? `the last ${TIMELINE_MAX} events` : `${timeline.length} event${timeline.length === 1 ? '' : 's'}`,
      skipped_lines: detail.skipped_lines,
      stream_error: detail.stream_error ?? (fold.error !== null ? fold.error : null),
      checked_at: checkedAt,
      ...timesOf(detail, legs, detail.events[detail.events.length - 1]),
    };
  }

  /** The page of a run that cannot be read. */
  unreadablePage(id: string, error: string, checkedAt: string | null): RunPage {
    return { ...this.basePage(id, null, error), checked_at: checkedAt };
  }

  private basePage(id: string, report: RunReport | null, error: string | null = null): RunPage {
    const state = cardState(report);
    return {
      root: this.root,
      run_id: id,
      state,
      section: sectionOf(state),
      report,
      error,
      nodes: [],
      nodes_more: 0,
      layout: 'list',
      legs: [],
      legs_earlier: 0,
      timeline: [],
      events_note: '',
      skipped_lines: 0,
      stream_error: null,
      checked_at: null,
      ...EMPTY_TIMES,
    };
  }

  /** The detail of an inspection, cached per run and status and backed off as the module comment says. Never throws. */
  private fold(map: Map<string, FoldEntry>, inspection: Inspection, events: number, sig: string | undefined): FoldEntry {
    const dir = inspection.runDir;
    const status = inspection.report.status;
    const old = map.get(dir);
    const now = monotonicMs();
    if (old !== undefined && old.status === status) {
      const fresh = sig === undefined ? !old.stale : old.sig === sig && !old.stale;
      if (fresh) return old;
      // Files changed but the status did not: back off a costly fold.
      if (now - old.at < BACKOFF * old.cost) return old;
    }
    const t0 = monotonicMs();
    let detail: RunDetail | null = null;
    let error: string | null = null;
    try {
      detail = detailOf(inspection, { events });
    } catch (e) {
      error = e instanceof Error ? e.message : String(e);
    }
    const t1 = monotonicMs();
    // Kept under the status the fold itself saw (its nodes were made abandoned
    // or not by it), so a report that moved on in between refolds next time.
    const seen = detail !== null ? detail.report.status : status;
    // A run's first fold sets no back-off: start-up (compiling the fold's code,
    // a collection of the listing's garbage) can make it many times its real
    // cost, and ten times that would hold the run's next change on the page.
    const entry: FoldEntry = { sig: sig ?? '', stale: false, status: seen, detail, error, at: t1, cost: old === undefined ? 0 : t1 - t0 };
    map.set(dir, entry);
    return entry;
  }
}
