/**
 * Every descriptor budget follows RLIMIT_NOFILE (CONTRACT §5.7).
 *
 * A root of 300 runs, each held by its own process that locks `resume.lock`
 * through a read-only descriptor (util-linux `flock -o -x resume.lock sleep`:
 * its death closes no writable descriptor, so only an exit watch or a
 * re-probe finds it), served by a real `runwarden serve` started under
 * `ulimit -n 256` (soft and hard). A fixed exit-watch budget of 1,024 pidfds fills
 * the whole table: probes then fail with EMFILE, read as unknown, and a dead
 * holder's run stays RUNNING for ever. Here serve must keep room for its own
 * work, find every killed holder's run ABANDONED by the re-probe (5 s,
 * CONTRACT §5.5 rule 5), count the holders it re-probes without an exit watch
 * in `/metrics` (exactly those beyond the 32 exit watches its share allows),
 * and say once on stderr that it passed the budget. Its safety pass is set to
 * an hour, so the re-probe alone can be what finds the deaths.
 *
 * The numbers are the contract's, written here: of the soft limit, 192
 * descriptors are kept for the process's own work and the watches take at
 * most half of the rest, never more than their fixed budgets (1,024 exit
 * watches, 160 kqueue directory watches).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanupTemp, killAll, ROOT, tempDir, track, until } from './helpers/lock-procs.js';
import { needs, testedPlatform } from './helpers/prereq.js';
import { startServeCli, type ServeProcess } from './helpers/serve-cli.js';
import { getJson, raw } from './helpers/serve-client.js';
import { openRun } from './helpers/serve-fixtures.js';

afterAll(async () => {
  await killAll();
  cleanupTemp();
});

/** The descriptor limit serve runs under (soft and hard), and the runs held: more holders than the limit has room for. */
const LIMIT = 256;
const RUNS = 300;
const KILLED = 10;
/** Descriptors that must stay free in serve at every sample: the room the contract keeps for the process's own work. */
const ROOM = 64;
/** The re-probe interval of held runs whose holder is not watched (CONTRACT §5.5 rule 5: 5 s), times 12: only a bound on a wait for what would never happen. */
const FOUND_MS = 60_000;
/**
 * serve's safety pass, set far beyond this test (RUNWARDEN_SERVE_SAFETY_MS, an hour): at its default 30 s it
 * would find the deaths within {@link FOUND_MS} by itself, with the re-probe broken.
 */
const SAFETY_MS = 3_600_000;
/** Exit watches under the limit, from the contract's rule (§5.7): half of what the soft limit leaves after 192; linux has one kind of descriptor-holding watch. */
const EXIT_WATCHES = (LIMIT - 192) / 2;

/** The kernel's flock table: "major:minor:inode" of every file with an exclusive FLOCK, as /proc/locks names it. */
function exclusiveFlocks(): Set<string> {
  const out = new Set<string>();
  for (const line of readFileSync('/proc/locks', 'utf8').split('\n')) {
    const m = /^\d+: FLOCK\s+\S+\s+WRITE\s+\d+\s+(\S+)\s/.exec(line);
    if (m !== null) out.add(m[1]);
  }
  return out;
}

function lockId(path: string): string {
  const { ino, dev } = lstatSync(path, { bigint: true });
  const major = (dev >> 8n) & 0xfffn;
  const minor = (dev & 0xffn) | ((dev >> 12n) & 0xfff00n);
  return `${major.toString(16).padStart(2, '0')}:${minor.toString(16).padStart(2, '0')}:${ino}`;
}

