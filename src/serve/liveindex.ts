/**
 * The live dashboard index (what `runwarden serve` uses): the dashboard's
 * sections, tallies and cost kept as indexes of what the live engine
 * (live/engine.ts) reports, so a change costs the run that changed and a
 * document costs the cards it shows, never the root.
 *
 * Invariants, and why:
 * - One owner of what is under the root. The engine alone lists the root,
 *   names each run (the contract's shown name), keeps its files' identities,
 *   derives its report and makes the safety pass; this index subscribes to
 *   it and derives nothing of its own: each entry is the engine's report (or
 *   its reason a run cannot be read), under the engine's id, and the root's
 *   facts (missing, unlistable, entries that are not runs) are the engine's.
 *   So a run appears once, with one status, on every surface that reads
 *   this index (the dashboard, its pages, serve's /metrics).
 * - Every change the engine tells is applied before a document is made
 *   (`live()`): the entry is read again from the engine as it is then, so
 *   the order and number of changes told do not matter.
 * - The first listing is the batched listing of `runs --json` (on two
 *   threads for a large root: status/list-threads.ts), made once when the
 *   engine asks for it (LiveEngineOptions.seed) once it watches every run:
 *   the engine takes those reports for its settled runs instead of reading
 *   them again. The index is made from the engine's runs once its first pass
 *   is over; until then a document waits, and the page says "Loading…".
 * - Per run the index keeps a compact record ({@link LiveEntry}: the report,
 *   shared with the engine, and a card while a document shows the run);
 *   cards and pages are built from the engine's report and the snapshot the
 *   engine reads (cards.ts). Per settled run the engine keeps its RunState
 *   (live/runstate.ts: seven words), its directory's path, two hashes of its
 *   file identities (shared slabs, off the heap) and its watch; the index a
 *   LiveEntry sharing the engine's report. test/serve-memory.test.ts holds a
 *   real serve's resident memory to bounds written in the test.
 * - Reads only; no timer of its own but the card back-off's (cards.ts) and
 *   the release of the first listing's memory.
 */
import { join, resolve } from 'node:path';
import type { RunReport } from '../contract/types.js';
import { nameOrderKey } from '../contract/runid.js';
import { releaseFreeMemory } from '../kernel/memory.js';
import { monotonicMs } from '../kernel/clock.js';
import { LiveEngine, type LiveStats } from '../live/engine.js';
import type { SnapshotRead } from '../read/snapshot.js';
import { noStreamFacts } from '../read/tail.js';
import type { Inspection, RunStatusOptions } from '../status/inspect.js';
import type { SkippedEntry } from '../status/list.js';
import { compactReport } from '../status/compact.js';
import { forEachRunThreaded } from '../status/list-threads.js';
import { CardMaker, SECTION_PAGE, unreadableCard } from './cards.js';
import type { ModelOptions, ReportsList } from './reports.js';
import { safetyMsFromEnv } from './limits.js';
import { CARD_STATES, cardState, dashboardDoc, sectionOf, type CardState, type DashboardDoc, type RunCard, type RunPage, type Section } from './view.js';

/**
 * Run directories the first listing inspects together, on the index's
 * thread and in its list worker (list-threads.ts forEachRunThreaded; the
 * CLI's listing takes 256). In serve's worker, whose young generation is
 * 4 MB (offthread.ts), a batch's inspections outlive the scavenges made
 * while it is read and are promoted; 32 keeps what is promoted at 100,000
 * runs to about 40 MB, most of it the compacted reports that stay. Each
 * batch with an open leg reads the kernel's lock table once.
 */
const FIRST_LISTING_BATCH = 32;

/**
 * How long after the first listing the index asks the allocator a second
 * time to give free memory back (ms): V8's memory reducer frees the start-up
 * garbage about 8 s after the burst.
 */
const RELEASE_AGAIN_MS = 15_000;

/** The tail facts of a card's inspection: nothing a card or page reads, so one for all. */
const NO_TAIL = noStreamFacts();

