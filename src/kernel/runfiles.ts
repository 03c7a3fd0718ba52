/**
 * A run directory's two files in one crossing into the addon
 * (native/runfiles.cc): the directory opened without following a link, the
 * stream's last bytes and the snapshot read relative to it, with the same
 * system calls and flags as kernel/dirfd.ts and kernel/open.ts use one at a
 * time. Listing a root inspects every run, and call by call the crossings
 * and Stats objects cost several times the system calls themselves.
 *
 * Invariants, and why:
 * - Facts only. A file that is there and regular is `read`; one whose open
 *   answered ENOENT or ENOTDIR is `absent` (as openForReadAt answers
 *   undefined: for a run's files absence is a fact); anything else (a
 *   symlink, a FIFO, a refused open, a failed read, a snapshot larger than
 *   the buffer) is `other`, and the caller takes the call-by-call path for
 *   that file, which words the error the one way every reader words it (the
 *   same file is then opened once more; these are the rare cases).
 * - Descriptors: the run directory's is returned open (the caller probes the
 *   lock through it and closes it); the stream's is kept open only when the
 *   stream is longer than the tail buffer (`fd` >= 0; the caller reads
 *   further back through it and closes it). All others are closed in C++.
 * - The buffers are reused by the next call: read them before making it.
 *   Each thread has its own (a module instance per thread).
 *
 * Internal to runwarden (not exported from the package).
 */
import { constants } from 'node:os';
import type { KernelPath } from './dirfd.js';
import { native, type RunFilesLayout } from './native.js';

const ENOENT = constants.errno.ENOENT;
const ENOTDIR = constants.errno.ENOTDIR;

/** One file as the addon found it. */
export type RunFileFacts =
  | {
      kind: 'read';
      /** The bytes read: `buf[0, bytes)` are the file's bytes from offset `at`. Reused by the next call. */
      buf: Buffer;
      bytes: number;
      at: number;
      size: number;
      dev: number;
      ino: number;
      mtimeMs: number;
      ctimeMs: number;
      /** The file's descriptor, left open (the stream longer than the tail buffer), or -1. */
      fd: number;
    }
  | { kind: 'absent' }
  | { kind: 'other' };

/** What {@link RunFilesReader.read} found. */
export interface RunDirFacts {
  /** The run directory's descriptor, open (the caller closes it), or -1 when it could not be opened. */
  dirfd: number;
  /** Why the directory could not be opened (an errno number), or 0. */
  dirErrno: number;
  events: RunFileFacts;
  state: RunFileFacts;
}

const ABSENT: RunFileFacts = Object.freeze({ kind: 'absent' });
const OTHER: RunFileFacts = Object.freeze({ kind: 'other' });

/** Reads run directories' stream tails and snapshots, one crossing each, into buffers of fixed sizes. */
export class RunFilesReader {
  private handle: unknown;
  private readonly out: Float64Array;
  private readonly tail: Buffer;
  private readonly snap: Buffer;
  private readonly layout: RunFilesLayout;

  /**
   * `events` and `state` are the entries read; the stream's last
   * `tailBytes` are read, and a snapshot of up to `snapshotBytes - 1` bytes.
   * Throws when the addon has no runFiles (an addon built from older
   * sources): see {@link RunFilesReader.available}.
   */
  constructor(events: string, state: string, tailBytes: number, snapshotBytes: number) {
    const n = native();
    this.layout = n.runFilesLayout;
    this.out = new Float64Array(this.layout.outLength);
    this.tail = Buffer.alloc(tailBytes);
    this.snap = Buffer.alloc(snapshotBytes);
    this.handle = n.runFilesSetup(events, state, this.tail, this.snap, this.out);
  }

  /** Whether the loaded addon reads run files in one crossing. */
  static available(): boolean {
    const n = native();
    return typeof n.runFiles === 'function' && typeof n.runFilesSetup === 'function' && typeof n.runFilesLayout === 'object';
  }

  /** Opens the run directory at `path` and reads both files. Throws only for a bad argument (a path with NUL, too long). */
  read(path: KernelPath): RunDirFacts {
    const L = this.layout;
    const dirfd = native().runFiles(this.handle, path, 3);
    if (dirfd < 0) return { dirfd: -1, dirErrno: this.out[L.dirErrno] as number, events: OTHER, state: OTHER };
    return { dirfd, dirErrno: 0, events: this.file(0, this.tail), state: this.file(1, this.snap) };
  }

  private file(which: number, buf: Buffer): RunFileFacts {
    const L = this.layout;
    const o = this.out;
    const b = L.fileBase + which * L.fileSlots;
    const status = o[b + L.slot.status];
    if (status === L.status.Read) {
      return {
        kind: 'read',
        buf,
        bytes: o[b + L.slot.bytes] as number,
        at: o[b + L.slot.at] as number,
        size: o[b + L.slot.size] as number,
        dev: o[b + L.slot.dev] as number,
        ino: o[b + L.slot.ino] as number,
        mtimeMs: o[b + L.slot.mtimeMs] as number,
        ctimeMs: o[b + L.slot.ctimeMs] as number,
        fd: o[b + L.slot.fd] as number,
      };
    }
    if (status === L.status.OpenFailed) {
      const err = o[b + L.slot.errnum];
      if (err === ENOENT || err === ENOTDIR) return ABSENT;
    }
    return OTHER;
  }
}
