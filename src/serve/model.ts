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
 * - A run page's size does not follow the run's: it holds the latest legs
 *   (DETAIL_LEGS_MAX, with `legs_earlier`), the last {@link TIMELINE_MAX}
 *   events and the first {@link PAGE_NODES_MAX} nodes (with `nodes_more`), so
 *   serialising it is cheap wherever it happens (`runwarden serve` runs this
 *   model on a worker thread: offthread.ts).
 * - A run that cannot be read becomes an `unknown` card carrying the reason;
 *   no error from one run escapes to the others.
 * - Reads only: everything goes through the reading layer, which opens files
 *   read-only and probes with a shared lock.
 * - With `live` (what `runwarden serve` uses), the cost follows what
 *   changes: every entry and the sections are kept as indexes, a change
 *   re-inspects only its run, a document costs only the cards it shows, and
 *   the safety re-check re-stats instead of re-deriving ("the live model"
 *   below). Its document is the one a whole derivation gives (a test
 *   compares them after real changes).
 * - With `live`, one inspection per run at start: the first listing is
 *   the batched listing of `runs --json` (on two threads for a large
 *   root, as there: status/list-threads.ts), made when the engine
 *   asks for it once it watches every run, and the engine takes those
 *   reports for its settled runs instead of reading them
 *   (LiveEngineOptions.seed); until the indexes are made from it, the
 *   document waits and the server answers meanwhile (the page says
 *   "Loading…"). Per run the model then keeps a compact record (LiveEntry:
 *   its report, shared with the engine, and a few words), never an
 *   inspection; a card is built from it only while a document shows the
 *   run. Entries that are not runs are counted, not kept.
 *   {@link BYTES_PER_SETTLED_RUN} bounds what model and engine keep per
 *   settled run (test/serve-memory.test.ts).
 * - Each derivation's list of reports is kept (`currentReports`), so that
 *   /metrics reads what the last derivation learned instead of making its
 *   own pass; an observer (`ModelOptions.observer`) is told of each probe and
 *   each derivation's error count as they happen. That list and the observer
 *   are all that serve/metrics.ts depends on.
 */
import { lstatSync, readdirSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { EVENTS_FILE, STATE_FILE } from '../contract/files.js';
import { monotonicMs } from '../kernel/clock.js';
import { releaseFreeMemory } from '../kernel/memory.js';
import { native } from '../kernel/native.js';
import { runDirPath, runFilePath } from '../kernel/dirfd.js';
import { LiveEngine } from '../live/engine.js';
import { RootRelistGate } from '../live/relist.js';
import { compareNewestFirst } from '../contract/runid.js';
import { nameBytes, showName } from '../contract/names.js';
import { RunUnreadableError } from '../contract/errors.js';
import type { Liveness, RunReport, RunsDocument, Status } from '../contract/types.js';
import type { SnapshotRead } from '../read/snapshot.js';
import { detailOf, type DetailLeg, type RunDetail } from '../status/detail.js';
import { inspectRun, type Inspection, type RunStatusOptions } from '../status/inspect.js';
import { listRuns, rootEntries, runsDocument, shownName, strayEntry, type RunList, type SkippedEntry } from '../status/list.js';
import { compactReport } from '../status/compact.js';
import { forEachRunThreaded } from '../status/list-threads.js';
import { readSnapshot } from '../read/snapshot.js';
import { noStreamFacts } from '../read/tail.js';
import type { RunSelection } from '../status/select.js';
import {
  CARD_STATES,
  cardState,
  dashboardDoc,
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
  type CardState,
  type Section,
  type SectionMore,
  type TimelineItem,
} from './view.js';

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
/**
 * A run whose last leg is closed (its report needed no probe) is not derived
 * again while its stream and snapshot keep their identity (device, inode,
 * size, mtime, ctime); this long after its derivation it is derived anyway,
 * so a change the identity missed cannot freeze a card (ms).
 */
export const SETTLED_RECHECK_MS = 30_000;
/** How many cards the dashboard sends for each of the Settled and No status sections (newest first). */
export const SECTION_PAGE = 50;
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
  /** Cards sent for each of the Settled and No status sections (default {@link SECTION_PAGE}). */
  sectionPage?: number;
  /** Told of every lock probe and every derivation the model makes (for /metrics); see {@link ModelObserver}. */
  observer?: ModelObserver;
  /**
   * Follow the root with the live engine (src/live/engine.ts) and keep the
   * dashboard incrementally (see "the live model" below): a run is
   * inspected again only when the engine saw one of its files change or its
   * report move (a death announced by the kernel included), and
   * {@link DashboardModel.subscribe} tells the hub at once. Default false
   * (every run inspected on every call).
   */
  live?: boolean;
  /**
   * With `live`: threads that share the first listing's inspections, the
   * model's own included (status/list-threads.ts threadsFor; default its
   * default: two from 20,000 runs on two cores or more, else one). A test
   * seam: test roots are small.
   */
  listThreads?: number;
}

/**
 * What the model tells an observer (serve/metrics.ts) as it works, so that
 * counting probes and scan errors costs nothing beyond the work already done.
 */
export interface ModelObserver {
  /** One lock probe: how long probeLock took (monotonic seconds) and what the kernel answered. */
  probed(seconds: number, liveness: Liveness): void;
  /** One derivation of the root: how many entries could not be read (a root that cannot be listed counts 1). */
  scanned(errors: number): void;
}

/**
 * The model's latest reports list: what `runs --json` would print for the
 * root (the same listRuns over the same inspections), or why the root could
 * not be listed. `skipped` keeps each entry's kind so that stray files can be
 * told from runs that could not be read.
 */
export interface ReportsList {
  root: string;
  /** The root does not exist (an empty list, as `runs --json` says). */
  missing: boolean;
  /** Newest first; empty when `error` is set. */
  runs: readonly RunReport[];
  skipped: readonly SkippedEntry[];
  /** Set when the root exists but could not be listed (EACCES, ENOTDIR, EIO…). */
  error?: string;
}

