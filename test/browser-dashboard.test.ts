/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * The dashboard in a real browser: Debian's chromium driven by playwright-core
 * (no browser download), against `runwarden serve --port 0` as a child process
 * over a root whose live runs are held by real holder processes and whose
 * abandoned runs were held by holders that were SIGKILLed. Without
 * /usr/bin/chromium every test is skipped with the reason (or fails, under CI
 * or RUNWARDEN_TEST_STRICT=1: test/helpers/prereq.ts).
 */
import { existsSync, statSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { cleanupTemp, killAll, tempDir, waitExit, type Holder } from './helpers/lock-procs.js';
import { CHROMIUM, lacking, needs } from './helpers/prereq.js';
import { startServeCli, type ServeProcess } from './helpers/serve-cli.js';
import { DIAMOND, ev, holdRun, killedHolder, openRun, passedRun, runDir, writeEvents, writeState } from './helpers/serve-fixtures.js';

const ID = {
  passed: '20261130-061502.000000001-1',
  failed: '20261130-071502.000000001-2',
  abandoned: '20261130-081502.000000001-3',
  paused: '20261130-091502.000000001-4',
  steady: '20261130-101502.000000001-5', // stays running
  victim: '20261130-111502.000000001-6', // its holder is killed while the page is open
  hostile: '"><img src=x onerror=window.__pwned=1>',
};
const HOSTILE_NODE = '<script>window.__pwned=2</script>';

let root: string;
let serve: ServeProcess;
let steady: Holder;
let victim: Holder;
let context: BrowserContext;
let page: Page;
const dialogs: string[] = [];
const problems: string[] = [];

async function cardState(p: Page, id: string): Promise<string | null> {
  return p.evaluate((runId) => {
    const card = [...document.querySelectorAll<HTMLElement>('article.card')].find((e) => e.dataset['runId'] === runId);
    return card ? (card.dataset['state'] ?? null) : null;
  }, id);
}

beforeAll(async () => {
  // Nothing to set up for tests that will be skipped (each one says why, below).
  if (lacking('chromium').length > 0) return;
  root = tempDir('rw-browser-');
  passedRun(root, ID.passed, 'nightly-eval', DIAMOND, 0.61);
  const failed = runDir(root, ID.failed);
  writeEvents(failed, [ev(ID.failed, 'run_started'), ev(ID.failed, 'node_started', { node_id: 'lint' }), ev(ID.failed, 'node_passed', { node_id: 'lint', verdict: 'PASS', cost_usd: 0.12 }), ev(ID.failed, 'node_started', { node_id: 'tests' }), ev(ID.failed, 'node_failed', { node_id: 'tests', verdict: 'FAIL', cost_usd: 0.88, detail: '3 tests failed' }), ev(ID.failed, 'run_finished', { outcome: 'failed' })]);
  writeState(failed, ID.failed, 'refactor-auth', [{ id: 'lint' }, { id: 'tests', depends_on: ['lint'] }, { id: 'merge', depends_on: ['tests'] }], { lint: { verdict: 'PASS', cost_usd: 0.12 }, tests: { verdict: 'FAIL', cost_usd: 0.88 } });
  await killedHolder(openRun(root, ID.abandoned, 'fragments', DIAMOND, 2));
  const paused = runDir(root, ID.paused);
  writeEvents(paused, [ev(ID.paused, 'run_started'), ev(ID.paused, 'node_started', { node_id: 'build' }), ev(ID.paused, 'node_passed', { node_id: 'build', verdict: 'PASS', cost_usd: 0.3 }), ev(ID.paused, 'gate_paused', { node_id: 'approve' }), ev(ID.paused, 'run_finished', { outcome: 'paused' })]);
  writeState(paused, ID.paused, 'deploy-staging', [{ id: 'build' }, { id: 'approve', depends_on: ['build'] }, { id: 'deploy', depends_on: ['approve'] }], { build: { verdict: 'PASS', cost_usd: 0.3 } });
  steady = await holdRun(openRun(root, ID.steady, 'release-notes', DIAMOND, 3));
  victim = await holdRun(openRun(root, ID.victim, 'migrate-db', DIAMOND, 1));
  const hostile = runDir(root, ID.hostile);
  writeEvents(hostile, [ev(ID.hostile, 'run_started'), ev(ID.hostile, 'node_started', { node_id: HOSTILE_NODE }), ev(ID.hostile, 'node_failed', { node_id: HOSTILE_NODE, verdict: 'FAIL', detail: '<img src=y onerror=window.__pwned=3>\u2066' }), ev(ID.hostile, 'run_finished', { outcome: 'failed' })]);
  writeState(hostile, ID.hostile, '<b>bold</b>\u202e<script>window.__pwned=4</script>\u001b[2J', [{ id: HOSTILE_NODE }], { [HOSTILE_NODE]: { verdict: 'FAIL', cost_usd: 0.01 } });

  serve = await startServeCli(root);
  expect(existsSync(CHROMIUM), `${CHROMIUM} must be installed (apt-get install chromium; .ci/run does it)`).toBe(true);
  context = await chromium.launchPersistentContext(tempDir('rw-chrome-'), {
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1440, height: 960 },
  });
  page = await context.newPage();
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of 404/.test(m.text())) problems.push(`console: ${m.text()}`);
  });
}, 120_000);

