/**
 * The dashboard's HTTP server, on Node's own `http` module.
 *
 * Invariants:
 * - Read-only: only GET and HEAD are answered; every other method is 405
 *   with `Allow: GET, HEAD`. No handler writes, creates or removes anything.
 * - Nothing outside the root: the only run-specific inputs are run ids taken
 *   from single path segments (or the `run` query parameter), each checked by
 *   `resolveRunDir` (no separator, no NUL, not `.`/`..`, a real directory
 *   directly under the root) before anything is read.
 * - Requests whose Host header names neither a loopback name nor the address
 *   the server was asked to bind are refused, so a page on another site cannot
 *   read the API through a DNS-rebound name.
 * - Bounded clients (limits.ts): at most MAX_CONNECTIONS open connections,
 *   the next answered 503 before any handler runs; headers, request and
 *   keep-alive timeouts close connections that hold a slot without using it.
 * - A failure inside a handler answers 500 with the stable error document and
 *   never takes the server down.
 * - The browser app (src/serve/public/, see static.ts) is read once when the
 *   server starts; answering a page or an asset never touches the disk. The
 *   page's list of run states is /assets/states.js, written from CARD_STATES.
 * - The root is followed by its identity (device and inode), not its path
 *   ({@link RootTracker}): a root removed, replaced (another directory put at
 *   the path, by a rename or by removing and making it again) or back again
 *   is said so by the dashboard document (`root_missing`,
 *   `root_replaced_at`) and by /api/runs' `Runwarden-Root` and
 *   `Runwarden-Root-Replaced-At` headers, whose body stays exactly the
 *   `runs --json` document. One stat per answer and per beat; nothing more.
 */
import { parseLimit, parseStatusFilter, type RunSelection } from '../status/select.js';
import { statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LiveHub } from './hub.js';
import { sendBody, sendError, sendJson, type ErrorBody } from './http.js';
import { decodeSegment, resolveRunDir } from './ids.js';
import { capConnections, limitedServerOptions, wasRefused, type ConnectionCap } from './limits.js';
import { loadPublicFiles, type PublicFiles } from './static.js';
import type { DashboardDoc, RunPage } from './view.js';

/** What the server reads through; the CLI wires these to the reading layer. */
export interface ServeSources {
  /** The `runs --json` document for the root, narrowed and paged by `select` (from the query string). */
  runsJson(select?: RunSelection): Promise<unknown>;
  /** The dashboard document. */
  dashboard(): Promise<DashboardDoc>;
  /** One run's detail; `dir` is already validated as `<root>/<id>`. */
  run(id: string, dir: string): Promise<RunPage>;
  /** GET /metrics: the Prometheus exposition (serve/metrics.ts); without it, /metrics is 404. */
  metrics?(): Promise<{ contentType: string; body: string }>;
  /** Optional (a live model): change notification for the hub, see HubSources.subscribe. */
  subscribe?(onChange: () => void): () => void;
  /** Optional (a live model): see HubSources.version. */
  version?(): number | undefined;
}

export interface ServeOptions {
  /** The runs root (absolute). */
  root: string;
  sources: ServeSources;
  /** Address to bind (default 127.0.0.1). */
  host?: string;
  /** Port; 0 picks a free one (default 0 here; the CLI has its own default). */
  port?: number;
  /** Live derivation interval in ms (default 1000). */
  intervalMs?: number;
  log?: (line: string) => void;
  /** Told of each request answered 500 (after its one line in `log`): serve counts them in /metrics. */
  onFailure?: () => void;
  /** Most connections open at once before a 503 (default MAX_CONNECTIONS, fewer under a low RLIMIT_NOFILE: serve/limits.ts connectionBudget). */
  maxConnections?: number;
}

export interface DashboardServer {
  readonly server: Server;
  readonly hub: LiveHub;
  readonly host: string;
  readonly port: number;
  /** The page's address, e.g. http://127.0.0.1:7341/ */
  readonly url: string;
  /** Open and refused connection counts (serve/limits.ts). */
  readonly connections: ConnectionCap;
  /** Stops accepting, ends every live stream and closes every connection. */
  close(): Promise<void>;
}

