/**
 * A runs root removed, replaced or back again while it is served (bad
 * input). Real directories, real holder processes, `runwarden serve` as
 * a child process with a live event stream open (as a page keeps one):
 * - removed (rm -rf, or renamed away): the dashboard says the root is
 *   missing and shows no runs (none of the old ones as live), /api/runs says
 *   so in its Runwarden-Root header, and the server lives on;
 * - made again, or another directory renamed into place: its runs appear,
 *   the new directory's and not the old one's (a run of the same name is
 *   read from the new directory), and both documents say it was replaced;
 * - the old root renamed back: its live run reads running again;
 * - never, in any document or event the server sent, is a run whose holder
 *   is alive shown abandoned; and the server wrote nothing under any root.
 * The live engine on its own, with its safety re-check and open-leg
 * re-probe pushed out of reach, picks a returned root up too: only its
 * follow of the root's identity can. Waits are for states, never timed.
 */
import { appendFileSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LiveEngine } from '../src/index.js';
import { cleanupTemp, killAll, tempDir, until } from './helpers/lock-procs.js';
import { startServeCli, type ServeProcess } from './helpers/serve-cli.js';
import { SseStream, closeAll, getJson } from './helpers/serve-client.js';
import { DIAMOND, holdRun, openRun, passedRun } from './helpers/serve-fixtures.js';
import { fingerprint } from './helpers/tree.js';
import { eventLine } from './helpers/events.js';

const engines: LiveEngine[] = [];
afterEach(async () => {
  for (const e of engines.splice(0)) e.close();
  await closeAll();
  await killAll();
  cleanupTemp();
});

/** A failed run: one leg whose node failed (to tell a same-named run in another root from a passed one). */
function failedRun(root: string, id: string): string {
  const dir = openRun(root, id, 'other-graph', DIAMOND, 0);
  const at = { runId: id, ts: '2026-11-30T09:00:00Z' };
  appendFileSync(join(dir, 'events.jsonl'), eventLine({ event: 'node_failed', node_id: 'plan', verdict: 'FAIL' }, at) + eventLine({ event: 'run_finished', outcome: 'failed' }, at));
  return dir;
}

interface Card {
  run_id: string;
  state: string;
}
interface Dash {
  root_missing: boolean;
  root_replaced_at: string | null;
  runs: Card[];
}

/** Everything a served root's observer saw: every document and event, checked for a live run shown abandoned. */
class Observer {
  readonly seen: string[] = [];
  constructor(
    readonly serve: ServeProcess,
    readonly sse: SseStream,
    /** Runs whose holder is alive for the whole test: never abandoned. */
    readonly alive: Set<string>,
  ) {}

  async dash(): Promise<Dash> {
    const { status, body } = await getJson<Dash>(this.serve.port, '/api/dashboard');
    expect(status).toBe(200);
    this.check(body.runs, 'GET /api/dashboard');
    return body;
  }

  async runs(): Promise<{ root: string; replacedAt: string | undefined; runs: { run_id: string; status: string | null }[] }> {
    const { status, body, headers } = await getJson<{ runs: { run_id: string; status: string | null }[] }>(this.serve.port, '/api/runs');
    expect(status).toBe(200);
    for (const r of body.runs) if (this.alive.has(r.run_id)) expect(r.status, `${r.run_id} in /api/runs`).not.toBe('ABANDONED');
    return { root: String(headers['runwarden-root']), replacedAt: headers['runwarden-root-replaced-at'] as string | undefined, runs: body.runs };
  }