/** With `live`, the period of the model's share of the safety re-check (ms): the root listed again, unreadable runs tried again. */
export const LIVE_TRUST_MS = 30_000;

/** Skips that are not runs at all (a stray file, a symlink): counted, not drawn as cards. */
const NOT_RUNS: ReadonlySet<SkippedEntry['kind']> = new Set(['not-a-directory', 'symlink']);

const EMPTY_TIMES: RunTimes = { started_at: null, ended_at: null, last_event_at: null };

/**
 * Run directories the first live listing inspects together, on the
 * model's thread and in its list worker (list-threads.ts
 * forEachRunThreaded; the CLI's listing takes 256). In serve's worker, whose young
 * generation is 4 MB (offthread.ts), a batch's inspections outlive the
 * scavenges made while it is read and are promoted: at 100,000 runs,
 * batches of 256 left ~90 MB of dead inspections in the old generation
 * before the first full collection (64: ~85 MB), 32 about 40 MB, most of it
 * the compacted reports that stay. Each batch with an open leg reads the
 * kernel's lock table once.
 */
const FIRST_LISTING_BATCH = 32;

/**
 * How long after the first listing the model asks the allocator a second
 * time to give free memory back (ms): V8's memory reducer frees the start-up
 * garbage about 8 s after the burst.
 */
const RELEASE_AGAIN_MS = 15_000;

/** Root entries the first live listing takes per turn of the event loop. */
const INIT_SLICE = 4096;

/** The tail facts of a card's inspection (cardInspection): nothing a card or page reads, so one for all. */
const NO_TAIL = noStreamFacts();

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

