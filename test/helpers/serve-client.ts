/**
 * Test clients for the dashboard server: an in-process server over the real
 * reading layer (imported from dist/, as users import it), raw HTTP requests
 * that can send any method, target or Host header, and a server-sent events
 * reader. Everything opened here is closed by `closeAll()`.
 */
import { request } from 'node:http';
import type { DashboardServer } from '../../dist/serve/server.js';

const servers = new Set<DashboardServer>();
const streams = new Set<SseStream>();

/** Starts a dashboard server on an ephemeral port over `root`. */
export async function startDashboard(root: string, opts: { intervalMs?: number; cardStreamMax?: number } = {}): Promise<DashboardServer> {
  const { startServer } = await import('../../dist/serve/server.js');
  const { DashboardModel } = await import('../../dist/serve/model.js');
  const model = new DashboardModel(root, opts.cardStreamMax === undefined ? {} : { cardStreamMax: opts.cardStreamMax });
  const s = await startServer({
    root,
    port: 0,
    intervalMs: opts.intervalMs ?? 1000,
    log: () => {},
    sources: { runsJson: async (select) => model.runsDocument(select), dashboard: () => model.dashboard(), run: (id, dir) => model.page(id, dir) },
  });
  servers.add(s);
  return s;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP request with a raw target (nothing normalised), any method, optional Host. */
export function raw(port: number, method: string, target: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path: target, headers: { Connection: 'close', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** GET a JSON document. */
export async function getJson<T = any>(port: number, target: string): Promise<{ status: number; body: T; headers: RawResponse['headers'] }> {
  const r = await raw(port, 'GET', target);
  return { status: r.status, headers: r.headers, body: JSON.parse(r.body) as T };
}

export interface SseEvent {
  event: string;
  data: any;
}

/** A live server-sent events connection that records every event. */
export class SseStream {
  readonly events: SseEvent[] = [];
  private buf = '';
  private waiters: { pred: (e: SseEvent) => boolean; resolve: (e: SseEvent) => void }[] = [];
  private close_: () => void = () => {};

  static open(port: number, target: string): Promise<SseStream> {
    const s = new SseStream();
    streams.add(s);
    return new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: target, headers: { Accept: 'text/event-stream' } }, (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`SSE status ${res.statusCode}`));
          res.resume();
          return;
        }
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => s.feed(chunk));
        resolve(s);
      });
      s.close_ = () => req.destroy();
      req.on('error', () => {});
      req.end();
    });
  }

  private feed(chunk: string): void {
    this.buf += chunk;
    let i: number;
    while ((i = this.buf.indexOf('\n\n')) >= 0) {
      const block = this.buf.slice(0, i);
      this.buf = this.buf.slice(i + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      if (data.length === 0) continue;
      const e = { event, data: JSON.parse(data.join('\n')) };
      this.events.push(e);
      this.waiters = this.waiters.filter((w) => {
        if (!w.pred(e)) return true;
        w.resolve(e);
        return false;
      });
    }
  }

  /** Resolves with the first event (already received or future) matching pred. */
  next(pred: (e: SseEvent) => boolean, timeoutMs = 60_000): Promise<SseEvent> {
    const have = this.events.find(pred);
    if (have) return Promise.resolve(have);
    return new Promise((resolve, reject) => {
      const w = { pred, resolve: (e: SseEvent) => (clearTimeout(t), resolve(e)) };
      const t = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x !== w);
        reject(new Error(`no matching SSE event in ${timeoutMs} ms; got: ${this.events.map((e) => e.event).join(',')}`));
      }, timeoutMs);
      this.waiters.push(w);
    });
  }

  close(): void {
    this.close_();
    streams.delete(this);
  }
}

/** Closes every stream and server opened here. */
export async function closeAll(): Promise<void> {
  for (const s of streams) s.close();
  for (const s of servers) await s.close();
  servers.clear();
}
