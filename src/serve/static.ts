/**
 * The browser app: the files in src/serve/public/ (the build copies them to
 * dist/serve/public/, next to this module), read once when a server starts
 * and answered from memory, plus /assets/states.js, which is written here
 * from CARD_STATES so the page has no list of states of its own.
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
import { STATUS_WORD } from '../contract/types.js';
import { printableText, UNPRINTABLE } from '../contract/names.js';
import { CARD_STATES, sectionOf } from './view.js';

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

/** The route of the script written from CARD_STATES. */
export const STATES_PATH = '/assets/states.js';

/** The HTML documents: the dashboard at `/`, the run page at `/run/<id>`. */
export const PAGE_FILES = { dashboard: 'index.html', run: 'run.html' } as const;

/** One response body and its content type. */
export interface Asset {
  readonly contentType: string;
  readonly body: Buffer;
}

/** Everything the server answers from memory. */
export interface PublicFiles {
  /** Asset routes, /assets/states.js included. */
  readonly assets: ReadonlyMap<string, Asset>;
  readonly dashboardHtml: Buffer;
  readonly runHtml: Buffer;
}

/**
 * The script behind /assets/states.js: sets `RW.CARD_STATES` (CARD_STATES, in
 * order), `RW.STATE_SECTION` (each state's section) and `RW.STATUS_STATE`
 * (each report status word's card state, STATUS_WORD) on the object
 * common.js publishes, and `RW.printable`, names.ts printableText itself
 * (its compiled source), so the page prints names by the one rule every
 * other surface uses. Nothing in it comes from a run.
 */
export function statesScript(): string {
  const sections = Object.fromEntries(CARD_STATES.map((s) => [s, sectionOf(s)]));
  return [
    '// Written by runwarden serve from CARD_STATES in src/serve/view.ts: every card',
    '// state, in the order the header counts them, and the section each belongs to.',
    `RW.CARD_STATES = Object.freeze(${JSON.stringify(CARD_STATES)});`,
    `RW.STATE_SECTION = Object.freeze(${JSON.stringify(sections)});`,
    '// Each status word of a report (runs --json, /api/runs) and the card state it is shown as.',
    `RW.STATUS_STATE = Object.freeze(${JSON.stringify(STATUS_WORD)});`,
    '// The one printing rule for text from a run directory (src/contract/names.ts printableText, its own',
    '// compiled source): controls and bidi controls shown as visible escapes, as on a terminal.',
    '(function () {',
    `  var UNPRINTABLE = new RegExp(${JSON.stringify(UNPRINTABLE.source)}, ${JSON.stringify(UNPRINTABLE.flags)});`,
    `  RW.printable = ${printableText.toString()};`,
    '})();',
    '',
  ].join('\n');
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
  assets.set(STATES_PATH, { contentType: JS, body: Buffer.from(statesScript(), 'utf8') });
  const [dashboardHtml, runHtml] = await Promise.all([read(PAGE_FILES.dashboard), read(PAGE_FILES.run)]);
  return { assets, dashboardHtml, runHtml };
}
