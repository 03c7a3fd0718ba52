/** `runwarden serve` as a command: arguments, refusals, its printed address, and stopping. */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, cleanupTemp, killAll, tempDir, waitExit } from './helpers/lock-procs.js';
import { startServeCli } from './helpers/serve-cli.js';
import { needs } from './helpers/prereq.js';

afterAll(async () => {
  await killAll();
  cleanupTemp();
});

function cli(args: string[]) {
  return spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000 });
}

describe('runwarden serve', () => {
  it('explains itself in --help', () => {
    const r = cli(['serve', '--help']);
    expect(r.status).toBe(0);
    for (const s of ['--root', '--port', '--host', '--loop-sample-ms', '127.0.0.1', '/api/runs', 'Read-only', 'abandoned']) expect(r.stdout).toContain(s);
  });

  it.each([['abc'], ['-1'], ['65536'], ['1.5']])('refuses --port %s with exit 2 and one line', (port) => {
    const r = cli(['serve', '--root', tempDir(), '--port', port]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--port/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it.each([['0'], ['x'], ['60001'], ['2.5']])('refuses --loop-sample-ms %s with exit 2 and one line', (ms) => {
    const r = cli(['serve', '--root', tempDir(), '--port', '0', '--loop-sample-ms', ms]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--loop-sample-ms must be a whole number of milliseconds');
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('is loaded only when asked for: the other commands start without the server or prom-client', () => {
    // prom-client is CommonJS, so once loaded it is in the CommonJS cache. The second script is the
    // control: loading the serve command's action modules does put it there.
    const main = new URL('../dist/cli/main.js', import.meta.url).href;
    const metrics = new URL('../dist/serve/metrics.js', import.meta.url).href;
    const count = "const { createRequire } = await import('node:module'); const cache = createRequire(import.meta.url).cache; " +
      "process.stdout.write(String(Object.keys(cache).filter((k) => k.includes('prom-client')).length));";
    const run = (script: string) => spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    const bare = run(`const { buildProgram } = await import(${JSON.stringify(main)}); buildProgram(); ${count}`);
    expect(bare.stderr).toBe('');
    expect(bare.stdout).toBe('0');
    const loaded = run(`await import(${JSON.stringify(main)}); await import(${JSON.stringify(metrics)}); ${count}`);
    expect(Number(loaded.stdout)).toBeGreaterThan(0);
  });

  it('refuses a root that is not a directory', () => {
    const f = join(tempDir(), 'file');
    writeFileSync(f, 'x');
    const r = cli(['serve', '--root', f, '--port', '0']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('is not a directory');
  });

  it('refuses a port in use with exit 2 and says what to do', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const port = (blocker.address() as { port: number }).port;
    try {
      const r = cli(['serve', '--root', tempDir(), '--port', String(port)]);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(`port ${port}`);
      expect(r.stderr).toContain('--port 0');
    } finally {
      blocker.close();
    }
  });

  it('prints the real port for --port 0, serves a missing root as empty, and stops cleanly', async (ctx) => {
    needs(ctx, 'posix: stopping on SIGTERM (Windows has no signal to send; its kill is TerminateProcess)');
    const root = join(tempDir(), 'not-yet');
    const s = await startServeCli(root);
    expect(s.port).toBeGreaterThan(0);
    expect(s.url).toBe(`http://127.0.0.1:${s.port}/`);
    const doc = (await (await fetch(new URL('/api/dashboard', s.url))).json()) as { root_missing: boolean; runs: unknown[] };
    expect(doc).toMatchObject({ root_missing: true, runs: [] });
    s.proc.kill('SIGTERM');
    await waitExit(s.proc);
    expect(s.proc.exitCode).toBe(0);
  });

  it('exits 130 on Ctrl-C (SIGINT)', async (ctx) => {
    needs(ctx, 'posix: a SIGINT sent to another process (Windows has no signal to send; its kill is TerminateProcess)');
    const s = await startServeCli(tempDir());
    s.proc.kill('SIGINT');
    await waitExit(s.proc);
    expect(s.proc.exitCode).toBe(130);
  });
});