/** The identity of a run's stream and snapshot, with ctime (a restored mtime still changes ctime). Stats only: content is read through descriptors. */
function runFilesSig(dir: string): string {
  const one = (file: string): string => {
    try {
      // No exception for a missing file (most runs have no state.json): a thrown ENOENT cost as much as the lstat.
      const st = lstatSync(runFilePath(dir, file), { bigint: true, throwIfNoEntry: false });
      if (st === undefined) return 'ENOENT';
      return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.mode}`;
    } catch (e) {
      return (e as NodeJS.ErrnoException).code ?? 'error';
    }
  };
  return `${one(EVENTS_FILE)}|${one(STATE_FILE)}`;
}

// Stats only, for change detection; the content is read through the reading layer's descriptors.
function fileSig(dir: string, file: string): string {
  try {
    const st = lstatSync(runFilePath(dir, file), { bigint: true });
    return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.mode}`;
  } catch (e) {
    return `absent:${(e as NodeJS.ErrnoException).code ?? '?'}`;
  }
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

interface ReportEntry {
  inspection: Inspection | undefined;
  error: unknown;
  /** When the derivation started (ISO, wall clock), and when it finished / how long it took (ms, monotonic: kernel/clock.ts). */
  startedIso: string;
  at: number;
  cost: number;
  /** Re-derived less often (see {@link EXPENSIVE_MS}). */
  expensive: boolean;
  /**
   * The stream's device and inode when it was derived ({@link streamOf}): the answer is reused only
   * for that same file, so a root replaced by another directory holding a run of the same name (or a
   * stream replaced under it) never shows the old file's answer, a false ABANDONED among them.
   */
  stream: string;
}

/** The stream's device and inode, or why there is none, out of a {@link runFilesSig} (taken before the read). */
function streamOf(filesSig: string): string {
  const events = filesSig.slice(0, filesSig.indexOf('|'));
  const parts = events.split(':');
  return parts.length > 2 ? `${parts[0]}:${parts[1]}` : events;
}

/** A report that depends on the run's files only, and the identity of those files when it was derived. */
interface SettledEntry {
  sig: string;
  inspection: Inspection;
  at: number;
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

/** A string that orders as the name's bytes do: the id itself when it is plain ASCII (no copy), else its bytes as latin1. */
function byteKey(id: string): string {
  return /^[\x00-\x7f]*$/.test(id) ? id : nameBytes(id).toString('latin1');
}

/**
 * Run ids kept newest first (descending byte order of the names, as
 * listRuns orders them), with insertion and removal by binary search: a
 * change costs O(log n) comparisons and one array move, never a sort. The
 * keys are strings whose UTF-16 order is the names' byte order
 * ({@link byteKey}): for a plain id the id itself, so a run costs two array
 * slots here, not a Buffer (about 100 bytes each at 100,000 runs).
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
    const key = byteKey(id);
    const i = this.find(key);
    if (i < this.keys.length && this.keys[i] === key) return;
    if (i === this.ids.length) {
      // The first listing adds newest first: each one at the end.
      this.ids.push(id);
      this.keys.push(key);
      return;
    }
    this.ids.splice(i, 0, id);
    this.keys.splice(i, 0, key);
  }

  delete(id: string): void {
    const key = byteKey(id);
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
 * One run directory of the root as the live model keeps it: its compact
 * record. What it keeps, and why that is all:
 * - `report`: the run's report, compacted (status/compact.ts: graph names
 *   and warnings interned, no per-run empty array). After the first listing
 *   it is the very object the live engine holds for the run, so the two
 *   share it until the run changes.
 * - `skip`: for a run that cannot be read, the skip listRuns would give.
 * - `kind`, `state`, `section`: read from the report (or its absence), not
 *   kept: three words per run fewer (the state is the report's, so it
 *   cannot disagree with it).
 * - `sig`: a 53-bit hash of the run's file identities (runFilesSig) taken
 *   before it was inspected, or NaN when unknown (runs taken from the
 *   engine's first pass): NaN equals nothing, so such a run is inspected at
 *   its first announced change, never skipped.
 * - `card`: built only when a document shows the run, dropped when the run
 *   changes or leaves the shown pages.
 * No inspection (snapshot, tail facts) and no path are kept: a card or a
 * page reads the snapshot again when it is built (`cardInspection`), and the
 * directory is `<root>/<id>`.
 * The model's and engine's heap together grow by a bounded number of bytes
 * per run ({@link BYTES_PER_SETTLED_RUN}, asserted by
 * test/serve-memory.test.ts from 10,000 to 50,000 settled runs).
 */
class LiveEntry {
  card: RunCard | undefined = undefined;
  /** The compacted report of a run, or the skip listRuns would give for one that cannot be read (which has a `kind`). */
  private what: RunReport | SkippedEntry;

  constructor(
    what: RunReport | SkippedEntry,
    public sig: number,
  ) {
    this.what = what;
  }

  /** The run's name: its report's, or its skip's. */
  get id(): string {
    return this.what.run_id;
  }

  /** For a run: the compacted report; undefined for one that cannot be read. */
  get report(): RunReport | undefined {
    return 'kind' in this.what ? undefined : this.what;
  }
  /** An equal report, kept instead (one object shared with the engine). */
  set report(r: RunReport | undefined) {
    if (r !== undefined && !('kind' in this.what)) this.what = r;
  }

  /** For a run that cannot be read: the skip listRuns would give. */
  get skip(): SkippedEntry | undefined {
    return 'kind' in this.what ? this.what : undefined;
  }

  get kind(): 'run' | 'unreadable' {
    return this.report !== undefined ? 'run' : 'unreadable';
  }

  get state(): CardState {
    return this.report !== undefined ? cardState(this.report) : 'unknown';
  }

  get section(): Section {
    return sectionOf(this.state);
  }
}

/**
 * What the live model and its engine keep per settled run, at most (heap
 * bytes, both together): the bound test/serve-memory.test.ts asserts on the
 * growth from 10,000 to 50,000 settled runs of the benchmark's shape (a
 * 3-line stream, a marked lock, no snapshot). Measured there (Node 20, no
 * pointer compression): 602 bytes per run (986 before the engine's records
 * were made compact, 3,800 to 4,000 before issue 23); the bound leaves half
 * as much again for other Node versions and shapes, and two such states
 * (the positive control, 1,202) measure above it. Where they go, at 10,000
 * runs: the engine's RunState 96 (live/runstate.ts: nine words, nothing of
 * its reading state once settled), its run directory's path ~64 and name
 * slice 32, two hashes of its file identities 16 (in shared slabs, outside
 * the heap), its watch (kernel/notify.ts: an entry 48 and a watch object
 * 56, no closure), the shared report 120, the model's LiveEntry 64, and the
 * three maps (the engine's runs, the watcher's descriptors, the model's
 * entries, ~46 each) and two arrays that index them (~155).
 */
export const BYTES_PER_SETTLED_RUN = 900;

/**
 * The reports of a listing, newest first, looked up by name for the live
 * engine's seed: a map of 100,000 names was ~7 MB of the start-up peak.
 * The engine asks in its own tracking order, which is the listing's (newest
 * first), so each name is almost always the one after the last found
 * (O(1)); any other is found by binary search. Names are in descending byte
 * order, which is the order of their shown forms while those are ASCII; a
 * shown name with escapes (contract/names.ts) may sort elsewhere, and it or
 * a run the search passes through it for is then not found: the engine
 * reads that run, as it does any run not seeded.
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
    let lo = 0;
    let hi = runs.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const at = (runs[mid] as RunReport).run_id;
      if (at === id) {
        this.next = mid + 1;
        return runs[mid];
      }
      if (at > id) lo = mid + 1;
      else hi = mid - 1;
    }
    return undefined;
  }
}

/** A 53-bit FNV-1a hash of a file-identity string (two 32-bit halves): equal identities, equal hashes. */
function sigHash(s: string): number {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
  }
  return (a >>> 0) * 0x200000 + ((b >>> 0) & 0x1fffff);
}

/** The dashboard's reading side, with the per-run bounds described above. */
export class DashboardModel {
  private readonly cardStreamMax: number;
  private readonly expensiveMs: number;
  private readonly expensiveFactor: number;
  private readonly sectionPage: number;
  private readonly cardFolds = new Map<string, FoldEntry>();
  private readonly pageFolds = new Map<string, FoldEntry>();
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
  private readonly engine: LiveEngine | undefined;
  /** Run dirs the engine saw change since their last inspection. */
  private readonly changed = new Set<string>();
  private readonly listeners = new Set<() => void>();
  private changes = 0;
  private notifyQueued = false;
  // --- the live model's incremental state (with `live` only; see liveDashboard) ---
  /** Every root entry by run id, once the first listing is made. */
  private entries: Map<string, LiveEntry> | undefined;
  /** The root, absolute: run directories are `<absRoot>/<id>`, as the engine and listRuns name them. */
  private readonly absRoot: string;
  /** The first listing is done (the indexes may be read). */
  private ready = false;
  /** The first listing under way. */
  private initing: Promise<void> | undefined;
  /** The first listing has begun: changes the engine announces from now on are kept. */
  private listening = false;
  private closed = false;
  /** The engine's first pass (every run under the root derived once). */
  private engineStarted: Promise<void> | undefined;
  /** Threads of the first listing (ModelOptions.listThreads). */
  private readonly listThreads: number | undefined;
  /** The first listing under way or made (firstListing), until initLive has taken it. */
  private firstPending: Promise<{ get(runId: string): RunReport | undefined } | undefined> | undefined;
  /** The first listing (firstListing), until the indexes are made from it: the list, or why the root could not be listed. */
  private first: RunList | { error: unknown } | undefined;
  /** Root entries that are not run directories (stray files, sockets, symlinks): counted only. */
  private strays = 0;
  /** Runs whose card the last live document showed. */
  private shown = new Set<string>();
  private liveMissing = false;
  /** Why the root could not be listed at the last look (the listing's own error), if it could not. */
  private liveError: unknown;
  private readonly inFlight = new Set<string>();
  private readonly abandoned = new Set<string>();
  private readonly pagedSettled = new NewestFirst();
  private readonly pagedOther = new NewestFirst();
  private readonly liveTallies = Object.fromEntries(CARD_STATES.map((s) => [s, 0])) as Record<CardState, number>;
  private costKnown = 0;
  private costUnknown = 0;
  private readonly skips = new Map<string, SkippedEntry>();
  private skipsSorted: SkippedEntry[] | undefined;
  private reportsCache: ReportsList | undefined;
  /** Expensive runs whose report was reused: looked at again when their window ends (dir → monotonic ms). */
  private readonly retry = new Map<string, number>();
  /** The root's identity and mtime when it was last listed, if trusted (see safety()); and listings skipped since. */
  /** Whether a safety cycle lists the root again (live/relist.ts, the engine's rule too). */
  private readonly rootGate = new RootRelistGate();
  /** With `live`: how many times the model listed the root (the first listing, then its safety passes'); for tests. */
  rootListings = 0;
  /** Runs to inspect again at the next change even if their files kept their identity. */
  private readonly forced = new Set<string>();
  private retryTimer: NodeJS.Timeout | undefined;
  private releaseTimer: NodeJS.Timeout | undefined;
  private sliceTimer: NodeJS.Timeout | undefined;
  /** Set by derive(): whether its answer was an expensive run's reused one. */
  private reused = false;

  constructor(
    readonly root: string,
    options: ModelOptions = {},
  ) {
    // The addon first, as the CLI does (cli/main.ts): an install whose addon cannot load is that
    // (AddonLoadError, ERR_RUNWARDEN_NATIVE), never a root the model then reports as unreadable.
    native();
    this.absRoot = resolve(root);
    this.cardStreamMax = options.cardStreamMax ?? CARD_STREAM_MAX;
    this.expensiveMs = options.expensiveMs ?? EXPENSIVE_MS;
    this.expensiveFactor = options.expensiveFactor ?? EXPENSIVE_FACTOR;
    this.sectionPage = options.sectionPage ?? SECTION_PAGE;
    this.listThreads = options.listThreads;
    const observer = options.observer;
    this.observer = observer;
    // Each probe an inspection makes, timed by the inspection itself (the kernel's own probe, through the run's descriptor).
    this.onProbe = observer === undefined ? undefined : (seconds, answer) => observer.probed(seconds, answer.liveness);
    if (options.live === true) {
      // settledForget and seed: the engine keeps nothing of a settled run's stream, and takes the
      // reports of this model's first listing instead of reading every run a second time.
      this.engine = new LiveEngine({ root, ref: false, announceFiles: true, settledForget: true, seed: () => this.firstListing() });
      this.engine.subscribe((c) => {
        if (c.type === 'notice') {
          process.stderr.write(`runwarden serve: ${c.message}\n`);
          return;
        }
        // Before the first listing, nothing is kept: it takes each run's latest report from the engine.
        if (!this.listening) return;
        this.changed.add(c.runDir);
        this.bump();
      });
      // The engine's first pass, which the first listing waits for (LiveEngine.start resolves once, for its first caller).
      // Begun on the next turn, so the constructor returns before the listing it asks for.
      const engine = this.engine;
      this.engineStarted = new Promise<void>((r) => setImmediate(r)).then(() => (this.closed ? undefined : engine.start()));
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
    this.closed = true;
    this.engine?.close();
    this.listeners.clear();
    if (this.sliceTimer !== undefined) clearInterval(this.sliceTimer);
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    if (this.releaseTimer !== undefined) clearTimeout(this.releaseTimer);
    this.sliceTimer = this.retryTimer = this.releaseTimer = undefined;
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
   * The latest reports list, no older than `maxAgeMs`: the last derivation's
   * (the dashboard's, when a page keeps the hub ticking) if it finished that
   * recently, else a fresh status-only derivation: the same listRuns over the
   * same per-run bounds as the dashboard (an expensive run's report is
   * reused), without the folds behind cards. Concurrent callers share one
   * derivation. Never throws: a root that cannot be listed is `error`.
   */
  async currentReports(maxAgeMs: number): Promise<ReportsList> {
    if (this.engine !== undefined) return this.liveReports();
    const l = this.latest;
    if (l !== undefined && monotonicMs() - l.at <= maxAgeMs) return l.list;
    if (this.pending === undefined) {
      this.pending = Promise.resolve()
        .then(() => this.deriveReports())
        .finally(() => {
          this.pending = undefined;
        });
    }
    return this.pending;
  }

  private deriveReports(): ReportsList {
    let list: ReportsList;
    try {
      const got = listRuns(this.root, { report: (dir) => this.inspectionOf(dir).report });
      const seen = new Set([...got.runs.map((r) => join(got.root, r.run_id)), ...got.skipped.map((s) => join(got.root, s.run_id))]);
      for (const m of [this.cardFolds, this.reports, this.settled]) for (const k of m.keys()) if (!seen.has(k)) m.delete(k);
      list = { root: got.root, missing: got.missing, runs: got.runs, skipped: got.skipped };
    } catch (e) {
      list = { root: this.root, missing: false, runs: [], skipped: [], error: e instanceof Error ? e.message : String(e) };
    }
    this.remember(list);
    return list;
  }

  /** Keeps a finished derivation as the latest, and tells the observer its error count. */
  private remember(list: ReportsList): void {
    this.latest = { list, at: monotonicMs() };
    this.observer?.scanned(list.error !== undefined ? 1 : list.skipped.filter((s) => !NOT_RUNS.has(s.kind)).length);
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
   * (or error) is reused within its window (EXPENSIVE_FACTOR × its cost);
   * `this.reused` says which, and only for the same stream file as
   * `filesSig` (the caller's {@link runFilesSig}, taken before this read).
   * Throws what inspectRun throws.
   */
  private derive(dir: string, now: number, filesSig: string): Inspection {
    const old = this.reports.get(dir);
    this.reused = false;
    if (old !== undefined && old.expensive && now - old.at < this.expensiveFactor * Math.max(old.cost, 1) && streamOf(filesSig) === old.stream) {
      this.reused = true;
      this.asOf.set(dir, old.startedIso);
      if (old.inspection === undefined) throw old.error;
      return old.inspection;
    }
    // Wall clock on purpose: "as of" is shown to people. Costs and ages below are monotonic.
    const startedIso = new Date().toISOString();
    // The caller's identity was taken before the read: a stream replaced during it is not the one kept.
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
      else if (this.engine !== undefined) this.asOf.delete(dir);
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

  // --- the live model -------------------------------------------------------
  //
  // With `live`, the model keeps every root entry (LiveEntry) and the
  // dashboard's sections as indexes (In flight and Abandoned as sets, the
  // paged sections as newest-first arrays, tallies and cost as sums), made
  // by one listing the first time they are needed. After that a change the
  // engine announces costs the inspection of that run only (none at all for
  // a settled run whose files kept their identity) and an O(log n) move in
  // its section, and a document costs the cards it shows, never the root.
  // The safety re-check (a missed event cannot freeze a card forever) is a
  // re-stat, not a re-derivation: the engine's own re-check compares every
  // run's file identities and re-probes open legs, and announces a run whose
  // files changed even when its report did not (announceFiles); this model
  // adds a root listing and a retry of unreadable runs per LIVE_TRUST_MS.

  /**
   * The first listing, asked for by the engine (LiveEngineOptions.seed) once
   * it watches every run: the listing of `runs --json` (listRuns' batched
   * inspections, shared with a list worker for a large root as `runs --json`
   * shares them: status/list-threads.ts), one inspection per run, the same
   * reports, skips and order on one thread or two. The engine takes these
   * reports for its settled runs instead of reading them; every change it
   * announces from here on is kept, since it may be newer than this listing.
   * Made once: a second call answers the first call's promise.
   */
  private firstListing(): Promise<{ get(runId: string): RunReport | undefined } | undefined> {
    return (this.firstPending ??= this.listFirst());
  }

  private async listFirst(): Promise<{ get(runId: string): RunReport | undefined } | undefined> {
    this.listening = true;
    // This is a listing: the first safety pass need not make another (live/relist.ts).
    this.rootGate.listing(this.root);
    this.rootListings++;
    let list: RunList;
    try {
      // Its probes are the model's (counted for /metrics through the observer; a list worker's are
      // timed there and told when its chunk arrives). Each report is compacted as it comes (made
      // here, FIRST_LISTING_BATCH at a time, or copied from a worker), so the listing's own objects
      // die young: kept to the end, then copied, they were ~30 MB of old generation at 100,000 runs.
      const runs: RunReport[] = [];
      const rest = await forEachRunThreaded(
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
      list = { root: rest.root, missing: rest.missing, skipped: rest.skipped, more: rest.more, runs };
    } catch (e) {
      this.first = { error: e };
      return undefined;
    }
    // The engine takes these very objects, and so do the indexes.
    this.first = list;
    return new ListingIndex(list.runs);
  }

  /**
   * The indexes, made from the first listing once the engine's first pass
   * is over: each run's entry holds the listing's report (for a settled run
   * the very object the engine took), runs that could not be read are
   * `unreadable` entries, and entries that are not runs are counted, not
   * kept. Then the changes the engine announced since the listing are
   * applied, except those whose report the engine now holds equal to the
   * entry's (its own first read of a run it did not take: nothing new).
   * Yields to the event loop every {@link INIT_SLICE} runs; nothing reads the
   * indexes before it ends (`ready`).
   */
  private async initLive(): Promise<void> {
    const engine = this.engine as LiveEngine;
    await this.engineStarted;
    if (this.closed) return;
    if (this.first === undefined) await this.firstListing(); // (not asked for by the engine, or not yet done: a listing now)
    if (this.closed) return;
    this.firstPending = undefined; // (its answer holds the whole list)
    const first = this.first as RunList | { error: unknown };
    this.first = undefined;
    const entries = new Map<string, LiveEntry>();
    this.entries = entries;
    if ('error' in first) {
      this.liveError = first.error;
      this.startSafety();
      this.ready = true;
      return;
    }
    this.liveError = undefined;
    this.liveMissing = first.missing;
    let i = 0;
    for (const report of first.runs) {
      const id = report.run_id;
      this.addEntry(this.runEntry(id, report, NaN));
      if (++i % INIT_SLICE === 0) {
        await new Promise((r) => setImmediate(r));
        if (this.closed) return;
      }
    }
    let strays = 0;
    for (const skip of first.skipped) {
      if (NOT_RUNS.has(skip.kind)) strays++;
      else this.addEntry(this.skipEntry(skip, NaN));
    }
    this.strays = strays;
    for (const dir of [...this.changed]) {
      const e = entries.get(basename(dir));
      const known = engine.get(dir)?.report;
      if (e?.report === undefined || known == null || join(this.absRoot, e.id) !== dir) continue;
      if (known === e.report || JSON.stringify(known) === JSON.stringify(e.report)) {
        this.changed.delete(dir);
        if (known.liveness === null) e.report = known; // one object for both (the engine's is compacted)
      }
    }
    this.ready = true;
    this.startSafety();
    // The first listing's burst is over: what the allocator holds free (the list worker's arena) goes back to the
    // kernel, now and once more after V8's memory reducer has run (kernel/memory.ts). A request, not needed for any answer.
    releaseFreeMemory();
    this.releaseTimer = setTimeout(() => {
      this.releaseTimer = undefined;
      if (!this.closed) releaseFreeMemory();
    }, RELEASE_AGAIN_MS);
    this.releaseTimer.unref();
  }

  /** The live indexes, the first listing made if it was not (awaited), and every change seen since applied. */
  private async live(): Promise<Map<string, LiveEntry>> {
    if (!this.ready) await (this.initing ??= this.initLive());
    return this.applyChanges();
  }

  private runEntry(id: string, report: RunReport, sig: number): LiveEntry {
    // The entry's name is its report's (one string for both); a report of another name (never seen: a run's
    // report is named by its directory) is kept under the entry's.
    return new LiveEntry(report.run_id === id ? report : { ...report, run_id: id }, sig);
  }

  private skipEntry(skip: SkippedEntry, sig: number): LiveEntry {
    return new LiveEntry(skip, sig);
  }

  private addEntry(e: LiveEntry): void {
    (this.entries as Map<string, LiveEntry>).set(e.id, e);
    this.reportsCache = undefined;
    if (e.skip !== undefined) {
      this.skips.set(e.id, e.skip);
      this.skipsSorted = undefined;
    }
    this.liveTallies[e.state]++;
    const report = e.report;
    if (report === undefined || report.cost_unknown) this.costUnknown++;
    if (report !== undefined && typeof report.cost_usd === 'number') this.costKnown += report.cost_usd;
    if (e.section === 'in-flight') this.inFlight.add(e.id);
    else if (e.section === 'abandoned') this.abandoned.add(e.id);
    else if (e.section === 'settled') this.pagedSettled.add(e.id);
    else this.pagedOther.add(e.id);
  }

  private removeEntry(e: LiveEntry): void {
    (this.entries as Map<string, LiveEntry>).delete(e.id);
    this.shown.delete(e.id);
    this.reportsCache = undefined;
    if (e.skip !== undefined) {
      this.skips.delete(e.id);
      this.skipsSorted = undefined;
    }
    this.liveTallies[e.state]--;
    const report = e.report;
    if (report === undefined || report.cost_unknown) this.costUnknown--;
    if (report !== undefined && typeof report.cost_usd === 'number') this.costKnown -= report.cost_usd;
    if (e.section === 'in-flight') this.inFlight.delete(e.id);
    else if (e.section === 'abandoned') this.abandoned.delete(e.id);
    else if (e.section === 'settled') this.pagedSettled.delete(e.id);
    else this.pagedOther.delete(e.id);
  }

  /** Forgets a run that is gone, and every cache of it. */
  private forget(dir: string): void {
    for (const m of [this.cardFolds, this.pageFolds, this.reports, this.settled]) m.delete(dir);
    this.asOf.delete(dir);
    this.retry.delete(dir);
  }

  /**
   * Brings one root entry up to date; true when what the page shows of it
   * may have changed. `force` inspects a run even when its files kept their
   * identity (an open leg, whose liveness no file shows; a retry). An entry
   * that is no longer a directory is forgotten and counted as not a run.
   */
  private refresh(dir: string, force: boolean): boolean {
    const entries = this.entries as Map<string, LiveEntry>;
    const id = basename(dir);
    if (join(this.absRoot, id) !== dir) return false; // not an entry of the root (the engine follows only the root's)
    const old = entries.get(id);
    let st;
    try {
      st = lstatSync(runDirPath(dir));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') {
        if (old === undefined) return false;
        this.removeEntry(old);
        this.forget(dir);
        return true;
      }
      st = undefined; // let the inspection say why it cannot be read
    }
    if (st !== undefined && strayEntry(st, id) !== undefined) {
      // Not a run (any more): only counted. One that was not an entry is counted by the next listing.
      if (old === undefined) return false;
      this.removeEntry(old);
      this.forget(dir);
      this.strays++;
      return true;
    }
    const filesSig = runFilesSig(dir);
    const sig = sigHash(filesSig);
    // A closed last leg whose files kept their identity: its report cannot have changed.
    if (!force && old?.kind === 'run' && old.sig === sig && old.report?.liveness === null) return false;
    const asOfBefore = this.asOf.get(dir);
    let next: LiveEntry;
    try {
      next = this.runEntry(id, compactReport(this.derive(dir, monotonicMs(), filesSig).report, id), sig);
    } catch (e) {
      const skip: SkippedEntry =
        e instanceof RunUnreadableError ? { run_id: id, error: e.message, kind: e.kind } : { run_id: id, error: e instanceof Error ? e.message : String(e), kind: 'error' };
      next = this.skipEntry(skip, sig);
    }
    if (this.reused) this.retryAt(dir);
    // Same kind, same report (or reason), same "as of": the card stays, and nothing a page shows changed.
    // (A change of files alone still drops the card: its strip and times come from the stream.)
    const sameReport =
      old !== undefined &&
      old.kind === next.kind &&
      asOfBefore === this.asOf.get(dir) &&
      JSON.stringify(old.report ?? old.skip) === JSON.stringify(next.report ?? next.skip);
    const same = sameReport && (old as LiveEntry).sig === next.sig;
    if (old !== undefined) this.removeEntry(old);
    // The same report keeps the old object (it may be the one the engine holds: shared, not copied).
    if (sameReport && old?.report !== undefined) next.report = old.report;
    if (same) next.card = (old as LiveEntry).card;
    this.addEntry(next);
    return !same;
  }

  /** An expensive run's reused report: look again when its window has passed. */
  private retryAt(dir: string): void {
    const r = this.reports.get(dir);
    if (r === undefined) return;
    const due = r.at + this.expensiveFactor * Math.max(r.cost, 1) + 1;
    this.retry.set(dir, due);
    this.armRetry();
  }

  private armRetry(): void {
    if (this.retryTimer !== undefined || this.retry.size === 0) return;
    const next = Math.min(...this.retry.values());
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      const now = monotonicMs();
      let any = false;
      for (const [dir, due] of this.retry) {
        if (due > now) continue;
        this.retry.delete(dir);
        // Inspected again even if its files kept their identity, and its card built again.
        const e = this.entries?.get(basename(dir));
        if (e !== undefined) e.card = undefined;
        this.forced.add(dir);
        this.changed.add(dir);
        any = true;
      }
      if (any) this.bump();
      this.armRetry();
    }, Math.max(0, next - monotonicMs()));
    this.retryTimer.unref();
  }

  /** Applies every change seen since the last call (after the first listing). */
  private applyChanges(): Map<string, LiveEntry> {
    const entries = this.entries as Map<string, LiveEntry>;
    if (this.changed.size > 0) {
      const dirs = [...this.changed];
      this.changed.clear();
      // The engine tells of changes it has seen; a change whose run is open (or unknown) is probed again.
      for (const dir of dirs) this.refresh(dir, this.forced.delete(dir) || this.isOpen(dir));
      // One stat of the root per batch: a root that went away or stopped being a directory is listed again now, not at the next cycle.
      if (this.rootState() !== (this.liveError !== undefined ? 'error' : this.liveMissing ? 'missing' : 'ok')) this.relist();
    }
    return entries;
  }

  /** What one stat says of the root, in the terms of the listing's outcome. */
  private rootState(): 'ok' | 'missing' | 'error' {
    try {
      return statSync(this.root).isDirectory() ? 'ok' : 'error';
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : 'error';
    }
  }

  private isOpen(dir: string): boolean {
    const e = this.entries?.get(basename(dir));
    return e === undefined || e.kind !== 'run' || e.report?.liveness !== null;
  }

  private startSafety(): void {
    if (this.sliceTimer !== undefined || this.closed) return;
    this.sliceTimer = setInterval(() => this.safety(), LIVE_TRUST_MS);
    this.sliceTimer.unref();
  }

  /**
   * The model's share of the safety re-check, once per LIVE_TRUST_MS. The
   * engine's own re-check re-stats every run and re-probes open legs, and
   * (announceFiles) announces any run whose files changed behind its back,
   * so what is left here is what the engine does not follow: the root is
   * listed again (entries that are not runs, entries that changed type, the
   * root itself), and runs that could not be read are tried again (a
   * permission fixed changes no file identity the engine compares).
   * Subscribers are told only when something a page shows changed.
   */
  private safety(): void {
    if (!this.ready) return;
    let any = false;
    // Listed again when the root changed, and once an hour anyway.
    const listing = this.rootGate.due(this.root);
    if (listing) {
      this.rootGate.listing(this.root);
      this.rootListings++;
      any = this.relist();
    }
    // Unreadable runs are among the skipped entries (a handful), not walked out of every run.
    for (const id of [...this.skips.keys()]) {
      const e = this.entries?.get(id);
      if (e?.kind === 'unreadable' && this.refresh(join(this.absRoot, id), true)) any = true;
    }
    // Sums kept by additions and subtractions drift; start again from an exact
    // one whenever the root is listed (a walk of every run, like the listing).
    if (listing) {
      this.costKnown = 0;
      for (const e of (this.entries as Map<string, LiveEntry>).values()) if (typeof e.report?.cost_usd === 'number') this.costKnown += e.report.cost_usd;
    }
    if (any) this.bump();
  }

  /** Lists the root again: entries that appeared, vanished or changed type are brought up to date, and those that are not runs counted again. */
  private relist(): boolean {
    const entries = this.entries as Map<string, LiveEntry>;
    let listed;
    try {
      listed = rootEntries(this.absRoot);
    } catch (e) {
      const changed = this.liveMissing || entries.size > 0 || this.strays > 0 || this.liveError === undefined;
      for (const x of [...entries.values()]) {
        this.removeEntry(x);
        this.forget(join(this.absRoot, x.id));
      }
      this.strays = 0;
      this.liveMissing = false;
      this.liveError = e;
      return changed;
    }
    const missing = listed === undefined;
    let any = missing !== this.liveMissing || this.liveError !== undefined;
    this.liveMissing = missing;
    this.liveError = undefined;
    const seen = new Set<string>();
    let strays = 0;
    if (listed !== undefined) {
      const { names, kinds } = listed;
      for (let i = 0; i < names.length; i++) {
        const id = shownName(names[i] as string);
        if (kinds[i] !== 'd') {
          // A run that became something else is forgotten below, with the vanished ones.
          strays++;
          continue;
        }
        seen.add(id);
        if (entries.has(id)) continue;
        if (this.refresh(join(this.absRoot, id), true)) any = true;
      }
    }
    for (const x of [...entries.values()]) {
      if (seen.has(x.id)) continue;
      this.removeEntry(x);
      this.forget(join(this.absRoot, x.id));
      any = true;
    }
    if (strays !== this.strays) any = true;
    this.strays = strays;
    return any;
  }

  /** The live model's reports list (for /metrics): every run, newest first, kept until something changes. */
  private async liveReports(): Promise<ReportsList> {
    const entries = await this.live();
    if (this.liveError !== undefined) {
      const list: ReportsList = { root: this.root, missing: false, runs: [], skipped: [], error: this.liveError instanceof Error ? this.liveError.message : String(this.liveError) };
      this.remember(list);
      return list;
    }
    if (this.reportsCache === undefined) {
      const ids: { key: string; report: RunReport }[] = [];
      for (const e of entries.values()) if (e.report !== undefined) ids.push({ key: byteKey(e.id), report: e.report });
      ids.sort((a, b) => (a.key < b.key ? 1 : a.key > b.key ? -1 : 0));
      this.reportsCache = { root: this.root, missing: this.liveMissing, runs: ids.map((x) => x.report), skipped: this.sortedSkips() };
    }
    this.remember(this.reportsCache);
    return this.reportsCache;
  }

  private sortedSkips(): SkippedEntry[] {
    if (this.skipsSorted === undefined) {
      this.skipsSorted = [...this.skips.values()].map((s) => ({ s, key: byteKey(s.run_id) })).sort((a, b) => (a.key < b.key ? 1 : a.key > b.key ? -1 : 0)).map((x) => x.s);
    }
    return this.skipsSorted;
  }

  /** The dashboard from the live indexes: the cost of the cards it shows, not of the root. */
  private async liveDashboard(): Promise<DashboardDoc> {
    const entries = await this.live();
    if (this.liveError !== undefined) {
      this.observer?.scanned(1);
      throw this.liveError;
    }
    const skipped = this.sortedSkips();
    this.observer?.scanned(skipped.length);
    const ids = [...this.inFlight, ...this.abandoned, ...this.pagedSettled.head(this.sectionPage), ...this.pagedOther.head(this.sectionPage)];
    const keyed = ids.map((id) => ({ id, key: byteKey(id) })).sort((a, b) => (a.key < b.key ? 1 : a.key > b.key ? -1 : 0));
    const cards: RunCard[] = [];
    const shown = new Set<string>();
    for (const { id } of keyed) {
      const e = entries.get(id) as LiveEntry;
      if (e.card === undefined) e.card = this.liveCard(e);
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
    return dashboardDoc(this.root, this.liveMissing, cards, more, skipped, this.strays, {
      tallies: { ...this.liveTallies },
      cost: { known_usd: Math.round(this.costKnown * 1e6) / 1e6, unknown: this.costUnknown > 0 },
    });
  }

  /**
   * What a card or a page of a live entry is built from: the entry's report
   * and the snapshot read now (nothing more is kept per run; see LiveEntry).
   * A snapshot changed since the report was made is one the engine
   * announces, and the entry is then refreshed and its card dropped.
   */
  private cardInspection(dir: string, report: RunReport): Inspection {
    return { runDir: dir, report, tail: NO_TAIL, snapshot: readSnapshot(join(dir, STATE_FILE)) };
  }

  private liveCard(e: LiveEntry): RunCard {
    const dir = join(this.absRoot, e.id);
    if (e.report === undefined) {
      return { run_id: e.id, state: 'unknown', section: 'other', report: null, error: e.skip?.error ?? null, checked_at: this.asOf.get(dir) ?? null, nodes: [], nodes_more: 0, ...EMPTY_TIMES };
    }
    const card = this.card(this.cardInspection(dir, e.report));
    // A card from a fold that was backed off (its stream changed since; the older fold is shown): look again when the back-off ends.
    const fold = this.cardFolds.get(dir);
    if (fold !== undefined && fold.sig !== fileSig(dir, EVENTS_FILE) + '|' + fileSig(dir, STATE_FILE)) {
      this.retry.set(dir, fold.at + BACKOFF * fold.cost + 1);
      this.armRetry();
    }
    return card;
  }

  /** The whole dashboard. Yields to the event loop between runs. */
  async dashboard(): Promise<DashboardDoc> {
    if (this.engine !== undefined) return this.liveDashboard();
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
      cards.push(this.card(inspections.get(dir) as Inspection));
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
      cards.push({ run_id: s.run_id, state: 'unknown', section: 'other', report: null, error: s.error, checked_at: this.asOf.get(dir) ?? null, nodes: [], nodes_more: 0, ...EMPTY_TIMES });
    }
    for (const m of [this.cardFolds, this.reports, this.settled]) for (const k of m.keys()) if (!seen.has(k)) m.delete(k);
    cards.sort((a, b) => compareNewestFirst(a.run_id, b.run_id));
    return dashboardDoc(list.root, list.missing, cards, more, unreadable, strays, totals(everyRun));
  }

  /** One run's page document; `dir` is `<root>/<id>`, already validated. */
  async page(id: string, dir: string): Promise<RunPage> {
    let inspection: Inspection;
    if (this.engine === undefined) this.asOf.delete(dir);
    try {
      inspection = this.pageInspection(id, dir);
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

  /**
   * A run page's inspection. Live, once the root is listed: the run's entry
   * after every change seen (so the page and its card agree); before that,
   * or without `live`, inspectionOf.
   */
  private pageInspection(id: string, dir: string): Inspection {
    if (this.engine === undefined || !this.ready) return this.inspectionOf(dir);
    const e = this.applyChanges().get(id);
    if (e === undefined || join(this.absRoot, id) !== dir) return this.inspectionOf(dir);
    if (e.report === undefined) throw new Error(e.skip?.error ?? 'this run cannot be read');
    return this.cardInspection(dir, e.report);
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

  private unreadablePage(id: string, error: string): RunPage {
    return this.basePage(id, null, error);
  }

  private card(inspection: Inspection): RunCard {
    const { report, runDir: dir } = inspection;
    const state = cardState(report);
    const base: RunCard = { run_id: report.run_id, state, section: sectionOf(state), report, error: null, checked_at: this.asOf.get(dir) ?? null, nodes: [], nodes_more: 0, ...EMPTY_TIMES };
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
      const fold = this.fold(this.cardFolds, inspection, 1);
      if (fold.detail === null) return base;
      chips = fold.detail.nodes.map((n) => ({ id: n.id, state: n.state }));
      times = timesOf(fold.detail, numberLegs(fold.detail.legs, fold.detail.legs_earlier), fold.detail.events[fold.detail.events.length - 1]);
    }
    return { ...base, ...times, nodes: chips.slice(0, STRIP_MAX), nodes_more: Math.max(0, chips.length - STRIP_MAX) };
  }

  /** The detail of an inspection, cached per (files, status) and backed off as the module comment says. Never throws. */
  private fold(map: Map<string, FoldEntry>, inspection: Inspection, events: number): FoldEntry {
    const dir = inspection.runDir;
    const status = inspection.report.status;
    const sig = fileSig(dir, EVENTS_FILE) + '|' + fileSig(dir, STATE_FILE);
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
