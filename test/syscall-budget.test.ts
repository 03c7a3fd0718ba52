/**
 * System-call budgets that cannot drift: strace counts the
 * calls of many probes, and of a listing of many settled runs, and the test
 * fails above the budget stated here. Counts, not durations: they hold on a
 * loaded machine.
 *
 * The probe (CONTRACT §4.2, native/probe.cc), on a mount already judged local:
 *   probeLock:   openat(dir, O_PATH|O_DIRECTORY|O_NOFOLLOW), statx(lock, no follow),
 *                openat2(lock, RESOLVE_NO_XDEV), pread, flock(LOCK_SH|LOCK_NB), close, close = 7
 *   probeLockAt: the same on a directory the caller holds open                = 5
 * free and held alike (a granted shared lock goes with the close). A kernel
 * without STATX_MNT_ID_UNIQUE (linux < 6.8) cannot remember a mount's
 * judgement, so it pays the directory's fstatfs every time: one more; one
 * without openat2 (linux < 5.6) opens plainly and checks the descriptor with
 * fstat: one more again.
 *
 * A probe is counted on the main thread between two marker calls, over
 * PROBES probes, after a warm-up; everything the thread does counts. V8 may
 * add a stray madvise or futex on that thread; SLACK per probe covers that
 * (measured: under 0.01), far below one call per probe.
 *
 * The listing (`runs --json`) is counted by difference: a root of FEW settled
 * runs and one of MANY, every thread (-f), the calls that name a file under
 * the root or take a descriptor of one (strace -y names a descriptor's file);
 * (many - few) / (MANY - FEW) per run. The event loop's own waits and
 * wake-ups (epoll, eventfd reads and writes) and memory mapping follow the
 * machine's pace and the garbage collector, not the runs: counted once with
 * them, a loaded CI machine added 0.7 calls per run (failed CI once). A settled run (last
 * leg closed) is never probed: openat(run dir), openat(events.jsonl), fstat,
 * pread, close, openat(state.json) (ENOENT here), close(dir) = 7.
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { release } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { acquireLock } from '../src/index.js';
import { CLI, cleanupTemp, killAll, ROOT, startHolder, tempDir } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';
import { deadPid, ev } from './helpers/reading-fixtures.js';

const PROBES = 2000;
const SLACK = 0.05;
const FEW = 40;
const MANY = 240;
const LIST_SLACK = 0.25;

/** linux >= 6.8 tells a mount's never-reused id (STATX_MNT_ID_UNIQUE). */
function uniqueMountIds(): boolean {
  const [major, minor] = release().split('.').map(Number) as [number, number];
  return major > 6 || (major === 6 && minor >= 8);
}
/** linux >= 5.6 has openat2 (RESOLVE_NO_XDEV). */
function openat2(): boolean {
  const [major, minor] = release().split('.').map(Number) as [number, number];
  return major > 5 || (major === 5 && minor >= 6);
}
const OLDER_KERNEL = (uniqueMountIds() ? 0 : 1) + (openat2() ? 0 : 1);
const PROBE_BUDGET = 7 + OLDER_KERNEL;
const PROBE_AT_BUDGET = 5 + OLDER_KERNEL;
const SETTLED_RUN_BUDGET = 7;

let base: string;
beforeAll(() => {
  base = tempDir('rw-sysbudget-');
});
afterEach(() => killAll());
afterAll(async () => {
  await killAll();
  cleanupTemp();
});

const PROBE_SCRIPT = `
const { probeLock, probeLockAt } = await import(${JSON.stringify(join(ROOT, 'dist', 'lock', 'probe.js'))});
const { openDirNoFollow, runDirPath } = await import(${JSON.stringify(join(ROOT, 'dist', 'kernel', 'dirfd.js'))});
const { statSync } = await import('node:fs');
const [lock, n, how] = [process.argv[1], Number(process.argv[2]), process.argv[3]];
const dir = lock.slice(0, lock.lastIndexOf('/'));
const fd = how === 'at' ? openDirNoFollow(runDirPath(dir)) : -1;
const one = how === 'at' ? () => probeLockAt(fd, 'resume.lock', lock) : () => probeLock(lock);
for (let i = 0; i < 200; i++) one();
let last;
statSync('/rw-syscall-mark-begin', { throwIfNoEntry: false });
for (let i = 0; i < n; i++) last = one();
statSync('/rw-syscall-mark-end', { throwIfNoEntry: false });
process.stdout.write(JSON.stringify({ pid: process.pid, last }));
`;

