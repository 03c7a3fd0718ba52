/// <reference lib="dom" />
/**
 * serve survives its reader thread (serve/offthread.ts, serve/liveindex.ts):
 * a start of the live index that fails fails the requests waiting for it and
 * is begun again for the next one, never kept; a thread that crashes is
 * replaced, and its death fails only the requests it had taken, never those
 * sent to its replacement; each failed request says why in one line on
 * stderr and is counted in /metrics (`runwarden_serve_failures_total`); a
 * scrape whose reader failed still answers, without the runs' series; and
 * the page shows an error state, no cards, until the reader answers again.
 *
 * A failed start and a crashed thread cannot be made on purpose with real
 * files, so serve is told to make them (RUNWARDEN_TEST_SERVE_FAULTS: the
 * first N starts fail, the first M threads crash at their first request).
 */
import { chromium } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanupTemp, killAll, tempDir } from './helpers/lock-procs.js';
import { CHROMIUM, needs } from './helpers/prereq.js';
import { getJson, raw } from './helpers/serve-client.js';
import { startServeCli, type ServeProcess } from './helpers/serve-cli.js';
import { DIAMOND, passedRun } from './helpers/serve-fixtures.js';

afterAll(async () => {
  await killAll();
  cleanupTemp();
});

const IDS = ['20261201-080000.000000001-1', '20261201-090000.000000001-2'];

function rootWithRuns(): string {
  const root = tempDir('rw-faults-');
  for (const id of IDS) passedRun(root, id, 'nightly', DIAMOND, 0.25);
  return root;
}

function serveWith(root: string, faults: string): Promise<ServeProcess> {
  return startServeCli(root, [], 60_000, ['env', `RUNWARDEN_TEST_SERVE_FAULTS=${faults}`]);
}

/** The value of the unlabelled counter `name` in exposition text. */
function counter(text: string, name: string): number | undefined {
  const m = new RegExp(`^${name} (\\d+)$`, 'm').exec(text);
  return m === null ? undefined : Number(m[1]);
}

/** The lines serve printed on stderr for failed requests. */
function failureLines(serve: ServeProcess): string[] {
  return serve.stderr().split('\n').filter((l) => l.startsWith('runwarden serve: GET '));
}