/** A snapshot for a run the engine no longer follows (its card is about to go). */
const NO_SNAPSHOT: SnapshotRead = { kind: 'missing' };

function newestFirst(a: { key: string }, b: { key: string }): number {
  return a.key < b.key ? 1 : a.key > b.key ? -1 : 0;
}

/**
 * Run ids kept newest first (descending byte order of the names, as
 * listRuns orders them), with insertion and removal by binary search: a
 * change costs O(log n) comparisons and one array move, never a sort. The
 * keys are strings whose UTF-16 order is the names' byte order
 * ({@link nameOrderKey}): for a plain id the id itself, so a run costs two array
 * slots here, not a Buffer.
 */
class NewestFirst {
  private readonly ids: string[] = [];
  private readonly keys: string[] = [];

  get size(): number {
    return this.ids.length;
  }

  /** Where `key` is, or would go. */
  private find(key: string): number {
    let lo = 0;
    let hi = this.keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      // Newest first: larger names come first.
      if ((this.keys[mid] as string) > key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  add(id: string): void {
    const key = nameOrderKey(id);
    const i = this.find(key);
    if (i < this.keys.length && this.keys[i] === key) return;
    if (i === this.ids.length) {
      // The first pass adds newest first: each one at the end.
      this.ids.push(id);
      this.keys.push(key);
      return;
    }
    this.ids.splice(i, 0, id);
    this.keys.splice(i, 0, key);
  }

  delete(id: string): void {
    const key = nameOrderKey(id);
    const i = this.find(key);
    if (i < this.keys.length && this.keys[i] === key) {
      this.ids.splice(i, 1);
      this.keys.splice(i, 1);
    }
  }

  head(n: number): string[] {
    return this.ids.slice(0, n);
  }
}

/**
 * One run as the index keeps it: the engine's report (compacted by the
 * engine, and the very object it holds), or for a run that cannot be read
 * the skip listRuns would give, plus the card while a document shows the
 * run. Its state and section are read from the report, not kept, so they
 * cannot disagree with it. No path: the directory is `<root>/<id>`.
 */
class LiveEntry {
  card: RunCard | undefined = undefined;

  constructor(private readonly what: RunReport | SkippedEntry) {}

  /** The run's id: its report's, or its skip's. */
  get id(): string {
    return this.what.run_id;
  }

  /** For a run: its report; undefined for one that cannot be read. */
  get report(): RunReport | undefined {
    return 'kind' in this.what ? undefined : this.what;
  }

  /** For a run that cannot be read: the skip listRuns would give. */
  get skip(): SkippedEntry | undefined {
    return 'kind' in this.what ? this.what : undefined;
  }

  get state(): CardState {
    return this.report !== undefined ? cardState(this.report) : 'unknown';
  }

  get section(): Section {
    return sectionOf(this.state);
  }
}

/**
 * The reports of the first listing, looked up by name for the engine's seed
 * without a map of every name. The listing is in descending byte order of
 * the names (CONTRACT §1.1 rule 6), and the engine asks in its own tracking
 * order, which is the listing's, so each name is almost always the one
 * after the last found (O(1)); any other is found by binary search over the
 * names' byte keys ({@link nameOrderKey}), never over the shown forms, whose
 * escapes order differently from the bytes they stand for.
 */
class ListingIndex {
  private next = 0;

  constructor(private readonly runs: readonly RunReport[]) {}

  get(id: string): RunReport | undefined {
    const runs = this.runs;
    const hint = runs[this.next];
    if (hint !== undefined && hint.run_id === id) {
      this.next++;
      return hint;
    }
    const key = nameOrderKey(id);
    let lo = 0;
    let hi = runs.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const at = (runs[mid] as RunReport).run_id;
      if (at === id) {
        this.next = mid + 1;
        return runs[mid];
      }
      if (nameOrderKey(at) > key) lo = mid + 1;
      else hi = mid - 1;
    }
    return undefined;
  }
}

/** The live index (see the module comment). */
export class LiveIndex {
  private engine!: LiveEngine;
  private readonly cards: CardMaker;
  private readonly absRoot: string;
  private readonly sectionPage: number;
  private readonly listThreads: number | undefined;
  private readonly onProbe: RunStatusOptions['onProbe'];
  /** Runs the engine told of since the index last applied its changes (run directory → id). */
  private readonly changed = new Map<string, string>();
  /** The engine told of new root facts since they were last applied. */
  private rootChanged = false;
  private readonly listeners = new Set<() => void>();
  private changes = 0;
  private notifyQueued = false;
  private closed = false;
  /** The engine's first pass, which the index waits for. */
  private engineStarted!: Promise<void>;
  /** Starts left to fail on purpose (ModelOptions.failStarts). */
  private failStarts: number;
  /** The first listing, asked for by the engine (the seed), made once. */
  private firstPending: Promise<{ get(runId: string): RunReport | undefined } | undefined> | undefined;
  /** The index is made (the engine's first pass is over). */
  private ready = false;
  private initing: Promise<void> | undefined;
  private readonly entries = new Map<string, LiveEntry>();
  /** The root's facts as the engine last told them. */
  private missing = false;
  private error: string | null = null;
  private strays = 0;
  /** Runs whose card the last document showed. */
  private shown = new Set<string>();
  private readonly inFlight = new Set<string>();
  private readonly abandoned = new Set<string>();
  private readonly pagedSettled = new NewestFirst();
  private readonly pagedOther = new NewestFirst();
  private readonly tallies = Object.fromEntries(CARD_STATES.map((s) => [s, 0])) as Record<CardState, number>;
  private costKnown = 0;
  private costUnknown = 0;
  private readonly skips = new Map<string, SkippedEntry>();
  private skipsSorted: SkippedEntry[] | undefined;
  private reportsCache: ReportsList | undefined;
  /** Cards built from a backed-off fold: built again when the back-off ends (id → monotonic ms). */
  private readonly retry = new Map<string, number>();
  private retryTimer: NodeJS.Timeout | undefined;
  private releaseTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly root: string,
    options: ModelOptions = {},
  ) {
    this.absRoot = resolve(root);
    this.cards = new CardMaker(root, options.cardStreamMax);
    this.sectionPage = options.sectionPage ?? SECTION_PAGE;
    this.listThreads = options.listThreads;
    const observer = options.observer;
    this.onProbe = observer === undefined ? undefined : (seconds, answer) => observer.probed(seconds, answer.liveness);
    this.failStarts = options.failStarts ?? 0;
    this.startEngine();
  }