interface Counted {
  answer: { liveness: string; reason: string };
  perProbe: number;
  byName: Record<string, number>;
  /** flock(fd, LOCK_SH|LOCK_NB) calls: one per probe, whatever else a probe makes. */
  shared: number;
}

/** Runs PROBES probes under strace; counts the main thread's calls between the markers. */
function countProbes(lock: string, how: 'path' | 'at'): Counted {
  const log = join(base, `strace-${how}-${Math.random().toString(36).slice(2)}.log`);
  const r = spawnSync('strace', ['-f', '-qq', '-o', log, process.execPath, '--input-type=module', '-e', PROBE_SCRIPT, lock, String(PROBES), how], {
    encoding: 'utf8',
    timeout: 300_000,
  });
  if (r.error || r.status !== 0) throw new Error(`strace run failed: ${r.error?.message ?? r.stderr}`);
  const out = JSON.parse(r.stdout) as { pid: number; last: Counted['answer'] };
  const byName: Record<string, number> = {};
  let inside = false;
  let begun = false;
  let total = 0;
  let shared = 0;
  for (const line of readFileSync(log, 'utf8').split('\n')) {
    if (line.includes('/rw-syscall-mark-begin')) {
      inside = begun = true;
      continue;
    }
    if (line.includes('/rw-syscall-mark-end')) {
      inside = false;
      continue;
    }
    const m = /^(\d+)\s+(<\.\.\. )?(\w+)/.exec(line);
    // A call interrupted by another thread's line shows as "<... name resumed>": counted once, at its start.
    if (!inside || !m || Number(m[1]) !== out.pid || m[2] !== undefined) continue;
    const name = m[3];
    byName[name] = (byName[name] ?? 0) + 1;
    total++;
    if (name === 'flock' && line.includes('LOCK_SH|LOCK_NB')) shared++;
  }
  expect(begun, 'the trace saw the start marker').toBe(true);
  return { answer: out.last, perProbe: total / PROBES, byName, shared };
}

