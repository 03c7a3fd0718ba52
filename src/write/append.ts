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
 * - The closing events of a leg cannot be crowded out by a full disk
 *   (CONTRACT §2.6): before any other event is written, the writer
 *   reserves {@link CLOSING_RESERVE_BYTES} past where that event will end
 *   (`fallocate` keeping the size), so between appends the bytes after the
 *   end of the file are always allocated. A closing append writes into that
 *   room and reserves nothing. When the room cannot be kept (ENOSPC,
 *   EDQUOT), the event is refused before anything is written, so what the
 *   disk has left still goes to the verdict. A filesystem that cannot
 *   reserve at all is written to without the room, quietly.
 * - A write the kernel cuts short is continued; when the rest cannot be
 *   written, the error names the kernel's reason ("disk full" for ENOSPC and
 *   EDQUOT), and the fragment left behind is ended by the next append's
 *   leading newline.
 */
import { constants, fstatSync, fsyncSync, ftruncateSync, readSync, writeSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { closeFd, errnoCode, identityAt, openAt, openDirNoFollow, runDirPath } from '../kernel/dirfd.js';
import { RunFileError, WriteError } from '../contract/errors.js';
import { MAX_LINE_BYTES, STREAM_SCHEMA } from '../contract/events.js';
import { reserveSpace } from '../kernel/reserve.js';

/** The schema version runwarden writes: the one it reads (CONTRACT §2.2). */
export const EVENT_SCHEMA = STREAM_SCHEMA;

/** An event to append; `schema`, `ts` and `run_id` are filled in. */
export type EventFields = { event: string } & Record<string, unknown>;

/**
 * The room kept after the end of the stream for a leg's closing events:
 * 16 KiB. What it must hold: exec's closing pair (`node_passed` or
 * `node_failed`, then `run_finished`) is two lines of about 150 bytes plus
 * the run id (a directory name, at most 255 bytes) and the node id, each
 * written twice; even a 255-byte run id and node id made entirely of
 * control characters (six bytes each once escaped in JSON) come to about
 * 8 KiB, and a library leg's `run_finished` is one line. 16 KiB is that
 * worst case twice over; filesystems allocate whole blocks, so it is four
 * 4 KiB blocks (one 64 KiB block where blocks are that large), small
 * enough to be kept even on a nearly full or tiny filesystem. A closing
 * event larger than the room (a `finish` detail of many KiB) is written
 * into it and may still meet a full disk.
 */
export const CLOSING_RESERVE_BYTES = 16 * 1024;

/** Whether the writer keeps room for the closing events: `kept`, or `unsupported` (and the kernel's reason). */
export type ClosingReserve = { readonly state: 'kept' } | { readonly state: 'unsupported'; readonly why: string };

export interface StreamWriter {
  /**
   * Appends one event. `closing: true` marks a leg's closing event
   * (`node_passed`/`node_failed` of exec's command, `run_finished`): it is
   * written into the kept room and reserves nothing more.
   * @throws WriteError `EWRITE` with `.errno` `ENOSPC`/`EDQUOT` ("disk full")
   *   when the event, or for a non-closing event the room after it, does not fit.
   */
  append(fields: EventFields, opts?: { closing?: boolean }): void;
  /** Whether room is being kept on the file now written to. */
  readonly reserve: ClosingReserve;
  /** Closes the file, giving back the room kept past its end. */
  close(): void;
}

/** The kernel's "no room": ENOSPC, and EDQUOT (the user's quota, not the disk, is full). */
export function isDiskFull(errno: string | undefined): errno is 'ENOSPC' | 'EDQUOT' {
  return errno === 'ENOSPC' || errno === 'EDQUOT';
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
  /** Room is kept past the end of this file (until a reservation is refused as unsupported). */
  reserve: ClosingReserve;
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
    closeFd(fd);
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
      closeFd(rfd);
    }
  }
  return { fd, dev: st.dev, ino: st.ino, needsNewline, reserve: { state: 'kept' } };
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

/** A kernel refusal while writing `event`, as WriteError `EWRITE`; ENOSPC and EDQUOT say "disk full". */
function writeFailure(path: string, event: string, e: unknown, after: string): WriteError {
  const code = (e as NodeJS.ErrnoException).code;
  if (isDiskFull(code)) {
    const what = code === 'EDQUOT' ? 'disk quota exceeded' : 'no space left on the device';
    return new WriteError(`disk full: could not write the ${event} event to "${path}" (${code}: ${what})${after}`, 'EWRITE', path, code);
  }
  return new WriteError(`could not write the ${event} event to "${path}": ${(e as Error).message}${after}`, 'EWRITE', path, code);
}

/**
 * Keeps {@link CLOSING_RESERVE_BYTES} allocated after byte `end` of `t`.
 * Returns the refusal (ENOSPC, EDQUOT) when there is no room; a filesystem
 * that cannot reserve turns reserving off for this file.
 */
function keepRoom(t: Target, end: number): 'ENOSPC' | 'EDQUOT' | undefined {
  if (t.reserve.state !== 'kept') return undefined;
  const r = reserveSpace(t.fd, end, CLOSING_RESERVE_BYTES);
  if (r.outcome === 'unsupported') t.reserve = { state: 'unsupported', why: r.why };
  return r.outcome === 'ENOSPC' || r.outcome === 'EDQUOT' ? r.outcome : undefined;
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
    append(fields: EventFields, opts: { closing?: boolean } = {}) {
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
        closeFd(t.fd);
        t = next;
      }
      const bytes = Buffer.from((t.needsNewline ? '\n' : '') + line + '\n', 'utf8');
      if (opts.closing !== true) {
        const refused = keepRoom(t, fstatSync(t.fd).size + bytes.length);
        if (refused !== undefined) {
          throw writeFailure(path, event, { code: refused, message: refused }, `; nothing was written, so the room kept for this leg's closing events stays free`);
        }
      }
      let done = 0;
      while (done < bytes.length) {
        let n;
        try {
          n = writeSync(t.fd, bytes, done);
        } catch (e) {
          if (done > 0) t.needsNewline = true;
          throw writeFailure(path, event, e, done > 0 ? ` (${done} of ${bytes.length} bytes written)` : '');
        }
        if (n <= 0) {
          if (done > 0) t.needsNewline = true;
          throw new WriteError(`short write to "${path}" (${done} of ${bytes.length} bytes of the ${event} event)`, 'EWRITE', path);
        }
        done += n;
      }
      t.needsNewline = false;
      try {
        fsyncSync(t.fd);
      } catch (e) {
        throw writeFailure(path, event, e, ' (the line was written but could not be synced)');
      }
    },
    get reserve() {
      return t.reserve;
    },
    close() {
      if (!open) return;
      open = false;
      try {
        // Gives back the room past the end (a truncate to the same size frees
        // preallocated blocks beyond it on linux filesystems); only the lock
        // holder writes here, so the size read is the end of the stream.
        if (t.reserve.state === 'kept') ftruncateSync(t.fd, fstatSync(t.fd).size);
      } catch {
        /* the room stays allocated; the stream is unchanged either way */
      } finally {
        closeFd(t.fd);
        if (at === undefined) closeFd(dirfd);
      }
    },
  };
}
