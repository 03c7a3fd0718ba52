/**
 * The darwin code, run: each case drives runwarden's darwin sources (fs_darwin.cc, notify_darwin.cc,
 * the TypeScript's darwin paths) in a child process whose addon is the XNU model build
 * (scripts/darwin-model.mjs: the darwin sources compiled for linux against a model of the darwin
 * interfaces they use). The cases are the defects a reading of the darwin code against Apple's
 * manual pages found; each one failed on that code in the model.
 *
 * What the model is and is not: native/xnu-model/ (every rule there cites kqueue(2), statfs(2),
 * open(2), fcntl(2) or libproc). Nothing here ran on a Mac.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildDarwinModel } from '../scripts/darwin-model.mjs';
import { eventLine } from './helpers/events.js';
import { ROOT } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';

const SLOW = 300_000;
let addon = '';
const work = mkdtempSync(join(tmpdir(), 'rw-darwin-model-'));

beforeAll(() => {
  addon = buildDarwinModel({ quiet: true });
}, SLOW);
afterAll(() => rmSync(work, { recursive: true, force: true }));

/**
 * For the child's body: `descriptorsOn(paths)`, how many of this process's descriptors are open on
 * one of `paths` (compared by device and inode), counted through /dev/fd, which linux and darwin
 * both have (fdesc on darwin; /proc/self/fd behind it on linux, reached here only by that name).
 */
const DESCRIPTORS_ON = `const FS_ = await import('node:fs');
const descriptorsOn = (paths) => {
  const want = new Set(paths.map((p) => { const st = FS_.statSync(p); return st.dev + ':' + st.ino; }));
  let n = 0;
  for (const fd of FS_.readdirSync('/dev/fd')) {
    try { const st = FS_.statSync('/dev/fd/' + fd); if (want.has(st.dev + ':' + st.ino)) n++; } catch {}
  }
  return n;
};`;

/** Runs an ES module body in a child whose addon is the model (or `addonPath`), with `env` added; its last stdout line is JSON. */
function onModel(body: string, timeoutMs = 60_000, addonPath?: string, env: Record<string, string> = {}): { out: unknown; stderr: string; status: number | null; timedOut: boolean } {
  const src = `const K = await import(${JSON.stringify(join(ROOT, 'dist', 'index.js'))});\nconst N = await import(${JSON.stringify(join(ROOT, 'dist', 'kernel', 'notify.js'))});\nconst native = (await import(${JSON.stringify(join(ROOT, 'dist', 'kernel', 'native.js'))})).native;\nconst out = (v) => process.stdout.write(JSON.stringify(v) + '\\n');\n${DESCRIPTORS_ON}\n${body}`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', src], {
    encoding: 'utf8',
    env: { ...process.env, RUNWARDEN_ADDON: addonPath ?? addon, ...env },
    timeout: timeoutMs,
    killSignal: 'SIGKILL',
  });
  const lines = (r.stdout ?? '').trim().split('\n').filter((l) => l !== '');
  let out: unknown;
  try {
    out = lines.length > 0 ? JSON.parse(lines[lines.length - 1]) : undefined;
  } catch {
    out = lines[lines.length - 1];
  }
  return { out, stderr: r.stderr ?? '', status: r.status, timedOut: r.error !== undefined || r.signal === 'SIGKILL' };
}

function fresh(name: string): string {
  const d = join(work, name);
  mkdirSync(d, { recursive: true });
  return d;
}

describe('the XNU model build', () => {
  it('loads as darwin: kqueue notification, names for filesystems, no /proc, no close-write notice', () => {
    const r = onModel(`const n = native(); out({ platform: n.platform, backend: n.notify.backend, exits: n.notify.exitBackend, kind: n.constants.fsTypeKind, system: n.system, facts: (await import(${JSON.stringify(join(ROOT, 'dist', 'kernel', 'system.js'))})).systemFacts() });`);
    expect(r.stderr).toBe('');
    expect(r.out).toMatchObject({ platform: 'darwin', backend: 'kqueue', exits: 'kqueue', kind: 'name', system: { procfs: false, holderTable: 'libproc' }, facts: { procfs: false, closeWrite: false, holderTable: 'libproc', watchHoldsDescriptor: true, entryWrites: false } });
  });
});