  /**
   * Makes the engine and begins its first pass. Made again when a start
   * failed: what a failed engine holds is not trusted, and the next request
   * starts afresh rather than keep the failure.
   */
  private startEngine(): void {
    // settledForget and seed: the engine keeps nothing of a settled run's stream, and takes the
    // reports of the first listing instead of reading every run a second time.
    this.engine = new LiveEngine({ root: this.root, ref: false, announceFiles: true, settledForget: true, seed: () => this.firstListing(), safetyMs: safetyMsFromEnv() });
    this.engine.subscribe((c) => {
      if (c.type === 'notice') {
        process.stderr.write(`runwarden serve: ${c.message}\n`);
        return;
      }
      if (c.type === 'root') this.rootChanged = true;
      else if (c.type === 'run' || c.type === 'removed') {
        this.changed.set(c.runDir, c.runId);
        this.cards.invalidate(c.runDir);
      } else return;
      this.bump();
    });
    // Begun on the next turn, so the constructor returns before the listing the engine asks for.
    const engine = this.engine;
    this.engineStarted = new Promise<void>((r) => setImmediate(r)).then(() => {
      if (this.closed) return undefined;
      if (this.failStarts > 0) {
        this.failStarts--;
        throw new Error('the live index failed to start (ModelOptions.failStarts)');
      }
      return engine.start();
    });
    // Its failure is the next request's (init); never an unhandled rejection, which would end the thread.
    this.engineStarted.catch(() => undefined);
  }

