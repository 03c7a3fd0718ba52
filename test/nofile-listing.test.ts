/**
 * Descriptors run out gracefully: under any RLIMIT_NOFILE a listing of a
 * root of 300 abandoned runs either lists every run (exit 0) or exits
 * non-zero with one line that names EMFILE and the runs it could not read,
 * and its document still accounts for every run; a run is never dropped
 * silently, under a status selection too. Below what Node needs to load the
 * CLI at all, every command says EMFILE in one line, never a stack trace.
 *
 * The limits are set by the shell's `ulimit -n` before exec, soft and hard.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { eventLine } from './helpers/events.js';
import { CLI, cleanupTemp, killAll, tempDir } from './helpers/lock-procs.js';
import { getJson } from './helpers/serve-client.js';
import { startServeCli } from './helpers/serve-cli.js';

afterAll(async () => {
  await killAll();
  cleanupTemp();
});

const RUNS = 300;

/** 300 runs whose leg is open and whose marked lock is free: each one is ABANDONED, and each probe answers free. */
function abandonedRoot(): { root: string; ids: string[] } {
  const root = tempDir('rw-nofile-list-');
  const ids: string[] = [];
  for (let i = 0; i < RUNS; i++) {
    const id = `r${String(i).padStart(3, '0')}`;
    ids.push(id);
    mkdirSync(join(root, id));
    writeFileSync(join(root, id, 'events.jsonl'), eventLine({ event: 'run_started', command: ['x'] }));
    writeFileSync(join(root, id, 'resume.lock'), 'oh-my-graph-lock 1\n4242\n');
  }
  return { root, ids: ids.reverse() };
}

/** The CLI under `ulimit -n limit`. */
function cli(limit: number, args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync('sh', ['-c', `ulimit -n ${limit} && exec "$0" "$@"`, process.execPath, CLI, ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('a listing under a low descriptor limit', () => {
  const { root, ids } = abandonedRoot();

  it('at 256 descriptors, runs --json lists every run, exit 0', () => {
    const r = cli(256, ['runs', '--root', root, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as { runs: { run_id: string; status: string }[]; skipped: unknown[] };
    expect(doc.runs.map((x) => x.run_id)).toEqual(ids);
    expect(doc.runs.every((x) => x.status === 'ABANDONED')).toBe(true);
    expect(doc.skipped).toEqual([]);
  });

  it('at 256 descriptors, runs --status abandoned shows every run', () => {
    const r = cli(256, ['runs', '--root', root, '--status', 'abandoned']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe(`${RUNS} runs shown (${RUNS} abandoned); none skipped.`);
  });

  for (const limit of [40, 44, 48, 56, 64, 96, 128]) {
    it(`at ${limit} descriptors, runs --json lists every run or fails naming the rest in one line`, () => {
      const r = cli(limit, ['runs', '--root', root, '--json']);
      expect(r.stderr).not.toMatch(/^\s+at /m);
      if (r.code === 0) {
        const doc = JSON.parse(r.stdout) as { runs: { run_id: string }[]; skipped: unknown[] };
        expect(doc.runs.map((x) => x.run_id)).toEqual(ids);
        expect(doc.skipped).toEqual([]);
        expect(r.stderr).toBe('');
      } else {
        expect(r.code).toBe(1);
        const lines = r.stderr.trimEnd().split('\n');
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatch(/^runwarden: .*EMFILE/);
        if (r.stdout !== '') {
          // The document accounts for every run: listed, or named as not read.
          const doc = JSON.parse(r.stdout) as { runs: { run_id: string }[]; skipped: { run_id: string; kind?: string }[] };
          const unread = doc.skipped.map((s) => s.run_id);
          expect([...doc.runs.map((x) => x.run_id), ...unread].sort()).toEqual([...ids].sort());
          for (const id of unread.slice(0, 5)) expect(lines[0]).toContain(id);
        }
      }
    });
  }

  it('at 32 descriptors, every command either does its work or says EMFILE in one line and exits 1', () => {
    // Node needs more than 32 to load the CLI's modules at all; Bun does not. Either way, never a stack trace.
    for (const args of [['runs', '--root', root], ['status', 'r000', '--root', root], ['probe', join(root, 'r000')], ['metrics', '--root', root], ['--help']]) {
      const r = cli(32, args);
      if (r.code === 0) {
        expect(r.stderr, args.join(' ')).not.toMatch(/EMFILE|^\s+at /m);
        if (args[0] === 'runs') expect(r.stdout.trimEnd().split('\n').at(-1)).toBe(`${RUNS} runs shown (${RUNS} abandoned); none skipped.`);
      } else {
        expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(1);
        expect(r.stderr).toMatch(/^runwarden: [^\n]*EMFILE[^\n]*\n$/);
      }
    }
  });

  it("at 256 descriptors, serve's /api/runs lists every run", async () => {
    const serve = await startServeCli(root, [], 120_000, ['sh', '-c', 'ulimit -n 256 && exec "$0" "$@"']);
    try {
      const doc = await getJson(serve.port, '/api/runs');
      expect(doc.status).toBe(200);
      expect(doc.body.runs.map((x: { run_id: string }) => x.run_id)).toEqual(ids);
      expect(doc.body.skipped).toEqual([]);
    } finally {
      serve.proc.kill('SIGKILL');
    }
  });
});
