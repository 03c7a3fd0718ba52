/**
 * The holder's thread: one worker thread per process (started with the first
 * lock, unref'd, so it never keeps a process alive) that keeps every held
 * lock directory's mtime fresh for proper-lockfile processes, and notices when
 * a held lock is lost.
 *
 * Why a thread: proper-lockfile processes judge a lock directory by its
 * mtime, so the holder must refresh it every `update` ms for as long as it
 * holds, also while its own event loop is blocked (a long synchronous job, a
 * debugger pause of the main thread); a timer on the main thread cannot. The
 * worker has its own loop, and refreshes (futimes) only the directory it was
 * handed, never whatever else is put at the path: on POSIX it holds each lock
 * directory open; on Windows it opens the directory for each refresh and
 * checks its identity on that handle, because there a directory removed while
 * any handle to it is open stays at its name until the last one closes
 * ("RemoveDirectory ... marks a directory for deletion on close",
 * learn.microsoft.com/windows/win32/api/fileapi/nf-fileapi-removedirectoryw),
 * and a held handle would keep a released lock's directory in everyone's way.
 *
 * What it watches, every {@link TICK_MS}: that the lock directory, and the
 * sidecar when there is one, are still at their paths (device and inode, by
 * lstat). When one is gone or another is in its place, the lock is lost: the
 * worker stops refreshing it and tells the main thread, which hands
 * `ECOMPROMISED` to `onCompromised` as soon as its loop runs. Nothing else
 * makes a lock lost: not a slow refresh, not a blocked loop.
 *
 * The worker's source is inline (eval), so it needs no file of its own: the
 * same code runs from the CommonJS build, from a bundle, and under Bun.
 */
import { Worker } from 'node:worker_threads';

/** How often the worker looks at every held lock (ms): the bound on noticing a loss, and the granularity of the refresh. */
export const TICK_MS = 250;

/** What the worker is told to keep. */
export interface Beat {
  /** The lock directory. */
  readonly dir: string;
  /** Its identity when taken (decimal strings: bigints do not cross postMessage everywhere). */
  readonly dev: string;
  readonly ino: string;
  /** The sidecar and its identity, when there is one. */
  readonly sidecar: string | undefined;
  readonly sideDev: string | undefined;
  readonly sideIno: string | undefined;
  /** The mtime signature, µs. */
  readonly sig: number;
  /** The refresh period, ms. */
  readonly update: number;
}

/** Why a lock was lost, as the worker saw it. */
export interface Loss {
  readonly what: 'directory' | 'sidecar';
  readonly how: 'removed' | 'replaced';
}

