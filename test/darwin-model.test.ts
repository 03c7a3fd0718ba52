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
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDarwinModel } from '../scripts/darwin-model.mjs';
import { eventLine } from './helpers/events.js';
import { ROOT } from './helpers/lock-procs.js';

const SLOW = 300_000;
let addon = '';
const work = mkdtempSync(join(tmpdir(), 'rw-darwin-model-'));

beforeAll(() => {
  addon = buildDarwinModel({ quiet: true });
}, SLOW);
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Runs an ES module body in a child whose addon is the model; its last stdout line is JSON. */
function onModel(body: string, timeoutMs = 60_000, addonPath?: string): { out: unknown; stderr: string; status: number | null; timedOut: boolean } {
  const src = `const K = await import(${JSON.stringify(join(ROOT, 'dist', 'index.js'))});\nconst N = await import(${JSON.stringify(join(ROOT, 'dist', 'kernel', 'notify.js'))});\nconst native = (await import(${JSON.stringify(join(ROOT, 'dist', 'kernel', 'native.js'))})).native;\nconst out = (v) => process.stdout.write(JSON.stringify(v) + '\\n');\n${body}`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', src], {
    encoding: 'utf8',
    env: { ...process.env, RUNWARDEN_ADDON: addonPath ?? addon },
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
      import('node:fs').then(({ readdirSync, readlinkSync }) => {
        const w = N.openDirWatcher();
        let ok = 0, refused = 0;
        for (let i = 0; i < 400; i++) { const a = w.watch(${JSON.stringify(root)} + '/run-' + i, () => {}); if (a.ok) ok++; else refused++; }
        let held = 0;
        for (const fd of readdirSync('/proc/self/fd')) { try { if (readlinkSync('/proc/self/fd/' + fd).startsWith(${JSON.stringify(root + '/')})) held++; } catch {} }
        out({ ok, refused, held, polled: w.stats.overBudget });
        w.close();
      });`);
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