const HTML = 'text/html; charset=utf-8';

/** What the root's path names now: a directory (with its identity), nothing, or something that cannot be listed. */
export type RootState = 'present' | 'missing' | 'not-a-directory' | 'unreadable';

/** The dashboard document as served: the model's, plus what the server itself knows of the root. */
export type ServedDashboard = DashboardDoc & {
  /**
   * When the directory at the root was last seen to be another one than the
   * directory served before it (replaced by a rename, or removed and made
   * again), as ISO wall-clock time; null while it has always been the same
   * one. A root renamed away and back is the same directory, not a new one.
   */
  root_replaced_at: string | null;
};

/**
 * The root's state as one stat sees it, and whether the directory there was
 * ever replaced while served. Identity is device and inode: the path is not
 * the directory (a rename swaps what it names without a trace in the path).
 */
export class RootTracker {
  /** The identity of the last directory seen at the root (kept while it is missing). */
  private seen: string | undefined;
  private replacedAt: string | null = null;
  private last: { state: RootState; id: string | undefined };

  constructor(readonly root: string) {
    this.last = this.stat();
    this.seen = this.last.id;
  }

  /** Looks at the root now (one stat): its state, and when it was last replaced. */
  look(): { state: RootState; replacedAt: string | null; key: string } {
    this.last = this.stat();
    const id = this.last.id;
    if (id !== undefined) {
      // Wall clock on purpose: a time for people, like generated_at.
      if (this.seen !== undefined && id !== this.seen) this.replacedAt = new Date().toISOString();
      this.seen = id;
    }
    return { state: this.last.state, replacedAt: this.replacedAt, key: `${this.last.state}:${id ?? ''}` };
  }

  /**
   * The model's document with what the server knows of the root. A document
   * with no runs in it takes the root's presence from this stat, which is
   * newer than the model's last listing (an empty root made again lists
   * nothing the engine would announce); one with runs keeps the model's word,
   * since its cards come from that same listing.
   */
  decorate(doc: DashboardDoc): ServedDashboard {
    const { state, replacedAt } = this.look();
    const empty = doc.runs.length === 0 && doc.skipped.length === 0;
    const missing = empty && (state === 'missing' || state === 'present') ? state === 'missing' : doc.root_missing;
    return { ...doc, root_missing: missing, root_replaced_at: replacedAt };
  }

  private stat(): { state: RootState; id: string | undefined } {
    try {
      const st = statSync(this.root, { bigint: true });
      return st.isDirectory() ? { state: 'present', id: `${st.dev}:${st.ino}` } : { state: 'not-a-directory', id: undefined };
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      return { state: code === 'ENOENT' || code === 'ENOTDIR' ? 'missing' : 'unreadable', id: undefined };
    }
  }
}

/** Formats host:port for a URL (brackets around IPv6). */
export function urlFor(host: string, port: number): string {
  const h = host.includes(':') ? `[${host}]` : host;
  return `http://${h}:${port}/`;
}

/** Whether a host name or address is this machine's loopback (`localhost`, `::1`, 127.0.0.0/8). */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h);
}

/**
 * A Host header is `host[:port]` (RFC 9110 §7.2): a name of letters, digits,
 * dots and hyphens, or an IPv4 address, or an IPv6 address in brackets, and
 * at most a port of 1 to 5 digits. Anything else (userinfo as in
 * `127.0.0.1:1@evil.example`, a path, spaces, percent-escapes, a second
 * colon outside brackets) is not a host this server can be named by.
 */
const HOST_HEADER = /^(?:\[([0-9a-f:.]+)\]|([a-z0-9.-]+))(?::\d{1,5})?$/;

/** The host name a Host header value gives (lower case, brackets removed), or undefined when it is not `host[:port]`. */
export function hostHeaderName(header: string): string | undefined {
  const m = HOST_HEADER.exec(header.trim().toLowerCase());
  if (m === null) return undefined;
  return (m[1] ?? m[2]);
}

