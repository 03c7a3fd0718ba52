/**
 * The listing's fast paths (`runs --json` at scale), against the
 * real kernel: the one-crossing read of a run directory (native runFiles)
 * gives the facts the call-by-call path gives, the root listed by the addon
 * (readDirSorted) keeps every byte and kind, a batch of inspections sharing
 * one lock-table read answers exactly as one at a time (a replaced lock
 * under a live holder included), and `runs --json` on worker threads writes
 * the same document byte for byte.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { listRuns, runStatus } from '../src/index.js';
import { native } from '../src/kernel/native.js';
import { RunFilesReader } from '../src/kernel/runfiles.js';
import { inspectBatch } from '../src/status/inspect.js';
import { runsDocument } from '../src/status/list.js';
import { dyingWorker } from './helpers/list-workers.js';
import { CLAIM, OWNER, threadsFor, THREADS_DEFAULT_FROM_RUNS, writeRunsDocumentThreaded } from '../src/status/list-threads.js';
import { pathToFileURL } from 'node:url';
import { run } from './helpers/exec-procs.js';
import { cleanupTemp, killAll, startHolder, tempDir } from './helpers/lock-procs.js';
import { eventLine } from './helpers/events.js';
import { needs } from './helpers/prereq.js';
import { RELEASED } from './helpers/portable.js';

afterEach(async () => {
  await killAll();
  cleanupTemp();
});

/** A released leg's lock file here (with the lock label on Windows: helpers/portable.ts). */
const MARKED = RELEASED;
/** FIFOs, symbolic links and names that are not UTF-8: POSIX systems only (and Wine makes no link). */
const POSIX = process.platform !== 'win32';
const line = (id: string, event: string, f: Record<string, unknown> = {}) => eventLine({ event, ...f }, { runId: id });
const state = (id: string) => JSON.stringify({ schema: 3, run_id: id, graph: { name: 'g', nodes: [{ id: 'a' }, { id: 'b' }] }, nodes: { a: { verdict: 'PASS', cost_usd: 0.5 } } });

/** A run whose last leg is open (kind 0), closed, or paused, with a snapshot and a marked lock nobody holds. */
function makeRun(root: string, id: string, kind: number): string {
  const dir = join(root, id);
  mkdirSync(dir);
  let s = line(id, 'run_started') + line(id, 'node_started', { node_id: 'a' }) + line(id, 'node_passed', { node_id: 'a', verdict: 'PASS' });
  if (kind === 1) s += line(id, 'run_finished', { outcome: 'failed' });
  if (kind === 2) s += line(id, 'gate_paused', { node_id: 'b' }) + line(id, 'run_finished', { outcome: 'paused' });
  writeFileSync(join(dir, 'events.jsonl'), s);
  writeFileSync(join(dir, 'state.json'), state(id));
  writeFileSync(join(dir, 'resume.lock'), MARKED);
  return dir;
}

/** This process's open descriptors, through /dev/fd, which linux and darwin both have. */
function openFds(): number {
  return readdirSync('/dev/fd').length;
}