  /** Waits until the dashboard's cards are exactly `want` (id → state) and its root_missing is `missing`. */
  async until(want: Record<string, string>, missing: boolean): Promise<Dash> {
    let last: Dash | undefined;
    const key = (cards: Card[]) => JSON.stringify(Object.fromEntries(cards.map((c) => [c.run_id, c.state]).sort()));
    const wanted = JSON.stringify(Object.fromEntries(Object.entries(want).sort()));
    for (let i = 0; ; i++) {
      last = await this.dash();
      if (last.root_missing === missing && key(last.runs) === wanted) break;
      // A bound on polls, not on time: the state is waited for, however long a loaded machine takes (within the test's timeout).
      if (i > 2000) throw new Error(`dashboard never became ${wanted} (missing ${missing}); last: ${key(last.runs)} missing ${last.root_missing}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    this.events();
    return last;
  }

  /** Every card the event stream carried so far. */
  events(): void {
    for (const e of this.sse.events) {
      const cards: Card[] = e.event === 'snapshot' ? e.data.runs : e.event === 'patch' ? e.data.upsert : [];
      this.check(cards, `SSE ${e.event}`);
    }
  }

  private check(cards: Card[], where: string): void {
    for (const c of cards) if (this.alive.has(c.run_id)) expect(c.state, `${c.run_id} in ${where}`).not.toBe('abandoned');
  }
}

async function observe(root: string, alive: string[]): Promise<Observer> {
  const serve = await startServeCli(root);
  const sse = await SseStream.open(serve.port, '/api/events');
  return new Observer(serve, sse, new Set(alive));
}

describe('serve: a root removed, replaced or back again', () => {
  it('removed: missing, no runs, server alive; made again and replaced by a rename over it: the new runs, said replaced', async () => {
    const parent = tempDir('rw-rootgone-');
    const root = join(parent, 'runs');
    mkdirSync(root);
    passedRun(root, '20261130-080000-p1', 'g', DIAMOND);
    const live1 = openRun(root, '20261130-090000-l1', 'g', DIAMOND, 1);
    await holdRun(live1);
    const o = await observe(root, ['20261130-090000-l1', '20261201-090000-l2']);
    await o.until({ '20261130-080000-p1': 'passed', '20261130-090000-l1': 'running' }, false);
    const first = await o.runs();
    expect([first.root, first.replacedAt]).toEqual(['present', undefined]);

    // Removed while served, its leg still holding the lock file it had open.
    rmSync(root, { recursive: true, force: true });
    const gone = await o.until({}, true);
    expect(gone.root_replaced_at).toBeNull();
    const goneRuns = await o.runs();
    expect([goneRuns.root, goneRuns.runs]).toEqual(['missing', []]);
    expect(o.serve.proc.exitCode).toBeNull();
    // The open page is told too: a patch that removes the runs and says the root is missing.
    await o.sse.next((e) => e.event === 'patch' && e.data.root_missing === true);

    // Made again, empty: present (no engine event announces an empty directory), and replaced.
    mkdirSync(root);
    const empty = await o.until({}, false);
    expect(empty.root_replaced_at).not.toBeNull();
    expect((await o.runs()).root).toBe('present');
    // An empty directory changes nothing the model follows: the hub derives because the root's identity changed.
    const told = await o.sse.next((e) => e.event === 'patch' && e.data.root_missing === false && typeof e.data.root_replaced_at === 'string');
    expect(told.data.upsert).toEqual([]);

    // Another directory renamed over the empty one (rename(2) replaces an empty directory): its runs.
    const next = join(parent, 'next');
    mkdirSync(next);
    passedRun(next, '20261201-080000-p2', 'g', DIAMOND);
    const live2 = openRun(next, '20261201-090000-l2', 'g', DIAMOND, 2);
    await holdRun(live2);
    renameSync(next, root);
    const shown = await o.until({ '20261201-080000-p2': 'passed', '20261201-090000-l2': 'running' }, false);
    expect(shown.root_replaced_at).not.toBeNull();
    const listed = await o.runs();
    expect(listed.runs.map((r) => [r.run_id, r.status])).toEqual([
      ['20261201-090000-l2', 'RUNNING'],
      ['20261201-080000-p2', 'PASS'],
    ]);
    expect([listed.root, typeof listed.replacedAt]).toEqual(['present', 'string']);

    // A run made in the new root after all that is followed like any other.
    const before = fingerprint(root);
    passedRun(root, '20261201-100000-p3', 'g', DIAMOND);
    await o.until({ '20261201-080000-p2': 'passed', '20261201-090000-l2': 'running', '20261201-100000-p3': 'passed' }, false);
    // Reads only: nothing under the root changed but the run this test made.
    const after = fingerprint(root);
    for (const k of Object.keys(after)) if (!k.includes('20261201-100000-p3') && k !== root) expect(after[k], k).toBe(before[k]);
    expect(o.serve.proc.exitCode).toBeNull();
  }, 240_000);

  it('renamed away: missing; a new directory renamed into place: its runs, a same-named run read from it; the old one back: its live run running', async () => {
    const parent = tempDir('rw-rootswap-');
    const root = join(parent, 'runs');
    mkdirSync(root);
    passedRun(root, '20261130-080000-same', 'g', DIAMOND);
    const live = openRun(root, '20261130-090000-live', 'g', DIAMOND, 1);
    await holdRun(live);
    const o = await observe(root, ['20261130-090000-live']);
    await o.until({ '20261130-080000-same': 'passed', '20261130-090000-live': 'running' }, false);

    renameSync(root, join(parent, 'runs.old'));
    await o.until({}, true);
    expect((await o.runs()).root).toBe('missing');

    // The new directory has a run of the same name that failed, and one of its own.
    const other = join(parent, 'other');
    mkdirSync(other);
    failedRun(other, '20261130-080000-same');
    passedRun(other, '20261202-080000-own', 'g', DIAMOND);
    renameSync(other, root);
    const replaced = await o.until({ '20261130-080000-same': 'failed', '20261202-080000-own': 'passed' }, false);
    expect(replaced.root_replaced_at).not.toBeNull();
    expect((await o.runs()).runs.map((r) => [r.run_id, r.status])).toEqual([
      ['20261202-080000-own', 'PASS'],
      ['20261130-080000-same', 'FAIL'],
    ]);

    // Swapped back by two renames: the old directory, its holder still alive, reads running.
    renameSync(root, join(parent, 'other.again'));
    renameSync(join(parent, 'runs.old'), root);
    await o.until({ '20261130-080000-same': 'passed', '20261130-090000-live': 'running' }, false);
    const back = await o.runs();
    expect(back.runs.map((r) => [r.run_id, r.status])).toEqual([
      ['20261130-090000-live', 'RUNNING'],
      ['20261130-080000-same', 'PASS'],
    ]);
    expect(o.serve.proc.exitCode).toBeNull();
  }, 240_000);
});

describe('LiveEngine: its root followed by identity', () => {
  it('drops every run when the root goes, and lists the root again when it returns or is replaced (no safety pass can)', async () => {
    const parent = tempDir('rw-rootengine-');
    const root = join(parent, 'runs');
    mkdirSync(root);
    passedRun(root, '20261130-080000-a', 'g', DIAMOND);
    const live = openRun(root, '20261130-090000-live', 'g', DIAMOND, 1);
    await holdRun(live);
    // Safety re-check and open-leg re-probe out of reach: only the root's follow can find a returned root.
    const e = new LiveEngine({ root, safetyMs: 600_000, openRecheckMs: 600_000 });
    engines.push(e);
    const statuses: string[] = [];
    e.subscribe((c) => {
      if (c.type === 'run' && c.report !== null) statuses.push(`${c.runId}:${c.report.status}`);
    });
    await e.start();
    const now = () => e.runs().map((r) => `${r.runId}:${r.report?.status ?? r.error ?? 'none'}`);
    expect(now()).toEqual(['20261130-090000-live:RUNNING', '20261130-080000-a:PASS']);

    renameSync(root, join(parent, 'runs.old'));
    await until(() => e.missing && e.runs().length === 0);

    // Another directory renamed into place, with a same-named run that failed.
    const other = join(parent, 'other');
    mkdirSync(other);
    failedRun(other, '20261130-080000-a');
    renameSync(other, root);
    await until(() => now().join() === '20261130-080000-a:FAIL', 120_000);
    expect(e.missing).toBe(false);

    // The old root back: its live run running, as its holder never let go.
    renameSync(root, join(parent, 'other.again'));
    renameSync(join(parent, 'runs.old'), root);
    await until(() => now().join() === '20261130-090000-live:RUNNING,20261130-080000-a:PASS', 120_000);
    expect(statuses.filter((s) => s.startsWith('20261130-090000-live:'))).not.toContain('20261130-090000-live:ABANDONED');
  }, 300_000);
});
