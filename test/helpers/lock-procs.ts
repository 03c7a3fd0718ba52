/**
 * Real processes for lock tests: holders that take the run lock and hold it
 * until killed. Every process started here is tracked and killed by
 * `killAll()`, which each test file calls in afterEach (and awaits, so that
 * every child is reaped before the test's temp dirs go).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { lstatSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { removeTree } from './remove-tree.js';

const here = dirname(fileURLToPath(import.meta.url));
export const ROOT = join(here, '..', '..');
export const HOLDER = join(here, '..', 'fixtures', 'holder.mjs');
export const CLI = join(ROOT, 'bin', 'runwarden.js');

/** Process groups (negative numbers) and bare pids to SIGKILL. */
const tracked = new Set<number>();
/** Child processes of this one: signalled only while not yet reaped, so never a reused pid. */
const children = new Set<ChildProcess>();
const tempDirs: string[] = [];

/** A fresh temp dir, removed by cleanupTemp(). */
export function tempDir(prefix = 'rw-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.push(d);
  return d;
}

/**
 * Removes the temp dirs, first killing every process group an exec leg
 * recorded in them (exec.pgid): a leg killed by a test leaves its command
 * running by design, and the test must not leave it behind. Directories a
 * test made unreadable are opened up again first (see remove-tree.ts).
 */