  /** How many changes the engine has told (a version: equal numbers mean nothing changed in between). */
  get version(): number {
    return this.changes;
  }

  /** The engine's counters (for tests). */
  get engineStats(): LiveStats {
    return this.engine.stats;
  }

  /** Calls `onChange` whenever the engine tells of a change. Returns the unsubscribe. */
  subscribe(onChange: () => void): () => void {
    this.listeners.add(onChange);
    return () => this.listeners.delete(onChange);
  }

  close(): void {
    this.closed = true;
    this.engine.close();
    this.listeners.clear();
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    if (this.releaseTimer !== undefined) clearTimeout(this.releaseTimer);
    this.retryTimer = this.releaseTimer = undefined;
  }

  /** A new version; listeners are told once per turn of the event loop, however many changes it brought. */
  private bump(): void {
    this.changes++;
    if (this.notifyQueued) return;
    this.notifyQueued = true;
    setImmediate(() => {
      this.notifyQueued = false;
      for (const l of [...this.listeners]) l();
    });
  }

  /**
   * The first listing, asked for by the engine once it watches every run:
   * the listing of `runs --json` (its batched inspections, shared with a
   * list worker for a large root), one inspection per run. Only a seed: the
   * engine takes these reports for the settled runs it follows, and reads
   * every other run itself. Made once.
   */
  private firstListing(): Promise<{ get(runId: string): RunReport | undefined } | undefined> {
    return (this.firstPending ??= this.listFirst());
  }

  private async listFirst(): Promise<{ get(runId: string): RunReport | undefined } | undefined> {
    try {
      // Its probes count for /metrics through the observer. Each report is compacted as it comes, so the
      // listing's own objects die young; the engine keeps these very objects.
      const runs: RunReport[] = [];
      await forEachRunThreaded(
        this.absRoot,
        (r) => compactReport(r),
        (r) => runs.push(r),
        {
          batchRuns: FIRST_LISTING_BATCH,
          stop: () => this.closed,
          ...(this.listThreads === undefined ? {} : { threads: this.listThreads }),
          ...(this.onProbe === undefined ? {} : { onProbe: this.onProbe }),
        },
      );
      return new ListingIndex(runs);
    } catch {
      return undefined; // the engine reads every run itself, and says why the root cannot be listed
    }
  }

  /** Makes the index from the engine's runs once its first pass is over. */
  private async init(): Promise<void> {
    await this.engineStarted;
    if (this.closed) return;
    this.firstPending = undefined; // (its answer holds the whole listing)
    this.changed.clear(); // every run is read from the engine now
    this.rootChanged = false;
    this.takeRootFacts();
    this.engine.forEachRun((id, _dir, report, error) => {
      const e = this.entryOf(id, report, error);
      if (e !== undefined) this.addEntry(e);
    });
    this.ready = true;
    // The first listing's burst is over: what the allocator holds free (the list worker's arena) goes back to the
    // kernel, now and once more after V8's memory reducer has run (kernel/memory.ts). A request, not needed for any answer.
    releaseFreeMemory();
    this.releaseTimer = setTimeout(() => {
      this.releaseTimer = undefined;
      if (!this.closed) releaseFreeMemory();
    }, RELEASE_AGAIN_MS);
    this.releaseTimer.unref();
  }

  /**
   * The entries, the index made if it was not (awaited), and every change
   * told since applied. A start that failed fails the requests waiting for
   * it, with its reason, and is begun again for the next one.
   */
  private async live(): Promise<Map<string, LiveEntry>> {
    if (!this.ready) {
      const starting = (this.initing ??= this.init());
      try {
        await starting;
      } catch (e) {
        if (this.initing === starting && !this.closed) {
          this.initing = undefined;
          this.firstPending = undefined;
          this.engine.close();
          this.startEngine();
        }
        throw e;
      }
    }
    this.apply();
    return this.entries;
  }

