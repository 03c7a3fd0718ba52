/**
 * Deaths announced for any holder: when a probe finds a
 * run's lock held, the engine watches the holder's process for its exit
 * (kernel/notify.ts ExitWatcher: a pidfd on linux) and probes again at once.
 * Real processes only. Every engine here has its re-probe interval and its
 * safety re-check at 600 s, so a death reported within the test was
 * announced, not found by a timer; a holder that opened the lock read-only
 * (`flock -x resume.lock cmd`, as util-linux does) closes no writable
 * descriptor, so inotify's close-write cannot be what told (lockWakeups
 * stays 0, checked). An exit is only a reason to probe: a holder that forked
 * and left its child holding keeps the run RUNNING; a holder in a pid
 * namespace the engine cannot see falls back to the re-probe interval.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acquireLock, followRun, LiveEngine, runStatus, type LiveChange } from '../src/index.js';
import { exitBackend, openExitWatcher } from '../src/kernel/notify.js';
import { needs } from './helpers/prereq.js';
import { cleanupTemp, CLI, killAll, ROOT, startHolder, tempDir, track, until, waitExit } from './helpers/lock-procs.js';
import { eventLine } from './helpers/events.js';

const ENGINE = join(ROOT, 'test', 'fixtures', 'holder-engine.mjs');
const engines: LiveEngine[] = [];

afterEach(async () => {
  for (const e of engines.splice(0)) e.close();
  await killAll();
  cleanupTemp();
});

const line = (o: Record<string, unknown>) => eventLine(o, { ts: '2026-12-01T10:00:00Z' });

/** A run directory with a marked lock file (no holder yet). */
function runDir(root: string, id: string): string {
  const dir = join(root, id);
  mkdirSync(dir, { recursive: true });
  acquireLock(join(dir, 'resume.lock')).release();
  return dir;
}

/** Writes the stream of an open leg (after its holder holds the lock, as a leg does). */
function openLeg(dir: string): void {
  writeFileSync(join(dir, 'events.jsonl'), line({ event: 'run_started' }) + line({ event: 'node_started', node_id: 'work' }));
}

/** Reads stdout lines of `p` as they come. */
function lines(p: ChildProcess): string[] {
  const out: string[] = [];
  let buf = '';
  p.stdout?.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      out.push(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
    }
  });
  return out;
}

/**
 * `flock -x <lock> sh -c <script>` in a process group of its own: flock(1)
 * opens the lock file READ-ONLY, takes the flock, and runs the script as its
 * child (which inherits the descriptor). Resolves once the script printed
 * READY, with the pids it printed after it.
 */
async function flockX(lock: string, script: string): Promise<{ proc: ChildProcess; out: string[]; said: number[] }> {
  const proc = spawn('flock', ['-x', '-n', lock, 'sh', '-c', script], { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  track(-(proc.pid as number));
  track(proc);
  const out = lines(proc);
  await until(() => out.some((l) => l.startsWith('READY')));
  const said = (out.find((l) => l.startsWith('READY')) as string).split(/\s+/).slice(1).map(Number);
  return { proc, out, said };
}

/**
 * What descriptor `fd` of `pid` names, or null when it closed between the listing and the read (a
 * process that is exec'ing, such as a sleep started with `&`, closes its close-on-exec ones then).
 */
function fdTarget(pid: number, fd: string): string | null {
  try {
    return readlinkSync(`/proc/${pid}/fd/${fd}`);
  } catch {
    return null;
  }
}

/** pidfds this process holds now (/proc/self/fd). */
function pidfds(): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === 'anon_inode:[pidfd]') n++;
    } catch {
      /* closed meanwhile */
    }
  }
  return n;
}

function engine(root: string, opts: ConstructorParameters<typeof LiveEngine>[0] = {}): { e: LiveEngine; changes: LiveChange[] } {
  const e = new LiveEngine({ root, safetyMs: 600_000, openRecheckMs: 600_000, ...opts });
  engines.push(e);
  const changes: LiveChange[] = [];
  e.subscribe((c) => changes.push(c));
  return { e, changes };
}