describe('serve survives its reader thread', () => {
  it('a failed start fails its request with one line, is counted, and is begun again for the next request', async () => {
    const serve = await serveWith(rootWithRuns(), 'starts=1');
    try {
      const first = await getJson(serve.port, '/api/dashboard');
      expect(first.status).toBe(500);
      expect(first.body.error.code).toBe('internal');
      for (let i = 0; i < 3; i++) {
        const next = await getJson(serve.port, '/api/dashboard');
        expect(next.status, JSON.stringify(next.body)).toBe(200);
        expect(next.body.order).toEqual([...IDS].reverse());
      }
      const metrics = await raw(serve.port, 'GET', '/metrics');
      expect(metrics.status).toBe(200);
      expect(counter(metrics.body, 'runwarden_serve_failures_total')).toBe(1);
      expect(metrics.body).toMatch(/^runwarden_runs\{status="PASS"\} 2$/m);
      expect(failureLines(serve)).toEqual(['runwarden serve: GET /api/dashboard: the live index failed to start (ModelOptions.failStarts)']);
    } finally {
      serve.proc.kill('SIGKILL');
    }
  });

  it("a crashed thread fails only the request it took; its replacement's requests are answered", async () => {
    const serve = await serveWith(rootWithRuns(), 'threads=1');
    try {
      const first = await getJson(serve.port, '/api/dashboard');
      expect(first.status).toBe(500);
      // Sent one after another as soon as the crash is answered: the dead thread's exit comes while these wait
      // for the replacement's first listing.
      for (const target of ['/api/dashboard', '/api/runs', `/api/runs/${IDS[0]}`, '/api/dashboard']) {
        const r = await getJson(serve.port, target);
        expect(r.status, `${target}: ${JSON.stringify(r.body)}`).toBe(200);
      }
      const metrics = await raw(serve.port, 'GET', '/metrics');
      expect(counter(metrics.body, 'runwarden_serve_failures_total')).toBe(1);
      const lines = failureLines(serve);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^runwarden serve: GET \/api\/dashboard: the dashboard's reader thread (failed|exited)/);
    } finally {
      serve.proc.kill('SIGKILL');
    }
  });

  it("a request sent to the replacement while the crashed thread is still ending is answered (the dead thread's exit fails nothing of it)", async () => {
    const { OffThreadModel } = await import('../dist/serve/offthread.js');
    const model = new OffThreadModel(rootWithRuns(), { live: true, failThreads: 1 });
    try {
      const first = model.dashboard();
      // Sent in the same turn as the crash is told ('error'), so before the dead thread's 'exit'.
      const second = first.then(
        () => 'no crash',
        () => model.dashboard(),
      );
      await expect(first).rejects.toThrow(/reader thread failed: the reader thread crashed/);
      const doc = await second;
      expect(typeof doc === 'string' ? doc : doc.order).toEqual([...IDS].reverse());
    } finally {
      await model.close();
    }
  });

  it('a scrape whose reader failed answers without the runs’ series, says why, and counts itself', async () => {
    const serve = await serveWith(rootWithRuns(), 'starts=1');
    try {
      const failed = await raw(serve.port, 'GET', '/metrics');
      expect(failed.status).toBe(200);
      expect(failed.body).not.toMatch(/^runwarden_runs\{/m);
      expect(failed.body).toMatch(/^runwarden_root_readable 0$/m);
      expect(counter(failed.body, 'runwarden_serve_failures_total')).toBe(1);
      const next = await raw(serve.port, 'GET', '/metrics');
      expect(next.body).toMatch(/^runwarden_runs\{status="PASS"\} 2$/m);
      expect(next.body).toMatch(/^runwarden_root_readable 1$/m);
      expect(failureLines(serve)).toEqual(['runwarden serve: GET /metrics: the live index failed to start (ModelOptions.failStarts)']);
    } finally {
      serve.proc.kill('SIGKILL');
    }
  });

  it('the page shows an error state and no cards while the reader fails, then the cards', async (ctx) => {
    needs(ctx, 'chromium');
    // Three starts fail: the page's first ticks (one a second) all meet a failure before one succeeds.
    const serve = await serveWith(rootWithRuns(), 'starts=3');
    const context = await chromium.launchPersistentContext(tempDir('rw-chrome-'), {
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    try {
      const page = await context.newPage();
      await page.goto(serve.url);
      await page.waitForFunction(() => document.body.classList.contains('is-error'), undefined, { timeout: 60_000 });
      const during = await page.evaluate(() => ({
        note: document.getElementById('root-note')?.textContent ?? '',
        hidden: document.getElementById('root-note')?.hidden,
        loadingShown: [...document.querySelectorAll('section.group .loading')].some((e) => getComputedStyle(e).display !== 'none'),
        cardsShown: [...document.querySelectorAll('article.card')].filter((e) => (e as HTMLElement).offsetParent !== null).length,
      }));
      expect(during.hidden).toBe(false);
      expect(during.note).toMatch(/^The server cannot read the runs right now \(.*failed to start.*\); no cards are shown until it can\.$/);
      expect(during.loadingShown).toBe(false);
      expect(during.cardsShown).toBe(0);
      await page.waitForFunction((n) => !document.body.classList.contains('is-error') && document.querySelectorAll('article.card').length === n, IDS.length, { timeout: 60_000 });
      expect(await page.evaluate(() => document.getElementById('root-note')?.hidden)).toBe(true);
    } finally {
      await context.close();
      serve.proc.kill('SIGKILL');
    }
  });
});
