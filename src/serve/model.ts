/**
 * What the dashboard serves, from one of two models with the same calls:
 * - the live index (liveindex.ts, `live: true`, what `runwarden serve`
 *   uses): an index of what the live engine reports, which alone lists the
 *   root, names and reads the runs;
 * - the one-shot model (oneshot.ts, the default, what `runwarden metrics`
 *   and the tests use): every call lists the root and inspects its runs
 *   afresh.
 * Cards and run pages are built for both by cards.ts.
 *
 * Invariants, and why:
 * - No status, liveness or hint is derived in serve/: every one comes from
 *   the reading layer's inspection (one-shot) or the live engine's report
 *   (live), so the page, /metrics and the CLI cannot disagree.
 * - `runsDocument` is exactly the `runs --json` document: the listing itself,
 *   never a document rebuilt from either model.
 * - The addon is loaded first, as the CLI loads it (cli/main.ts): an install
 *   whose addon cannot load says so (AddonLoadError, ERR_RUNWARDEN_NATIVE),
 *   never as a root the model then reports as unreadable.
 * - The observer (serve/metrics.ts) is told of each probe as it is made and
 *   of each document's count of entries that could not be read; the reports
 *   list and the observer are all that serve/metrics.ts depends on.
 */
import type { RunsDocument } from '../contract/types.js';
import type { LiveStats } from '../live/engine.js';
import { loadAddon } from '../kernel/native.js';
import { listRuns, runsDocument } from '../status/list.js';
import type { RunSelection } from '../status/select.js';
import { LiveIndex } from './liveindex.js';
import { OneShotModel } from './oneshot.js';
import type { ModelObserver, ModelOptions, ReportsList } from './reports.js';
import type { DashboardDoc, RunPage } from './view.js';

export { BACKOFF, CARD_STREAM_MAX, FIELD_MAX, numberLegs, PAGE_DEPS_MAX, PAGE_NODES_MAX, SECTION_PAGE, TIMELINE_MAX } from './cards.js';
export { EXPENSIVE_FACTOR, EXPENSIVE_MS, SETTLED_RECHECK_MS } from './oneshot.js';
export type { ModelObserver, ModelOptions, ReportsList } from './reports.js';
/** The `runs --json` document (CONTRACT §5.2); one definition, in contract/types.ts. */
export type { RunsDocument } from '../contract/types.js';

/** The dashboard's reading side: the live index or the one-shot model, as `options.live` says. */
export class DashboardModel {
  private readonly index: LiveIndex | undefined;
  private readonly oneShot: OneShotModel | undefined;
  private readonly observer: ModelObserver | undefined;

  constructor(
    readonly root: string,
    options: ModelOptions = {},
  ) {
    loadAddon();
    this.observer = options.observer;
    if (options.live === true) this.index = new LiveIndex(root, options);
    else this.oneShot = new OneShotModel(root, options);
  }

  /**
   * With `live`: how many changes the engine has told (a version: equal
   * numbers mean nothing changed in between). Undefined without `live`.
   */
  get version(): number | undefined {
    return this.index?.version;
  }

  /** With `live`: the live engine's counters (for tests). Undefined without `live`. */
  get engineStats(): LiveStats | undefined {
    return this.index?.engineStats;
  }

  /** With `live`: calls `onChange` whenever the engine tells of a change. Returns the unsubscribe. */
  subscribe(onChange: () => void): () => void {
    return this.index === undefined ? () => false : this.index.subscribe(onChange);
  }

  /** Stops the live engine, if any. */
  close(): void {
    this.index?.close();
  }

  /**
   * The latest reports list (for /metrics), no older than `maxAgeMs` for
   * the one-shot model (oneshot.ts currentReports); the live index's is
   * always current. Never throws: a root that cannot be listed is `error`.
   */
  async currentReports(maxAgeMs: number): Promise<ReportsList> {
    if (this.index === undefined) return (this.oneShot as OneShotModel).currentReports(maxAgeMs);
    const list = await this.index.reports();
    this.observer?.scanned(this.index.unreadable);
    return list;
  }

  /** GET /api/runs[?status=&graph=&id=&limit=&before=]: exactly the `runs --json` document for that selection. */
  runsDocument(select?: RunSelection): RunsDocument {
    return runsDocument(listRuns(this.root, select === undefined ? {} : { select }));
  }

  /** The whole dashboard. */
  async dashboard(): Promise<DashboardDoc> {
    if (this.index === undefined) return (this.oneShot as OneShotModel).dashboard();
    try {
      return await this.index.dashboard();
    } finally {
      this.observer?.scanned(this.index.unreadable);
    }
  }

  /** One run's page document; `dir` is `<root>/<id>`, already validated. */
  page(id: string, dir: string): Promise<RunPage> {
    return this.index === undefined ? (this.oneShot as OneShotModel).page(id, dir) : this.index.page(id, dir);
  }
}
