/**
 * The dashboard on the live engine (DashboardModel { live: true }): a
 * holder's kill -9 reaches an open page although the hub's own interval is
 * far longer than the test (the kernel announced it), and while nothing
 * changes the hub sends beats without deriving anything. The live model
 * keeps its sections as indexes updated run by run; after real changes
 * (a kill -9, a run appearing, a run removed, an append) its document is
 * the document a whole derivation of the root gives.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DashboardServer } from '../dist/serve/server.js';
import { cleanupTemp, killAll, tempDir, until, waitExit } from './helpers/lock-procs.js';
import { SseStream, closeAll } from './helpers/serve-client.js';
import { appendEvents, DIAMOND, ev, holdRun, killedHolder, openRun, passedRun, runDir } from './helpers/serve-fixtures.js';

const models: { close(): void }[] = [];
const servers: DashboardServer[] = [];
afterEach(async () => {
  await closeAll();
  for (const s of servers.splice(0)) await s.close();
  for (const m of models.splice(0)) m.close();
  await killAll();
  cleanupTemp();
});

async function startLive(root: string, intervalMs: number): Promise<{ server: DashboardServer; derivations: () => number }> {
  const { startServer } = await import('../dist/serve/server.js');
  const { DashboardModel } = await import('../dist/serve/model.js');
  const model = new DashboardModel(root, { live: true });
  models.push(model);
  let n = 0;
  const server = await startServer({
    root,
    port: 0,
    intervalMs,
    log: () => {},
    sources: {
      runsJson: async (select) => model.runsDocument(select),
      dashboard: () => {
        n++;
        return model.dashboard();
      },
      run: (id, dir) => model.page(id, dir),
      subscribe: (cb) => model.subscribe(cb),
      version: () => model.version,
    },
  });
  servers.push(server);
  return { server, derivations: () => n };
}

function stateOf(sse: SseStream, id: string): string | undefined {
  let state: string | undefined;
  for (const e of sse.events) {
    if (e.event === 'snapshot') state = (e.data.runs as { run_id: string; state: string }[]).find((c) => c.run_id === id)?.state ?? state;
    if (e.event === 'patch') state = (e.data.upsert as { run_id: string; state: string }[]).find((c) => c.run_id === id)?.state ?? state;
  }
  return state;
}

describe('serve on the live engine', () => {
  it('a kill -9 reaches an open page without waiting for the hub\'s interval', async () => {
    const root = tempDir('rw-serve-live-');
    passedRun(root, '20261130-090000-done', 'g', DIAMOND);
    const live = openRun(root, '20261130-100000-live', 'g', DIAMOND, 1);
    const holder = await holdRun(live);
    // The hub's own timer would not fire again within the test.
    const { server } = await startLive(root, 600_000);
    const sse = await SseStream.open(server.port, '/api/events');
    await until(() => stateOf(sse, '20261130-100000-live') === 'running');
    holder.proc.kill('SIGKILL');
    await until(() => stateOf(sse, '20261130-100000-live') === 'abandoned');
    expect(stateOf(sse, '20261130-090000-done')).toBe('passed');
  });

  it('while nothing changes, the hub sends beats and derives nothing', async () => {
    const root = tempDir('rw-serve-live-');
    passedRun(root, '20261130-090000-done', 'g', DIAMOND);
    const live = openRun(root, '20261130-100000-live', 'g', DIAMOND, 1);
    await holdRun(live);
    const { server, derivations } = await startLive(root, 20);
    const sse = await SseStream.open(server.port, '/api/events');
    await until(() => stateOf(sse, '20261130-100000-live') === 'running');
    const beats = () => sse.events.filter((e) => e.event === 'beat').length;
    // Let the engine's first derivation of every run settle, then count.
    await until(() => beats() >= 5);
    const before = derivations();
    const at = beats();
    await until(() => beats() >= at + 20);
    expect(derivations()).toBe(before);
  });

  it('keeps its sections run by run, and its document equals a whole derivation after each change', async () => {
    const { DashboardModel } = await import('../dist/serve/model.js');
    const root = tempDir('rw-serve-live-');
    // A page of 2 per paged section, so that runs move in and out of the page.
    for (let i = 1; i <= 5; i++) passedRun(root, `20261130-0${i}0000-done`, 'g', DIAMOND);
    runDir(root, '20261130-070000-nothing-yet'); // no stream: no status yet
    writeFileSync(join(root, 'stray.txt'), 'not a run\n');
    await killedHolder(openRun(root, '20261130-080000-dead', 'g', DIAMOND, 1));
    const live = openRun(root, '20261130-090000-live', 'g', DIAMOND, 1);
    const holder = await holdRun(live);
    const opts = { sectionPage: 2, expensiveMs: Infinity };
    const model = new DashboardModel(root, { ...opts, live: true });
    models.push(model);
    const strip = (d: { generated_at: string }) => ({ ...d, generated_at: '' });
    const whole = async () => strip(await new DashboardModel(root, opts).dashboard());
    // Converges on the whole derivation (or the test times out showing the difference).
    const agrees = async () => {
      const end = Date.now() + 60_000;
      for (;;) {
        const [a, b] = [strip(await model.dashboard()), await whole()];
        if (JSON.stringify(a) === JSON.stringify(b) || Date.now() > end) return expect(a).toEqual(b);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    await agrees();
    const first = await model.dashboard();
    expect(first.more).toEqual({ settled: 3, other: 0 });
    expect(first.order).toEqual(['20261130-090000-live', '20261130-080000-dead', '20261130-070000-nothing-yet', '20261130-050000-done', '20261130-040000-done']);
    // A stray file is counted, never listed by name (entries that are not runs cost one number).
    expect(first.skipped).toEqual([]);
    expect(first.skipped_count).toBe(1);

    holder.proc.kill('SIGKILL');
    await waitExit(holder.proc);
    await agrees();
    expect((await model.dashboard()).tallies.abandoned).toBe(2);

    // A newer settled run pushes the oldest shown one off the page; removing a shown one pulls the next one in.
    passedRun(root, '20261130-060000-done', 'g', DIAMOND);
    await agrees();
    expect((await model.dashboard()).more.settled).toBe(4);
    rmSync(join(root, '20261130-050000-done'), { recursive: true });
    await agrees();
    expect((await model.dashboard()).order).toContain('20261130-040000-done');

    // A run in flight appears, and an append reaches its card's strip.
    const next = openRun(root, '20261130-100000-next', 'g', DIAMOND, 0);
    const h2 = await holdRun(next);
    await agrees();
    appendEvents(next, [ev('20261130-100000-next', 'node_passed', { node_id: 'plan', verdict: 'PASS', cost_usd: 1 })]);
    await agrees();
    const doc = await model.dashboard();
    expect(doc.runs.find((c) => c.run_id === '20261130-100000-next')?.nodes.find((n) => n.id === 'plan')?.state).toBe('passed');
    expect(doc.tallies.running).toBe(1);
    h2.proc.kill('SIGKILL');
  });
});