describe('darwin watches (notify_darwin.cc, kernel/notify.ts) in the model', () => {
  it('a FIFO where a run directory should be is refused at once, never blocking the loop in open', () => {
    const root = fresh('fifo');
    expect(spawnSync('mkfifo', [join(root, 'run-1')]).status).toBe(0);
    const r = onModel(`const w = N.openDirWatcher(); const a = w.watch(${JSON.stringify(join(root, 'run-1'))}, () => {}); out(a.ok ? 'watched' : a.code); w.close();`, 20_000);
    expect(r.timedOut, 'the watch blocked in open(2)').toBe(false);
    expect(r.out).toBe('ENOTDIR');
  });

  it('a symlink where a run directory should be is not followed', () => {
    const root = fresh('symlink');
    mkdirSync(join(root, 'real'));
    symlinkSync(join(root, 'real'), join(root, 'run-1'));
    const r = onModel(`const w = N.openDirWatcher(); const a = w.watch(${JSON.stringify(join(root, 'run-1'))}, () => {}); out(a.ok ? 'watched' : a.code); w.close();`);
    expect(['ELOOP', 'ENOTDIR']).toContain(r.out);
  });

  it('directory watches hold at most 160 descriptors, whatever the number of runs; the rest are counted as polled', () => {
    const root = fresh('budget');
    for (let i = 0; i < 400; i++) mkdirSync(join(root, `run-${i}`));
    const r = onModel(`
      const w = N.openDirWatcher();
      const dirs = Array.from({ length: 400 }, (_, i) => ${JSON.stringify(root)} + '/run-' + i);
      let ok = 0, refused = 0;
      for (const d of dirs) { const a = w.watch(d, () => {}); if (a.ok) ok++; else refused++; }
      out({ ok, refused, held: descriptorsOn(dirs), polled: w.stats.overBudget });
      w.close();`);
    const o = r.out as { ok: number; refused: number; held: number; polled: number };
    expect(o.held).toBeLessThanOrEqual(160);
    expect(o.ok + o.refused).toBe(400);
    expect(o.polled).toBe(o.refused);
    expect(o.refused).toBeGreaterThan(0);
  });

  it("a run made while a removed run's delete is still queued gets a watch of its own, not the removed run's", () => {
    const root = fresh('reuse');
    mkdirSync(join(root, 'run-a'));
    const r = onModel(`
      const fs = await import('node:fs');
      const root = ${JSON.stringify(root)};
      const w = N.openDirWatcher({ ref: true });
      const told = { b: [] };
      let bWatch;
      w.watch(root + '/run-a', () => {});
      w.watch(root, (e) => {
        if (bWatch === undefined && fs.existsSync(root + '/run-b')) {
          bWatch = w.watch(root + '/run-b', (ev) => told.b.push(ev.kind));
          setTimeout(() => fs.writeFileSync(root + '/run-b/x', 'x'), 200);
          setTimeout(() => { out({ b: told.b, ok: bWatch.ok }); w.close(); }, 2000);
        }
      });
      // One batch: the root changed (run-a removed, run-b made), then run-a's own delete.
      fs.rmdirSync(root + '/run-a');
      fs.mkdirSync(root + '/run-b');
    `);
    expect(r.out).toMatchObject({ ok: true });
    const b = (r.out as { b: string[] }).b;
    expect(b, 'run-b was told it is gone').not.toContain('gone');
    expect(b, "run-b's own change reached it").toContain('changed');
  });

  it("an append to a file of a watched directory is no event of the directory's (kqueue(2): a directory is written by its entries' changes only)", () => {
    const run = join(fresh('dir-append'), 'run-1');
    mkdirSync(run);
    writeFileSync(join(run, 'events.jsonl'), '{"a":1}\n');
    const r = onModel(`
      const fs = await import('node:fs');
      const run = ${JSON.stringify(run)};
      const w = N.openDirWatcher({ ref: true });
      const told = [];
      w.watch(run, (e) => told.push(e.kind + ':' + e.name));
      setTimeout(() => fs.appendFileSync(run + '/events.jsonl', '{"a":2}\\n'), 100);
      // The control: an entry made afterwards is told, so the watch was live.
      setTimeout(() => fs.writeFileSync(run + '/state.json', '{}'), 800);
      setTimeout(() => { out(told); w.close(); }, 1600);
    `);
    expect(r.out).toEqual(['changed:']);
  });

  it("an append to an in-flight run's stream is announced (a directory's NOTE_WRITE does not say it)", () => {
    const root = fresh('append');
    const run = join(root, 'run-1');
    mkdirSync(run);
    const r = onModel(`
      const fs = await import('node:fs');
      const run = ${JSON.stringify(run)};
      fs.writeFileSync(run + '/events.jsonl', '{"a":1}\\n');
      const w = N.openDirWatcher({ ref: true });
      const told = [];
      const a = w.watch(run, (e) => told.push(e.kind + ':' + e.name));
      if (a.ok && typeof a.watch.follow === 'function') a.watch.follow(['events.jsonl']);
      setTimeout(() => fs.appendFileSync(run + '/events.jsonl', '{"a":2}\\n'), 100);
      setTimeout(() => { out(told); w.close(); }, 1500);
    `);
    expect(r.out as string[]).toContain('modified:events.jsonl');
  });
});