export function cleanupTemp(): void {
  for (const d of tempDirs.splice(0)) {
    for (const pgid of recordedGroups(d)) {
      try {
        // Windows has no process groups: exec.pgid holds the command's pid there (CONTRACT §5.8 rule 6).
        process.kill(process.platform === 'win32' ? pgid : -pgid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    removeTree(d);
  }
}

function recordedGroups(dir: string, depth = 0): number[] {
  const found: number[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return found;
  }
  for (const name of names) {
    const p = join(dir, name);
    if (name === 'exec.pgid') {
      try {
        const v = Number(readFileSync(p, 'utf8').trim());
        if (Number.isInteger(v) && v > 1) found.push(v);
      } catch {
        /* not a readable file */
      }
    } else if (depth < 3) {
      try {
        if (lstatSync(p).isDirectory()) found.push(...recordedGroups(p, depth + 1));
      } catch {
        /* vanished */
      }
    }
  }
  return found;
}

/**
 * Registers a child process, or a process group (as a negative number), for
 * killAll. Pass the ChildProcess rather than its pid where there is one.
 */
export function track(p: number | ChildProcess): void {
  if (typeof p === 'number') tracked.add(p);
  else children.add(p);
}

function exited(c: ChildProcess): boolean {
  return c.exitCode !== null || c.signalCode !== null;
}

/**
 * SIGKILLs everything tracked (groups included; stopped processes are
 * continued first) and forgets it. The returned promise resolves once every
 * tracked child process has exited and been reaped (bounded, in case one is
 * stuck in the kernel); `await` it in afterEach/afterAll.
 */
export function killAll(): Promise<void> {
  const waits: Promise<unknown>[] = [];
  for (const c of children) {
    if (exited(c)) continue; // reaped: its pid may already be someone else's
    waits.push(new Promise((r) => c.once('exit', r)));
    // Windows has no SIGCONT (kill would emit an error); its kill ends the process whatever its state.
    if (process.platform !== 'win32') c.kill('SIGCONT');
    c.kill('SIGKILL');
  }
  children.clear();
  for (const pid of tracked) {
    try {
      if (process.platform !== 'win32') process.kill(pid, 'SIGCONT');
    } catch {
      /* gone */
    }
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  tracked.clear();
  if (waits.length === 0) return Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((r) => {
    timer = setTimeout(r, 30_000);
    timer.unref();
  });
  return Promise.race([Promise.all(waits).then(() => undefined), bound]).finally(() => clearTimeout(timer));
}

/** Resolves with the first stdout line starting with `READY `, parsed. */
export function waitReady<T = Record<string, number>>(proc: ChildProcess, timeoutMs = 60_000): Promise<T> {
  return new Promise((resolve, reject) => {
    let buf = '';
    let errBuf = '';
    const timer = setTimeout(() => reject(new Error(`process ${proc.pid} not ready in ${timeoutMs} ms; stderr: ${errBuf}`)), timeoutMs);
    proc.stderr?.on('data', (d: Buffer) => (errBuf += d.toString()));
    proc.stdout?.on('data', (d: Buffer) => {
      buf += d.toString();
      const m = /^READY ?(.*)$/m.exec(buf);
      if (m) {
        clearTimeout(timer);
        resolve((m[1] ? JSON.parse(m[1]) : {}) as T);
      }
    });
    proc.on('exit', (code, sig) => {
      clearTimeout(timer);
      reject(new Error(`process exited before ready (code ${code}, signal ${sig}); stderr: ${errBuf}`));
    });
  });
}

/** Resolves once the process has exited and been reaped. */
export function waitExit(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => proc.once('exit', () => resolve()));
}

export interface Holder {
  proc: ChildProcess;
  pid: number;
  child?: number;
}

/** Starts a runwarden holder (test/fixtures/holder.mjs) on lockPath. */
export async function startHolder(lockPath: string, flags: string[] = []): Promise<Holder> {
  const proc = spawn(process.execPath, [HOLDER, lockPath, ...flags], { stdio: ['ignore', 'pipe', 'pipe'] });
  track(proc);
  const r = await waitReady<{ held: number; child?: number }>(proc);
  // Its group on POSIX systems; Windows has none, so the child itself.
  if (r.child !== undefined) track(process.platform === 'win32' ? r.child : -r.child);
  return r.child === undefined ? { proc, pid: r.held } : { proc, pid: r.held, child: r.child };
}

/**
 * Starts util-linux flock(1) holding `mode` (-x or -s) on path and running
 * `sleep` with the lock fd inherited (flock(1) does not close it for the child).
 */
export async function startFlock1(path: string, mode: '-x' | '-s'): Promise<{ proc: ChildProcess }> {
  const proc = spawn('flock', [mode, '-n', path, '-c', 'echo READY; exec sleep 600'], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  track(-(proc.pid as number));
  track(proc);
  await waitReady(proc);
  return { proc };
}

/**
 * Resolves when the predicate holds, polling; rejects after timeoutMs. The
 * bound is generous on purpose: it only stops a wait for something that will
 * never happen, and a loaded machine may be slow to make it happen.
 */
export async function until(pred: () => boolean, timeoutMs = 60_000, stepMs = 10): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/**
 * The pids holding flock(2) locks on `path` right now, by kind, read from the
 * kernel's lock table (/proc/locks, linux): a test's proof that a lock was
 * really held at the instant it says, independent of the code under test.
 */
export function flockHolders(path: string): { shared: number[]; exclusive: number[] } {
  const { ino, dev } = lstatSync(path, { bigint: true });
  const major = (dev >> 8n) & 0xfffn;
  const minor = (dev & 0xffn) | ((dev >> 12n) & 0xfff00n);
  const id = `${major.toString(16).padStart(2, '0')}:${minor.toString(16).padStart(2, '0')}:${ino}`;
  const out = { shared: [] as number[], exclusive: [] as number[] };
  for (const line of readFileSync('/proc/locks', 'utf8').split('\n')) {
    const m = /^\d+: FLOCK\s+\S+\s+(READ|WRITE)\s+(\d+)\s+(\S+)\s/.exec(line);
    if (m === null || m[3] !== id) continue;
    (m[1] === 'READ' ? out.shared : out.exclusive).push(Number(m[2]));
  }
  return out;
}

/**
 * util-linux flock(1) holding a shared lock on `path` from READY until the
 * file `gate` exists and then `holdSec` more seconds: the test creates the
 * gate the instant before the call it wants to meet the reader, so the
 * reader still holds for `holdSec` after that call began, however late a
 * loaded machine ran the test up to there.
 */
export async function startGatedReader(path: string, gate: string, holdSec: number): Promise<{ proc: ChildProcess }> {
  const script = 'echo READY; while [ ! -e "$1" ]; do sleep 0.01; done; sleep "$2"';
  const proc = spawn('flock', ['-s', '-n', path, 'sh', '-c', script, 'sh', gate, String(holdSec)], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  track(-(proc.pid as number));
  track(proc);
  await waitReady(proc);
  return { proc };
}