describe('runFiles: a run directory read in one crossing', () => {
  it('gives the same facts as fstat and read, leaves open only what the caller must close', () => {
    const root = tempDir();
    const dir = makeRun(root, 'r1', 1);
    const reader = new RunFilesReader('events.jsonl', 'state.json', 16 * 1024, 64 * 1024);
    const before = openFds();
    const got = reader.read(dir);
    expect(got.dirfd).toBeGreaterThanOrEqual(0);
    expect(openFds()).toBe(before + 1); // the directory only
    const ev = got.events;
    const st = got.state;
    if (ev.kind !== 'read' || st.kind !== 'read') throw new Error(`expected both read, got ${ev.kind} ${st.kind}`);
    const evStat = statSync(join(dir, 'events.jsonl'));
    // The identity must equal Node's Stats exactly: the confirm re-read compares the two.
    expect({ size: ev.size, dev: ev.dev, ino: ev.ino, mtimeMs: ev.mtimeMs, ctimeMs: ev.ctimeMs }).toEqual({ size: evStat.size, dev: evStat.dev, ino: evStat.ino, mtimeMs: evStat.mtimeMs, ctimeMs: evStat.ctimeMs });
    expect(ev.buf.subarray(0, ev.bytes).equals(readFileSync(join(dir, 'events.jsonl')))).toBe(true);
    expect(ev.fd).toBe(-1);
    expect(st.buf.subarray(0, st.bytes).toString()).toBe(state('r1'));
    native().closeFd(got.dirfd);
    expect(openFds()).toBe(before);
  });

  it('a stream longer than the buffer: its last bytes, and its descriptor kept for reading further back', () => {
    const root = tempDir();
    const dir = makeRun(root, 'r1', 0);
    const text = line('r1', 'run_started', { detail: 'x'.repeat(40_000) }) + line('r1', 'node_started', { node_id: 'a' });
    writeFileSync(join(dir, 'events.jsonl'), text);
    const reader = new RunFilesReader('events.jsonl', 'state.json', 4096, 64 * 1024);
    const got = reader.read(dir);
    const ev = got.events;
    if (ev.kind !== 'read') throw new Error(ev.kind);
    expect(ev.fd).toBeGreaterThanOrEqual(0);
    expect(ev.at).toBe(Buffer.byteLength(text) - 4096);
    expect(ev.buf.subarray(0, ev.bytes).equals(Buffer.from(text).subarray(-4096))).toBe(true);
    native().closeFd(ev.fd);
    native().closeFd(got.dirfd);
  });

  it('absent files are absent; a symlink, a FIFO or a snapshot over the buffer are left to the call-by-call path', () => {
    const root = tempDir();
    const dir = join(root, 'r');
    mkdirSync(dir);
    const reader = new RunFilesReader('events.jsonl', 'state.json', 4096, 128);
    let got = reader.read(dir);
    expect([got.events.kind, got.state.kind]).toEqual(['absent', 'absent']);
    native().closeFd(got.dirfd);
    if (POSIX) {
      symlinkSync('/etc/hostname', join(dir, 'events.jsonl'));
      execFileSync('mkfifo', [join(dir, 'state.json')]);
      got = reader.read(dir);
      expect([got.events.kind, got.state.kind]).toEqual(['other', 'other']);
      native().closeFd(got.dirfd);
      execFileSync('rm', [join(dir, 'state.json')]);
    }
    writeFileSync(join(dir, 'state.json'), state('r'.repeat(200)));
    got = reader.read(dir);
    expect(got.state.kind).toBe('other');
    native().closeFd(got.dirfd);
  });

  it('a run directory that is missing, or a symlink, is not opened', () => {
    const root = tempDir();
    const reader = new RunFilesReader('events.jsonl', 'state.json', 4096, 4096);
    const before = openFds();
    expect(reader.read(join(root, 'nope'))).toMatchObject({ dirfd: -1, dirErrno: 2 });
    makeRun(root, 'real', 1);
    symlinkSync(join(root, 'real'), join(root, 'link'));
    expect(reader.read(join(root, 'link')).dirfd).toBe(-1);
    expect(openFds()).toBe(before);
  });
});

describe('readDirSorted: the root listed by the addon', () => {
  it('every entry but . and .., in byte order, with its exact bytes and its kind', (ctx) => {
    needs(ctx, 'posix: a name that is not UTF-8 (Windows names are UTF-16 text), a FIFO and a symbolic link');
    const root = tempDir();
    mkdirSync(join(root, 'b-dir'));
    mkdirSync(Buffer.concat([Buffer.from(`${root}/a`), Buffer.from([0xff])]));
    writeFileSync(join(root, 'c-file'), '');
    symlinkSync(join(root, 'b-dir'), join(root, 'a-link'));
    execFileSync('mkfifo', [join(root, 'd-fifo')]);
    const { names, kinds } = native().readDirSorted(root);
    const bytes = names.map((n) => Buffer.from(n, 'latin1'));
    const expected = readdirSync(root, { encoding: 'buffer' }).sort((a, b) => Buffer.compare(a, b));
    expect(bytes).toEqual(expected);
    const kindOf = Object.fromEntries(names.map((n, i) => [n, kinds[i]]));
    expect(kindOf).toEqual({ 'a-link': 'l', 'a\xff': 'd', 'b-dir': 'd', 'c-file': 'f', 'd-fifo': 'p' });
  });
});

describe('inspectBatch: one lock-table read for a batch of probes', () => {
  it('answers as inspectRun one at a time: open legs held or free, closed and paused legs, missing and unreadable runs', async () => {
    const root = tempDir();
    const dirs: string[] = [];
    for (let i = 0; i < 12; i++) dirs.push(makeRun(root, `r${String(i).padStart(2, '0')}`, i % 3));
    const held = await startHolder(join(dirs[3], 'resume.lock'));
    writeFileSync(join(dirs[6], 'events.jsonl'), eventLine({ schema: 99, event: 'run_started' }));
    dirs.push(join(root, 'missing'));
    const batch = inspectBatch(dirs);
    const one = dirs.map((d) => {
      try {
        return { ok: true, report: runStatus(d) };
      } catch (e) {
        return { ok: false, error: (e as Error).message };
      }
    });
    expect(batch.map((r) => (r.ok ? { ok: true, report: r.inspection.report } : { ok: false, error: (r.error as Error).message }))).toEqual(one);
    expect(batch[3]).toMatchObject({ ok: true, inspection: { report: { status: 'RUNNING', liveness: 'held' } } });
    expect(batch[0]).toMatchObject({ ok: true, inspection: { report: { status: 'ABANDONED' } } });
    expect(batch[6]?.ok).toBe(false);
    held.proc.kill('SIGKILL');
  });

  it('a live holder whose lock file was replaced is in flight, not ABANDONED, when its run is probed in a batch', async (ctx) => {
    needs(ctx, 'linux: /proc/locks');
    const root = tempDir();
    const dirs = [0, 1, 2, 3].map((i) => makeRun(root, `r${i}`, 0));
    const lockPath = join(dirs[1], 'resume.lock');
    await startHolder(lockPath);
    copyFileSync(lockPath, `${lockPath}.x`);
    renameSync(`${lockPath}.x`, lockPath);
    const batch = inspectBatch(dirs);
    expect(batch[1]).toMatchObject({ ok: true, inspection: { report: { status: 'RUNNING', liveness: 'unknown', reason: 'lock-replaced' } } });
    for (const i of [0, 2, 3]) expect(batch[i]).toMatchObject({ ok: true, inspection: { report: { status: 'ABANDONED' } } });
  });
});

