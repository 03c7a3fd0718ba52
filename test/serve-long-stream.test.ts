/**
 * `runwarden serve` over a root holding a run whose stream is 24 MiB of `{}`
 * lines ending in `run_started`, beside an ordinary run:
 * the real CLI process, real files, a lock file nobody holds. What is
 * checked is what the server answers, never how fast: /api/runs gives the
 * same statuses as `runs --json`, and an append to the long stream reaches
 * /api/runs (the live engine read the stream once, with the tail reader,
 * and then only what was appended; test/live-first-read.test.ts counts
 * those bytes and steps).
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { getJson } from './helpers/serve-client.js';
import { startServeCli } from './helpers/serve-cli.js';
import { CLI, cleanupTemp, killAll, tempDir } from './helpers/lock-procs.js';
import { eventLine } from './helpers/events.js';
import { RELEASED } from './helpers/portable.js';

afterEach(async () => {
  await killAll();
  cleanupTemp();
});

const line = (o: Record<string, unknown>) => eventLine(o, { ts: '2026-12-02T10:00:00Z' });

type Doc = { runs: { run_id: string; status: string | null }[] };

function statuses(doc: Doc): Record<string, string | null> {
  return Object.fromEntries(doc.runs.map((r) => [r.run_id, r.status]));
}

describe('serve over a root with one huge stream', () => {
  it('answers /api/runs as runs --json does, and follows an append to the huge stream', async () => {
    const root = tempDir('rw-serve-long-');
    const big = join(root, '20261202-140000-huge');
    const small = join(root, '20261202-130000-small');
    mkdirSync(big);
    mkdirSync(small);
    const block = Buffer.from('{}\n'.repeat((1024 * 1024) / 3));
    const fd = openSync(join(big, 'events.jsonl'), 'w', 0o600);
    for (let i = 0; i < 24; i++) writeSync(fd, block);
    writeSync(fd, line({ event: 'run_started' }));
    closeSync(fd);
    writeFileSync(join(big, 'resume.lock'), RELEASED);
    writeFileSync(join(small, 'events.jsonl'), line({ event: 'run_started' }) + line({ event: 'run_finished', outcome: 'passed' }));

    const srv = await startServeCli(root);
    const listed = spawnSync(process.execPath, [CLI, 'runs', '--json', '--root', root], { encoding: 'utf8' });
    expect(listed.status).toBe(0);
    const expected = statuses(JSON.parse(listed.stdout) as Doc);
    expect(expected).toEqual({ '20261202-140000-huge': 'ABANDONED', '20261202-130000-small': 'PASS' });
    const first = await getJson<Doc>(srv.port, '/api/runs');
    expect(first.status).toBe(200);
    expect(statuses(first.body)).toEqual(expected);

    // A leg that ends: the engine reads only the append, and the server says so.
    appendFileSync(join(big, 'events.jsonl'), line({ event: 'run_started' }) + line({ event: 'run_finished', outcome: 'failed' }));
    let now: Record<string, string | null> = {};
    for (let i = 0; i < 300 && now['20261202-140000-huge'] !== 'FAIL'; i++) {
      now = statuses((await getJson<Doc>(srv.port, '/api/runs')).body);
      if (now['20261202-140000-huge'] !== 'FAIL') await new Promise((r) => setTimeout(r, 200));
    }
    expect(now).toEqual({ '20261202-140000-huge': 'FAIL', '20261202-130000-small': 'PASS' });
  }, 120_000);
});