/** The processes `pid` holds a pidfd of (its exit watches): the kernel's own account, /proc/<pid>/fdinfo's `Pid:` of each pidfd. */
function pidfdTargets(pid: number): number[] {
  const out: number[] = [];
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return out;
  }
  for (const fd of fds) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`) !== 'anon_inode:[pidfd]') continue;
      const m = /^Pid:\s+(-?\d+)$/m.exec(readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8'));
      if (m !== null) out.push(Number(m[1]));
    } catch {
      /* closed meanwhile */
    }
  }
  return out.sort((x, y) => x - y);
}

/** runwarden_holders_unwatched in serve's /metrics (NaN when absent), and the text. */
async function holdersUnwatched(port: number): Promise<{ n: number; text: string }> {
  const text = (await raw(port, 'GET', '/metrics')).body;
  return { n: Number(/^runwarden_holders_unwatched (\d+)$/m.exec(text)?.[1]), text };
}

function openDescriptors(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
}

interface Card {
  run_id: string;
  state: string;
}

/** Why the last dashboard request failed ('' when it did not): a server out of descriptors resets connections. */
let lastFailure = '';

/** run id → card state on /api/dashboard; empty when the request failed (said in {@link lastFailure}). */
async function cards(port: number): Promise<Map<string, string>> {
  try {
    const { status, body } = await getJson<{ runs: Card[] }>(port, '/api/dashboard');
    lastFailure = status === 200 ? '' : `status ${status}`;
    return status === 200 ? new Map(body.runs.map((c) => [c.run_id, c.state])) : new Map();
  } catch (e) {
    lastFailure = (e as Error).message;
    return new Map();
  }
}

async function waitFor(what: string, timeoutMs: number, pred: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${timeoutMs} ms${lastFailure === '' ? '' : ` (last request: ${lastFailure})`}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe('descriptor budgets under RLIMIT_NOFILE', () => {
  it('the addon answers the soft and hard limit, and the watch budgets follow it', () => {
    // Written from the rule: (limit - 192) / 2, split evenly among the kinds of watch that hold a
    // descriptor (linux: exit watches, pidfds; darwin: kqueue directory and file watches), each
    // kind at most its fixed budget (1,024 exit watches, 160 directories, 256 files); serve's
    // connections at most 128, and at most the limit less 64 less the watches' share.
    const darwin = testedPlatform() === 'darwin';
    type Budgets = { exits: number; dirs: number | null; files: number | null; connections: number };
    const want: [number, Budgets][] = darwin
      ? [
          [128, { exits: 1024, dirs: 0, files: 0, connections: 64 }],
          [200, { exits: 1024, dirs: 2, files: 2, connections: 128 }],
          [256, { exits: 1024, dirs: 16, files: 16, connections: 128 }],
          [1024, { exits: 1024, dirs: 160, files: 208, connections: 128 }],
          [4096, { exits: 1024, dirs: 160, files: 256, connections: 128 }],
        ]
      : [
          [128, { exits: 0, dirs: null, files: null, connections: 64 }],
          [200, { exits: 4, dirs: null, files: null, connections: 128 }],
          [256, { exits: 32, dirs: null, files: null, connections: 128 }],
          [1024, { exits: 416, dirs: null, files: null, connections: 128 }],
          [4096, { exits: 1024, dirs: null, files: null, connections: 128 }],
        ];
    const script =
      "const l = await import('./dist/kernel/limits.js'); const n = await import('./dist/kernel/notify.js'); const s = await import('./dist/serve/limits.js');" +
      'console.log(JSON.stringify({ limit: l.descriptorLimit(), budgets: { ...n.watchBudgets(), connections: s.connectionBudget() } }));';
    for (const [limit, budgets] of want) {
      const r = spawnSync('sh', ['-c', `ulimit -n ${limit} && exec "$0" "$@"`, process.execPath, '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual({ limit: { soft: limit, hard: limit }, budgets });
    }
  });

  it('a directory watcher under ulimit -n 256 holds the directories and files its share allows, and refuses the rest with EMFILE', () => {
    // darwin: each kqueue watch holds a descriptor, so (256 - 192) / 2 = 32 split between directories and
    // files: 16 each. linux: inotify watches hold none, so every directory is watched and no file is followed
    // (inotify names the entry written).
    const darwin = testedPlatform() === 'darwin';
    const root = tempDir('rw-nofile-dirs-');
    const dirs: string[] = [];
    for (let i = 0; i < 40; i++) {
      const d = join(root, `run-${i}`);
      mkdirSync(d);
      writeFileSync(join(d, 'a'), '');
      writeFileSync(join(d, 'b'), '');
      dirs.push(d);
    }
    const script =
      "const n = await import('./dist/kernel/notify.js'); const w = n.openDirWatcher(); const codes = {};" +
      `for (const d of ${JSON.stringify(dirs)}) { const a = w.watch(d, () => {}); codes[a.ok ? 'ok' : a.code] = (codes[a.ok ? 'ok' : a.code] ?? 0) + 1; if (a.ok) a.watch.follow(['a', 'b']); }` +
      'console.log(JSON.stringify({ codes, files: w.stats.files, filesOverBudget: w.stats.filesOverBudget })); w.close();';
    const r = spawnSync('sh', ['-c', 'ulimit -n 256 && exec "$0" "$@"', process.execPath, '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(darwin ? { codes: { ok: 16, EMFILE: 24 }, files: 16, filesOverBudget: 16 } : { codes: { ok: 40 }, files: 0, filesOverBudget: 0 });
  });

  it('serve under a low descriptor limit keeps room, finds every killed holder, and says so', async (ctx) => {
    needs(ctx, 'flock', 'linux: exit watches that hold descriptors (pidfds); the XNU model keeps a pidfd per EVFILT_PROC, which darwin does not');
    const root = join(tempDir('rw-nofile-'), 'runs');
    const ids: string[] = [];
    const locks: string[] = [];
    for (let i = 0; i < RUNS; i++) {
      const id = `20261201-${String(100000 + i).slice(1)}-h`;
      const dir = openRun(root, id, 'held', [{ id: 'n1' }], 0);
      writeFileSync(join(dir, 'resume.lock'), 'oh-my-graph-lock 1\n4242\n'); // a leg's head (CONTRACT §4.1), released
      ids.push(id);
      locks.push(join(dir, 'resume.lock'));
    }
    // Each run held by its own process, in a group of its own, through a read-only descriptor.
    const holders: ChildProcess[] = [];
    for (const lock of locks) {
      const p = spawn('flock', ['-o', '-x', '-n', 'resume.lock', 'sleep', '600'], { cwd: join(lock, '..'), stdio: 'ignore', detached: true });
      track(-(p.pid as number));
      track(p);
      holders.push(p);
    }
    const lockIds = locks.map(lockId);
    await until(() => {
      const held = exclusiveFlocks();
      return lockIds.every((l) => held.has(l));
    }, 120_000, 50);

    const serve: ServeProcess = await startServeCli(root, [], 120_000, ['sh', '-c', `ulimit -n ${LIMIT} && RUNWARDEN_SERVE_SAFETY_MS=${SAFETY_MS} exec "$0" "$@"`]);
    const pid = serve.proc.pid as number;
    let most = 0;
    const sampler = setInterval(() => (most = Math.max(most, openDescriptors(pid))), 20);
    try {
      await waitFor('every run RUNNING on the dashboard', 120_000, async () => {
        const c = await cards(serve.port);
        return ids.every((id) => c.get(id) === 'running');
      });
      // Exactly the share's worth of holders watched (32 pidfds, each on one of the holders), the other 268 counted.
      let unwatched = NaN;
      await waitFor(`runwarden_holders_unwatched ${RUNS - EXIT_WATCHES}`, FOUND_MS, async () => {
        unwatched = (await holdersUnwatched(serve.port)).n;
        return unwatched === RUNS - EXIT_WATCHES;
      }).catch((e: unknown) => {
        throw new Error(`${(e as Error).message}: last ${unwatched}`, { cause: e });
      });
      const watched = pidfdTargets(pid);
      const holderPids = new Set(holders.map((h) => h.pid as number));
      expect(watched.length, `serve's pidfds: ${watched.join(' ')}`).toBe(EXIT_WATCHES);
      expect(watched.filter((p) => !holderPids.has(p))).toEqual([]);

      // The holders killed are ones serve does not watch, spread over the root: only the re-probe can find them.
      const unwatchedAt = holders.flatMap((h, i) => (watched.includes(h.pid as number) ? [] : [i]));
      const victims = Array.from({ length: KILLED }, (_, k) => unwatchedAt[Math.floor((k * unwatchedAt.length) / KILLED) + 3]);
      for (const v of victims) process.kill(-(holders[v].pid as number), 'SIGKILL');
      const dead = new Set(victims.map((v) => ids[v]));
      let last = new Map<string, string>();
      try {
        await waitFor('every killed holder\u2019s run ABANDONED', FOUND_MS, async () => {
          last = await cards(serve.port);
          return [...dead].every((id) => last.get(id) === 'abandoned');
        });
      } catch (e) {
        const stuck = [...dead].filter((id) => last.get(id) !== 'abandoned').map((id) => `${id}: ${last.get(id)}`);
        throw new Error(`${(e as Error).message}; still: ${stuck.join(', ')}; serve had ${most} descriptors at most; stderr: ${serve.stderr()}`, { cause: e });
      }
      // Never a false dead: every run whose holder lives is still RUNNING.
      for (const id of ids) if (!dead.has(id)) expect(last.get(id), id).toBe('running');

      // The 32 watched holders all live: every other live holder is counted, 290 - 32 = 258, and the same 32 are watched.
      const after = await holdersUnwatched(serve.port);
      expect(after.n).toBe(RUNS - KILLED - EXIT_WATCHES);
      expect(after.text).toMatch(/^# HELP runwarden_holders_unwatched \S/m);
      expect(pidfdTargets(pid)).toEqual(watched);

      const lines = serve.stderr().split('\n').filter((l) => /exit watch/.test(l));
      expect(lines, serve.stderr()).toHaveLength(1);
      expect(lines[0]).toContain(String(LIMIT)); // names the limit
      expect(lines[0]).toMatch(/\b5 s\b|5000 ms|5,000 ms/); // and the re-probe interval
    } finally {
      clearInterval(sampler);
    }
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(LIMIT - ROOM);
  }, 420_000);
});
