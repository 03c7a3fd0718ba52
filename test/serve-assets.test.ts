/**
 * The browser app as served: every page and asset is the bytes of its file in
 * src/serve/public/ (and of the build's copy in dist/serve/public/), and the
 * list of states the page counts is the server's CARD_STATES, delivered as
 * /assets/states.js and read the way the page reads it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createContext, runInContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CARD_STATES, sectionOf } from '../dist/serve/view.js';
import { printableText } from '../dist/contract/names.js';
import { cleanupTemp, ROOT, tempDir } from './helpers/lock-procs.js';
import { closeAll, raw, startDashboard } from './helpers/serve-client.js';

const SRC = join(ROOT, 'src', 'serve', 'public');
const DIST = join(ROOT, 'dist', 'serve', 'public');

/** Route, file, content type: what the server answered before the files moved. */
const SERVED: [string, string, string][] = [
  ['/', 'index.html', 'text/html; charset=utf-8'],
  ['/run/no-such-run', 'run.html', 'text/html; charset=utf-8'],
  ['/assets/app.css', 'app.css', 'text/css; charset=utf-8'],
  ['/assets/common.js', 'common.js', 'text/javascript; charset=utf-8'],
  ['/assets/dashboard.js', 'dashboard.js', 'text/javascript; charset=utf-8'],
  ['/assets/run.js', 'run.js', 'text/javascript; charset=utf-8'],
  ['/favicon.svg', 'favicon.svg', 'image/svg+xml'],
];

let port: number;

beforeAll(async () => {
  port = (await startDashboard(join(tempDir('rw-assets-'), 'runs'))).port;
});

afterAll(async () => {
  await closeAll();
  cleanupTemp();
});

describe('served assets', () => {
  it('are the files in src/serve/public, which the build copied to dist unchanged', () => {
    const files = (dir: string) => readdirSync(dir).sort();
    expect(files(DIST)).toEqual(files(SRC));
    expect(files(SRC)).toEqual(SERVED.map(([, file]) => file).sort());
    for (const file of files(SRC)) expect(readFileSync(join(DIST, file)), file).toEqual(readFileSync(join(SRC, file)));
  });

  it('answers every page and asset with its file’s bytes and content type', async () => {
    for (const [target, file, type] of SERVED) {
      const r = await raw(port, 'GET', target);
      const bytes = readFileSync(join(SRC, file));
      expect(r.status, target).toBe(target.startsWith('/run/') ? 404 : 200);
      expect(r.headers['content-type'], target).toBe(type);
      expect(Number(r.headers['content-length']), target).toBe(bytes.length);
      expect(r.body, target).toBe(bytes.toString('utf8'));
    }
  });
});

describe('the page’s list of states', () => {
  it('loads /assets/states.js after common.js and before the dashboard script', () => {
    const html = readFileSync(join(SRC, 'index.html'), 'utf8');
    const scripts = [...html.matchAll(/<script src="([^"]+)" defer><\/script>/g)].map((m) => m[1]);
    expect(scripts).toEqual(['/assets/common.js', '/assets/states.js', '/assets/dashboard.js']);
  });

  it('is CARD_STATES, in order, with each state’s section, as the page sees it', async () => {
    const r = await raw(port, 'GET', '/assets/states.js');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(r.headers['content-security-policy']).toContain("script-src 'self'");
    // The page runs common.js, then states.js, as classic scripts in one global scope.
    const page = createContext({});
    runInContext(readFileSync(join(SRC, 'common.js'), 'utf8'), page);
    runInContext(r.body, page);
    const rw = page['RW'] as { CARD_STATES: readonly string[]; STATE_SECTION: Record<string, string> };
    expect(Array.from(rw.CARD_STATES)).toEqual([...CARD_STATES]);
    expect({ ...rw.STATE_SECTION }).toEqual(Object.fromEntries(CARD_STATES.map((s) => [s, sectionOf(s)])));
  });

  it('loads /assets/states.js after common.js and before the run page script too', () => {
    const html = readFileSync(join(SRC, 'run.html'), 'utf8');
    const scripts = [...html.matchAll(/<script src="([^"]+)" defer><\/script>/g)].map((m) => m[1]);
    expect(scripts).toEqual(['/assets/common.js', '/assets/states.js', '/assets/run.js']);
  });

  it('gives the page the one printing rule, printableText itself, and common.js refuses to print before it', async () => {
    const r = await raw(port, 'GET', '/assets/states.js');
    const page = createContext({});
    runInContext(readFileSync(join(SRC, 'common.js'), 'utf8'), page);
    const rw = page['RW'] as { printable: (t: string) => string };
    expect(() => rw.printable('x')).toThrow(/states\.js/);
    runInContext(r.body, page);
    const sample = 'graph\u202e名\u001b[31m\r\u0085\u2069 ok';
    expect(rw.printable(sample)).toBe(printableText(sample));
    expect(rw.printable(sample)).toBe('graph\\u{202e}名\\x1b[31m\\x0d\\u{0085}\\u{2069} ok');
  });

  it('is declared nowhere in the page’s own files', () => {
    for (const file of readdirSync(SRC)) {
      const text = readFileSync(join(SRC, file), 'utf8');
      expect(text, file).not.toContain('TALLY_STATES');
      expect(text, file).not.toMatch(/'planning',\s*'running',\s*'abandoned',\s*'paused'/);
    }
  });
});
