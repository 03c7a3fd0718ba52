/**
 * The dashboard's reading side, off the server's event loop (one
 * expensive run must never block `serve` for more than 50 ms at a time).
 *
 * {@link OffThreadModel} has the same three calls as {@link DashboardModel}
 * and forwards each to a worker thread (model-worker.ts) that owns the real
 * model. The main thread only posts a request and receives a finished,
 * bounded document (a run page caps its legs and timeline), so its work per
 * request does not grow with a stream's size or a snapshot's nesting.
 *
 * Invariants:
 * - Answers are the model's, unchanged: the same derivations, caches and
 *   bounds; only the thread differs.
 * - A worker that dies (out of memory, a crash in the addon) fails the calls
 *   sent to it, with an error the server turns into a 500 for that request
 *   only; the next call starts a fresh worker. Each worker owns the calls
 *   sent to it, so a dead worker's last events (its `error`, then its
 *   `exit`, which may come after its replacement took calls) fail its own
 *   calls and never its replacement's.
 * - The worker never keeps the process alive by itself (it is unref'd), and
 *   {@link OffThreadModel.close} ends it.
 */
import { Worker } from 'node:worker_threads';
import type { RunsDocument } from '../contract/types.js';
import type { RunSelection } from '../status/select.js';
import type { ModelObserver, ModelOptions, ReportsList } from './model.js';
import type { DashboardDoc, RunPage } from './view.js';

/** A request to the worker. */
export type ModelRequest =
  | { seq: number; op: 'runs'; select: RunSelection | undefined }
  | { seq: number; op: 'dashboard' }
  | { seq: number; op: 'page'; id: string; dir: string }
  | { seq: number; op: 'reports'; maxAgeMs: number }
  | { seq: number; op: 'close' };

/**
 * What the worker's model tells the main thread as it happens (no `seq`: not
 * an answer): the observer's calls, and (a live model) each change the
 * engine saw, with the model's version after it.
 */
export type ObserverMessage =
  | { observe: 'probed'; seconds: number; liveness: Parameters<ModelObserver['probed']>[1] }
  | { observe: 'scanned'; errors: number }
  | { observe: 'changed'; version: number | undefined };

/** What the worker is started with: the model's options without the observer (a function cannot cross threads), and whether to forward its calls. */
export interface WorkerInit {
  root: string;
  options: Omit<ModelOptions, 'observer'>;
  observe: boolean;
}

/** The worker's answer to the request with the same `seq`. */
export type ModelReply = { seq: number; ok: true; value: unknown } | { seq: number; ok: false; message: string };

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
}

/** Options of {@link OffThreadModel}: the model's, and a test seam. */
export interface OffThreadOptions extends ModelOptions {
  /**
   * The first this many worker threads throw at their first request, as a
   * thread that crashed would (a test seam: a crash cannot be made on
   * purpose with real files).
   */
  failThreads?: number;
}

/** What a worker is started with beyond {@link WorkerInit}: whether it is to crash at its first request (OffThreadOptions.failThreads). */
export interface WorkerFault {
  crash: boolean;
}

/** DashboardModel's calls, each answered by a worker thread. */
export class OffThreadModel {
  private worker: Worker | undefined;
  /** The calls in flight, by the worker they were sent to. */
  private readonly pending = new Map<Worker, Map<number, Pending>>();
  private seq = 0;
  private threadsToFail: number;
  private closed = false;
  /** A live model's version as last told by the worker (undefined until then, or without `live`). */
  private lastVersion: number | undefined;
  private readonly listeners = new Set<() => void>();

  private readonly options: ModelOptions;

  constructor(
    readonly root: string,
    options: OffThreadOptions = {},
  ) {
    const { failThreads, ...model } = options;
    this.options = model;
    this.threadsToFail = failThreads ?? 0;
  }

  /** The `runs --json` document for `select` (DashboardModel.runsDocument). */
  runsDocument(select?: RunSelection): Promise<RunsDocument> {
    return this.call({ seq: 0, op: 'runs', select }) as Promise<RunsDocument>;
  }

  /** The whole dashboard (DashboardModel.dashboard). */
  dashboard(): Promise<DashboardDoc> {
    return this.call({ seq: 0, op: 'dashboard' }) as Promise<DashboardDoc>;
  }