describe('the exit watcher', () => {
  it.each([
    ['the XNU model (kqueue EVFILT_PROC)', undefined],
    ['linux (pidfd)', join(ROOT, 'build', 'Release', 'runwarden.node')],
  ])('%s: an id freed in one batch and handed to a new watch is not taken for the exit it reported', (_what, addonPath) => {
    const r = onModel(`
      const cp = await import('node:child_process');
      const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
      const w = N.openExitWatcher({ ref: true });
      const p1 = cp.spawn('sleep', ['60']), p3 = cp.spawn('sleep', ['60']);
      await new Promise((r) => setTimeout(r, 200));
      let p2, p2told = 0, told = 0;
      const again = () => { told++; if (p2 === undefined) { p2 = cp.spawn('sleep', ['60']); w.watch(p2.pid, () => p2told++); } };
      w.watch(p3.pid, again);
      w.watch(p1.pid, again);
      p1.kill('SIGKILL'); p3.kill('SIGKILL');
      sleep(500); // both exit before the loop drains: one batch
      setTimeout(() => { out({ told, p2told }); p2.kill('SIGKILL'); w.close(); process.exit(0); }, 1500);
    `, 60_000, addonPath);
    expect(r.out).toEqual({ told: 2, p2told: 0 });
  });
});

describe('lock files that are not regular files (fs_darwin.cc) in the model', () => {
  it('a socket at resume.lock reads as linux reads it (not a regular file), not as a failed open', () => {
    const run = fresh('socket-run');
    return new Promise<void>((resolveTest, reject) => {
      const server = createServer().listen(join(run, 'resume.lock'), () => {
        try {
          const r = onModel(`const p = K.probeLock(${JSON.stringify(join(run, 'resume.lock'))}); out({ liveness: p.liveness, reason: p.reason });`);
          expect(r.out).toMatchObject({ liveness: 'unknown', reason: 'not-regular-file' });
          resolveTest();
        } catch (e) {
          reject(e instanceof Error ? e : new Error(String(e)));
        } finally {
          server.close();
        }
      });
    });
  });

  it.each([
    ['the XNU model', undefined, { code: 'EOPNOTSUPP', errno: 102, ENOTSUP: 45, EOPNOTSUPP: 102 }],
    ['linux', join(ROOT, 'build', 'Release', 'runwarden.node'), { code: 'ENXIO', errno: 6, ENOTSUP: 95, EOPNOTSUPP: 95 }],
  ])("%s: errno numbers are the system's (darwin's open(2) of a socket is EOPNOTSUPP, 102), and a socket at resume.lock is refused as one", (_what, addonPath, want) => {
    const run = fresh(`errno-${addonPath === undefined ? 'model' : 'linux'}`);
    return new Promise<void>((resolveTest, reject) => {
      const server = createServer().listen(join(run, 'resume.lock'), () => {
        try {
          const r = onModel(`
            const fs = await import('node:fs');
            const n = native();
            const dirfd = n.openDirNoFollow(${JSON.stringify(run)});
            let thrown = {};
            try { n.openAt(dirfd, 'resume.lock', fs.constants.O_RDONLY); } catch (e) { thrown = { code: e.code, errno: e.errno }; }
            n.closeFd(dirfd);
            let refusal = '';
            try { K.acquireLock(${JSON.stringify(join(run, 'resume.lock'))}).release(); } catch (e) { refusal = e.code + ' ' + e.kind; }
            out({ ...thrown, ENOTSUP: n.errnos.ENOTSUP, EOPNOTSUPP: n.errnos.EOPNOTSUPP, refusal });
          `, 60_000, addonPath);
          expect(r.out).toEqual({ ...want, refusal: 'ENOTREGULAR socket' });
          resolveTest();
        } catch (e) {
          reject(e instanceof Error ? e : new Error(String(e)));
        } finally {
          server.close();
        }
      });
    });
  });

  it('a FIFO at resume.lock is never opened (a writer waiting for a reader stays waiting)', async () => {
    const run = fresh('fifo-run');
    const fifo = join(run, 'resume.lock');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const writer = spawn('sh', ['-c', `exec 3>"${fifo}"; echo opened`], { stdio: ['ignore', 'pipe', 'ignore'] });
    let said = '';
    writer.stdout.on('data', (b: Buffer) => (said += b.toString()));
    const r = onModel(`const p = K.probeLock(${JSON.stringify(fifo)}); out({ liveness: p.liveness, reason: p.reason });`);
    await new Promise((res) => setTimeout(res, 500));
    writer.kill('SIGKILL');
    expect(r.out).toMatchObject({ liveness: 'unknown', reason: 'not-regular-file' });
    expect(said, 'the probe opened the FIFO').toBe('');
  });
});

