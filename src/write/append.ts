/**
 * Appending to the stream, events.jsonl (CONTRACT §2.6), used only by a leg that holds
 * the run's lock (`runwarden exec`).
 *
 * Invariants:
 * - Only the holder of the run's flock appends, so lines from two writers
 *   never interleave; callers must hold the lock before `openStreamWriter`.
 * - One event is one `write(2)` of one complete line, followed by fsync, so a
 *   crash leaves at worst one unterminated final line, which readers handle.
 * - If the file ends in an unterminated line (a writer crashed mid-line),
 *   the first append starts with a newline so the new event is not glued to
 *   the fragment.
 * - The file is opened append-only, created 0600, never through a symlink,
 *   never blocking; anything but a regular file is refused.
 * - A line over the 1 MiB cap is refused before anything is written: one
 *   such line would make the whole stream unreadable (CONTRACT §2.2 rule 2).
 * - No link is followed: the file is opened relative to a descriptor of the
 *   run directory (the leg's own, or one opened here with O_NOFOLLOW), with
 *   openat and O_NOFOLLOW, so a run directory swapped for a symlink cannot
 *   send events outside the runs root.
 * - Each append first checks that the path still names the file it writes
 *   to; if a restore or sync replaced it, the writer reopens the path, so
 *   the leg's events land where readers look (CONTRACT §4.5).
 */
import { closeSync, constants, fstatSync, fsyncSync, readSync, writeSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { closeFd, errnoCode, identityAt, openAt, openDirNoFollow, runDirPath } from '../kernel/dirfd.js';
import { RunFileError, WriteError } from '../contract/errors.js';
import { MAX_LINE_BYTES, STREAM_SCHEMA } from '../contract/events.js';

/** The schema version runwarden writes: the one it reads (CONTRACT §2.2). */
export const EVENT_SCHEMA = STREAM_SCHEMA;

/** An event to append; `schema`, `ts` and `run_id` are filled in. */
export type EventFields = { event: string } & Record<string, unknown>;

export interface StreamWriter {
  append(fields: EventFields): void;
  close(): void;
}

// openAt adds O_NOFOLLOW and O_CLOEXEC to every open.
const FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NONBLOCK;

/** Drops keys whose values are empty, per "optional fields appear only when non-empty". */
function compact(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined || v === null || v === '') continue;
    if (Array.isArray(v) && v.length === 0) continue;
    out[k] = v;
  }
  return out;
}

interface Target {
  fd: number;
  dev: number;
  ino: number;
  /** The file ends in an unterminated line: the next append starts with a newline. */
  needsNewline: boolean;
}

/** Opens the stream at `path` (its entry in the directory open as `at`) for appending, refusing anything but a regular file. */
function openTarget(at: number, path: string): Target {
  let fd: number;
  try {
    fd = openAt(at, basename(path), FLAGS, 0o600);
  } catch (e) {
    const code = errnoCode(e);
    if (code === 'ELOOP' || code === 'EISDIR' || code === 'ENXIO') {
      throw new RunFileError(`"${path}" is not a regular file (${code}); refusing to write events to it`, 'ENOTREGULAR', path);
    }
    throw e;
  }
  const st = fstatSync(fd);
  if (!st.isFile()) {
    closeSync(fd);
    throw new RunFileError(`"${path}" is not a regular file; refusing to write events to it`, 'ENOTREGULAR', path);
  }
  let needsNewline = false;
  if (st.size > 0) {
    const last = Buffer.alloc(1);
    const rfd = openAt(at, basename(path), constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      readSync(rfd, last, 0, 1, st.size - 1);
      needsNewline = last[0] !== 0x0a;
    } finally {
      closeSync(rfd);
    }
  }
  return { fd, dev: st.dev, ino: st.ino, needsNewline };
}

/**
 * True when `path` now names another file than `t` (a restore or sync
 * replaced it). False when it is the same file, or when nothing is there:
 * then the only file to write to is the one already open.
 */
function replacement(at: number, path: string, t: Target): boolean {
  try {
    const now = identityAt(at, basename(path));
    return now !== undefined && (now.ino !== BigInt(t.ino) || now.dev !== BigInt(t.dev));
  } catch {
    return false;
  }
}

/**
 * Opens `path` for appending events of run `runId`. With `at` (a descriptor
 * of the run directory, which the caller keeps open until `close()`), the
 * file is its entry there; without, the writer opens the directory itself
 * (O_NOFOLLOW: a symlink is refused) and closes it on `close()`.
 */
export function openStreamWriter(path: string, runId: string, at?: number): StreamWriter {
  const dirfd = at ?? openDirNoFollow(runDirPath(dirname(path)));
  let t: Target;
  try {
    t = openTarget(dirfd, path);
  } catch (e) {
    if (at === undefined) closeFd(dirfd);
    throw e;
  }
  let open = true;
  return {
    append(fields: EventFields) {
      if (!open) throw new WriteError(`the events of "${path}" were already closed by this leg`, 'ECLOSED', path);
      const { event, ...rest } = fields;
      // Wall clock on purpose: `ts` is a timestamp written for people and other tools (CONTRACT), not a duration.
      const line = JSON.stringify({ schema: EVENT_SCHEMA, ts: new Date().toISOString(), run_id: runId, event, ...compact(rest) });
      const size = Buffer.byteLength(line, 'utf8');
      if (size > MAX_LINE_BYTES) {
        throw new RangeError(`a ${event} event of ${size} bytes is over the stream's 1 MiB line cap; nothing was written (one such line would make the whole stream unreadable)`);
      }
      if (replacement(dirfd, path, t)) {
        const next = openTarget(dirfd, path);
        closeSync(t.fd);
        t = next;
      }
      const bytes = Buffer.from((t.needsNewline ? '\n' : '') + line + '\n', 'utf8');
      const n = writeSync(t.fd, bytes);
      if (n !== bytes.length) throw new WriteError(`short write to "${path}" (${n} of ${bytes.length} bytes)`, 'EWRITE', path);
      t.needsNewline = false;
      fsyncSync(t.fd);
    },
    close() {
      if (!open) return;
      open = false;
      try {
        closeSync(t.fd);
      } finally {
        if (at === undefined) closeFd(dirfd);
      }
    },
  };
}
