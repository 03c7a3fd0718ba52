/**
 * The dashboard on the live engine (DashboardModel { live: true }): a
 * holder's kill -9 reaches an open page although the hub's own interval is
 * far longer than the test (the kernel announced it), and while nothing
 * changes the hub sends beats without deriving anything.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { DashboardServer } from '../dist/serve/server.js';
import { cleanupTemp, killAll, tempDir, until } from './helpers/lock-procs.js';
import { SseStream, closeAll } from './helpers/serve-client.js';
import { DIAMOND, holdRun, openRun, passedRun } from './helpers/serve-fixtures.js';

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
});
