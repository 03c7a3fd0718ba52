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
 * - Each append first checks that the path still names the file it writes
 *   to; if a restore or sync replaced it, the writer reopens the path, so
 *   the leg's events land where readers look (CONTRACT §4.5).
 */
import { closeSync, constants, fstatSync, fsyncSync, lstatSync, openSync, readSync, writeSync } from 'node:fs';
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

const FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;

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

/** Opens the stream at `path` for appending, refusing anything but a regular file. */
function openTarget(path: string): Target {
  let fd: number;
  try {
    fd = openSync(path, FLAGS, 0o600);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
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
    const rfd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
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
function replacement(path: string, t: Target): boolean {
  try {
    const now = lstatSync(path);
    return now.ino !== t.ino || now.dev !== t.dev;
  } catch {
    return false;
  }
}

/** Opens `path` for appending events of run `runId`. */
export function openStreamWriter(path: string, runId: string): StreamWriter {
  let t = openTarget(path);
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
      if (replacement(path, t)) {
        const next = openTarget(path);
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
      closeSync(t.fd);
    },
  };
}