/** Whether a Host header value names this server: loopback names or the bound host. */
function hostAllowed(header: string | undefined, boundHost: string): boolean {
  if (header === undefined) return false;
  const name = hostHeaderName(header);
  if (name === undefined) return false;
  const bound = boundHost.toLowerCase().replace(/^\[|\]$/g, '');
  if (name === bound) return true;
  if (isLoopbackHost(name)) return true;
  // Bound to every address: any name that reached it is one the user chose to expose.
  return bound === '0.0.0.0' || bound === '::';
}

/** Splits a request target into decoded path segments and its query, without normalising `..`. */
function parseTarget(url: string): { segments: string[] | undefined; query: URLSearchParams } {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const query = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  if (!path.startsWith('/')) return { segments: undefined, query };
  const raw = path.slice(1).split('/');
  const segments: string[] = [];
  for (const r of raw) {
    const d = decodeSegment(r);
    if (d === undefined) return { segments: undefined, query };
    segments.push(d);
  }
  if (segments.length > 1 && segments[segments.length - 1] === '') segments.pop(); // trailing slash
  return { segments, query };
}

/**
 * `/api/runs?status=&graph=&id=&limit=&before=`: the same selection as `runs
 * --status/--graph/--id/--limit/--before` (status/select.ts). Returns the
 * selection, undefined when the query asks for none, or the reason it is bad.
 */
function selectionFromQuery(query: URLSearchParams): RunSelection | undefined | string {
  const sel: RunSelection = {};
  for (const key of query.keys()) {
    if (!['status', 'graph', 'id', 'limit', 'before'].includes(key)) return `unknown query parameter "${key}": use status, graph, id, limit, before`;
    // One rule with `runs` (cli/target.ts once): a parameter given twice is refused, never first-wins or last-wins.
    const n = query.getAll(key).length;
    if (n > 1) return `query parameter "${key}" is given ${n} times; give it once`;
  }
  try {
    const status = query.get('status');
    if (status !== null) sel.status = parseStatusFilter(status);
    const limit = query.get('limit');
    if (limit !== null) sel.limit = parseLimit(limit);
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
  for (const key of ['graph', 'id', 'before'] as const) {
    const v = query.get(key);
    if (v !== null) sel[key] = v;
  }
  return Object.keys(sel).length === 0 ? undefined : sel;
}

/** Builds the request handler (exported for tests that want no socket). */
function handler(opts: ServeOptions, hub: LiveHub, boundHost: string, files: PublicFiles, tracker: RootTracker, dashboard: () => Promise<ServedDashboard>) {
  const { root, sources } = opts;
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendError(req, res, 405, 'method-not-allowed', `${req.method ?? '?'} is not allowed: this server is read-only (GET and HEAD only)`, { Allow: 'GET, HEAD' });
      return;
    }
    const hostHeader = req.headers.host;
    if (hostHeader !== undefined && hostHeaderName(hostHeader) === undefined) {
      sendError(req, res, 400, 'bad-host', 'the Host header is not host[:port]');
      return;
    }
    if (!hostAllowed(hostHeader, boundHost)) {
      sendError(req, res, 403, 'bad-host', 'the Host header does not name this server');
      return;
    }
    const { segments, query } = parseTarget(req.url ?? '');
    if (segments === undefined) {
      sendError(req, res, 400, 'bad-request', 'malformed request path');
      return;
    }
    const path = '/' + segments.join('/');
    const asset = files.assets.get(path);
    if (asset !== undefined && segments.length <= 2) {
      sendBody(req, res, 200, asset.contentType, asset.body, { 'Cache-Control': 'no-cache' });
      return;
    }
    const [a, b, c, ...rest] = segments;
    if (segments.length === 1 && a === '') {
      sendBody(req, res, 200, HTML, files.dashboardHtml);
      return;
    }
    if (a === 'metrics' && segments.length === 1 && sources.metrics !== undefined) {
      const m = await sources.metrics();
      sendBody(req, res, 200, m.contentType, m.body);
      return;
    }
    if (a === 'run' && b !== undefined && c === undefined) {
      const found = resolveRunDir(root, b);
      sendBody(req, res, found.ok ? 200 : found.status, HTML, files.runHtml);
      return;
    }
    if (a === 'api' && rest.length === 0) {
      if (b === 'runs' && c === undefined) {
        const select = selectionFromQuery(query);
        if (typeof select === 'string') {
          sendError(req, res, 400, 'bad-request', select);
          return;
        }
        const doc = await sources.runsJson(select);
        // The body is exactly `runs --json`'s document; what the server knows of the root goes beside it.
        const { state, replacedAt } = tracker.look();
        sendJson(req, res, 200, doc, { 'Runwarden-Root': state, ...(replacedAt === null ? {} : { 'Runwarden-Root-Replaced-At': replacedAt }) });
        return;
      }
      if (b === 'runs' && c !== undefined) {
        const found = resolveRunDir(root, c);
        if (!found.ok) {
          sendError(req, res, found.status, found.code, found.message);
          return;
        }
        sendJson(req, res, 200, await sources.run(c, found.dir));
        return;
      }
      if (b === 'dashboard' && c === undefined) {
        sendJson(req, res, 200, await dashboard());
        return;
      }
      if (b === 'events' && c === undefined) {
        const run = query.get('run');
        if (run !== null) {
          const found = resolveRunDir(root, run);
          if (!found.ok && found.code === 'bad-run-id') {
            sendError(req, res, 400, found.code, found.message);
            return;
          }
        }
        hub.attach(req, res, run ?? undefined);
        return;
      }
    }
    sendError(req, res, 404, 'not-found', `nothing at ${path}`);
  };
}

