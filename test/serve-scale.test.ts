/// <reference lib="dom" />
/**
 * The dashboard at scale: 10,000 settled runs, runs in
 * flight held by real holder processes, abandoned runs whose holders were
 * SIGKILLed. The document stays small (In flight and Abandoned whole, the
 * newest page of each other section, counts for the rest), the page says
 * "Loading…" until its first snapshot and never "Nothing in flight", older
 * runs come through /api/runs on demand, and a death still reaches an open
 * page without a reload. Sizes are asserted, never durations.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DashboardModel, SECTION_PAGE } from '../dist/serve/model.js';
import { cleanupTemp, killAll, tempDir, waitExit, type Holder } from './helpers/lock-procs.js';
import { CHROMIUM, lacking, needs } from './helpers/prereq.js';
import { startServeCli, type ServeProcess } from './helpers/serve-cli.js';
import { DIAMOND, holdRun, killedHolder, openRun } from './helpers/serve-fixtures.js';
import { eventLine } from './helpers/events.js';

const SETTLED = 10_000;
/** Newest first by name: the live and dead runs sort above every settled one. */
const LIVE = ['20261201-230000.000000001-1', '20261201-230000.000000001-2'];
const DEAD = ['20261201-220000.000000001-1', '20261201-220000.000000001-2', '20261201-220000.000000001-3'];

let root: string;
const holders: Holder[] = [];

/** The three-line stream a real leg leaves for a settled run. */
function settledStream(id: string, outcome: 'passed' | 'failed'): string {
  const at = { runId: id, ts: '2026-11-30T08:00:00Z' };
  return (
    eventLine({ event: 'run_started' }, at) +
    eventLine({ event: outcome === 'passed' ? 'node_passed' : 'node_failed', node_id: 'only', verdict: outcome === 'passed' ? 'PASS' : 'FAIL' }, at) +
    eventLine({ event: 'run_finished', outcome }, at)
  );
}

/** A settled run as a real leg leaves it, no snapshot needed. */
function settledRun(id: string, outcome: 'passed' | 'failed'): void {
  const dir = join(root, id);
  mkdirSync(dir);
  writeFileSync(join(dir, 'events.jsonl'), settledStream(id, outcome));
}

function settledId(i: number): string {
  return `20261130-${String(100000 + Math.floor(i / 1000)).slice(1)}.${String(i).padStart(9, '0')}-1`;
}

beforeAll(async () => {
  root = tempDir('rw-scale-');
  for (let i = 0; i < SETTLED; i++) settledRun(settledId(i), i % 10 === 0 ? 'failed' : 'passed');
  for (const id of DEAD) await killedHolder(openRun(root, id, 'dead-graph', DIAMOND, 1));
  for (const id of LIVE) holders.push(await holdRun(openRun(root, id, 'live-graph', DIAMOND, 2)));
}, 300_000);

afterAll(async () => {
  await killAll();
  cleanupTemp();
});

describe('the dashboard document over 10,000 runs', () => {
  it('sends In flight and Abandoned whole, the newest page of Settled, and counts every run', async () => {
    const doc = await new DashboardModel(root).dashboard();
    const by = (section: string) => doc.runs.filter((c) => c.section === section).map((c) => c.run_id);
    expect(by('in-flight').sort()).toEqual([...LIVE].sort());
    expect(by('abandoned').sort()).toEqual([...DEAD].sort());
    const settled = by('settled');
    expect(settled).toHaveLength(SECTION_PAGE);
    // The newest ones, newest first.
    expect(settled).toEqual(Array.from({ length: SECTION_PAGE }, (_, k) => settledId(SETTLED - 1 - k)));
    expect(doc.more).toEqual({ settled: SETTLED - SECTION_PAGE, other: 0 });
    expect(doc.tallies.passed + doc.tallies.failed).toBe(SETTLED);
    expect(doc.tallies.failed).toBe(SETTLED / 10);
    expect(doc.tallies.running).toBe(LIVE.length);
    expect(doc.tallies.abandoned).toBe(DEAD.length);
    expect(doc.order).toEqual(doc.runs.map((c) => c.run_id));
    // Bounded: the 10,000 settled runs cost counts, not cards.
    expect(Buffer.byteLength(JSON.stringify(doc))).toBeLessThan(200_000);
  });

  it('a second document equals the first when nothing changed (settled runs reused by file identity), and sees a change', async () => {
    // expensiveMs Infinity: however slow this machine is, no run counts as expensive and gets an "as of" time.
    const m = new DashboardModel(root, { expensiveMs: Number.POSITIVE_INFINITY });
    const a = await m.dashboard();
    const b = await m.dashboard();
    expect(b.runs).toEqual(a.runs);
    expect(b.tallies).toEqual(a.tallies);
    // A settled run rewritten (a new leg, then closed as failed) is seen on the next document.
    const id = settledId(SETTLED - 1);
    const at = { runId: id, ts: '2026-11-30T09:00:00Z' };
    writeFileSync(join(root, id, 'events.jsonl'), eventLine({ event: 'run_started' }, at) + eventLine({ event: 'run_finished', outcome: 'failed' }, at));
    const c = await m.dashboard();
    expect(c.runs.find((x) => x.run_id === id)?.state).toBe('failed');
    expect(c.tallies.failed).toBe(a.tallies.failed + 1);
    // Put it back as it was for the other tests.
    writeFileSync(join(root, id, 'events.jsonl'), settledStream(id, 'passed'));
  });
});

