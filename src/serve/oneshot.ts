/**
 * The one-shot dashboard model: every call lists the root and inspects its
 * runs afresh (`listRuns` over `inspectRun`, the calls behind `runs` and
 * `status`). `runwarden metrics` and the tests use it; `runwarden serve`
 * uses the live index (liveindex.ts) instead.
 *
 * Invariants, and why:
 * - No status, liveness or hint is derived here. Every one comes from the
 *   inspection, so the page and the CLI cannot disagree; a fresh inspection
 *   is taken on every call, because a holder's death changes nothing on disk.
 * - Each run is derived, and its lock probed, once per document, and its
 *   snapshot read once.
 * - Per-run work is bounded, so one huge or hostile run cannot stall the
 *   others. A run whose report took ≥ {@link EXPENSIVE_MS} to derive is
 *   re-derived no sooner than {@link EXPENSIVE_FACTOR}× that after the last
 *   time, and its card says "as of" when (`checked_at`); every other run is
 *   re-derived each time. A run whose last leg is closed is not derived
 *   again while its stream and snapshot keep their identity (device, inode,
 *   size, mtime, ctime), for at most {@link SETTLED_RECHECK_MS}. Cards and
 *   pages: cards.ts.
 * - An answer is reused only for the same stream file (device and inode), so
 *   a root replaced by another directory holding a run of the same name never
 *   shows the old file's answer, a false ABANDONED among them.
 * - A run that cannot be read becomes an `unknown` card carrying the reason;
 *   no error from one run escapes to the others.
 * - Each derivation's list of reports is kept (`currentReports`), so that
 *   /metrics reads what the last derivation learned instead of making its
 *   own pass; the observer is told of each probe and each derivation's
 *   error count as they happen.
 * - Reads only: everything goes through the reading layer, which opens files
 *   read-only and probes with a shared lock.
 */
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { EVENTS_FILE, STATE_FILE } from '../contract/files.js';
import { compareNewestFirst } from '../contract/runid.js';
import { monotonicMs } from '../kernel/clock.js';
import { runFilePath } from '../kernel/dirfd.js';
import { inspectRun, type Inspection, type RunStatusOptions } from '../status/inspect.js';
import { listRuns } from '../status/list.js';
import { CardMaker, SECTION_PAGE, unreadableCard } from './cards.js';
import { NOT_RUNS, type ModelObserver, type ModelOptions, type ReportsList } from './reports.js';
import { cardState, dashboardDoc, sectionOf, totals, type DashboardDoc, type RunCard, type RunPage, type Section, type SectionMore } from './view.js';

/**
 * A run whose last leg is closed (its report needed no probe) is not derived
 * again while its stream and snapshot keep their identity (device, inode,
 * size, mtime, ctime); this long after its derivation it is derived anyway,
 * so a change the identity missed cannot freeze a card (ms).
 */
export const SETTLED_RECHECK_MS = 30_000;
/** A run whose report took at least this long (ms) to derive counts as expensive. */
export const EXPENSIVE_MS = 50;
/** An expensive run's report is re-derived no sooner than this many times its last cost after it. */
export const EXPENSIVE_FACTOR = 4;

