/**
 * The live part of `serve`: one timer re-derives what the connected pages
 * show and pushes only what changed, over server-sent events.
 *
 * Invariants:
 * - At most one derivation runs at a time, and the next starts no sooner
 *   than `intervalMs` after the previous one started (never overlapping, never
 *   queueing up behind a slow disk). With the default 1 s interval a change on
 *   disk, or a holder's death, reaches an open page within about one interval
 *   plus one derivation.
 * - The timer runs only while a page is connected: an idle server reads
 *   nothing.
 * - Every connected page receives a `beat` on every tick, changed or not,
 *   so the page can tell "nothing changed" from "updates stopped".
 * - A client is sent a full `snapshot` (or `run` document) when it connects,
 *   then `patch` events relative to exactly what it was sent.
 * - With `rootKey`, a tick whose root is not the one of the last derivation
 *   (removed, back, replaced) derives even when the model saw no change, so
 *   an empty root removed or made again reaches open pages within a beat.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { monotonicMs } from '../kernel/clock.js';
import { applyCommonHeaders, type ErrorBody } from './http.js';
import { type DashboardDoc, type DashboardPatch, type RunPage, type StreamEvents } from './view.js';

/** What the hub needs from the reading side. */
export interface HubSources {
  /** The whole dashboard, freshly derived. */
  dashboard(): Promise<DashboardDoc>;
  /** One run's detail, or the error document when it cannot be served. */
  run(id: string): Promise<RunPage | ErrorBody>;
  /**
   * Optional, from a live model: calls `onChange` when something under the
   * root changed (the hub then derives at once); returns the unsubscribe.
   */
  subscribe?(onChange: () => void): () => void;
  /** Optional, with `subscribe`: a number that changes whenever something changed. Equal: nothing to derive. */
  version?(): number | undefined;
  /** Optional: a text naming the root's state and identity now (one stat); a different one is a change. */
  rootKey?(): string;
}

/** What the server adds to the document about its root (server.ts ServedDashboard). */
interface RootFields {
  root_replaced_at?: string | null;
}

/** With a live source, a full derivation is still made at least this often (ms): the safety net. */
export const HUB_FULL_MS = 30_000;
/** The least time between the end of one change-driven derivation and the start of the next (ms). */
export const CHANGE_GAP_MS = 25;

export interface HubOptions {
  /** Milliseconds between derivations (default 1000). */
  intervalMs?: number;
  /** Where problems are reported (default: stderr). */
  log?: (line: string) => void;
}

interface Client {
  res: ServerResponse;
  /** The run this client follows, or undefined for the dashboard. */
  runId: string | undefined;
  /** For run clients: the JSON of the last document sent. */
  lastRun: string | undefined;
  /** For dashboard clients: whether the snapshot has been sent. */
  primed: boolean;
  /**
   * Bytes of the last snapshot or run document written to this page: that
   * much may sit unsent on top of MAX_BUFFERED, so a page is never dropped
   * for the size of its own first picture.
   */
  allowance: number;
}

/**
 * A page that stops reading (a suspended laptop, a stuck tab) must not make
 * the server buffer without bound: past this many unsent bytes (beyond its
 * last full document) its stream is ended, and the page's EventSource
 * reconnects and gets a fresh snapshot.
 */
const MAX_BUFFERED = 4 * 1024 * 1024;

