/**
 * The browser app: the files in src/serve/public/ (the build copies them to
 * dist/serve/public/, next to this module), read once when a server starts
 * and answered from memory.
 *
 * Invariants:
 * - The two HTML documents are static: no run data is ever written into them
 *   (the scripts fetch it and render it as text), so there is nothing to
 *   escape and nothing an attacker-controlled run id could inject. They load
 *   scripts and the stylesheet from this origin only (no inline code).
 * - A served asset is the bytes of its file, unchanged.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the browser app's files are: `public/` beside this module. */
export const PUBLIC_DIR = fileURLToPath(new URL('./public/', import.meta.url));

const JS = 'text/javascript; charset=utf-8';

/** Each asset route, with the file in {@link PUBLIC_DIR} it serves and its content type. */
export const ASSET_FILES: Readonly<Record<string, readonly [file: string, contentType: string]>> = {
  '/assets/app.css': ['app.css', 'text/css; charset=utf-8'],
  '/assets/common.js': ['common.js', JS],
  '/assets/dashboard.js': ['dashboard.js', JS],
  '/assets/run.js': ['run.js', JS],
  '/favicon.svg': ['favicon.svg', 'image/svg+xml'],
};

/** The HTML documents: the dashboard at `/`, the run page at `/run/<id>`. */
export const PAGE_FILES = { dashboard: 'index.html', run: 'run.html' } as const;

/** One response body and its content type. */
export interface Asset {
  readonly contentType: string;
  readonly body: Buffer;
}

/** Everything the server answers from memory. */
export interface PublicFiles {
  /** Asset routes. */
  readonly assets: ReadonlyMap<string, Asset>;
  readonly dashboardHtml: Buffer;
  readonly runHtml: Buffer;
}

/** Reads every file of the browser app (once per server; requests never touch the disk). */
export async function loadPublicFiles(dir: string = PUBLIC_DIR): Promise<PublicFiles> {
  const read = (file: string): Promise<Buffer> => readFile(join(dir, file));
  const assets = new Map<string, Asset>();
  await Promise.all(
    Object.entries(ASSET_FILES).map(async ([path, [file, contentType]]) => {
      assets.set(path, { contentType, body: await read(file) });
    }),
  );
  const [dashboardHtml, runHtml] = await Promise.all([read(PAGE_FILES.dashboard), read(PAGE_FILES.run)]);
  return { assets, dashboardHtml, runHtml };
}