afterAll(async () => {
  await context?.close();
  if (serve) {
    serve.proc.kill('SIGKILL');
    await waitExit(serve.proc);
  }
  await killAll();
  cleanupTemp();
});

describe('dashboard in chromium', () => {
  beforeEach((ctx) => needs(ctx, 'chromium'));

  it('shows the abandoned card with its hint, in the Abandoned section', async () => {
    await page.goto(serve.url);
    const card = page.locator(`article.card[data-run-id="${ID.abandoned}"]`);
    await card.waitFor({ timeout: 60_000 });
    expect(await card.getAttribute('data-state')).toBe('abandoned');
    expect(await card.evaluate((e) => e.closest('section')?.getAttribute('data-section'))).toBe('abandoned');
    const api = (await (await fetch(new URL('/api/runs', serve.url))).json()) as { runs: { run_id: string; hint: string | null }[] };
    const hint = api.runs.find((r) => r.run_id === ID.abandoned)?.hint;
    expect(hint).toBeTruthy();
    // Backquoted commands are set as <code>; the words are the hint's, verbatim.
    expect(await card.locator('.hint').textContent()).toContain((hint as string).replaceAll('`', ''));
    expect(await card.locator('.hint code').first().textContent()).toBe(`oh-my-graph resume ${ID.abandoned} --retry-failed`);
    // The colour is the muted grey-violet, not the failure red.
    const colour = await card.evaluate((e) => getComputedStyle(e).borderLeftColor);
    expect(colour).toBe('rgb(141, 132, 163)');
    expect(await page.locator('[data-tally="abandoned"] b').textContent()).toBe('1');
    // Live once frames keep arriving; on a loaded machine a beat may come late, so wait for it (no clock in the assertion).
    await page.locator('#live[data-state="live"]').waitFor({ timeout: 60_000 });
  });

  it('groups in-flight and settled runs, newest first', async () => {
    const ids = (section: string) => page.locator(`section[data-section="${section}"] article.card`).evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset['runId']));
    expect(await ids('in-flight')).toEqual([ID.victim, ID.steady]);
    expect(await ids('settled')).toEqual([ID.paused, ID.failed, ID.passed, ID.hostile]); // '"' sorts below digits
    expect(await page.locator(`article.card[data-run-id="${ID.steady}"] .strip .cell`).count()).toBe(5);
  });

  it('shows hostile ids, names and details as text and runs none of them', async () => {
    const text = await page.evaluate((id) => {
      const card = [...document.querySelectorAll<HTMLElement>('article.card')].find((e) => e.dataset['runId'] === id);
      return card ? { id: card.querySelector('.runid a')?.textContent, graph: card.querySelector('.graph')?.textContent, imgs: card.querySelectorAll('img, script, b').length } : null;
    }, ID.hostile);
    // Controls and bidi controls are printed by the one rule (names.ts printableText), as on a terminal: U+202E cannot reorder the card.
    expect(text).toEqual({ id: ID.hostile, graph: '<b>bold</b>\\u{202e}<script>window.__pwned=4</script>\\x1b[2J', imgs: 0 });
    await page.goto(new URL(`/run/${encodeURIComponent(ID.hostile)}`, serve.url).href);
    await page.locator('.nodebox').first().waitFor({ timeout: 60_000 });
    expect(await page.locator('.nodebox .id').first().textContent()).toBe(HOSTILE_NODE);
    expect(await page.locator('.timeline .detail').first().textContent()).toBe('<img src=y onerror=window.__pwned=3>\\u{2066}');
    expect(await page.title()).toContain('<b>bold</b>\\u{202e}<script>');
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(dialogs).toEqual([]);
  });

  it('draws a run page: node map with abandoned nodes, legend, leg history and timeline', async () => {
    await page.goto(new URL(`/run/${ID.abandoned}`, serve.url).href);
    await page.locator('.nodebox[data-node="impl-ui"]').waitFor({ timeout: 60_000 });
    expect(await page.locator('.nodebox[data-node="impl-ui"]').getAttribute('data-state')).toBe('abandoned');
    expect(await page.locator('.nodemap').getAttribute('data-layout')).toBe('layers');
    expect(await page.locator('.nodemap svg.edges path').count()).toBe(5); // DIAMOND has five edges
    expect(await page.locator('.legend span').allTextContents()).toEqual(expect.arrayContaining(['abandoned', 'running', 'passed', 'failed']));
    expect(await page.locator('.legs tbody tr').count()).toBe(1);
    expect(await page.locator('.timeline li.dead').count()).toBe(1);
    expect(await page.locator('.run-head .hint').textContent()).toContain(ID.abandoned);
  });

  it('turns a card abandoned within 5 s of its holder being killed, without a reload', async () => {
    await page.goto(serve.url);
    await page.locator(`article.card[data-run-id="${ID.victim}"]`).waitFor({ timeout: 60_000 });
    expect(await cardState(page, ID.victim)).toBe('running');
    await page.evaluate(() => ((window as unknown as { __sameDocument: boolean }).__sameDocument = true));
    // Which cards the page inserts (or moves) while the death arrives, and which the server's
    // patches upserted: a patch must touch only the cards it carries, not re-place every card.
    await page.evaluate(() => {
      const w = window as unknown as { __moves: { inserted: string[]; upserted: string[]; snapshots: number }; RW: { stream: EventSource } };
      const moves = (w.__moves = { inserted: [] as string[], upserted: [] as string[], snapshots: 0 });
      new MutationObserver((records) => {
        for (const r of records) for (const n of r.addedNodes) if (n instanceof HTMLElement && n.matches('article.card')) moves.inserted.push(n.dataset['runId'] ?? '');
      }).observe(document.querySelector('main') as HTMLElement, { subtree: true, childList: true });
      w.RW.stream.addEventListener('patch', (ev) => {
        for (const c of (JSON.parse((ev as MessageEvent<string>).data) as { upsert?: { run_id: string }[] }).upsert ?? []) moves.upserted.push(c.run_id);
      });
      w.RW.stream.addEventListener('snapshot', () => moves.snapshots++);
    });
    victim.proc.kill('SIGKILL');
    await page.waitForFunction(
      (id) => [...document.querySelectorAll<HTMLElement>('article.card')].find((e) => e.dataset['runId'] === id)?.dataset['state'] === 'abandoned',
      ID.victim,
      { timeout: 60_000, polling: 100 }, // room for a loaded machine: "turned", not "turned fast"
    );
    expect(await page.evaluate(() => (window as unknown as { __sameDocument?: boolean }).__sameDocument)).toBe(true);
    const moves = await page.evaluate(() => (window as unknown as { __moves: { inserted: string[]; upserted: string[]; snapshots: number } }).__moves);
    expect(moves.inserted).toContain(ID.victim);
    if (moves.snapshots === 0) expect(moves.inserted.filter((id) => !moves.upserted.includes(id))).toEqual([]);
    const card = page.locator(`article.card[data-run-id="${ID.victim}"]`);
    expect(await card.locator('.hint').textContent()).toContain(ID.victim);
    expect(await card.evaluate((e) => e.closest('section')?.getAttribute('data-section'))).toBe('abandoned');
    expect(await cardState(page, ID.steady)).toBe('running');
    expect(await page.locator('[data-tally="abandoned"] b').textContent()).toBe('2');
    const shot = join(tempDir('rw-shot-'), 'dashboard.png');
    await page.screenshot({ path: shot, fullPage: true });
    expect(statSync(shot).size).toBeGreaterThan(20_000);
    if (process.env['RW_DASHBOARD_PNG']) copyFileSync(shot, process.env['RW_DASHBOARD_PNG']);
  });

  it('says it is loading until the first picture arrives, never "Nothing in flight"', async () => {
    // Hold the event stream: the page gets no data at all.
    await page.route('**/api/events*', () => {});
    await page.goto(serve.url);
    await page.locator('section[data-section="in-flight"] .loading').waitFor({ state: 'visible', timeout: 60_000 });
    expect(await page.locator('section[data-section="in-flight"] .empty').isVisible()).toBe(false);
    expect(await page.locator('section[data-section="settled"] .empty').isVisible()).toBe(false);
    await page.unroute('**/api/events*');
    await page.goto(serve.url);
    await page.locator(`article.card[data-run-id="${ID.steady}"]`).waitFor({ timeout: 60_000 });
    expect(await page.locator('section[data-section="in-flight"] .loading').isVisible()).toBe(false);
  });

  it('raised no script errors and no CSP violations', () => {
    expect(problems).toEqual([]);
    expect(dialogs).toEqual([]);
  });

  it('turns the live indicator stale while the server is stopped, and live again after', async () => {
    expect(await page.locator('#live').getAttribute('data-state')).toBe('live');
    // SIGSTOP: the connection stays open but nothing arrives.
    serve.proc.kill('SIGSTOP');
    try {
      await page.waitForFunction(() => document.getElementById('live')?.dataset['state'] === 'stale', undefined, { timeout: 60_000, polling: 200 });
      expect(await page.evaluate(() => document.body.classList.contains('is-stale'))).toBe(true);
    } finally {
      serve.proc.kill('SIGCONT');
    }
    await page.waitForFunction(() => document.getElementById('live')?.dataset['state'] === 'live', undefined, { timeout: 60_000, polling: 200 });
    expect(await page.evaluate(() => document.body.classList.contains('is-stale'))).toBe(false);
  });

  it('shows the live indicator as not live once the server is gone', async () => {
    expect(await page.locator('#live').getAttribute('data-state')).toBe('live');
    serve.proc.kill('SIGKILL');
    await waitExit(serve.proc);
    await page.waitForFunction(() => document.getElementById('live')?.dataset['state'] !== 'live', undefined, { timeout: 60_000, polling: 200 });
    expect(['stale', 'offline']).toContain(await page.locator('#live').getAttribute('data-state'));
    void steady;
  });
});
