/**
 * The swap race (CONTRACT §1.3): a run directory swapped with a
 * symlink to an outside directory, over and over, by renameat2(2) with
 * RENAME_EXCHANGE (a small C helper compiled here), while `serve` and
 * `runs --json` are asked again and again. A reader that checks the
 * directory and then opens its files by path can follow the symlink in
 * between and serve the outside directory's files; readers that open the
 * directory once without following links, and its files relative to it,
 * never do. Not a byte of the outside directory's content may appear.
 *
 * Evidence that the race was really run: the helper's own count of
 * exchanges, and responses that saw the swapped state (the run refused as a
 * symlink, or the real directory under the other name).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { run, start } from './helpers/exec-procs.js';
import { cleanupTemp, killAll, tempDir, track, until } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';
import { raw } from './helpers/serve-client.js';
import { startServeCli } from './helpers/serve-cli.js';
import { eventLine } from './helpers/events.js';
import { fingerprint } from './helpers/tree.js';

const SWAPPER_C = `
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
static volatile sig_atomic_t stop = 0;
static void on_term(int sig) { (void)sig; stop = 1; }
int main(int argc, char **argv) {
  if (argc != 4) return 2;
  if (argv[3][0] == '-') { /* "-": exchange once and exit */
    if (syscall(SYS_renameat2, AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE) != 0) { perror("renameat2"); return 1; }
    return 0;
  }
  signal(SIGTERM, on_term);
  unsigned long n = 0;
  while (!stop) {
    if (syscall(SYS_renameat2, AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE) != 0) { perror("renameat2"); return 1; }
    n++;
    if (n % 2 == 0) { FILE *f = fopen(argv[3], "w"); if (f) { fprintf(f, "%lu\\n", n); fclose(f); } }
  }
  /* leave the names as they started: an even number of exchanges */
  if (n % 2 == 1) syscall(SYS_renameat2, AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE);
  return 0;
}
`;

const SECRET = 'OUTSIDE-SECRET-7f3a';
const RUN = '20261201-100000.000000001-1';

function line(event: string, fields: Record<string, unknown> = {}): string {
  return eventLine({ event, ...fields }, { runId: RUN, ts: '2026-12-01T10:00:00Z' });
}

/**
 * Whether an answer shows the swapped state, which only a swap produces: the
 * run's name answering as a symlink (or not found), the real run answering
 * under the link's name zz-swap. The unswapped state (zz-swap a skipped
 * symlink, the run a directory) never counts; the test checks that too.
 */
function seesSwapped(what: string, body: string): boolean {
  switch (what) {
    case '/api/runs':
    case 'runs --json': {
      let doc: { runs?: { run_id: string }[]; skipped?: { run_id: string }[] };
      try {
        doc = JSON.parse(body) as typeof doc;
      } catch {
        return false;
      }
      return (doc.runs ?? []).some((r) => r.run_id === 'zz-swap') || (doc.skipped ?? []).some((r) => r.run_id === RUN);
    }
    case '/api/runs/RUN':
    case 'status --json':
      return body.includes('symlink') || body.includes('not-found') || body.includes('not found');
    case '/api/runs/zz-swap':
      return body.includes('inside-node');
    default:
      throw new Error(`no rule for ${what}`);
  }
}

/** Compiles the swapper into `dir`; returns its path. */
function buildSwapper(dir: string): string {
  const bin = join(dir, 'swapper');
  const src = join(dir, 'swapper.c');
  writeFileSync(src, SWAPPER_C);
  const cc = spawnSync('cc', ['-O2', '-o', bin, src], { encoding: 'utf8' });
  expect(cc.status, `cc failed: ${cc.stderr}`).toBe(0);
  return bin;
}

/** Every file under `dir` with its content, for before/after comparison. */
afterAll(async () => {
  await killAll();
  cleanupTemp();
});

describe('a run directory swapped with a symlink while it is read', () => {
  it('serve and runs --json never serve a byte of the outside directory', async (ctx) => {
    needs(ctx, 'cc');
    const base = tempDir('rw-swap-');
    const bin = buildSwapper(base);

    const root = join(base, 'root');
    const outside = join(base, 'outside');
    const runDir = join(root, RUN);
    mkdirSync(runDir, { recursive: true });
    mkdirSync(outside);
    // The run: one closed leg that passed.
    writeFileSync(join(runDir, 'events.jsonl'), line('run_started') + line('node_passed', { node_id: 'inside-node', verdict: 'PASS' }) + line('run_finished', { outcome: 'passed' }));
    writeFileSync(join(runDir, 'state.json'), JSON.stringify({ schema: 3, graph: { name: 'inside-graph', nodes: [{ id: 'inside-node' }] }, nodes: { 'inside-node': { verdict: 'PASS', cost_usd: 0.1 } } }));
    // The outside directory: a run of its own, every file carrying the secret.
    writeFileSync(join(outside, 'events.jsonl'), line('run_started', { command: [SECRET] }) + line('node_failed', { node_id: SECRET, verdict: 'FAIL', detail: SECRET }));
    writeFileSync(join(outside, 'state.json'), JSON.stringify({ schema: 3, graph: { name: SECRET, nodes: [{ id: SECRET }] }, nodes: { [SECRET]: { verdict: 'FAIL', cost_usd: 1 } } }));
    writeFileSync(join(outside, 'resume.lock'), `oh-my-graph-lock 1\n1\n${SECRET}\n`);
    writeFileSync(join(outside, 'exec.pgid'), `${SECRET}\n`);
    const swapName = join(root, 'zz-swap');
    symlinkSync(outside, swapName);

    const serve = await startServeCli(root);
    const count = join(base, 'count');

    let responses = 0;
    let sawSwapped = 0;
    const leaks: string[] = [];
    const look = (what: string, body: string): void => {
      responses++;
      if (body.includes(SECRET)) leaks.push(`${what}: ${body.slice(0, 300)}`);
      if (seesSwapped(what, body)) sawSwapped++;
    };
    /** One round of requests; every few rounds the CLI too. */
    const round = async (n: number): Promise<void> => {
      look('/api/runs', (await raw(serve.port, 'GET', '/api/runs')).body);
      look('/api/runs/RUN', (await raw(serve.port, 'GET', `/api/runs/${RUN}`)).body);
      look('/api/runs/zz-swap', (await raw(serve.port, 'GET', '/api/runs/zz-swap')).body);
      if (n % 30 === 0) {
        look('runs --json', (await run(['runs', '--json', '--root', root])).stdout);
        const s = await run(['status', RUN, '--json', '--root', root]);
        look('status --json', s.stdout + s.stderr);
      }
    };
    // Negative control: with nobody swapping, no answer may count as having seen the swap, or
    // the count below would prove nothing (the skipped symlink zz-swap is listed every time).
    for (let n = 0; n < 31; n++) await round(n);
    expect(leaks).toEqual([]);
    expect(sawSwapped, 'answers on a root nobody swapped counted as seeing the swap').toBe(0);

    const swapper: ChildProcess = spawn(bin, [runDir, swapName, count], { stdio: ['ignore', 'ignore', 'pipe'] });
    track(swapper);
    let swapErr = '';
    swapper.stderr?.on('data', (d: Buffer) => (swapErr += d.toString()));
    try {
      // Bounded by counts, not by time: enough rounds that the race is met many times.
      for (let n = 0; n < 300 && (n < 120 || sawSwapped < 20); n++) await round(n);
    } finally {
      swapper.kill('SIGTERM');
      await new Promise((r) => (swapper.exitCode !== null ? r(undefined) : swapper.once('exit', r)));
    }
    expect(swapErr, 'the swapper must not fail').toBe('');
    const exchanges = Number(readFileSync(count, 'utf8').trim());
    expect(exchanges, 'the directory was really swapped, many times').toBeGreaterThan(1000);
    expect(sawSwapped, 'responses did see the swapped state (the race was met)').toBeGreaterThan(0);
    expect(leaks, `${leaks.length} of ${responses} responses carried the outside directory's content`).toEqual([]);
    expect(responses).toBeGreaterThan(360 + 90);
  }, 600_000); // a bound for a hung run only: the loop above is bounded by counts

  it('an exec leg whose directory is swapped for a symlink mid-leg writes only into its own directory', async (ctx) => {
    needs(ctx, 'cc');
    const base = tempDir('rw-swap-exec-');
    const bin = buildSwapper(base);
    const root = join(base, 'root');
    const outside = join(base, 'outside');
    const runDir = join(root, RUN);
    mkdirSync(root);
    mkdirSync(outside);
    // Files of the same names outside: a writer that resolved paths through the swapped name would append to
    // this stream, or take and mark this lock, believing its own had been replaced.
    writeFileSync(join(outside, 'state.json'), JSON.stringify({ secret: SECRET }));
    writeFileSync(join(outside, 'events.jsonl'), line('run_started', { command: [SECRET] }));
    writeFileSync(join(outside, 'resume.lock'), `oh-my-graph-lock 1\n1\n`);
    const before = fingerprint(outside);
    const swapName = join(root, 'zz-swap');
    symlinkSync(outside, swapName);
    const gate = join(base, 'go');
    const leg = start(['exec', RUN, '--root', root, '--', 'sh', '-c', `while [ ! -e '${gate}' ]; do sleep 0.05; done`]);
    await until(() => {
      try {
        return readdirSync(runDir).includes('exec.pgid');
      } catch {
        return false; // not created yet
      }
    });
    // One exchange: the run's name is now the symlink, its directory is at the other name, until the leg ends.
    expect(spawnSync(bin, [runDir, swapName, '-']).status).toBe(0);
    writeFileSync(gate, '');
    const r = await leg.done;
    expect(spawnSync(bin, [runDir, swapName, '-']).status).toBe(0);
    // Nothing landed outside: the lock, the events and exec.pgid all went through the leg's own descriptor.
    expect(fingerprint(outside)).toEqual(before);
    const events = readFileSync(join(runDir, 'events.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l).event);
    expect(events).toEqual(['run_started', 'node_started', 'node_passed', 'run_finished']);
    // The guard saw the directory's name change hands: it says so, and a success readers cannot see is no success.
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/removed or replaced/);
  });
});