const status = (e: LiveEngine, dir: string) => e.get(dir)?.report?.status;

describe('holders watched for their exit (pidfd)', () => {
  // pidfds and /proc are linux's; every linux runwarden supports has pidfd_open (5.3+), so there it is asserted, not assumed.
  beforeEach((ctx) => {
    needs(ctx, 'linux: pidfd exit watches and /proc');
    expect(exitBackend()).toBe('pidfd');
  });

  it('ExitWatcher: an exit is told once, a gone pid is ESRCH, the budget is EMFILE, and close() releases every pidfd', async () => {
    const base = pidfds();
    const w = openExitWatcher({ max: 2 });
    if (typeof w === 'string') throw new Error(`no exit watcher: ${w}`);
    // A reaped child's pid names no process: with the budget empty, the kernel's answer (ESRCH) is what comes back.
    const gone = spawn('true');
    await waitExit(gone);
    let told = 0;
    expect(w.watch(gone.pid as number, () => told++)).toEqual({ ok: false, code: 'ESRCH' });
    expect(w.size).toBe(0);
    expect(pidfds()).toBe(base);
    const a = spawn('sleep', ['600']);
    const b = spawn('sleep', ['600']);
    const c = spawn('sleep', ['600']);
    for (const p of [a, b, c]) track(p);
    const wa = w.watch(a.pid as number, () => told++);
    const wa2 = w.watch(a.pid as number, () => told++); // the same pid: one kernel watch, two listeners
    const wb = w.watch(b.pid as number, () => told++);
    expect([wa.ok, wa2.ok, wb.ok]).toEqual([true, true, true]);
    expect(w.size).toBe(2);
    expect(pidfds() - base).toBe(2);
    expect(w.watch(c.pid as number, () => told++)).toEqual({ ok: false, code: 'EMFILE' });
    a.kill('SIGKILL');
    await until(() => told >= 2);
    expect(told).toBe(2); // both listeners of a, once each
    expect(w.size).toBe(1);
    expect(pidfds() - base).toBe(1); // the fired pidfd was closed at once
    w.close();
    expect(pidfds()).toBe(base);
  });

  it('flock -x holding read-only, one process, killed -9: ABANDONED by the exit, no close-write, agrees with runStatus', async (ctx) => {
    needs(ctx, 'flock');
    const root = tempDir('rw-holder-');
    const dir = runDir(root, '20261201-100000-ro');
    // One process: the shell opens the lock READ-ONLY (fd 3), takes the flock, becomes sleep.
    const holder = spawn('sh', ['-c', 'exec 3<resume.lock && flock -x 3 && echo READY && exec sleep 600'], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
    track(holder);
    const out = lines(holder);
    await until(() => out.includes('READY'));
    openLeg(dir);
    const { e, changes } = engine(root);
    await e.start();
    await until(() => status(e, dir) === 'RUNNING');
    await until(() => e.stats.holderWatches === 1); // positive control: the holder is watched
    holder.kill('SIGKILL');
    await until(() => status(e, dir) === 'ABANDONED');
    expect(e.stats.exitWakeups).toBeGreaterThanOrEqual(1);
    expect(e.stats.lockWakeups).toBe(0); // a read-only holder closes no writable descriptor
    expect(e.stats.holderWatches).toBe(0);
    expect(changes.filter((c) => c.type === 'run').map((c) => (c.type === 'run' ? c.report?.status : '')).at(-1)).toBe('ABANDONED');
    expect(runStatus(dir).status).toBe('ABANDONED');
  });

  it('flock -x resume.lock cmd, the whole group killed -9: ABANDONED without the re-probe interval', async (ctx) => {
    needs(ctx, 'flock');
    const root = tempDir('rw-holder-');
    const dir = runDir(root, '20261201-100000-grp');
    const { proc } = await flockX(join(dir, 'resume.lock'), 'echo READY; exec sleep 600');
    openLeg(dir);
    const { e } = engine(root);
    await e.start();
    await until(() => status(e, dir) === 'RUNNING' && e.stats.holderWatches === 1);
    process.kill(-(proc.pid as number), 'SIGKILL');
    await until(() => status(e, dir) === 'ABANDONED');
    expect(e.stats.exitWakeups).toBeGreaterThanOrEqual(1);
    expect(e.stats.lockWakeups).toBe(0);
  });

  it('a holder that forked and left its child holding: its exit keeps the run RUNNING, the child is watched next, and its death ends the run', async (ctx) => {
    needs(ctx, 'flock');
    const root = tempDir('rw-holder-');
    const dir = runDir(root, '20261201-100000-fork');
    // flock(1) takes the lock; its script starts a sleep that inherits the descriptor, says its pid,
    // and waits for a line on stdin; then the script and flock(1) exit, and the sleep keeps the flock.
    const { proc, said } = await flockX(join(dir, 'resume.lock'), 'sleep 600 & echo READY $!; read x; exit 0');
    const child = said[0];
    track(child);
    openLeg(dir);
    const { e } = engine(root);
    await e.start();
    await until(() => status(e, dir) === 'RUNNING' && e.stats.holderWatches === 1);
    const probes = e.stats.probes;
    proc.stdin?.end('go\n');
    await waitExit(proc);
    // Positive control: the taker's exit was told and the lock probed again; the lock table still names
    // the taker, so the process that has the file open (the child) is found in /proc and watched.
    await until(() => e.stats.exitWakeups >= 1 && e.stats.probes > probes && e.stats.holderWatches === 1);
    expect(status(e, dir)).toBe('RUNNING');
    expect(runStatus(dir).status).toBe('RUNNING');
    process.kill(child, 'SIGKILL');
    await until(() => status(e, dir) === 'ABANDONED');
    expect(runStatus(dir).status).toBe('ABANDONED');
  });

  it('a process that merely has the file open (lower pid) is not watched in place of the one whose descriptor holds the flock', async (ctx) => {
    needs(ctx, 'flock');
    const root = tempDir('rw-holder-');
    const dir = runDir(root, '20261201-100000-decoy');
    // The decoy: started first, so its pid is the lower one and /proc lists it first (unless pid
    // numbers wrapped between the two spawns). It opens the lock file read-only and holds no lock.
    const reader = spawn('sh', ['-c', 'exec 4<resume.lock && echo READY && exec sleep 600'], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
    track(reader);
    const rout = lines(reader);
    await until(() => rout.includes('READY'));
    // The holder: a shell opens the file read-only (no close-write at any death), flock(1) takes the
    // exclusive flock on that open file for it and exits, the shell starts a sleep that inherits the
    // descriptor and exits too. The only process left holding the flock is the sleep; the lock table
    // names flock(1), which is gone.
    const taker = spawn('sh', ['-c', 'exec 3<resume.lock && flock -x -n 3 && { sleep 600 & echo READY $!; }'], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
    track(taker);
    const tout = lines(taker);
    await until(() => tout.some((l) => l.startsWith('READY')));
    const child = Number((tout.find((l) => l.startsWith('READY')) as string).split(/\s+/)[1]);
    track(child);
    await waitExit(taker);
    // Positive controls, from the kernel: the flock is on the file at the path, and the descriptor that
    // holds it is the sleep's (its fdinfo lists the lock), not the reader's.
    const fdinfoLocks = (pid: number) =>
      readdirSync(`/proc/${pid}/fd`)
        .filter((fd) => fdTarget(pid, fd) === join(dir, 'resume.lock'))
        .map((fd) => readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8').split('\n').filter((l) => /^lock:.*\bFLOCK\b.*\bWRITE\b/.test(l)).length);
    expect(fdinfoLocks(child)).toEqual([1]);
    expect(fdinfoLocks(reader.pid as number)).toEqual([0]);
    openLeg(dir);
    const { e } = engine(root);
    await e.start();
    await until(() => status(e, dir) === 'RUNNING' && e.stats.holderWatches === 1);
    const told = e.stats.exitWakeups;
    process.kill(child, 'SIGKILL');
    // Every re-check of this engine is at 600 s, and the holder closes no writable descriptor
    // (lockWakeups 0): ABANDONED within the test can only come from an exit watch on the sleep. With
    // the reader watched instead, nothing would tell, and the run would stay RUNNING past any bound.
    await until(() => status(e, dir) === 'ABANDONED');
    expect(e.stats.exitWakeups).toBe(told + 1);
    expect(e.stats.lockWakeups).toBe(0);
    expect(reader.exitCode === null && reader.signalCode === null).toBe(true); // the decoy never exited: the exit told was the holder's
    expect(runStatus(dir).status).toBe('ABANDONED');
  });

  it('fdinfo is read only for descriptors naming a lock whose named holder is gone, counted by strace', async (ctx) => {
    needs(ctx, 'flock', 'strace');
    const root = tempDir('rw-holder-');
    // Run A: its taker, flock(1), stays alive as the lock table's named holder. Run B: its taker exited
    // and left a sleep holding. Each lock file is open in three readers too.
    const a = runDir(root, '20261201-100000-named');
    const b = runDir(root, '20261201-100000-gone');
    const readers = (dir: string) =>
      Promise.all(
        [0, 1, 2].map(async () => {
          const p = spawn('sh', ['-c', 'exec 4<resume.lock && echo READY && exec sleep 600'], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
          track(p);
          const o = lines(p);
          await until(() => o.includes('READY'));
          return p.pid as number;
        }),
      );
    await readers(a);
    const readersB = await readers(b);
    await flockX(join(a, 'resume.lock'), 'echo READY; exec sleep 600');
    const taker = spawn('sh', ['-c', 'exec 3<resume.lock && flock -x -n 3 && { sleep 600 & echo READY $!; }'], { cwd: b, stdio: ['ignore', 'pipe', 'inherit'] });
    track(taker);
    const tout = lines(taker);
    await until(() => tout.some((l) => l.startsWith('READY')));
    const child = Number((tout.find((l) => l.startsWith('READY')) as string).split(/\s+/)[1]);
    track(child);
    await waitExit(taker);
    // The reference, from the kernel: every descriptor (pid/fd) that names B's lock file.
    const naming = (pids: number[], lock: string) => pids.flatMap((pid) => readdirSync(`/proc/${pid}/fd`).filter((fd) => fdTarget(pid, fd) === lock).map((fd) => `${pid}/${fd}`));
    const namingB = naming([...readersB, child], join(b, 'resume.lock'));
    expect(namingB).toHaveLength(4);
    for (const dir of [a, b]) openLeg(dir);
    const log = join(root, 'engine.strace');
    const eng = spawn('strace', ['-f', '-qq', '-e', 'trace=openat', '-o', log, process.execPath, ENGINE, root, '600000'], { stdio: ['pipe', 'pipe', 'inherit'] });
    track(eng);
    const out = lines(eng);
    const last = (dir: string) => out.filter((l) => l.startsWith('{"type":"run"') && l.includes(JSON.stringify(dir.split('/').at(-1)))).at(-1);
    const stats = async (): Promise<{ holderWatches: number; exitWakeups: number }> => {
      const n = out.length;
      eng.stdin?.write('\n');
      await until(() => out.slice(n).some((l) => l.startsWith('{"type":"stats"')));
      return (JSON.parse(out.slice(n).find((l) => l.startsWith('{"type":"stats"')) as string) as { stats: { holderWatches: number; exitWakeups: number } }).stats;
    };
    await until(() => out.includes('READY') && [a, b].every((d) => last(d)?.includes('"RUNNING"')));
    while ((await stats()).holderWatches < 2) await new Promise((r) => setTimeout(r, 50));
    process.kill(child, 'SIGKILL');
    await until(() => last(b)?.includes('"ABANDONED"') === true); // told by the sleep's exit: every re-check is at 600 s
    expect(last(a)).toContain('"RUNNING"');
    eng.stdin?.end();
    await waitExit(eng);
    const opened = [...readFileSync(log, 'utf8').matchAll(/openat\([^"]*"\/proc\/(\d+)\/fdinfo\/(\d+)"/g)].map((m) => `${m[1]}/${m[2]}`);
    expect(opened.length).toBeGreaterThan(0); // the control: strace saw the fdinfo reads
    // Only B's lock descriptors: none of A's (its named holder is alive) and none of any other file.
    expect(opened.filter((d) => !namingB.includes(d))).toEqual([]);
    expect(new Set(opened).size).toBeLessThanOrEqual(namingB.length);
  });

  it('a runwarden leg (read-write holder): its close-write is still told, once, beside the exit watch, which is released', async () => {
    const root = tempDir('rw-holder-');
    const dir = join(root, '20261201-100000-rw');
    mkdirSync(dir);
    const h = await startHolder(join(dir, 'resume.lock'));
    openLeg(dir);
    const { e } = engine(root);
    await e.start();
    await until(() => status(e, dir) === 'RUNNING' && e.stats.holderWatches === 1);
    expect(e.stats.lockWakeups).toBe(0);
    h.proc.kill('SIGKILL');
    await until(() => status(e, dir) === 'ABANDONED');
    // The kernel tells the last writable descriptor's close (inotify IN_CLOSE_WRITE) whichever wake-up the engine
    // took first: exactly one close-write, and at most one exit (the watch may end before its exit is read).
    await until(() => e.stats.lockWakeups >= 1);
    await new Promise((r) => setTimeout(r, 200));
    expect(e.stats.lockWakeups).toBe(1);
    expect(e.stats.exitWakeups).toBeLessThanOrEqual(1);
    expect(e.stats.holderWatches).toBe(0);
  });

  it('the budget bounds the pidfds; closing the engine returns /proc/self/fd to its count', async (ctx) => {
    needs(ctx, 'flock');
    const root = tempDir('rw-holder-');
    const holders: ChildProcess[] = [];
    const dirs: string[] = [];
    for (let i = 0; i < 3; i++) {
      const dir = runDir(root, `20261201-10000${i}-b`);
      const { proc } = await flockX(join(dir, 'resume.lock'), 'echo READY; exec sleep 600');
      holders.push(proc);
      dirs.push(dir);
      openLeg(dir);
    }
    const fd0 = readdirSync('/proc/self/fd').length;
    const pid0 = pidfds();
    const { e } = engine(root, { holderWatches: 2 });
    await e.start();
    await until(() => dirs.every((d) => status(e, d) === 'RUNNING') && e.stats.holderWatches === 2);
    expect(pidfds() - pid0).toBe(2);
    e.close();
    expect(pidfds()).toBe(pid0);
    expect(readdirSync('/proc/self/fd').length).toBe(fd0);
  });

  it('holderWatches: 0 watches no holder; a flock -x holder\'s death is then found by the re-probe interval', async (ctx) => {
    needs(ctx, 'flock');
    const root = tempDir('rw-holder-');
    const dir = runDir(root, '20261201-100000-none');
    const { proc } = await flockX(join(dir, 'resume.lock'), 'echo READY; exec sleep 600');
    openLeg(dir);
    const pid0 = pidfds();
    const { e } = engine(root, { holderWatches: 0, openRecheckMs: 500 });
    await e.start();
    await until(() => status(e, dir) === 'RUNNING');
    expect(e.stats.holderWatches).toBe(0);
    expect(pidfds()).toBe(pid0);
    process.kill(-(proc.pid as number), 'SIGKILL');
    await until(() => status(e, dir) === 'ABANDONED');
    expect(e.stats.exitWakeups).toBe(0); // the interval found it, not an exit
    expect(() => new LiveEngine({ holderWatches: -1 })).toThrow(RangeError);
  });

  it('followRun (what `watch` runs on) ends ABANDONED when a flock -x holder is killed, its re-check at 600 s', async (ctx) => {
    needs(ctx, 'flock');
    const root = tempDir('rw-holder-');
    const dir = runDir(root, '20261201-100000-follow');
    const { proc } = await flockX(join(dir, 'resume.lock'), 'echo READY; exec sleep 600');
    openLeg(dir);
    let running = false;
    const done = (async () => {
      let last: string | null | undefined;
      for await (const item of followRun(dir, { until: 'leg-end', recheckMs: 600_000 })) {
        if (item.kind === 'status') {
          last = item.report.status;
          if (last === 'RUNNING') running = true;
        }
      }
      return last;
    })();
    await until(() => running);
    await new Promise((r) => setTimeout(r, 100)); // let it find and watch the holder
    process.kill(-(proc.pid as number), 'SIGKILL');
    expect(await done).toBe('ABANDONED');
  });

  it('`runwarden watch` exits 3 (ABANDONED) when a flock -x holder is killed', async (ctx) => {
    needs(ctx, 'flock');
    const root = tempDir('rw-holder-');
    const id = '20261201-100000-watch';
    const dir = runDir(root, id);
    const { proc } = await flockX(join(dir, 'resume.lock'), 'echo READY; exec sleep 600');
    openLeg(dir);
    const w = spawn(process.execPath, [CLI, 'watch', '--root', root, id], { stdio: ['ignore', 'pipe', 'pipe'] });
    track(w);
    const out = lines(w);
    await until(() => out.some((l) => l.includes('node work started')));
    process.kill(-(proc.pid as number), 'SIGKILL');
    const code = await new Promise<number | null>((r) => (w.exitCode !== null ? r(w.exitCode) : w.once('exit', (c) => r(c))));
    expect(code).toBe(3);
    expect(out.some((l) => l.includes('ABANDONED'))).toBe(true);
  });

  it('a holder in a pid namespace the engine cannot see: not watched, its death found by the re-probe interval', async (ctx) => {
    needs(ctx, 'root', 'flock');
    const root = tempDir('rw-holder-');
    const dir = runDir(root, '20261201-100000-ns');
    // A read-only holder (no close-write at its death) whose label names its pid in this namespace,
    // a pid that means nothing in the engine's own pid namespace.
    const holder = spawn('sh', ['-c', 'exec 3<resume.lock && flock -x 3 && echo READY $$ && exec sleep 600'], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
    track(holder);
    const hout = lines(holder);
    await until(() => hout.some((l) => l.startsWith('READY')));
    writeFileSync(join(dir, 'resume.lock'), `oh-my-graph-lock 1\n${holder.pid}\n`); // the same inode: the flock stays
    openLeg(dir);
    // The engine in a pid namespace of its own (with its own /proc): /proc/locks there hides holders it cannot see.
    const eng = spawn('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, ENGINE, root, '1000'], { stdio: ['pipe', 'pipe', 'pipe'] });
    track(eng);
    const out = lines(eng);
    const runs = () => out.filter((l) => l.startsWith('{"type":"run"')).map((l) => JSON.parse(l) as { status: string });
    const stats = async (): Promise<{ holderWatches: number; exitWakeups: number; probes: number }> => {
      const n = out.length;
      eng.stdin?.write('\n');
      await until(() => out.slice(n).some((l) => l.startsWith('{"type":"stats"')));
      return (JSON.parse(out.slice(n).find((l) => l.startsWith('{"type":"stats"')) as string) as { stats: { holderWatches: number; exitWakeups: number; probes: number } }).stats;
    };
    await until(() => out.includes('READY') && runs().at(-1)?.status === 'RUNNING');
    // Positive control that the fallback is what is in use: the lock table there hides the holder's
    // line and its /proc shows no process with the file open, so nothing is watched, yet the lock reads
    // held, and the re-probe interval (1 s) probes it again and again.
    const p0 = (await stats()).probes;
    let s = await stats();
    while (s.probes <= p0) {
      await new Promise((r) => setTimeout(r, 200));
      s = await stats();
    }
    expect(runs().at(-1)?.status).toBe('RUNNING');
    expect(s.holderWatches).toBe(0);
    holder.kill('SIGKILL');
    await waitExit(holder);
    await until(() => runs().at(-1)?.status === 'ABANDONED');
    // What found the death was a re-probe: more probes than before the kill, no exit told since, nothing watched.
    const after = await stats();
    expect(after.probes).toBeGreaterThan(s.probes);
    expect(after.exitWakeups).toBe(s.exitWakeups);
    expect(after.holderWatches).toBe(0);
    eng.stdin?.end();
    await waitExit(eng);
  });
});