describe('the holder census on darwin (libproc) in the model', () => {
  /** A leg in another process on the model: acquires `lockPath` and holds it until killed. */
  function leg(lockPath: string): Promise<{ pid: number; stop: () => void }> {
    const src = `const { acquireLock } = await import(${JSON.stringify(join(ROOT, 'dist', 'index.js'))}); acquireLock(${JSON.stringify(lockPath)}); process.stdout.write('held\\n'); setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', src], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, RUNWARDEN_ADDON: addon } });
    return new Promise((res, rej) => {
      child.stdout.once('data', () => res({ pid: child.pid as number, stop: () => child.kill('SIGKILL') }));
      child.once('exit', (code) => rej(new Error(`the leg exited (${code})`)));
    });
  }

  it('a replaced lock file: its holder is found by the census (held-elsewhere), and acquire refuses naming it', async () => {
    const run = fresh('replaced');
    const lockPath = join(run, 'resume.lock');
    const l = await leg(lockPath);
    try {
      // A restore puts a new inode at the path; the leg's flock stays on the old one.
      spawnSync('sh', ['-c', `cp "${lockPath}" "${lockPath}.new" && mv "${lockPath}.new" "${lockPath}"`]);
      const r = onModel(`
        const fs = await import('node:fs');
        const H = await import(${JSON.stringify(join(ROOT, 'dist', 'kernel', 'holders.js'))});
        const st = fs.statSync(${JSON.stringify(lockPath)});
        const probe = K.probeLock(${JSON.stringify(lockPath)});
        const ev = H.foreignHolder({ lockPath: ${JSON.stringify(lockPath)}, dev: st.dev, currentIno: st.ino });
        let refusal = '';
        try { K.acquireLock(${JSON.stringify(lockPath)}, { retryMs: 20 }).release(); } catch (e) { refusal = e.message; }
        out({ probe: probe.liveness, ev: ev.kind, pid: ev.holder?.pid, refusal });
      `);
      expect(r.out).toMatchObject({ probe: 'free', ev: 'held-elsewhere', pid: l.pid });
      expect((r.out as { refusal: string }).refusal).toContain(`pid ${l.pid}`);
    } finally {
      l.stop();
    }
  });

  it('the live engine watches the process with the lock file open for writing, not a reader listed before it', () => {
    const root = fresh('decoy-root');
    const dir = join(root, '20261201-100000-decoy');
    mkdirSync(dir);
    writeFileSync(join(dir, 'resume.lock'), '');
    // In the model: a reader (started first, so listed first unless pid numbers wrap) has the file open
    // read-only; a shell opens it read-write, flock(1) takes the exclusive flock on that open file and
    // exits, the shell leaves a sleep holding it and exits, and the label names the gone shell. libproc
    // names no flock holder, so the census is all the engine has. Every re-check is at 600 s and kqueue
    // has no close-after-write: ABANDONED within the 30 s this waits can only come from the sleep's
    // NOTE_EXIT. With the reader watched instead, nothing tells, and the run stays RUNNING.
    const stream = eventLine({ event: 'run_started' }, { ts: '2026-12-01T10:00:00Z' }) + eventLine({ event: 'node_started', node_id: 'work' }, { ts: '2026-12-01T10:00:00Z' });
    const r = onModel(`
      const cp = await import('node:child_process');
      const fs = await import('node:fs');
      const dir = ${JSON.stringify(dir)};
      const started = (p) => new Promise((res) => { let b = ''; p.stdout.on('data', (d) => { b += d; const m = /READY ?(\\d*)/.exec(b); if (m) res(Number(m[1])); }); });
      const reader = cp.spawn('sh', ['-c', 'exec 4<resume.lock && echo READY && exec sleep 600'], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
      await started(reader);
      const taker = cp.spawn('sh', ['-c', 'exec 3<>resume.lock && flock -x -n 3 && { sleep 600 & echo READY $!; }'], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
      const child = await started(taker);
      await new Promise((res) => (taker.exitCode !== null ? res() : taker.once('exit', res)));
      fs.writeFileSync(dir + '/resume.lock', 'oh-my-graph-lock 1\\n' + taker.pid + '\\n');
      fs.writeFileSync(dir + '/events.jsonl', ${JSON.stringify(stream)});
      const e = new K.LiveEngine({ root: ${JSON.stringify(root)}, safetyMs: 600000, openRecheckMs: 600000 });
      await e.start();
      const until = async (f, ms) => { const end = Date.now() + ms; while (!f() && Date.now() < end) await new Promise((res) => setTimeout(res, 10)); return f(); };
      const status = () => e.get(dir)?.report?.status;
      const watched = await until(() => status() === 'RUNNING' && e.stats.holderWatches === 1, 30000);
      const told = e.stats.exitWakeups;
      process.kill(child, 'SIGKILL');
      await until(() => status() === 'ABANDONED', 30000);
      const readerAlive = reader.exitCode === null && reader.signalCode === null;
      out({ watched, status: status(), exits: e.stats.exitWakeups - told, readerAlive, readerFirst: reader.pid < child });
      reader.kill('SIGKILL');
      e.close();
      process.exit(0);
    `);
    expect(r.out).toMatchObject({ watched: true, status: 'ABANDONED', exits: 1, readerAlive: true });
  });

  it('acquire refuses a lock a leg holds (a descriptor open for writing), at the end of its retry window', async () => {
    const run = fresh('busy');
    const lockPath = join(run, 'resume.lock');
    const l = await leg(lockPath);
    try {
      const r = onModel(`let m = ''; try { K.acquireLock(${JSON.stringify(lockPath)}, { retryMs: 50 }).release(); m = 'acquired'; } catch (e) { m = e.message; } out(m);`);
      expect(r.out).toMatch(/a leg of this run is in flight/);
    } finally {
      l.stop();
    }
  });
});

/**
 * The defects a Mac's surroundings show, each failing on the code before it in the model: root's
 * daemons always answer EPERM to libproc; a truncation is NOTE_ATTRIB alone; flock and fcntl record
 * locks are one list; kern.maxfilesperproc caps the descriptors whatever getrlimit says. Each case
 * says which rule of native/xnu-model/ it rests on.
 */
describe("a Mac's surroundings (native/xnu-model/) and what they show", () => {
  const line = (o: Record<string, unknown>): string => eventLine(o, { ts: '2026-12-01T10:00:00Z' });

  /** A run whose leg is gone, its lock file labelled with `label` (as a dead leg leaves it). */
  function deadRun(name: string, label: number): string {
    const dir = join(fresh('label'), name);
    mkdirSync(dir);
    writeFileSync(join(dir, 'resume.lock'), `oh-my-graph-lock 1\n${label}\n`);
    writeFileSync(join(dir, 'events.jsonl'), line({ event: 'run_started' }) + line({ event: 'node_started', node_id: 'work' }));
    return dir;
  }

  /** A sleeping process with `env` added; the model takes XNU_MODEL_UID in it for the process's user. */
  function sleeper(env: Record<string, string> = {}): ChildProcess {
    const p = spawn('sleep', ['600'], { stdio: 'ignore', env: { ...process.env, ...env } });
    spawned.push(p);
    return p;
  }
  const spawned: ChildProcess[] = [];
  afterEach(() => {
    for (const p of spawned.splice(0)) p.kill('SIGKILL');
  });

  it("a dead leg's label naming a live process of this user, whose descriptors were read: ABANDONED (root's daemons, always unreadable, are no doubt)", () => {
    const reused = sleeper(); // a pid reused by an unrelated process of this user
    const dir = deadRun('reused', reused.pid as number);
    const r = onModel(`const s = K.runStatus(${JSON.stringify(dir)}); out({ status: s.status, liveness: s.liveness, reason: s.reason });`);
    expect(r.out).toEqual({ status: 'ABANDONED', liveness: 'free', reason: 'flock-free' });
  });

  it("a dead leg's label naming a live process of another user, whose descriptors cannot be read: the doubt keeps it in flight", () => {
    const other = sleeper({ XNU_MODEL_UID: '501' });
    const dir = deadRun('other-user', other.pid as number);
    const r = onModel(`const s = K.runStatus(${JSON.stringify(dir)}); out({ status: s.status, liveness: s.liveness, reason: s.reason });`);
    expect(r.out).toEqual({ status: 'RUNNING', liveness: 'unknown', reason: 'lock-replaced' });
  });

  it('the truncation of an in-flight run\'s stream is seen by the live engine (NOTE_ATTRIB, the only event a Mac posts for it)', () => {
    const root = fresh('truncate-root');
    const dir = join(root, '20261201-100000-t');
    mkdirSync(dir);
    const stream = line({ event: 'run_started' }) + line({ event: 'node_started', node_id: 'a' });
    // Every re-check at 600 s: only the followed stream's own event can tell.
    const r = onModel(`
      const fs = await import('node:fs');
      const dir = ${JSON.stringify(dir)};
      const lock = K.acquireLock(dir + '/resume.lock');
      fs.writeFileSync(dir + '/events.jsonl', ${JSON.stringify(stream)});
      const e = new K.LiveEngine({ root: ${JSON.stringify(root)}, safetyMs: 600000, openRecheckMs: 600000 });
      await e.start();
      const until = async (f, ms) => { const end = Date.now() + ms; while (!f() && Date.now() < end) await new Promise((res) => setTimeout(res, 10)); return f(); };
      const running = await until(() => e.get(dir)?.report?.status === 'RUNNING', 30000);
      await new Promise((res) => setTimeout(res, 300));
      const before = e.stats.rereads;
      fs.truncateSync(dir + '/events.jsonl', 0);
      const seen = await until(() => e.stats.rereads > before, 20000);
      out({ running, seen });
      e.close();
      lock.release();
      process.exit(0);
    `);
    expect(r.out).toEqual({ running: true, seen: true });
  });

  it.each([
    ['the XNU model', undefined],
    ['linux', join(ROOT, 'build', 'Release', 'runwarden.node')],
  ])("%s: a third party's fcntl lock on resume.lock is reported for what it is, as the system's lists of locks make it", async (_what, addonPath) => {
    const dir = join(fresh('record-lock'), addonPath === undefined ? 'model' : 'linux');
    mkdirSync(dir);
    writeFileSync(join(dir, 'resume.lock'), 'oh-my-graph-lock 1\n1\n');
    writeFileSync(join(dir, 'events.jsonl'), line({ event: 'run_started' }));
    // python3: node-gyp's own requirement, so present wherever npm ci built the addon; fcntl.lockf takes a POSIX record lock.
    const third = spawn('python3', ['-c', `import fcntl, sys, time\nf = open(sys.argv[1], 'r+')\nfcntl.lockf(f, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(600)`, join(dir, 'resume.lock')], { stdio: ['ignore', 'pipe', 'inherit'] });
    spawned.push(third);
    await new Promise((res) => third.stdout?.once('data', res));
    const r = onModel(`
      const one = native().system.oneLockList;
      const p = K.probeLock(${JSON.stringify(join(dir, 'resume.lock'))});
      const s = K.runStatus(${JSON.stringify(dir)});
      let acquire = 'acquired';
      try { K.acquireLock(${JSON.stringify(join(dir, 'resume.lock'))}, { retryMs: 50 }).release(); } catch (e) { acquire = e.message; }
      out({ one, probe: [p.liveness, p.reason, p.detail ?? ''], status: [s.status, s.reason], acquire });
    `, 60_000, addonPath);
    const o = r.out as { one: boolean; probe: string[]; status: string[]; acquire: string };
    if (o.one) {
      // darwin: one list (xnu kern_lockf.c); the shared flock is kept out by the record lock, which is no leg's.
      expect(o.probe).toEqual(['unknown', 'record-lock', expect.stringContaining(`pid ${third.pid}`)]);
      expect(o.status).toEqual(['RUNNING', 'record-lock']);
      expect(o.acquire).toMatch(new RegExp(`no leg holds the lock .* pid ${third.pid} holds a record lock`));
    } else {
      // linux: flock(2) and fcntl(2) locks never meet; the leg is gone and the lock is free.
      expect(o.probe).toEqual(['free', 'flock-free', '']);
      expect(o.status).toEqual(['ABANDONED', 'flock-free']);
      expect(o.acquire).toBe('acquired');
    }
    expect(o.one).toBe(addonPath === undefined);
  });

  it('kern.maxfilesperproc below the soft RLIMIT_NOFILE: watches take their share of the limit the kernel enforces (CONTRACT §5.7), not of the one getrlimit answers', () => {
    const root = fresh('maxfiles');
    for (let i = 0; i < 400; i++) mkdirSync(join(root, `run-${i}`));
    const r = onModel(`
      const L = await import(${JSON.stringify(join(ROOT, 'dist', 'kernel', 'limits.js'))});
      const w = N.openDirWatcher();
      const dirs = Array.from({ length: 400 }, (_, i) => ${JSON.stringify(root)} + '/run-' + i);
      for (const d of dirs) w.watch(d, () => {});
      // What the process can still open with the watches held (each open kept until the count is done).
      const fs = await import('node:fs');
      const opened = [];
      try { for (;;) opened.push(fs.openSync(${JSON.stringify(root)}, 'r')); } catch (e) { if (e.code !== 'EMFILE') throw e; }
      for (const fd of opened) fs.closeSync(fd);
      out({ getrlimit: native().descriptorLimit().soft, held: descriptorsOn(dirs), free: opened.length });
      w.close();
    `, 60_000, undefined, { XNU_MODEL_MAXFILESPERPROC: '300' });
    const o = r.out as { getrlimit: number; held: number; free: number };
    expect(o.getrlimit, 'the soft limit as getrlimit answers it is above the cap (what Node leaves on a Mac)').toBeGreaterThan(300);
    // §5.7: the watches' share is half of what the limit leaves after 192 kept for the process's own work.
    expect(o.held).toBeLessThanOrEqual(Math.floor((300 - 192) / 2));
    expect(o.free).toBeGreaterThanOrEqual(192 - 64);
  });

  it('a volume unmounted under a watched run directory: the watch ends (NOTE_REVOKE), nothing hangs', (ctx) => {
    needs(ctx, 'root', 'mount');
    const at = fresh('revoke-mount');
    const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', at], { encoding: 'utf8' });
    expect(m.status, m.stderr).toBe(0);
    try {
      mkdirSync(join(at, 'run-1'));
      // The model's descriptors hold the mount (linux); `umount -l` detaches it as a Mac's unmount does.
      const r = onModel(`
        const cp = await import('node:child_process');
        const w = N.openDirWatcher({ ref: true });
        const told = [];
        const a = w.watch(${JSON.stringify(join(at, 'run-1'))}, (e) => told.push(e.kind));
        const until = async (f, ms) => { const end = Date.now() + ms; while (!f() && Date.now() < end) await new Promise((res) => setTimeout(res, 10)); return f(); };
        cp.spawnSync('umount', ['-l', ${JSON.stringify(at)}]);
        const gone = await until(() => told.includes('gone'), 20000);
        out({ ok: a.ok, gone, held: w.size });
        w.close();
        process.exit(0);
      `, 60_000);
      expect(r.timedOut).toBe(false);
      expect(r.out).toEqual({ ok: true, gone: true, held: 0 });
    } finally {
      spawnSync('umount', ['-l', at]);
    }
  });
});

/**
 * The model's kqueue rules that runwarden's darwin code never exercises itself (it always asks
 * EV_CLEAR), checked on the model directly: a small C++ program built against native/xnu-model/
 * (the toolchain `npm ci` needed) drives kqueue(2)/kevent(2) and prints what they answered.
 */
describe("the model's kqueue, driven directly", () => {
  it('a vnode filter without EV_CLEAR stays fired and is returned by every kevent (kern_event.c knote_process); with EV_CLEAR, once; a truncation is NOTE_ATTRIB alone', () => {
    const dir = fresh('kq-direct');
    const src = join(dir, 'kq.cc');
    writeFileSync(
      src,
      `#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include "sys/event.h"
static unsigned poll_once(int kq) {
  struct kevent ev;
  struct timespec zero = {0, 0};
  int n = kevent(kq, nullptr, 0, &ev, 1, &zero);
  return n == 1 ? ev.fflags : 0;
}
int main(int, char** argv) {
  int plain = open(argv[1], O_RDONLY), clear = open(argv[2], O_RDONLY);
  int kq1 = kqueue(), kq2 = kqueue();
  struct kevent ch;
  EV_SET(&ch, plain, EVFILT_VNODE, EV_ADD, NOTE_WRITE | NOTE_ATTRIB | NOTE_EXTEND, 0, nullptr);
  kevent(kq1, &ch, 1, nullptr, 0, nullptr);
  EV_SET(&ch, clear, EVFILT_VNODE, EV_ADD | EV_CLEAR, NOTE_WRITE | NOTE_ATTRIB | NOTE_EXTEND, 0, nullptr);
  kevent(kq2, &ch, 1, nullptr, 0, nullptr);
  int w1 = open(argv[1], O_WRONLY | O_APPEND), w2 = open(argv[2], O_WRONLY | O_APPEND);
  (void)!write(w1, "x", 1);
  (void)!write(w2, "x", 1);
  usleep(100000);
  unsigned a1 = poll_once(kq1), a2 = poll_once(kq1), a3 = poll_once(kq1);
  unsigned b1 = poll_once(kq2), b2 = poll_once(kq2);
  (void)!ftruncate(w2, 0);
  usleep(100000);
  unsigned t = poll_once(kq2);
  printf("{\\"plain\\":[%u,%u,%u],\\"clear\\":[%u,%u],\\"truncate\\":%u,\\"WRITE\\":%u,\\"EXTEND\\":%u,\\"ATTRIB\\":%u}\\n", a1, a2, a3, b1, b2, t, (unsigned)NOTE_WRITE, (unsigned)NOTE_EXTEND, (unsigned)NOTE_ATTRIB);
  return 0;
}
`,
    );
    const bin = join(dir, 'kq');
    const model = join(ROOT, 'native', 'xnu-model');
    const cc = spawnSync(process.env['CXX'] || 'g++', ['-std=c++17', '-O1', `-I${join(model, 'include')}`, src, join(model, 'kqueue.cc'), join(model, 'sys.cc'), join(model, 'errno.cc'), '-o', bin, '-lpthread'], { encoding: 'utf8' });
    expect(cc.status, cc.stderr).toBe(0);
    writeFileSync(join(dir, 'plain'), 'a');
    writeFileSync(join(dir, 'clear'), 'a');
    const r = spawnSync(bin, [join(dir, 'plain'), join(dir, 'clear')], { encoding: 'utf8', timeout: 20_000 });
    const o = JSON.parse(r.stdout) as { plain: number[]; clear: number[]; truncate: number; WRITE: number; EXTEND: number; ATTRIB: number };
    const wrote = o.WRITE | o.EXTEND;
    expect(o.plain, 'without EV_CLEAR: the same fflags at every kevent').toEqual([wrote, wrote, wrote]);
    expect(o.clear, 'with EV_CLEAR: once').toEqual([wrote, 0]);
    expect(o.truncate, 'a truncation: NOTE_ATTRIB alone').toBe(o.ATTRIB);
  });
});