/** The identity of a run's stream and snapshot, with ctime (a restored mtime still changes ctime). Stats only: content is read through descriptors. */
function runFilesSig(dir: string): string {
  const one = (file: string): string => {
    try {
      // No exception for a missing file (most runs have no state.json): a thrown ENOENT costs as much as the lstat.
      const st = lstatSync(runFilePath(dir, file), { bigint: true, throwIfNoEntry: false });
      if (st === undefined) return 'ENOENT';
      return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.mode}`;
    } catch (e) {
      return (e as NodeJS.ErrnoException).code ?? 'error';
    }
  };
  return `${one(EVENTS_FILE)}|${one(STATE_FILE)}`;
}

/** The stream's device and inode, or why there is none, out of a {@link runFilesSig} (taken before the read). */
function streamOf(filesSig: string): string {
  const events = filesSig.slice(0, filesSig.indexOf('|'));
  const parts = events.split(':');
  return parts.length > 2 ? `${parts[0]}:${parts[1]}` : events;
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
  /** The stream's device and inode when it was derived ({@link streamOf}): the answer is reused only for that same file. */
  stream: string;
}

/** A report that depends on the run's files only, and the identity of those files when it was derived. */
interface SettledEntry {
  sig: string;
  inspection: Inspection;
  at: number;
}

/** The one-shot model (see the module comment). */
export class OneShotModel {
  private readonly expensiveMs: number;
  private readonly expensiveFactor: number;
  private readonly sectionPage: number;
  private readonly cards: CardMaker;
  private readonly reports = new Map<string, ReportEntry>();
  private readonly settled = new Map<string, SettledEntry>();
  /** Expensive run dirs in the current derivation, with the time their report was derived. */
  private asOf = new Map<string, string>();
  private readonly observer: ModelObserver | undefined;
  private readonly onProbe: RunStatusOptions['onProbe'];
  /** The last derivation's list and when it finished (monotonic ms); shared by dashboard() and currentReports(). */
  private latest: { list: ReportsList; at: number } | undefined;
  /** A status-only derivation under way, shared by concurrent currentReports() callers. */
  private pending: Promise<ReportsList> | undefined;

  constructor(
    readonly root: string,
    options: ModelOptions = {},
  ) {
    this.cards = new CardMaker(root, options.cardStreamMax);
    this.expensiveMs = options.expensiveMs ?? EXPENSIVE_MS;
    this.expensiveFactor = options.expensiveFactor ?? EXPENSIVE_FACTOR;
    this.sectionPage = options.sectionPage ?? SECTION_PAGE;
    const observer = options.observer;
    this.observer = observer;
    // Each probe an inspection makes, timed by the inspection itself (the kernel's own probe, through the run's descriptor).
    this.onProbe = observer === undefined ? undefined : (seconds, answer) => observer.probed(seconds, answer.liveness);
  }

  /**
   * The latest reports list, no older than `maxAgeMs`: the last derivation's
   * if it finished that recently, else a fresh status-only derivation: the
   * same listRuns over the same per-run bounds as the dashboard (an
   * expensive run's report is reused), without the folds behind cards.
   * Concurrent callers share one derivation. Never throws: a root that
   * cannot be listed is `error`.
   */
  currentReports(maxAgeMs: number): Promise<ReportsList> {
    const l = this.latest;
    if (l !== undefined && monotonicMs() - l.at <= maxAgeMs) return Promise.resolve(l.list);
    this.pending ??= Promise.resolve()
      .then(() => this.deriveReports())
      .finally(() => {
        this.pending = undefined;
      });
    return this.pending;
  }

  private deriveReports(): ReportsList {
    let list: ReportsList;
    try {
      const got = listRuns(this.root, { report: (dir) => this.inspectionOf(dir).report });
      this.keepOnly(new Set([...got.runs.map((r) => join(got.root, r.run_id)), ...got.skipped.map((s) => join(got.root, s.run_id))]));
      list = { root: got.root, missing: got.missing, runs: got.runs, skipped: got.skipped };
    } catch (e) {
      list = { root: this.root, missing: false, runs: [], skipped: [], error: e instanceof Error ? e.message : String(e) };
    }
    this.remember(list);
    return list;
  }

  private keepOnly(seen: ReadonlySet<string>): void {
    this.cards.keepOnly(seen);
    for (const m of [this.reports, this.settled]) for (const k of m.keys()) if (!seen.has(k)) m.delete(k);
  }

  /** Keeps a finished derivation as the latest, and tells the observer its error count. */
  private remember(list: ReportsList): void {
    this.latest = { list, at: monotonicMs() };
    this.observer?.scanned(list.error !== undefined ? 1 : list.skipped.filter((s) => !NOT_RUNS.has(s.kind)).length);
  }

  /**
   * runStatus for one run directory, except that a settled run whose files
   * kept their identity keeps its report, and a run whose last derivation
   * was expensive is re-derived no sooner than EXPENSIVE_FACTOR× its cost
   * after the last time (the card then says how old it is).
   */
  private inspectionOf(dir: string): Inspection {
    const now = monotonicMs();
    // A closed last leg: nothing but the files decides the report (no probe), so unchanged files mean an unchanged report.
    const filesSig = runFilesSig(dir);
    const kept = this.settled.get(dir);
    if (kept !== undefined) {
      if (kept.sig === filesSig && now - kept.at < SETTLED_RECHECK_MS) return kept.inspection;
      this.settled.delete(dir);
    }
    const inspection = this.derive(dir, now, filesSig);
    // The identity was taken before the read: a change during it shows as a different identity next time.
    if (inspection.report.liveness === null) this.settled.set(dir, { sig: filesSig, inspection, at: monotonicMs() });
    return inspection;
  }

  /**
   * A fresh inspection of `dir`, except that an expensive run's last answer
   * (or error) is reused within its window (EXPENSIVE_FACTOR × its cost),
   * and only for the same stream file as `filesSig` (the caller's
   * {@link runFilesSig}, taken before this read). Throws what inspectRun throws.
   */
  private derive(dir: string, now: number, filesSig: string): Inspection {
    const old = this.reports.get(dir);
    if (old !== undefined && old.expensive && now - old.at < this.expensiveFactor * Math.max(old.cost, 1) && streamOf(filesSig) === old.stream) {
      this.asOf.set(dir, old.startedIso);
      if (old.inspection === undefined) throw old.error;
      return old.inspection;
    }
    // Wall clock on purpose: "as of" is shown to people. Costs and ages below are monotonic.
    const startedIso = new Date().toISOString();
    const stream = streamOf(filesSig);
    const t0 = monotonicMs();
    const done = (inspection: Inspection | undefined, error: unknown): void => {
      const t1 = monotonicMs();
      const cost = t1 - t0;
      // Half the threshold to stop being expensive, so a run near it does not flap.
      const expensive = cost >= this.expensiveMs || (old?.expensive === true && cost >= this.expensiveMs / 2);
      // Kept for expensive runs only (the reuse above): a cheap run's answer is never reused, so it is not kept.
      if (expensive) this.reports.set(dir, { inspection, error, startedIso, at: t1, cost, expensive, stream });
      else this.reports.delete(dir);
      // An expensive run always carries its "as of" time (not only when its
      // report is reused), so its card does not change every cycle.
      if (expensive) this.asOf.set(dir, startedIso);
    };
    try {
      const inspection = this.onProbe === undefined ? inspectRun(dir) : inspectRun(dir, { onProbe: this.onProbe });
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
    let list;
    try {
      list = listRuns(this.root, {
        report: (dir) => {
          const inspection = this.inspectionOf(dir);
          inspections.set(dir, inspection);
          return inspection.report;
        },
      });
    } catch (e) {
      this.remember({ root: this.root, missing: false, runs: [], skipped: [], error: e instanceof Error ? e.message : String(e) });
      throw e;
    }
    this.remember({ root: list.root, missing: list.missing, runs: list.runs, skipped: list.skipped });
    // Every run counts in the tallies; cards are built for every run in flight
    // or abandoned (they are the point) and for the newest SECTION_PAGE of each
    // other section, newest first (listRuns' order), so the document's size
    // does not grow with the settled runs under the root.
    const everyRun: Pick<RunCard, 'state' | 'report'>[] = [];
    const shownIn: Record<Section, number> = { 'in-flight': 0, abandoned: 0, settled: 0, other: 0 };
    const more: SectionMore = { settled: 0, other: 0 };
    const room = (section: Section): boolean => {
      if (section === 'in-flight' || section === 'abandoned') return true;
      if (shownIn[section] < this.sectionPage) return true;
      more[section]++;
      return false;
    };
    const cards: RunCard[] = [];
    const seen = new Set<string>();
    for (const report of list.runs) {
      const dir = join(list.root, report.run_id);
      seen.add(dir);
      const state = cardState(report);
      everyRun.push({ state, report });
      const section = sectionOf(state);
      if (!room(section)) continue;
      shownIn[section]++;
      cards.push(this.cards.card(inspections.get(dir) as Inspection, this.asOf.get(dir) ?? null, runFilesSig(dir)));
      await new Promise((r) => setImmediate(r));
    }
    const unreadable = list.skipped.filter((s) => !NOT_RUNS.has(s.kind)).sort((a, b) => compareNewestFirst(a.run_id, b.run_id));
    const strays = list.skipped.length - unreadable.length;
    for (const s of unreadable) {
      const dir = join(list.root, s.run_id);
      seen.add(dir);
      everyRun.push({ state: 'unknown', report: null });
      if (!room('other')) continue;
      shownIn.other++;
      cards.push(unreadableCard(s.run_id, s.error, this.asOf.get(dir) ?? null));
    }
    this.keepOnly(seen);
    cards.sort((a, b) => compareNewestFirst(a.run_id, b.run_id));
    return dashboardDoc(list.root, list.missing, cards, more, unreadable, strays, totals(everyRun));
  }

  /** One run's page document; `dir` is `<root>/<id>`, already validated. */
  page(id: string, dir: string): Promise<RunPage> {
    this.asOf.delete(dir);
    let inspection: Inspection;
    try {
      inspection = this.inspectionOf(dir);
    } catch (e) {
      this.cards.forget(dir);
      return Promise.resolve(this.cards.unreadablePage(id, e instanceof Error ? e.message : String(e), this.asOf.get(dir) ?? null));
    }
    return Promise.resolve(this.cards.page(id, inspection, this.asOf.get(dir) ?? null, runFilesSig(dir)));
  }
}
