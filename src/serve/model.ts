/**
 * Builds what the dashboard serves from the reading layer: `listRuns` over
 * one inspection per run (`inspectRun`, the call behind `runs` and
 * `status`), and the node states, legs and last events built from that same
 * inspection (`detailOf`). Each run is derived, and its lock probed, once
 * per document, and its snapshot read once.
 *
 * Invariants:
 * - No status, liveness or hint is derived here. Every one comes from the
 *   inspection, so the page and the CLI cannot disagree; a fresh inspection
 *   is taken on every call, because a holder's death changes nothing on disk.
 * - Per-run work is bounded, so one huge or hostile run cannot stall the
 *   others. Status comes from the stream's tail (listRuns reads tails), but
 *   a very long last leg makes even the tail long: a run whose report took
 *   ≥ {@link EXPENSIVE_MS} to derive is re-derived no sooner than
 *   {@link EXPENSIVE_FACTOR}× that after the last time, and its card says
 *   "as of" when (`checked_at`); every other run is re-derived each time. The
 *   whole-stream fold behind node states and legs is cached per file
 *   identity (device, inode, size, mtime) and status; when the files change
 *   it is redone no sooner than {@link BACKOFF}× its last duration after the
 *   last one (a 300 ms fold waits 3 s; the older answer is served meanwhile);
 *   a status change always refolds at once. A card never folds a stream over
 *   `cardStreamMax` bytes (its strip then shows the snapshot's verdicts).
 *   Timeline strings are cut to {@link FIELD_MAX} characters.
 * - A run that cannot be read becomes an `unknown` card carrying the reason;
 *   no error from one run escapes to the others.
 * - Reads only: everything goes through the reading layer, which opens files
 *   read-only and probes with a shared lock.
 */
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { EVENTS_FILE, STATE_FILE } from '../contract/files.js';
import { monotonicMs } from '../kernel/clock.js';
import { LiveEngine } from '../live/engine.js';
import { compareNewestFirst } from '../contract/runid.js';
import type { RunReport, RunsDocument, Status } from '../contract/types.js';
import type { SnapshotRead } from '../read/snapshot.js';
import { detailOf, type DetailLeg, type RunDetail } from '../status/detail.js';
import { inspectRun, type Inspection } from '../status/inspect.js';
import { listRuns, runsDocument, type SkippedEntry } from '../status/list.js';
import type { RunSelection } from '../status/select.js';
import {
  cardState,
  sectionOf,
  STRIP_MAX,
  totals,
  type DashboardDoc,
  type LegView,
  type NodeChip,
  type NodeDetail,
  type RunCard,
  type RunPage,
  type RunTimes,
  type TimelineItem,
} from './view.js';

/** Most events a run page's timeline shows. */
export const TIMELINE_MAX = 200;
/** Longest string kept in a timeline event or node detail. */
export const FIELD_MAX = 2000;
/** A changed stream waits this many times its last fold's duration before it is folded again. */
export const BACKOFF = 10;
/** Streams above this size are not folded for a card (32 MiB). */
export const CARD_STREAM_MAX = 32 * 1024 * 1024;
/** A run whose report took at least this long (ms) to derive counts as expensive. */
export const EXPENSIVE_MS = 50;
/** An expensive run's report is re-derived no sooner than this many times its last cost after it. */
export const EXPENSIVE_FACTOR = 4;

/** The `runs --json` document (CONTRACT §5.2); one definition, in contract/types.ts. */
export type { RunsDocument } from '../contract/types.js';

export interface ModelOptions {
  /** Streams above this many bytes are not folded for cards (default {@link CARD_STREAM_MAX}). */
  cardStreamMax?: number;
  /** A report taking at least this many ms makes a run expensive (default {@link EXPENSIVE_MS}). */
  expensiveMs?: number;
  /** An expensive run waits this many times its cost before it is re-derived (default {@link EXPENSIVE_FACTOR}). */
  expensiveFactor?: number;
  /**
   * Follow the root with the live engine (src/live/engine.ts): a run is
   * inspected again only when the engine saw one of its files change or its
   * report move (a death announced by the kernel included), or after
   * {@link LIVE_TRUST_MS} in any case; and {@link DashboardModel.subscribe}
   * tells the hub at once. Default false (every run inspected on every call).
   */
  live?: boolean;
}

