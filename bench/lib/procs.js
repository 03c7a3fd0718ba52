/**
 * Child processes for the bench, with one guarantee: every process the bench
 * starts is killed when the bench ends, however it ends (normal exit, an
 * exception, Ctrl-C). A stopped process is continued first so the kill lands.
 */
import { fork, spawn } from 'node:child_process';
import { once } from 'node:events';

const live = new Set();

/** Kills every process the bench started that is still running (continuing stopped ones first). */
export function killAll() {
  for (const child of live) {
    try {
      process.kill(child.pid, 'SIGCONT');
    } catch {
      /* already gone */
    }
    try {
      child.kill('SIGKILL');
    } catch {
      /* already gone */
    }
  }
  live.clear();
}

let hooked = false;
function hookExit() {
  if (hooked) return;
  hooked = true;
  process.on('exit', killAll);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => {
      killAll();
      process.exit(130);
    });
  }
}

function track(child) {
  hookExit();
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

/** Forks a bench worker script with an IPC channel; stdout/stderr pass through. */
export function forkWorker(script, args = [], env = {}) {
  return track(
    fork(script, args, {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, ...env },
      serialization: 'advanced',
    }),
  );
}

/** Spawns a plain command (e.g. an unrelated `sleep`), tracked for cleanup. */
export function spawnTracked(cmd, args) {
  return track(spawn(cmd, args, { stdio: 'ignore' }));
}

/** Resolves with the first IPC message satisfying `pred`, rejects if the child exits first or on timeout. */
export function waitMessage(child, pred, timeoutMs = 30_000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`worker ${child.pid} sent no expected message within ${timeoutMs} ms`));
    }, timeoutMs);
    const onMsg = (m) => {
      if (pred(m)) {
        cleanup();
        resolve(m);
      }
    };
    const onExit = (code, sig) => {
      cleanup();
      reject(new Error(`worker ${child.pid} exited (code ${code}, signal ${sig}) before its message`));
    };
    function cleanup() {
      clearTimeout(timer);
      child.off('message', onMsg);
      child.off('exit', onExit);
    }
    child.on('message', onMsg);
    child.once('exit', onExit);
  });
}

/** Kills a child (continuing it first if stopped) and waits until it has been reaped. */
export async function stop(child, signal = 'SIGKILL') {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  try {
    process.kill(child.pid, 'SIGCONT');
  } catch {
    /* gone */
  }
  child.kill(signal);
  await exited;
}

/** The address `runwarden serve` prints on its stdout once it listens (`http://host:port/`); rejects if serve exits first. */
export function serveUrl(child) {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /(http:\/\/\S+\/)/.exec(out);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code, signal) => reject(new Error(`serve exited (${signal ?? code}) before it printed its address`)));
  });
}

/** Sleeps without blocking the event loop (so exited children get reaped meanwhile). */
export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

/** CLOCK_MONOTONIC in ns as a bigint; the same clock in every process on this machine. */
export const now = () => process.hrtime.bigint();
