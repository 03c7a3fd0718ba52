/**
 * Reading the stream forward (CONTRACT §2.2–§2.4): {@link readStream} folds
 * the whole file, in bounded chunks, and is the reference every other reader
 * must agree with (see tail.ts for the reader from the end).
 *
 * Never more than one line (at most 1 MiB) plus one read chunk is held; the
 * file is opened read-only, non-blocking, without following a symlink, and
 * only a regular file is read (kernel/open.ts).
 */
import { RunFileError, StreamError } from '../contract/errors.js';
import { StreamFold, type FoldOptions } from '../contract/fold.js';
import type { StreamFacts } from '../contract/types.js';
import { basename } from 'node:path';
import { closeQuietly, openForRead, openForReadAt, readAt, type OpenFile } from '../kernel/open.js';
import { foldLines, LineSplitter, type FoldHooks } from './lines.js';

const DEFAULT_CHUNK = 64 * 1024;

/** A kernel or file-kind failure on the stream, as the stream error it is. */
export function asStreamError(err: unknown, path: string): unknown {
  if (err instanceof RunFileError) return new StreamError(err.message, err.code, path, undefined, err.errno);
  return err;
}

/**
 * Opens the stream for reading; undefined when there is none. Throws
 * StreamError. With `at` (a descriptor of the run directory, kernel/dirfd.ts)
 * the file is opened relative to it and `path` only names it in messages.
 */
export function openStream(path: string, at?: number): OpenFile | undefined {
  try {
    return at === undefined ? openForRead(path, 'events.jsonl') : openForReadAt(at, basename(path), 'events.jsonl', path);
  } catch (err) {
    throw asStreamError(err, path);
  }
}

/** Reads `length` bytes at `position` (fewer at end of file). Throws StreamError. */
export function readStreamBytes(fd: number, buf: Buffer, length: number, position: number, path: string): number {
  try {
    return readAt(fd, buf, 0, length, position, 'events.jsonl', path);
  } catch (err) {
    throw asStreamError(err, path);
  }
}

/** An append-only file cannot shrink; if it did, nothing read from it can be trusted. */
export function shrank(path: string): StreamError {
  return new StreamError('events.jsonl shrank while it was being read (it should only ever grow)', 'EREAD', path);
}

/**
 * A computation that reads a file and may pause between reads: it yields
 * after each read, and returns its answer. Driven to the end at once by the
 * synchronous readers, a few reads per turn by the live engine.
 */
export type Steps<T> = Generator<void, T, void>;

/**
 * Folds bytes `[from, to)` of an open stream into `fold`, in chunks of
 * `chunkBytes`. With `to` undefined it reads to the end of the file as it is
 * while reading (a live stream may grow). A final line without `\n` counts.
 */
export function foldRange(fd: number, path: string, fold: StreamFold, from: number, to: number | undefined, chunkBytes: number, hooks: FoldHooks = {}): void {
  const steps = foldRangeSteps(fd, path, fold, from, to, chunkBytes, hooks);
  while (steps.next().done !== true);
}

/** {@link foldRange}, pausing after each chunk read; `onRead` is told the bytes of each read. */
export function* foldRangeSteps(fd: number, path: string, fold: StreamFold, from: number, to: number | undefined, chunkBytes: number, hooks: FoldHooks = {}, onRead?: (bytes: number) => void): Steps<void> {
  const chunk = Buffer.allocUnsafe(chunkBytes);
  // Without a per-line skip hook, lines that cannot be events are counted in bulk (lines.ts).
  const junk = hooks.onSkip === undefined ? (count: number) => fold.skip(count) : undefined;
  const lines = new LineSplitter(path, foldLines(fold, path, hooks), from, junk);
  let pos = from;
  for (;;) {
    const want = to === undefined ? chunkBytes : Math.min(chunkBytes, to - pos);
    if (want <= 0) break;
    const n = readStreamBytes(fd, chunk, want, pos, path);
    if (n === 0) {
      if (to !== undefined && pos < to) throw shrank(path);
      break;
    }
    onRead?.(n);
    lines.push(chunk.subarray(0, n), pos);
    pos += n;
    yield;
  }
  lines.end();
}

/** Options for {@link readStream}. */
export interface ReadStreamOptions extends FoldHooks, FoldOptions {
  /** Read size in bytes (default 64 KiB). A test seam for chunk boundaries. */
  chunkBytes?: number;
  /** A descriptor of the run directory: the stream is opened relative to it (kernel/dirfd.ts). */
  at?: number;
}

/**
 * Reads the stream at `eventsPath` forward and folds every line: the last
 * leg, every node's state, every skipped line. A missing file means "no
 * legs". Throws StreamError when the stream cannot be read (over-long line,
 * newer schema, not a regular file, I/O).
 */
export function readStream(eventsPath: string, options: ReadStreamOptions = {}): StreamFacts {
  return foldStream(eventsPath, options).facts();
}

/** {@link readStream}, returning the fold itself (for callers that want its leg history). */
export function foldStream(eventsPath: string, options: ReadStreamOptions = {}): StreamFold {
  const chunkBytes = Math.max(1, Math.floor(options.chunkBytes ?? DEFAULT_CHUNK));
  const fold = new StreamFold(options);
  const file = openStream(eventsPath, options.at);
  if (file === undefined) return fold;
  try {
    foldRange(file.fd, eventsPath, fold, 0, undefined, chunkBytes, options);
  } finally {
    closeQuietly(file.fd);
  }
  return fold;
}