  /** The entry of a run as the engine has it, or undefined for a run it has not derived yet (it tells when it has). */
  private entryOf(id: string, report: RunReport | null, error: string | null): LiveEntry | undefined {
    if (report !== null) return new LiveEntry(report);
    return error === null ? undefined : new LiveEntry({ run_id: id, error, kind: 'error' });
  }

  private takeRootFacts(): void {
    const f = this.engine.rootFacts;
    this.missing = f.missing;
    this.error = f.error;
    this.strays = f.strays;
    this.reportsCache = undefined;
  }

  /** Applies every change told since the last call: each run as the engine has it now. */
  private apply(): void {
    if (this.rootChanged) {
      this.rootChanged = false;
      this.takeRootFacts();
    }
    if (this.changed.size === 0) return;
    const changed = [...this.changed];
    this.changed.clear();
    for (const [dir, id] of changed) {
      const old = this.entries.get(id);
      const run = this.engine.get(dir);
      if (old !== undefined) this.removeEntry(old);
      if (run === undefined) continue; // no longer followed: gone
      const e = this.entryOf(run.runId, run.report, run.error);
      if (e !== undefined) this.addEntry(e);
    }
  }

  private addEntry(e: LiveEntry): void {
    this.entries.set(e.id, e);
    this.reportsCache = undefined;
    if (e.skip !== undefined) {
      this.skips.set(e.id, e.skip);
      this.skipsSorted = undefined;
    }
    this.tallies[e.state]++;
    const report = e.report;
    if (report === undefined || report.cost_unknown) this.costUnknown++;
    if (report !== undefined && typeof report.cost_usd === 'number') this.costKnown += report.cost_usd;
    if (e.section === 'in-flight') this.inFlight.add(e.id);
    else if (e.section === 'abandoned') this.abandoned.add(e.id);
    else if (e.section === 'settled') this.pagedSettled.add(e.id);
    else this.pagedOther.add(e.id);
  }

  private removeEntry(e: LiveEntry): void {
    this.entries.delete(e.id);
    this.shown.delete(e.id);
    this.retry.delete(e.id);
    this.reportsCache = undefined;
    if (e.skip !== undefined) {
      this.skips.delete(e.id);
      this.skipsSorted = undefined;
    }
    this.tallies[e.state]--;
    const report = e.report;
    if (report === undefined || report.cost_unknown) this.costUnknown--;
    if (report !== undefined && typeof report.cost_usd === 'number') this.costKnown -= report.cost_usd;
    if (this.entries.size === 0) this.costKnown = 0; // sums kept by additions and subtractions drift: none left, none kept
    if (e.section === 'in-flight') this.inFlight.delete(e.id);
    else if (e.section === 'abandoned') this.abandoned.delete(e.id);
    else if (e.section === 'settled') this.pagedSettled.delete(e.id);
    else this.pagedOther.delete(e.id);
  }

  /** The reports list (for /metrics): every run, newest first, kept until something changes. */
  async reports(): Promise<ReportsList> {
    const entries = await this.live();
    if (this.error !== null) return { root: this.root, missing: false, runs: [], skipped: [], error: this.error };
    if (this.reportsCache === undefined) {
      const ids: { key: string; report: RunReport }[] = [];
      for (const e of entries.values()) if (e.report !== undefined) ids.push({ key: nameOrderKey(e.id), report: e.report });
      ids.sort(newestFirst);
      this.reportsCache = { root: this.root, missing: this.missing, runs: ids.map((x) => x.report), skipped: this.sortedSkips() };
    }
    // Read at each call: a run's watch can be refused or granted without a change told.
    this.reportsCache.unwatched = this.engine.stats.unwatched;
    this.reportsCache.holdersUnwatched = this.engine.unwatchedHolders();
    return this.reportsCache;
  }