describe('system calls per probe (a budget, counted by strace)', () => {
  let free: string;
  beforeAll(() => {
    free = join(base, 'free', 'resume.lock');
    mkdirSync(join(base, 'free'));
    acquireLock(free, { pid: deadPid() }).release();
  });

  for (const how of ['path', 'at'] as const) {
    const budget = how === 'path' ? PROBE_BUDGET : PROBE_AT_BUDGET;
    const api = how === 'path' ? 'probeLock' : 'probeLockAt';

    it(`${api} on a free lock: at most ${budget} calls`, (ctx) => {
      needs(ctx, 'strace');
      const c = countProbes(free, how);
      expect(c.answer).toEqual({ liveness: 'free', reason: 'flock-free' });
      // Positive control: the window held every probe (one shared-lock attempt each).
      expect(c.shared, JSON.stringify(c.byName)).toBe(PROBES);
      expect(c.perProbe, `per probe: ${JSON.stringify(c.byName)} over ${PROBES}`).toBeLessThanOrEqual(budget + SLACK);
    });

    it(`${api} on a lock held by a live process: at most ${budget} calls`, async (ctx) => {
      needs(ctx, 'strace');
      const held = join(base, `held-${how}`, 'resume.lock');
      await startHolder(held);
      const c = countProbes(held, how);
      expect(c.answer).toEqual({ liveness: 'held', reason: 'flock-held' });
      expect(c.shared, JSON.stringify(c.byName)).toBe(PROBES);
      expect(c.perProbe, `per probe: ${JSON.stringify(c.byName)} over ${PROBES}`).toBeLessThanOrEqual(budget + SLACK);
    });
  }

  it('the lock file is opened non-blocking and no-follow, never created, and nothing is unlocked by hand', (ctx) => {
    needs(ctx, 'strace');
    const log = join(base, 'flags.log');
    const script = `import(${JSON.stringify(join(ROOT, 'dist', 'index.js'))}).then(m => process.stdout.write(JSON.stringify(m.probeLock(${JSON.stringify(free)}))))`;
    const r = spawnSync('strace', ['-f', '-qq', '-e', 'trace=openat,openat2,flock', '-o', log, process.execPath, '-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    const lines = readFileSync(log, 'utf8').split('\n');
    const opens = lines.filter((l) => l.includes('"resume.lock"'));
    expect(opens).toHaveLength(1);
    expect(opens[0]).toMatch(/O_RDONLY\|O_NONBLOCK\|O_NOFOLLOW\|O_CLOEXEC/);
    expect(opens[0]).not.toMatch(/O_CREAT/);
    expect(lines.filter((l) => /flock\(\d+, LOCK_SH\|LOCK_NB\)/.test(l))).toHaveLength(1);
    expect(lines.filter((l) => l.includes('LOCK_UN'))).toEqual([]);
  });
});

describe('system calls per settled run of `runs --json` (a budget, counted by strace)', () => {
  function settledRoot(name: string, n: number): string {
    const root = join(base, name);
    for (let i = 0; i < n; i++) {
      const id = `20260806-100000.${String(i).padStart(9, '0')}-1`;
      const dir = join(root, id);
      mkdirSync(dir, { recursive: true });
      const events = [ev('run_started', {}, id), ev('node_started', { node_id: 'a' }, id), ev('node_passed', { node_id: 'a', verdict: 'PASS' }, id), ev('run_finished', { outcome: 'passed' }, id)];
      writeFileSync(join(dir, 'events.jsonl'), events.join(''));
      writeFileSync(join(dir, 'resume.lock'), 'oh-my-graph-lock 1\n4242\n');
    }
    return root;
  }

  /**
   * strace -f -y of one `runs --json`: the calls that name a file under `root` or take a descriptor of one
   * (strace -y prints a descriptor's path), by name, and the rows it printed.
   */
  async function countListing(root: string): Promise<{ calls: Record<string, number>; rows: number }> {
    const tag = Math.random().toString(36).slice(2);
    const out = join(base, `list-${tag}.txt`);
    // The report goes to a file, not a pipe, and outside the root: it is not counted either way.
    const json = join(base, `list-${tag}.json`);
    const jsonFd = openSync(json, 'w');
    const child = spawn('strace', ['-f', '-qq', '-y', '-s', '4096', '-e', 'trace=%file,%desc', '-o', out, process.execPath, CLI, 'runs', '--json', '--root', root], { stdio: ['ignore', jsonFd, 'pipe'] });
    closeSync(jsonFd);
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((res) => child.once('exit', res));
    expect(code, stderr).toBe(0);
    const stdout = readFileSync(json, 'utf8');
    const calls: Record<string, number> = {};
    const under = [`"${root}"`, `"${root}/`, `<${root}>`, `<${root}/`];
    for (const line of readFileSync(out, 'utf8').split('\n')) {
      // "PID name(args…" — a call split by another thread's line continues as "PID <... name resumed>": counted once, at its start.
      const m = /^\d+\s+(\w+)\(/.exec(line);
      if (m === null || !under.some((u) => line.includes(u))) continue;
      calls[m[1]] = (calls[m[1]] ?? 0) + 1;
    }
    return { calls, rows: (JSON.parse(stdout) as { runs: { status: string }[] }).runs.filter((r) => r.status === 'PASS').length };
  }

  it(`at most ${SETTLED_RUN_BUDGET} calls per settled run`, async (ctx) => {
    needs(ctx, 'strace');
    const few = await countListing(settledRoot('few', FEW));
    const many = await countListing(settledRoot('many', MANY));
    // Positive control: both listings read every run to its end.
    expect(few.rows).toBe(FEW);
    expect(many.rows).toBe(MANY);
    const perRun: Record<string, number> = {};
    let total = 0;
    for (const k of new Set([...Object.keys(few.calls), ...Object.keys(many.calls)])) {
      const v = ((many.calls[k] ?? 0) - (few.calls[k] ?? 0)) / (MANY - FEW);
      total += v;
      if (Math.abs(v) >= 0.01) perRun[k] = Math.round(v * 100) / 100;
    }
    expect(total, `per run: ${JSON.stringify(perRun)}`).toBeLessThanOrEqual(SETTLED_RUN_BUDGET + LIST_SLACK);
    // Control for the difference itself: the extra runs did cost their opens.
    expect(perRun['openat'] ?? 0).toBeGreaterThanOrEqual(2);
  });
});
