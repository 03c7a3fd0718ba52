/**
 * Bounds on what clients can make `serve` hold (CONTRACT §5.3):
 * a cap on open connections, answered with a clear refusal, and timeouts
 * that close a connection which is slow to send its request.
 *
 * Invariants:
 * - At most {@link MAX_CONNECTIONS} connections are open at once (live
 *   streams included), and fewer under a low RLIMIT_NOFILE
 *   ({@link connectionBudget}: each is a descriptor, CONTRACT §5.7). A connection beyond that is answered at once with
 *   `503 Service Unavailable`, a short plain-text body and `Retry-After`, and
 *   closed (destroyed after {@link REFUSED_LINGER_MS} if the client keeps it
 *   open); it never reaches a handler. A slot frees when a connection
 *   closes, so the server accepts again as soon as clients leave.
 * - A client must send its request headers within {@link HEADERS_TIMEOUT_MS}
 *   and its whole request within {@link REQUEST_TIMEOUT_MS}; an idle
 *   keep-alive connection closes after {@link KEEP_ALIVE_MS}. With the cap,
 *   slow-header connections can delay others for at most that long, and can
 *   never exhaust the process's file descriptors.
 */
import type { Server, ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import { descriptorLimit, OWN_DESCRIPTORS, watchDescriptorShare } from '../kernel/limits.js';

/** The variable that sets the interval of serve's safety pass (docs/cli.md, "Environment variables"). */
export const SAFETY_MS_VARIABLE = 'RUNWARDEN_SERVE_SAFETY_MS';

/**
 * The interval (ms) of the live view's safety pass from {@link SAFETY_MS_VARIABLE}, or undefined when
 * it is unset or empty (the engine's default, 30 s). A test that measures what the 5 s re-probe or an
 * exit watch finds sets it beyond its own horizon, so the safety pass cannot be what found it.
 * Throws a RangeError naming the variable for anything but a whole number of ms from 1,000 to
 * 2,147,483,647 (the longest timer Node keeps).
 */
export function safetyMsFromEnv(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const raw = env[SAFETY_MS_VARIABLE];
  if (raw === undefined || raw === '') return undefined;
  const ms = /^\d{1,10}$/.test(raw) ? Number(raw) : NaN;
  if (!(ms >= 1000 && ms <= 2_147_483_647)) throw new RangeError(`${SAFETY_MS_VARIABLE} must be a whole number of milliseconds from 1000 to 2147483647, not ${JSON.stringify(raw)}`);
  return ms;
}

/** Most connections open at once; the next is refused with 503. */
export const MAX_CONNECTIONS = 128;
/**
 * Connections open at once at most under the soft descriptor limit `soft` (default: this
 * process's): {@link MAX_CONNECTIONS}, and never more than what the limit leaves once the
 * process's own descriptors (kernel/limits.ts OWN_DESCRIPTORS) and the watches' share are kept
 * (CONTRACT §5.7); at least 1.
 */
export function connectionBudget(soft: number | undefined = descriptorLimit()?.soft): number {
  if (soft === undefined || !Number.isFinite(soft)) return MAX_CONNECTIONS;
  return Math.min(MAX_CONNECTIONS, Math.max(1, soft - OWN_DESCRIPTORS - watchDescriptorShare(soft)));
}

/** A connection must have sent its request headers within this many ms. */
export const HEADERS_TIMEOUT_MS = 10_000;
/** A connection must have sent its whole request within this many ms. */
export const REQUEST_TIMEOUT_MS = 20_000;
/** An idle keep-alive connection is closed after this many ms. */
export const KEEP_ALIVE_MS = 5_000;
/** A refused connection is destroyed this many ms after its answer, if the client has not closed it. */
export const REFUSED_LINGER_MS = 2_000;
/** The refusal's body. */
export const REFUSAL_BODY = 'runwarden serve: too many connections open; try again shortly\n';

const REFUSAL = Buffer.from(
  'HTTP/1.1 503 Service Unavailable\r\n' +
    'Content-Type: text/plain; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(REFUSAL_BODY)}\r\n` +
    'Retry-After: 1\r\n' +
    'Cache-Control: no-store\r\n' +
    'Connection: close\r\n\r\n' +
    REFUSAL_BODY,
);

/** Options for http.createServer that enforce the timeouts above (checked every second). */
export function limitedServerOptions(): ServerOptions {
  return { headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS, keepAliveTimeout: KEEP_ALIVE_MS, connectionsCheckingInterval: 1000 };
}

/** Sockets answered with the refusal: the server must not also answer a request read from one. */
const refused = new WeakSet<Socket>();

/** Whether `socket` was refused by the connection cap (its request, if any, is to be dropped). */
export function wasRefused(socket: Socket): boolean {
  return refused.has(socket);
}

/** The connection count {@link capConnections} keeps, for tests and the bench. */
export interface ConnectionCap {
  /** Connections open now (refused ones not counted). */
  readonly open: number;
  /** Connections refused so far. */
  readonly refusedTotal: number;
}

/** Enforces {@link connectionBudget} (or `max`) on `server`; see the module comment. */
export function capConnections(server: Server, max: number = connectionBudget()): ConnectionCap {
  let open = 0;
  let refusedTotal = 0;
  server.on('connection', (socket: Socket) => {
    if (open >= max) {
      refused.add(socket);
      refusedTotal++;
      socket.on('error', () => {}); // the client may already be gone
      socket.end(REFUSAL);
      // A client that never closes its side must not keep the descriptor: give it a moment to read the answer.
      const t = setTimeout(() => socket.destroy(), REFUSED_LINGER_MS);
      t.unref();
      socket.once('close', () => clearTimeout(t));
      return;
    }
    open++;
    socket.once('close', () => open--);
  });
  return {
    get open() {
      return open;
    },
    get refusedTotal() {
      return refusedTotal;
    },
  };
}

/**
 * Default sampling interval (ms) of the `nodejs_eventloop_lag_*` metrics.
 * prom-client's own default, 10 ms, wakes the event loop 100 times a
 * second: about 1.2 % of a core on the 2-core test VM, more than an idle
 * dashboard over 100,000 runs costs otherwise. At 100 ms a stall is still
 * seen, but one shorter than the interval may be reported shortened. Kept
 * here, with the other bounds on what `serve` costs, so that `--help` can
 * name it without loading prom-client.
 */
export const METRICS_LOOP_SAMPLE_MS = 100;