/** With `live`, an inspection is reused at most this long (ms) without a change seen: the safety net. */
export const LIVE_TRUST_MS = 30_000;

/** Skips that are not runs at all (a stray file, a symlink): counted, not drawn as cards. */
const NOT_RUNS: ReadonlySet<SkippedEntry['kind']> = new Set(['not-a-directory', 'symlink']);

const EMPTY_TIMES: RunTimes = { started_at: null, ended_at: null, last_event_at: null };

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

function fileSig(path: string): string {
  try {
    const st = lstatSync(path, { bigint: true });
    return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.mode}`;
  } catch (e) {
    return `absent:${(e as NodeJS.ErrnoException).code ?? '?'}`;
  }
}

function fileSize(path: string): number {
  try {
    return lstatSync(path).size;
  } catch {
    return 0;
  }
}

/**
 * The reading layer's legs, numbered from 1. (runDetail already folds an
 * auto run's planning start and the untagged start after it into one leg.)
 */
export function numberLegs(legs: readonly DetailLeg[]): LegView[] {
  return legs.map((l, i) => ({ ...l, n: i + 1 }));
}

/** Times from the legs and the last event (ts is display only). */
function timesOf(legs: readonly LegView[], lastEvent: { event: Record<string, unknown> } | undefined): RunTimes {
  const first = legs[0];
  const last = legs[legs.length - 1];
  const ts = lastEvent?.event['ts'];
  return {
    started_at: first?.started_ts ?? null,
    ended_at: last !== undefined && last.state === 'closed' ? last.finished_ts : null,
    last_event_at: typeof ts === 'string' ? ts : null,
  };
}

interface ReportEntry {
  inspection: Inspection | undefined;
  error: unknown;
  /** When the derivation started (ISO, wall clock), and when it finished / how long it took (ms, monotonic: kernel/clock.ts). */
  startedIso: string;
  at: number;
  cost: number;
  /** Re-derived less often (see {@link EXPENSIVE_MS}). */
  expensive: boolean;
}

interface FoldEntry {
  key: string;
  sig: string;
  status: Status | null;
  detail: RunDetail | null;
  error: string | null;
  at: number;
  cost: number;
}

/** Each node's cost record in a snapshot (empty without one). */
function recordsOf(s: SnapshotRead): Map<string, { cost_usd: number | null; cost_unknown: boolean }> {
  return s.kind === 'ok' ? s.snapshot.records : new Map();
}

/** The dashboard's reading side, with the per-run bounds described above. */
export class DashboardModel {
  private readonly cardStreamMax: number;
  private readonly expensiveMs: number;
  private readonly expensiveFactor: number;
  private readonly cardFolds = new Map<string, FoldEntry>();
  private readonly pageFolds = new Map<string, FoldEntry>();
  private readonly reports = new Map<string, ReportEntry>();
  /** Expensive run dirs in the current derivation, with the time their report was derived. */
  private asOf = new Map<string, string>();
  private readonly engine: LiveEngine | undefined;
  /** Run dirs the engine saw change since their last inspection. */
  private readonly changed = new Set<string>();
  private readonly listeners = new Set<() => void>();
  private changes = 0;

  constructor(
    readonly root: string,
    options: ModelOptions = {},
  ) {
    this.cardStreamMax = options.cardStreamMax ?? CARD_STREAM_MAX;
    this.expensiveMs = options.expensiveMs ?? EXPENSIVE_MS;
    this.expensiveFactor = options.expensiveFactor ?? EXPENSIVE_FACTOR;
    if (options.live === true) {
      this.engine = new LiveEngine({ root, events: true, ref: false });
      this.engine.subscribe((c) => {
        if (c.type === 'notice') {
          process.stderr.write(`runwarden serve: ${c.message}\n`);
          return;
        }
        this.changed.add(c.runDir);
        this.changes++;
        for (const l of [...this.listeners]) l();
      });
      void this.engine.start();
    }
  }

  /**
   * With `live`: how many changes the engine has seen (a version: equal
   * numbers mean nothing changed in between). Undefined without `live`.
   */
  get version(): number | undefined {
    return this.engine === undefined ? undefined : this.changes;
  }

  /** With `live`: calls `onChange` whenever the engine sees a run change. Returns the unsubscribe. */
  subscribe(onChange: () => void): () => void {
    this.listeners.add(onChange);
    return () => this.listeners.delete(onChange);
  }

  /** Stops the live engine, if any. */
  close(): void {
    this.engine?.close();
    this.listeners.clear();
  }

  /** GET /api/runs[?status=&graph=&id=&limit=&before=]: exactly the `runs --json` document for that selection. */
  runsDocument(select?: RunSelection): RunsDocument {
    return runsDocument(listRuns(this.root, select === undefined ? {} : { select }));
  }

  /**
   * runStatus for one run directory, except that a run whose last derivation
   * was expensive (its stream's last leg is long, so even the tail reader
   * must read much of it) is re-derived no sooner than EXPENSIVE_FACTOR× its
   * cost after the last time; meanwhile the last answer (or error) is reused
   * and the card says how old it is. Cheap runs are derived every time.
   */
  private inspectionOf(dir: string): Inspection {
    const old = this.reports.get(dir);
    const now = monotonicMs();
    if (this.engine !== undefined) {
      // Nothing seen changing: the last inspection still stands (for at most LIVE_TRUST_MS).
      if (old !== undefined && !this.changed.has(dir) && now - old.at < LIVE_TRUST_MS) {
        if (old.expensive) this.asOf.set(dir, old.startedIso);
        if (old.inspection === undefined) throw old.error;
        return old.inspection;
      }
      this.changed.delete(dir);
    }
    if (old !== undefined && old.expensive && now - old.at < this.expensiveFactor * Math.max(old.cost, 1)) {
      this.asOf.set(dir, old.startedIso);
      if (old.inspection === undefined) throw old.error;
      return old.inspection;
    }
    // Wall clock on purpose: "as of" is shown to people. Costs and ages below are monotonic.
    const startedIso = new Date().toISOString();
    const t0 = monotonicMs();
    const done = (inspection: Inspection | undefined, error: unknown): void => {
      const t1 = monotonicMs();
      const cost = t1 - t0;
      // Half the threshold to stop being expensive, so a run near it does not flap.
      const expensive = cost >= this.expensiveMs || (old?.expensive === true && cost >= this.expensiveMs / 2);
      this.reports.set(dir, { inspection, error, startedIso, at: t1, cost, expensive });
      // An expensive run always carries its "as of" time (not only when its
      // report is reused), so its card does not change every cycle.
      if (expensive) this.asOf.set(dir, startedIso);
    };
    try {
      const inspection = inspectRun(dir);
      done(inspection, undefined);
      return inspection;
    } catch (e) {
      done(undefined, e);
      throw e;
    }
  }

  /** The whole dashboard. Yields to the event loop between runs. */
  async dashboard(): Promise<DashboardDoc> {
    this.asOf = new Map();
    const inspections = new Map<string, Inspection>();
    const list = listRuns(this.root, {
      report: (dir) => {
        const inspection = this.inspectionOf(dir);
        inspections.set(dir, inspection);
        return inspection.report;
      },
    });
    const cards: RunCard[] = [];
    const seen = new Set<string>();
    for (const report of list.runs) {
      const dir = join(list.root, report.run_id);
      seen.add(dir);
      cards.push(this.card(inspections.get(dir) as Inspection));
      await new Promise((r) => setImmediate(r));
    }
    for (const s of list.skipped) {
      if (NOT_RUNS.has(s.kind)) continue;
      const dir = join(list.root, s.run_id);
      seen.add(dir);
      cards.push({ run_id: s.run_id, state: 'unknown', section: 'other', report: null, error: s.error, checked_at: this.asOf.get(dir) ?? null, nodes: [], nodes_more: 0, ...EMPTY_TIMES });
    }
    for (const m of [this.cardFolds, this.reports]) for (const k of m.keys()) if (!seen.has(k)) m.delete(k);
    cards.sort((a, b) => compareNewestFirst(a.run_id, b.run_id));
    return {
      root: list.root,
      root_missing: list.missing,
      generated_at: new Date().toISOString(), // a timestamp for people: wall clock on purpose
      order: cards.map((c) => c.run_id),
      runs: cards,
      skipped: list.skipped.map((s) => ({ run_id: s.run_id, error: s.error })),
      ...totals(cards),
    };
  }

  /** One run's page document; `dir` is `<root>/<id>`, already validated. */
  async page(id: string, dir: string): Promise<RunPage> {
    let inspection: Inspection;
    this.asOf.delete(dir);
    try {
      inspection = this.inspectionOf(dir);
    } catch (e) {
      this.pageFolds.delete(dir);
      return { ...this.unreadablePage(id, e instanceof Error ? e.message : String(e)), checked_at: this.asOf.get(dir) ?? null };
    }
    const report = inspection.report;
    const checkedAt = this.asOf.get(dir) ?? null;
    const fold = this.fold(this.pageFolds, inspection, TIMELINE_MAX);
    const detail = fold.detail;
    if (detail === null) {
      return { ...this.basePage(id, report), stream_error: fold.error, checked_at: checkedAt };
    }
    const legs = numberLegs(detail.legs);
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
    const nodes: NodeDetail[] = detail.nodes.map((n) => {
      const rec = records.get(n.id);
      const d = lastVerdict.get(n.id);
      return {
        id: n.id,
        state: n.state,
        depends_on: n.depends_on,
        cost_usd: rec?.cost_usd ?? null,
        cost_unknown: rec?.cost_unknown ?? false,
        detail: d === undefined || d === '' ? null : d,
      };
    });
    const full = detail.events.length >= TIMELINE_MAX;
    return {
      ...this.basePage(id, report),
      nodes,
      layout: nodes.some((n) => n.depends_on.length > 0) ? 'layers' : 'list',
      legs,
      timeline,
      events_note: full ? `the last ${TIMELINE_MAX} events` : `${timeline.length} event${timeline.length === 1 ? '' : 's'}`,
      skipped_lines: detail.skipped_lines,
      stream_error: detail.stream_error ?? (fold.error !== null ? fold.error : null),
      checked_at: checkedAt,
      ...timesOf(legs, detail.events[detail.events.length - 1]),
    };
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
      layout: 'list',
      legs: [],
      timeline: [],
      events_note: '',
      skipped_lines: 0,
      stream_error: null,
      checked_at: null,
      ...EMPTY_TIMES,
    };
  }

  private unreadablePage(id: string, error: string): RunPage {
    return this.basePage(id, null, error);
  }

  private card(inspection: Inspection): RunCard {
    const { report, runDir: dir } = inspection;
    const state = cardState(report);
    const base: RunCard = { run_id: report.run_id, state, section: sectionOf(state), report, error: null, checked_at: this.asOf.get(dir) ?? null, nodes: [], nodes_more: 0, ...EMPTY_TIMES };
    let chips: NodeChip[];
    let times: RunTimes = EMPTY_TIMES;
    if (fileSize(join(dir, EVENTS_FILE)) > this.cardStreamMax) {
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
      const fold = this.fold(this.cardFolds, inspection, 1);
      if (fold.detail === null) return base;
      chips = fold.detail.nodes.map((n) => ({ id: n.id, state: n.state }));
      times = timesOf(numberLegs(fold.detail.legs), fold.detail.events[fold.detail.events.length - 1]);
    }
    return { ...base, ...times, nodes: chips.slice(0, STRIP_MAX), nodes_more: Math.max(0, chips.length - STRIP_MAX) };
  }

  /** The detail of an inspection, cached per (files, status) and backed off as the module comment says. Never throws. */
  private fold(map: Map<string, FoldEntry>, inspection: Inspection, events: number): FoldEntry {
    const dir = inspection.runDir;
    const status = inspection.report.status;
    const sig = fileSig(join(dir, EVENTS_FILE)) + '|' + fileSig(join(dir, STATE_FILE));
    const key = `${sig}|${status}`;
    const old = map.get(dir);
    const now = monotonicMs();
    if (old !== undefined) {
      if (old.key === key) return old;
      // Files changed but the status did not: back off a costly fold.
      if (old.status === status && now - old.at < BACKOFF * old.cost) return old;
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
    // Keyed by the status the fold itself saw (its nodes were made abandoned
    // or not by it), so a report that moved on in between refolds next time.
    const seen = detail !== null ? detail.report.status : status;
    const entry: FoldEntry = { key: `${sig}|${seen}`, sig, status: seen, detail, error, at: t1, cost: t1 - t0 };
    map.set(dir, entry);
    return entry;
  }
}