function frame<K extends keyof StreamEvents>(event: K, data: StreamEvents[K]): string {
  // JSON.stringify escapes CR and LF, so the payload is one SSE data line.
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The server-sent event hub. */
export class LiveHub {
  private readonly clients = new Set<Client>();
  private readonly intervalMs: number;
  private readonly log: (line: string) => void;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private closed = false;
  /** The last dashboard derived, and each card's JSON in it (the diff base). */
  private current: DashboardDoc | undefined;
  private cardJson = new Map<string, string>();
  private lastError = '';
  private readonly unsubscribe: (() => void) | undefined;
  /** A change arrived while a derivation ran: derive again right after it. */
  private pending = false;
  /** The source's version at the last derivation, and when that was (monotonic). */
  private derivedVersion: number | undefined;
  private derivedRoot: string | undefined;
  private derivedAt = -Infinity;
  /** When the last derivation ended and how long it took (monotonic ms). */
  private lastEnd = -Infinity;
  private lastCost = 0;
  /** A derivation has been made since the first page connected (false again when the last one leaves). */
  private pictured = false;

  constructor(
    private readonly sources: HubSources,
    options: HubOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 1000;
    this.log = options.log ?? ((line) => process.stderr.write(line + '\n'));
    this.unsubscribe = sources.subscribe?.(() => this.changed());
  }

  /** Something changed under the root: derive now (after the running derivation, if one runs). */
  private changed(): void {
    if (this.closed || this.clients.size === 0) return;
    if (this.running) {
      this.pending = true;
      return;
    }
    this.schedule(this.changeDelay());
  }

  /**
   * How long a change waits: none after a pause, but never sooner than the
   * last derivation's own cost (at least {@link CHANGE_GAP_MS}) after it ended,
   * so a stream of appends costs at most about half a core, not all of it.
   * The derivation that made the first picture counts as costing nothing
   * (its time is the model's first listing, not its own work).
   */
  private changeDelay(): number {
    const gap = Math.max(CHANGE_GAP_MS, this.lastCost);
    return Math.max(0, this.lastEnd + gap - monotonicMs());
  }

  /** How many pages are connected. */
  get size(): number {
    return this.clients.size;
  }

  /** True when no derivation is scheduled or running (nothing is being read). */
  get idle(): boolean {
    return this.timer === undefined && !this.running;
  }

  /** Takes over a GET /api/events response and keeps it open. */
  attach(req: IncomingMessage, res: ServerResponse, runId: string | undefined): void {
    applyCommonHeaders(res);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Connection', 'keep-alive');
    res.setHeader('X-Accel-Buffering', 'no');
    res.writeHead(200);
    if (req.method === 'HEAD' || this.closed) {
      res.end();
      return;
    }
    res.write(`retry: 1000\n\n`);
    const client: Client = { res, runId, lastRun: undefined, primed: false, allowance: 0 };
    this.clients.add(client);
    const drop = (): void => {
      this.clients.delete(client);
      if (this.clients.size === 0) this.goIdle();
    };
    // The response's close fires when the page goes away (tab closed,
    // EventSource reconnecting, connection reset).
    res.on('close', drop);
    res.on('error', drop);
    if (runId === undefined && this.current !== undefined) this.prime(client, this.current);
    // A new page should not wait a whole interval for its first picture.
    this.schedule(0);
  }

  /** Ends every stream and stops the timer. */
  close(): void {
    this.closed = true;
    this.unsubscribe?.();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const c of this.clients) c.res.end();
    this.clients.clear();
  }

  private goIdle(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.current = undefined;
    this.pictured = false;
    this.cardJson.clear();
    this.derivedVersion = undefined;
  }

  private schedule(delayMs: number): void {
    if (this.closed || this.clients.size === 0) return;
    if (this.running) return; // the running tick schedules the next one
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(), delayMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    this.timer = undefined;
    if (this.closed || this.clients.size === 0) return;
    this.running = true;
    this.pending = false;
    const started = monotonicMs();
    const first = !this.pictured;
    let derived = true;
    try {
      derived = await this.step();
    } catch (e) {
      this.report(e);
    } finally {
      this.running = false;
    }
    // Only a derivation spaces the next one: a beat costs nothing to wait
    // for, and counting it made a death that came just after a beat wait up
    // to CHANGE_GAP_MS for nothing (one death in forty, at a beat a second).
    // The first picture's time is not a derivation's cost: it waits for the
    // model's first listing (seconds at 10,000 runs), and as a gap it would
    // hold the first change after start-up for as long.
    if (derived) {
      this.lastEnd = monotonicMs();
      this.lastCost = first ? 0 : this.lastEnd - started;
      this.pictured = true;
    }
    if (this.pending) this.schedule(this.changeDelay());
    else this.schedule(Math.max(0, this.intervalMs - (monotonicMs() - started)));
  }

  private report(e: unknown): void {
    const msg = e instanceof Error ? e.message : String(e);
    if (msg !== this.lastError) this.log(`runwarden serve: ${msg}`);
    this.lastError = msg;
  }

  /** One tick's work; false when it only sent the beat (nothing was derived). */
  private async step(): Promise<boolean> {
    const clients = [...this.clients];
    let error: string | undefined;
    // With a live source, nothing changed and every page has its picture:
    // only the beat goes out (an idle dashboard reads nothing).
    const version = this.sources.version?.();
    const rootKey = this.sources.rootKey?.();
    const now = monotonicMs();
    const quiet =
      version !== undefined &&
      version === this.derivedVersion &&
      rootKey === this.derivedRoot &&
      now - this.derivedAt < HUB_FULL_MS &&
      clients.every((c) => (c.runId === undefined ? c.primed : c.lastRun !== undefined));
    if (quiet) {
      const t = new Date().toISOString(); // wall clock on purpose: the beat carries a timestamp for people
      const beat = frame('beat', { t });
      for (const c of this.clients) this.send(c, beat);
      return false;
    }
    this.derivedVersion = version;
    this.derivedRoot = rootKey;
    this.derivedAt = now;
    if (clients.some((c) => c.runId === undefined)) {
      try {
        this.pushDashboard(await this.sources.dashboard());
        this.lastError = '';
      } catch (e) {
        this.report(e);
        error = e instanceof Error ? e.message : String(e);
      }
    }
    const runIds = new Set(clients.filter((c) => c.runId !== undefined).map((c) => c.runId as string));
    for (const id of runIds) {
      let json: string;
      try {
        json = JSON.stringify(await this.sources.run(id));
      } catch (e) {
        this.report(e);
        continue;
      }
      for (const c of this.clients) {
        if (c.runId !== id || c.lastRun === json) continue;
        c.lastRun = json;
        const text = `event: run\ndata: ${json}\n\n`;
        c.allowance = Buffer.byteLength(text);
        this.send(c, text);
      }
    }
    // Wall clock on purpose: the beat carries a timestamp for people (and the page's "as of").
    const t = new Date().toISOString();
    const beat = frame('beat', error === undefined ? { t } : { t, error });
    for (const c of this.clients) this.send(c, beat);
    return true;
  }

  /** Writes to one page, dropping it if it has stopped reading. */
  private send(c: Client, text: string): void {
    if (c.res.writableLength > MAX_BUFFERED + c.allowance) {
      this.clients.delete(c);
      c.res.destroy();
      return;
    }
    c.res.write(text);
  }

  private prime(c: Client, doc: DashboardDoc): void {
    c.primed = true;
    const text = frame('snapshot', doc);
    c.allowance = Buffer.byteLength(text);
    this.send(c, text);
  }

  /** Diffs a fresh dashboard against the last one and sends each page what it lacks. */
  private pushDashboard(doc: DashboardDoc & RootFields): void {
    const next = new Map<string, string>();
    const upsert = [];
    for (const card of doc.runs) {
      const json = JSON.stringify(card);
      next.set(card.run_id, json);
      if (this.cardJson.get(card.run_id) !== json) upsert.push(card);
    }
    const remove = [...this.cardJson.keys()].filter((id) => !next.has(id));
    const prev: (DashboardDoc & RootFields) | undefined = this.current;
    const orderChanged = prev === undefined || prev.order.length !== doc.order.length || prev.order.some((id, i) => doc.order[i] !== id);
    this.current = doc;
    this.cardJson = next;
    let patch: DashboardPatch | undefined;
    // Tallies and the paged sections' counts cover runs that have no card here, so they are compared too.
    const metaChanged =
      prev !== undefined &&
      (prev.root_missing !== doc.root_missing ||
        prev.root_replaced_at !== doc.root_replaced_at ||
        prev.skipped_count !== doc.skipped_count ||
        JSON.stringify([prev.tallies, prev.cost, prev.more]) !== JSON.stringify([doc.tallies, doc.cost, doc.more]));
    if (upsert.length > 0 || remove.length > 0 || orderChanged || metaChanged) {
      patch = { root: doc.root, root_missing: doc.root_missing, skipped_count: doc.skipped_count, generated_at: doc.generated_at, tallies: doc.tallies, cost: doc.cost, more: doc.more, upsert, remove };
      if (orderChanged) patch.order = doc.order;
      if (doc.root_replaced_at !== undefined) (patch as DashboardPatch & RootFields).root_replaced_at = doc.root_replaced_at;
    }
    for (const c of this.clients) {
      if (c.runId !== undefined) continue;
      if (!c.primed) this.prime(c, doc);
      else if (patch) this.send(c, frame('patch', patch));
    }
  }
}