  /** The latest reports list, no older than `maxAgeMs` (DashboardModel.currentReports), for /metrics. */
  currentReports(maxAgeMs: number): Promise<ReportsList> {
    return this.call({ seq: 0, op: 'reports', maxAgeMs }) as Promise<ReportsList>;
  }

  /** One run's page (DashboardModel.page); `dir` is already validated. */
  page(id: string, dir: string): Promise<RunPage> {
    return this.call({ seq: 0, op: 'page', id, dir }) as Promise<RunPage>;
  }

  /**
   * A live model's version (DashboardModel.version) as the worker last told
   * it. Messages arrive in order, so a version read before a request is
   * never newer than the document that request returns: a caller comparing
   * versions derives again rather than miss a change.
   */
  get version(): number | undefined {
    return this.lastVersion;
  }

  /** Calls `onChange` whenever the worker's live model sees a change (DashboardModel.subscribe). Returns the unsubscribe. */
  subscribe(onChange: () => void): () => void {
    this.listeners.add(onChange);
    if (this.worker === undefined && !this.closed) this.start(); // a live model must be running to tell
    return () => this.listeners.delete(onChange);
  }

  /**
   * Ends the worker; calls in flight fail. The worker's model is closed
   * first, from inside it (its live engine stops watching and closes its
   * notifier on its own loop), and only then is the thread terminated: a
   * thread torn down with a notifier still polled crashed the process.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    const w = this.worker;
    if (w !== undefined) {
      const seq = ++this.seq;
      const done = new Promise<void>((resolve) => {
        this.pending.get(w)?.set(seq, { resolve: () => resolve(), reject: () => resolve() });
        w.postMessage({ seq, op: 'close' } satisfies ModelRequest);
      });
      // A worker stuck in a long read still ends: give it a bounded time to close its model.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([done, new Promise<void>((r) => (timer = setTimeout(r, 5000)))]);
      if (timer !== undefined) clearTimeout(timer);
    }
    this.closed = true;
    this.worker = undefined;
    if (w !== undefined) await w.terminate();
  }

  private call(req: ModelRequest): Promise<unknown> {
    if (this.closed) return Promise.reject(new Error('the dashboard model is closed'));
    const w = this.worker ?? this.start();
    const seq = ++this.seq;
    return new Promise((resolve, reject) => {
      this.pending.get(w)?.set(seq, { resolve, reject });
      w.postMessage({ ...req, seq });
    });
  }

  private start(): Worker {
    const { observer, ...options } = this.options;
    const crash = this.threadsToFail > 0;
    if (crash) this.threadsToFail--;
    const init: WorkerInit & WorkerFault = { root: this.root, options, observe: observer !== undefined, crash };
    // A 4 MB young generation (V8's default here is 16 MB semi-spaces, ~48 MB in all): the first listing's
    // short-lived reports die in smaller scavenges, so the worker's peak resident set is lower.
    const w = new Worker(new URL('./model-worker.js', import.meta.url), { workerData: init, resourceLimits: { maxYoungGenerationSizeMb: 4 } });
    w.unref();
    const mine = new Map<number, Pending>();
    this.pending.set(w, mine);
    w.on('message', (reply: ModelReply | ObserverMessage) => {
      if ('observe' in reply) {
        if (reply.observe === 'probed') observer?.probed(reply.seconds, reply.liveness);
        else if (reply.observe === 'scanned') observer?.scanned(reply.errors);
        else {
          this.lastVersion = reply.version;
          for (const l of [...this.listeners]) l();
        }
        return;
      }
      const p = mine.get(reply.seq);
      if (p === undefined) return;
      mine.delete(reply.seq);
      if (reply.ok) p.resolve(reply.value);
      else p.reject(new Error(reply.message));
    });
    const fail = (why: string): void => {
      if (this.worker === w) {
        this.worker = undefined;
        // A new worker's model starts from nothing: whoever compares versions must derive again.
        this.lastVersion = undefined;
      }
      const err = new Error(`the dashboard's reader thread ${why}`);
      for (const p of mine.values()) p.reject(err);
      mine.clear();
      this.pending.delete(w);
    };
    w.on('error', (e) => fail(`failed: ${e.message}`));
    w.on('exit', (code) => fail(`exited (code ${code})`));
    this.worker = w;
    return w;
  }
}
