/**
 * Response helpers for the dashboard server: every response it sends goes
 * through here, so every one carries the same security headers and every
 * error has the same JSON shape.
 *
 * Invariants:
 * - No response ever allows inline script: the Content-Security-Policy
 *   permits scripts and styles from this origin only, and the pages are
 *   static documents that never embed run data (the browser fetches it as
 *   JSON and renders it with textContent). A run id or node id holding
 *   markup therefore cannot execute, even if a rendering bug slipped in.
 * - Errors are `{"error": {"code", "message"}}` with a code from a closed
 *   set, so a script can branch on `code` and never on prose.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Every error code the server answers with. */
export type ErrorCode =
  | 'bad-request'
  | 'bad-run-id'
  | 'bad-host'
  | 'not-found'
  | 'method-not-allowed'
  | 'unreadable'
  | 'internal';

/** The stable error document. */
export interface ErrorBody {
  error: { code: ErrorCode; message: string };
}

/** The policy every response carries; nothing inline, nothing from elsewhere. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const COMMON_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Cache-Control': 'no-store',
});

/** Writes the common headers (call before writeHead). */
export function applyCommonHeaders(res: ServerResponse): void {
  for (const [k, v] of Object.entries(COMMON_HEADERS)) res.setHeader(k, v);
}

/** Sends a body with a content type; HEAD gets the headers only. */
export function sendBody(req: IncomingMessage, res: ServerResponse, status: number, contentType: string, body: string | Buffer, extra?: Record<string, string>): void {
  const buf = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  applyCommonHeaders(res);
  res.setHeader('Content-Type', contentType);
  res.setHeader('Content-Length', String(buf.length));
  if (extra) for (const [k, v] of Object.entries(extra)) res.setHeader(k, v);
  res.writeHead(status);
  if (req.method === 'HEAD') res.end();
  else res.end(buf);
}

/** Sends a value as JSON (indented, like `--json` on the CLI), with any extra headers. */
export function sendJson(req: IncomingMessage, res: ServerResponse, status: number, value: unknown, extra?: Record<string, string>): void {
  sendBody(req, res, status, 'application/json; charset=utf-8', JSON.stringify(value, null, 2) + '\n', extra);
}

/** Sends the stable error document. */
export function sendError(req: IncomingMessage, res: ServerResponse, status: number, code: ErrorCode, message: string, extra?: Record<string, string>): void {
  const body: ErrorBody = { error: { code, message } };
  sendBody(req, res, status, 'application/json; charset=utf-8', JSON.stringify(body, null, 2) + '\n', extra);
}
