/**
 * Hostile selection keys and Host headers, on a real `runwarden serve`
 * process and the real CLI:
 * - a repeated selection key is refused on both surfaces
 *   (`/api/runs?limit=1&limit=2` is 400, `runs --limit 1 --limit 2` exits 2),
 *   so the two never disagree about which value counts; one value works;
 * - a Host header that is not `host[:port]` (`127.0.0.1:1@evil.example`) is
 *   refused with 400 bad-host, before any other check; a well-formed one
 *   naming this server is answered.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostHeaderName } from '../src/serve/server.js';
import { run } from './helpers/exec-procs.js';
import { cleanupTemp, killAll, tempDir } from './helpers/lock-procs.js';
import { raw } from './helpers/serve-client.js';
import { startServeCli, type ServeProcess } from './helpers/serve-cli.js';
import { DIAMOND, passedRun } from './helpers/serve-fixtures.js';

let root: string;
let serve: ServeProcess;

beforeAll(async () => {
  root = tempDir();
  for (let i = 0; i < 3; i++) passedRun(root, `20261201-1100${i}0.000000001-${i}`, 'diamond', DIAMOND);
  serve = await startServeCli(root);
});
afterAll(async () => {
  await killAll();
  cleanupTemp();
});

describe('a selection key given twice', () => {
  it('/api/runs refuses it with 400 bad-request naming the key; one value is answered', async () => {
    const one = await raw(serve.port, 'GET', '/api/runs?limit=1');
    expect(one.status).toBe(200);
    expect((JSON.parse(one.body) as { runs: unknown[] }).runs).toHaveLength(1);
    for (const q of ['limit=1&limit=2', 'limit=2&limit=2', 'status=pass&status=fail', 'graph=a&graph=b', 'id=1&id=2', 'before=x&before=y']) {
      const r = await raw(serve.port, 'GET', `/api/runs?${q}`);
      expect(r.status, q).toBe(400);
      const body = JSON.parse(r.body) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('bad-request');
      expect(body.error.message).toMatch(/^query parameter "(limit|status|graph|id|before)" is given 2 times; give it once$/);
    }
  });

  it('runs refuses it with exit 2 and a line naming the flag; one value works', async () => {
    const one = await run(['runs', '--json', '--root', root, '--limit', '1']);
    expect(one.code).toBe(0);
    expect((JSON.parse(one.stdout) as { runs: unknown[] }).runs).toHaveLength(1);
    for (const flag of ['--limit', '--status', '--graph', '--id', '--before']) {
      const v = flag === '--limit' ? ['1', '2'] : flag === '--status' ? ['pass', 'fail'] : ['a', 'b'];
      const r = await run(['runs', '--root', root, flag, v[0], flag, v[1]]);
      expect(r.code, flag).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(`${flag} is given more than once; give it once`);
    }
  });
});

describe('the Host header', () => {
  it('reads host[:port] only', () => {
    expect(hostHeaderName('127.0.0.1:8080')).toBe('127.0.0.1');
    expect(hostHeaderName('LocalHost')).toBe('localhost');
    expect(hostHeaderName('[::1]:80')).toBe('::1');
    expect(hostHeaderName('example.com')).toBe('example.com');
    for (const bad of ['127.0.0.1:1@evil.example', 'user@127.0.0.1', '127.0.0.1:80:80', '127.0.0.1/x', '127.0.0.1 evil', 'a%2e', '::1', '[::1', '127.0.0.1:', '127.0.0.1:123456', '']) {
      expect(hostHeaderName(bad), bad).toBeUndefined();
    }
  });

  it('serve answers 400 bad-host to a Host that is not host[:port], 200 to this server by name', async () => {
    const bad = await raw(serve.port, 'GET', '/api/runs', { Host: '127.0.0.1:1@evil.example' });
    expect(bad.status).toBe(400);
    expect((JSON.parse(bad.body) as { error: { code: string } }).error.code).toBe('bad-host');
    for (const h of ['localhost@evil.example', `127.0.0.1:${serve.port}/x`]) {
      const r = await raw(serve.port, 'GET', '/api/runs', { Host: h });
      expect(r.status, h).toBe(400);
    }
    // Control: well-formed names of this server are answered, a well-formed foreign one is still 403.
    expect((await raw(serve.port, 'GET', '/api/runs', { Host: `127.0.0.1:${serve.port}` })).status).toBe(200);
    expect((await raw(serve.port, 'GET', '/api/runs', { Host: `localhost:${serve.port}` })).status).toBe(200);
    expect((await raw(serve.port, 'GET', '/api/runs', { Host: 'evil.example' })).status).toBe(403);
  });
});
