/**
 * A leg that holds a run's lock and does nothing else, for the bench to kill,
 * stop or release. It takes runwarden's lock (acquireLock: the exclusive
 * flock) and, when asked, proper-lockfile's lock on the same path too (a
 * `<path>.lock` directory whose mtime it refreshes), so every peer has
 * something real to observe.
 *
 * usage: holder.js <lock-path> [--proper-stale MS] [--pid-label PID]
 * IPC out: {type:'ready', pid}, {type:'compromised', message} (proper-lockfile
 * decided its own lock was compromised, e.g. after the holder was stopped).
 * IPC in: 'release' -> releases both locks and exits 0.
 */
import { createRequire } from 'node:module';
import { acquireLock } from '../../dist/index.js';

const require = createRequire(import.meta.url);
const [lockPath, ...rest] = process.argv.slice(2);
if (!lockPath) {
  console.error('usage: holder.js <lock-path> [--proper-stale MS] [--pid-label PID]');
  process.exit(2);
}
let properStale;
let pidLabel;
for (let i = 0; i < rest.length; i += 2) {
  if (rest[i] === '--proper-stale') properStale = Number(rest[i + 1]);
  else if (rest[i] === '--pid-label') pidLabel = Number(rest[i + 1]);
  else {
    console.error(`holder.js: unknown option ${rest[i]}`);
    process.exit(2);
  }
}

const held = acquireLock(lockPath, pidLabel === undefined ? {} : { pid: pidLabel });
let releaseProper;
if (properStale !== undefined) {
  const lockfile = require('proper-lockfile');
  releaseProper = lockfile.lockSync(lockPath, {
    stale: properStale,
    onCompromised: (err) => {
      process.send?.({ type: 'compromised', message: err.message });
    },
  });
}

// Keeps the process alive; proper-lockfile's refresh timer is unref'd.
const keepAlive = setInterval(() => {}, 60_000);
process.on('message', (m) => {
  if (m !== 'release') return;
  clearInterval(keepAlive);
  try {
    releaseProper?.();
  } catch {
    /* compromised locks cannot be released; nothing to undo */
  }
  held.release();
  process.disconnect?.();
  process.exit(0);
});
process.send({ type: 'ready', pid: process.pid });