/** A message as one line of a log: its line breaks as spaces. */
function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ');
}

/** Starts the dashboard server and resolves once it is listening. */
export async function startServer(opts: ServeOptions): Promise<DashboardServer> {
  const host = opts.host ?? '127.0.0.1';
  const log = opts.log ?? ((line: string) => process.stderr.write(line + '\n'));
  // The browser app is read here, once; no request reads the disk for it.
  const files = await loadPublicFiles();
  const tracker = new RootTracker(opts.root);
  const dashboard = async (): Promise<ServedDashboard> => tracker.decorate(await opts.sources.dashboard());
  const hub = new LiveHub(
    {
      dashboard,
      rootKey: () => tracker.look().key,
      run: async (id: string): Promise<RunPage | ErrorBody> => {
        const found = resolveRunDir(opts.root, id);
        if (!found.ok) return { error: { code: found.code, message: found.message } };
        return opts.sources.run(id, found.dir);
      },
      ...(opts.sources.subscribe === undefined ? {} : { subscribe: (cb: () => void) => (opts.sources.subscribe as (cb: () => void) => () => void)(cb) }),
      ...(opts.sources.version === undefined ? {} : { version: () => (opts.sources.version as () => number | undefined)() }),
    },
    { intervalMs: opts.intervalMs ?? 1000, log },
  );
  const handle = handler(opts, hub, host, files, tracker, dashboard);
  const server = createServer(limitedServerOptions(), (req, res) => {
    // Refused by the connection cap (limits.ts), which already answered 503.
    if (wasRefused(req.socket)) return;
    handle(req, res).catch((e: unknown) => {
      log(`runwarden serve: ${req.method} ${req.url}: ${oneLine(e instanceof Error ? e.message : String(e))}`);
      opts.onFailure?.();
      if (!res.headersSent) sendError(req, res, 500, 'internal', 'the server failed to answer this request');
      else res.end();
    });
  });
  const connections = capConnections(server, opts.maxConnections);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    hub,
    host,
    port,
    url: urlFor(host, port),
    connections,
    close: () =>
      new Promise<void>((resolve) => {
        hub.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