  private sortedSkips(): SkippedEntry[] {
    this.skipsSorted ??= [...this.skips.values()].map((s) => ({ s, key: nameOrderKey(s.run_id) })).sort(newestFirst).map((x) => x.s);
    return this.skipsSorted;
  }

  /** The dashboard document: the cost of the cards it shows, not of the root. Throws when the root cannot be listed. */
  async dashboard(): Promise<DashboardDoc> {
    const entries = await this.live();
    if (this.error !== null) throw new Error(this.error);
    const skipped = this.sortedSkips();
    const ids = [...this.inFlight, ...this.abandoned, ...this.pagedSettled.head(this.sectionPage), ...this.pagedOther.head(this.sectionPage)];
    const keyed = ids.map((id) => ({ id, key: nameOrderKey(id) })).sort(newestFirst);
    const cards: RunCard[] = [];
    const shown = new Set<string>();
    for (const { id } of keyed) {
      const e = entries.get(id) as LiveEntry;
      e.card ??= this.card(e);
      cards.push(e.card);
      shown.add(id);
    }
    // A run no document shows any more keeps no card: it is built again if it comes back.
    for (const id of this.shown) {
      if (shown.has(id)) continue;
      const e = entries.get(id);
      if (e !== undefined) e.card = undefined;
    }
    this.shown = shown;
    const more = { settled: Math.max(0, this.pagedSettled.size - this.sectionPage), other: Math.max(0, this.pagedOther.size - this.sectionPage) };
    return dashboardDoc(this.root, this.missing, cards, more, skipped, this.strays, {
      tallies: { ...this.tallies },
      cost: { known_usd: Math.round(this.costKnown * 1e6) / 1e6, unknown: this.costUnknown > 0 },
    });
  }

  /** How many entries could not be read: what a document's derivation tells the observer. */
  get unreadable(): number {
    return this.error !== null ? 1 : this.skips.size;
  }

  /** A run page: the run's report as the engine has it, with the snapshot the engine reads. */
  async page(id: string, dir: string): Promise<RunPage> {
    const entries = await this.live();
    const e = entries.get(id);
    if (e === undefined || join(this.absRoot, id) !== dir) return this.cards.unreadablePage(id, 'this run is not followed (yet): it is not a run directory of the root', null);
    if (e.report === undefined) return this.cards.unreadablePage(id, e.skip?.error ?? 'this run cannot be read', null);
    return this.cards.page(id, this.inspection(dir, e.report), null);
  }

  /** What a card or page is built from: the engine's report, and the snapshot as the engine reads it. */
  private inspection(dir: string, report: RunReport): Inspection {
    return { runDir: dir, report, tail: NO_TAIL, snapshot: this.engine.snapshot(dir) ?? NO_SNAPSHOT };
  }

  private card(e: LiveEntry): RunCard {
    if (e.report === undefined) return unreadableCard(e.id, e.skip?.error ?? null, null);
    const dir = join(this.absRoot, e.id);
    const card = this.cards.card(this.inspection(dir, e.report), null);
    // A card from a fold that was backed off (its stream changed since; the older fold is shown): built again when the back-off ends.
    const due = this.cards.staleCardDue(dir);
    if (due !== undefined) {
      this.retry.set(e.id, due);
      this.armRetry();
    }
    return card;
  }

  private armRetry(): void {
    if (this.retryTimer !== undefined || this.retry.size === 0) return;
    const next = Math.min(...this.retry.values());
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      const now = monotonicMs();
      let any = false;
      for (const [id, due] of this.retry) {
        if (due > now) continue;
        this.retry.delete(id);
        const e = this.entries.get(id);
        if (e !== undefined) e.card = undefined;
        any = true;
      }
      if (any) this.bump();
      this.armRetry();
    }, Math.max(0, next - monotonicMs()));
    this.retryTimer.unref();
  }
}