describe('the dashboard page over 10,000 runs, in chromium', () => {
  let serve: ServeProcess;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    if (lacking('chromium').length > 0) return;
    serve = await startServeCli(root);
    context = await chromium.launchPersistentContext(tempDir('rw-chrome-'), {
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: 1440, height: 960 },
    });
    page = await context.newPage();
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    if (serve) {
      serve.proc.kill('SIGKILL');
      await waitExit(serve.proc);
    }
  });

  beforeEach((ctx) => needs(ctx, 'chromium'));

  it('says Loading… until the first snapshot, never "Nothing in flight"', async () => {
    // The page as served, before any script ran: loading, and the empty-section sentences hidden.
    const html = await (await fetch(serve.url)).text();
    expect(html).toMatch(/<body class="page-dashboard is-loading">/);
    await page.route('**/api/events', (route) => route.abort()); // no data can arrive
    await page.goto(serve.url);
    await page.locator('#live').waitFor();
    const shown = await page.evaluate(() => {
      const visible = (e: Element) => (e as HTMLElement).offsetParent !== null;
      return {
        loading: [...document.querySelectorAll('section.group .loading')].filter(visible).length,
        empty: [...document.querySelectorAll('section.group .empty')].filter(visible).map((e) => e.textContent),
      };
    });
    expect(shown.loading).toBeGreaterThan(0);
    expect(shown.empty).toEqual([]);
    await page.unroute('**/api/events');
  });

  it('shows the in-flight cards, a page of settled ones and how many more, and loads older ones on demand', async () => {
    await page.goto(serve.url);
    await page.locator(`article.card[data-run-id="${LIVE[0]}"]`).waitFor({ timeout: 60_000 });
    expect(await page.evaluate(() => document.body.classList.contains('is-loading'))).toBe(false);
    expect(await page.locator('section[data-section="in-flight"] article.card').count()).toBe(LIVE.length);
    expect(await page.locator('section[data-section="settled"] article.card').count()).toBe(SECTION_PAGE);
    const moreBox = page.locator('section[data-section="settled"] .more-box');
    expect(await moreBox.locator('.more-text').textContent()).toBe(`${SETTLED - SECTION_PAGE} older settled runs not shown.`);
    await moreBox.locator('.more-btn').click();
    await page.waitForFunction(() => document.querySelectorAll('section[data-section="settled"] .more-box .row-run').length === 50, undefined, { timeout: 60_000 });
    const firstRow = await moreBox.locator('.row-run').first().getAttribute('data-run-id');
    expect(firstRow).toBe(settledId(SETTLED - 1 - SECTION_PAGE));
    expect(await moreBox.locator('.more-text').textContent()).toBe(`${SETTLED - SECTION_PAGE - 50} older settled runs not shown.`);
  });

  it('finds runs with the same filter as /api/runs', async () => {
    await page.fill('#find-id', '.000009999-');
    await page.click('#find button[type="submit"]');
    await page.waitForFunction(() => document.querySelectorAll('#results .row-run').length > 0, undefined, { timeout: 60_000 });
    expect(await page.locator('#results .row-run').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset['runId']))).toEqual([settledId(9999)]);
    await page.selectOption('#find-status', 'abandoned');
    await page.fill('#find-id', '');
    await page.click('#find button[type="submit"]');
    await page.waitForFunction((n) => document.querySelectorAll('#results .row-run').length === n, DEAD.length, { timeout: 60_000 });
    expect(await page.locator('#results .row-run[data-state="abandoned"]').count()).toBe(DEAD.length);
  });

  it('turns an in-flight card abandoned when its holder is killed, without a reload', async () => {
    const victim = holders[0];
    const card = page.locator(`article.card[data-run-id="${LIVE[0]}"]`);
    expect(await card.getAttribute('data-state')).toBe('running');
    victim.proc.kill('SIGKILL');
    await waitExit(victim.proc);
    await page.locator(`section[data-section="abandoned"] article.card[data-run-id="${LIVE[0]}"][data-state="abandoned"]`).waitFor({ timeout: 60_000 });
    expect(await page.locator('[data-tally="abandoned"] b').textContent()).toBe(String(DEAD.length + 1));
    expect(problems).toEqual([]);
  });
});