// Plain JavaScript, run by the worker as a CommonJS script (eval).
const WORKER_SOURCE = `
'use strict';
const { parentPort } = require('node:worker_threads');
const fs = require('node:fs');
const TICK_MS = ${TICK_MS};
// Windows keeps a removed directory at its name while a handle to it is open (see the module comment).
const HOLD_OPEN = process.platform !== 'win32';
const held = new Map();
let timer;
function ident(path) {
  try {
    const s = fs.lstatSync(path, { bigint: true });
    return s.dev + ':' + s.ino;
  } catch (e) {
    if (e && (e.code === 'ENOENT' || e.code === 'ENOTDIR')) return null;
    return undefined;
  }
}
function drop(id) {
  const l = held.get(id);
  if (l === undefined) return;
  held.delete(id);
  if (l.fd >= 0) try { fs.closeSync(l.fd); } catch {}
  if (held.size === 0 && timer !== undefined) { clearInterval(timer); timer = undefined; }
}
let losses = [];
function lost(id, what, how) {
  drop(id);
  losses.push({ id, what, how });
}
function flush() {
  if (losses.length === 0) return;
  parentPort.postMessage({ type: 'lost', losses });
  losses = [];
}
function look(id, l, now) {
  const d = ident(l.dir);
  if (d === null) return lost(id, 'directory', 'removed');
  if (d !== undefined && d !== l.dirId) return lost(id, 'directory', 'replaced');
  if (l.sidecar !== undefined) {
    const s = ident(l.sidecar);
    if (s === null) return lost(id, 'sidecar', 'removed');
    if (s !== undefined && s !== l.sideId) return lost(id, 'sidecar', 'replaced');
  }
  if (now >= l.due) {
    const t = l.sig === 0 ? Date.now() / 1000 : (Date.now() + (l.sig + 0.5) / 1000) / 1000;
    try {
      if (HOLD_OPEN) fs.futimesSync(l.fd, t, t);
      else if (!touchByPath(l, t)) return lost(id, 'directory', 'replaced');
      l.due = now + l.update;
    } catch {
      l.due = now + 1000;
    }
  }
}
// Opens the directory, refreshes it only if it is still the one taken, and closes it. false: another is there.
function touchByPath(l, t) {
  const fd = fs.openSync(l.dir, fs.constants.O_RDONLY);
  try {
    const st = fs.fstatSync(fd, { bigint: true });
    if (st.dev + ':' + st.ino !== l.dirId) return false;
    fs.futimesSync(fd, t, t);
    return true;
  } finally {
    fs.closeSync(fd);
  }
}
function tick() {
  const now = performance.now();
  for (const [id, l] of held) look(id, l, now);
  flush();
}
parentPort.on('message', (m) => {
  if (m.type === 'drop') return drop(m.id);
  if (m.type !== 'track') return;
  const b = m.beat;
  let fd;
  try {
    fd = fs.openSync(b.dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW);
  } catch (e) {
    lost(m.id, 'directory', e && e.code === 'ENOENT' ? 'removed' : 'replaced');
    return flush();
  }
  const st = fs.fstatSync(fd, { bigint: true });
  if (!HOLD_OPEN) {
    fs.closeSync(fd);
    fd = -1;
  }
  const l = { dir: b.dir, dirId: b.dev + ':' + b.ino, sidecar: b.sidecar, sideId: b.sidecar === undefined ? undefined : b.sideDev + ':' + b.sideIno, sig: b.sig, update: b.update, fd, due: performance.now() + b.update };
  held.set(m.id, l);
  if (st.dev + ':' + st.ino !== l.dirId) {
    lost(m.id, 'directory', 'replaced');
    return flush();
  }
  if (timer === undefined) timer = setInterval(tick, TICK_MS);
});
`;

let worker: Worker | undefined;
/** Set once the process is exiting: a worker that ends then is not started again. */
let exiting = false;
let exitWatched = false;
const beats = new Map<number, Beat>();
const onLoss = new Map<number, (loss: Loss) => void>();

function start(): Worker {
  if (!exitWatched) {
    exitWatched = true;
    process.once('exit', () => {
      exiting = true;
    });
  }
  const w = new Worker(WORKER_SOURCE, { eval: true, name: 'runwarden-lockfile' });
  w.on('message', (m: { type: string; losses: Array<{ id: number } & Loss> }) => {
    if (m.type !== 'lost') return;
    for (const { id, what, how } of m.losses) {
      beats.delete(id);
      const cb = onLoss.get(id);
      if (cb === undefined) continue;
      onLoss.delete(id);
      cb({ what, how });
    }
  });
  // A worker that ends (it should not) is started again for the locks still held.
  w.on('error', () => undefined);
  w.on('exit', () => {
    if (worker === w) worker = undefined;
    if (beats.size > 0 && !exiting) {
      const again = start();
      worker = again;
      for (const [id, beat] of beats) again.postMessage({ type: 'track', id, beat });
    }
  });
  // After the listeners: adding a 'message' listener refs the worker again.
  w.unref();
  return w;
}

/** Hands a held lock to the worker; `lost` is called (once, on the main thread) if it is lost. */
export function keep(id: number, beat: Beat, lost: (loss: Loss) => void): void {
  worker ??= start();
  beats.set(id, beat);
  onLoss.set(id, lost);
  worker.postMessage({ type: 'track', id, beat });
}

/**
 * Stops keeping a lock that was released: no loss is reported for it. With
 * `gone` (its directory was removed by the release, or its sidecar unlinked),
 * the worker is not told: it finds that out at its next look and lets the lock
 * go then, which saves a message per release; a directory the release left in
 * place is dropped by message, so its mtime stops being refreshed.
 */
export function drop(id: number, gone: boolean): void {
  onLoss.delete(id);
  if (gone) return;
  if (!beats.delete(id)) return;
  worker?.postMessage({ type: 'drop', id });
}