describe('runs --json on worker threads', () => {
  it('uses two threads by default only for a large root on two cores or more; RUNWARDEN_THREADS decides otherwise', () => {
    const big = THREADS_DEFAULT_FROM_RUNS;
    expect(threadsFor(big, undefined, 2)).toBe(2);
    expect(threadsFor(big, undefined, 16)).toBe(2);
    expect(threadsFor(big - 1, undefined, 16)).toBe(1);
    expect(threadsFor(big, undefined, 1)).toBe(1);
    // Asked for: as asked, at most one thread per chunk of 256 runs, at least one.
    expect(threadsFor(big, 1, 16)).toBe(1);
    expect(threadsFor(big, 0, 16)).toBe(1);
    expect(threadsFor(big, 3, 4)).toBe(3);
    // … but never more than one per core.
    expect(threadsFor(big, 3, 2)).toBe(2);
    expect(threadsFor(big, 99, 2)).toBe(2);
    expect(threadsFor(big, 99, 1)).toBe(1);
    expect(threadsFor(300, 8, 16)).toBe(2);
  });

  it('writes the same document as on one thread and as listRuns, byte for byte', async () => {
    const root = tempDir();
    // More than one chunk per thread (256 runs a chunk), a few runs of every kind, and entries that are skipped.
    for (let i = 0; i < 1400; i++) makeRun(root, `2026-${String(i).padStart(5, '0')}`, i % 3);
    writeFileSync(join(root, '2026-00010', 'events.jsonl'), eventLine({ schema: 99, event: 'run_started' }));
    writeFileSync(join(root, '2026-00700-file'), '');
    if (POSIX) {
      symlinkSync(join(root, '2026-00001'), join(root, '2026-00900-link'));
      mkdirSync(Buffer.concat([Buffer.from(`${root}/2026-01000-`), Buffer.from([0xff])]));
    }
    const held = await startHolder(join(root, '2026-00300', 'resume.lock'));
    const one = await run(['runs', '--json', '--root', root], { RUNWARDEN_THREADS: '0' });
    const three = await run(['runs', '--json', '--root', root], { RUNWARDEN_THREADS: '3' });
    const two = await run(['runs', '--json', '--root', root], { RUNWARDEN_THREADS: '2' });
    expect(one.code).toBe(0);
    expect(three.code).toBe(0);
    expect(three.stdout).toBe(one.stdout);
    expect(two.stdout).toBe(one.stdout);
    expect(one.stdout).toBe(JSON.stringify(runsDocument(listRuns(root)), null, 2) + '\n');
    const doc = JSON.parse(one.stdout) as { runs: { run_id: string; status: string }[]; skipped: { run_id: string }[] };
    expect(doc.runs.find((r) => r.run_id === '2026-00300')?.status).toBe('RUNNING');
    expect(doc.skipped.map((s) => s.run_id)).toEqual([...(POSIX ? ['2026-00900-link'] : []), '2026-00700-file', '2026-00010']);
    held.proc.kill('SIGKILL');
  });

  it('the main thread shares the work, and inspects the chunks of a worker that ended without sending them', async () => {
    const root = tempDir();
    for (let i = 0; i < 1300; i++) makeRun(root, `2026-${String(i).padStart(5, '0')}`, i % 3);
    writeFileSync(join(root, '2026-00500-file'), '');
    const collect = async (threads: number, script?: URL): Promise<string> => {
      let text = '';
      await writeRunsDocumentThreaded(root, (t) => (text += t), threads, script);
      return text;
    };
    const one = await collect(1);
    expect(one).toBe(JSON.stringify(runsDocument(listRuns(root)), null, 2));
    expect(await collect(2)).toBe(one);
    // A worker that claims a chunk as list-worker.js does, then throws before sending it.
    const dying = dyingWorker(tempDir(), CLAIM, OWNER);
    expect(await collect(2, dying)).toBe(one);
    expect(await collect(4, dying)).toBe(one);
    // A worker that cannot even start.
    expect(await collect(3, pathToFileURL(join(root, 'no-such-worker.mjs')))).toBe(one);
  });

  it('a bad RUNWARDEN_THREADS is a usage error', async () => {
    const root = tempDir();
    const r = await run(['runs', '--json', '--root', root], { RUNWARDEN_THREADS: 'many' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/RUNWARDEN_THREADS must be a whole number/);
  });
});
