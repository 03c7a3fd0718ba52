/**
 * A root whose names mix bytes that are not UTF-8 with ordinary names, served
 * by a real `runwarden serve` (its reader thread seeded by the first listing):
 * every endpoint answers 200, on every request, and the dashboard orders its
 * cards by the names' bytes, newest first (CONTRACT §1.1 rule 6), not by
 * their escaped shown forms.
 *
 * The expected order is written here from the bytes: 0xff sorts above
 * 0x61 0xff ("a" then 0xff), which sorts above "Case" (0x43…), whatever
 * their shown forms (`\xff`, `a\xff`, `Case`) would say as strings.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeEvents, eventObject } from './helpers/events.js';
import { cleanupTemp, killAll, tempDir } from './helpers/lock-procs.js';
import { startServeCli } from './helpers/serve-cli.js';
import { getJson, raw } from './helpers/serve-client.js';
import { RELEASED } from './helpers/portable.js';

afterAll(async () => {
  await killAll();
  cleanupTemp();
});

/** A settled run (one closed leg and no graph: FAIL, CONTRACT §5.1) at the exact name `name` under `root`. */
function settledRun(root: string, name: Buffer): void {
  const dir = Buffer.concat([Buffer.from(root + '/'), name]);
  mkdirSync(dir);
  const file = (f: string): Buffer => Buffer.concat([dir, Buffer.from('/' + f)]);
  writeFileSync(file('events.jsonl'), encodeEvents([eventObject({ event: 'run_started', command: ['true'] }), eventObject({ event: 'run_finished', outcome: 'completed', exit_code: 0 })]));
  writeFileSync(file('resume.lock'), RELEASED);
}

const CASES: { label: string; names: Buffer[]; order: string[] }[] = [
  { label: '0xff and "a"', names: [Buffer.of(0xff), Buffer.from('a')], order: ['\\xff', 'a'] },
  { label: '0xff and "pass-1"', names: [Buffer.of(0xff), Buffer.from('pass-1')], order: ['\\xff', 'pass-1'] },
  {
    label: '"a" 0xff, 0xff, "Case" and a backslash',
    names: [Buffer.from('Case'), Buffer.of(0x61, 0xff), Buffer.of(0xff), Buffer.from('b\\c')],
    // Bytes, descending: ff | 62 5c 63 | 61 ff | 43 61 73 65.
    order: ['\\xff', 'b\\\\c', 'a\\xff', 'Case'],
  },
];

describe('serve over names that are not UTF-8 beside ordinary ones', () => {
  for (const c of CASES) {
    it(`answers every endpoint with 200 and orders by bytes: ${c.label}`, async () => {
      const root = tempDir('rw-bytenames-');
      for (const n of c.names) settledRun(root, n);
      const serve = await startServeCli(root);
      try {
        // Each endpoint twice: a failed start must not be kept for the next request either.
        for (let round = 0; round < 2; round++) {
          const dash = await getJson(serve.port, '/api/dashboard');
          expect(dash.status, JSON.stringify(dash.body)).toBe(200);
          expect(dash.body.order).toEqual(c.order);
          expect(dash.body.runs.map((r: { run_id: string }) => r.run_id)).toEqual(c.order);
          const runs = await getJson(serve.port, '/api/runs');
          expect(runs.status).toBe(200);
          expect(runs.body.runs.map((r: { run_id: string }) => r.run_id)).toEqual(c.order);
          const metrics = await raw(serve.port, 'GET', '/metrics');
          expect(metrics.status, metrics.body).toBe(200);
          expect(metrics.body).toContain(`runwarden_runs{status="FAIL"} ${c.names.length}`);
          expect((await raw(serve.port, 'HEAD', '/metrics')).status).toBe(200);
          for (const id of c.order) {
            const page = await getJson(serve.port, `/api/runs/${encodeURIComponent(id)}`);
            expect(page.status, `${id}: ${JSON.stringify(page.body)}`).toBe(200);
            expect(page.body.report.run_id).toBe(id);
            expect(page.body.report.status).toBe('FAIL');
          }
        }
        expect(serve.stderr()).not.toMatch(/TypeError|reader thread/);
      } finally {
        serve.proc.kill('SIGKILL');
      }
    });
  }
});
