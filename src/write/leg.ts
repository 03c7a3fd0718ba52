/**
 * One leg of a run around an arbitrary command (`runwarden exec`): the lock
 * brackets the event stream, and the child's process group is recorded so
 * that, if this leg dies, readers can say whether its child outlived it.
 *
 * Ordering invariant (CONTRACT §4.1): the lock is taken before the first event is
 * appended and released after the last, so no reader ever sees an open leg
 * without a held lock. Callers get the lock released on every path out.
 *
 * The child runs in a process group of its own (so that signals for the
 * child do not hit runwarden, and so the group can be probed later). Its
 * process-group id is written to `exec.pgid` before it can do any work: the
 * child starts as a tiny shell that waits on a pipe, and only after the file
 * is written and synced does runwarden release it to exec the command, in the
 * same process (same pid, same group). The release line carries the leg's
 * mark (kernel/legmark.ts), which the wrapper exports as RUNWARDEN_LEG before
 * it becomes the command, so every descendant carries it even after leaving
 * the group (setsid), and readers can still find it.
 *
 * Windows has no process groups, no POSIX signals and no /bin/sh: there the
 * command is started directly, in runwarden's own console (so a Ctrl-C
 * reaches it as it reaches runwarden, which waits for it to end and records
 * its exit), its pid is recorded in `exec.pgid` once it has started, and a
 * leg that must stop it ends that process alone (TerminateProcess, what
 * Node's `kill` does there). Nothing is forwarded: the console delivers
 * Ctrl-C to both, and there is nothing else to forward.
 */
import { spawn } from 'node:child_process';
import { constants, fstatSync, fsyncSync, mkdirSync, statSync, writeSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Writable } from 'node:stream';
import { NativeError, RunwardenError, WriteError } from '../contract/errors.js';
import { closeFd, errnoCode, openAt, renameAt, runDirPath, unlinkAt } from '../kernel/dirfd.js';
import { EVENTS_FILE, LOCK_FILE, PGID_FILE } from '../contract/files.js';
import { LEG_MARK_VAR, legMark } from '../kernel/legmark.js';
import { isDiskFull, openStreamWriter, type ClosingReserve, type EventFields, type StreamWriter } from './append.js';
import { guardLeg } from './guard.js';
import { acquireLockAt, openLockDir, type AcquireOptions } from '../lock/acquire.js';


/** The signals a leg forwards to its child's group. */
export const FORWARDED_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** Windows: no process groups or POSIX signals, no /bin/sh (see the top of this file). Node's spawn and kill, not the kernel, decide this. */
const NO_PROCESS_GROUPS = process.platform === 'win32';

/** Ends the child's process group (POSIX), or the child alone (Windows). Never throws. */
function killChild(child: { pid?: number; kill(sig?: NodeJS.Signals): boolean }): void {
  try {
    if (NO_PROCESS_GROUPS) child.kill('SIGKILL');
    else if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
  } catch {
    /* already gone */
  }
}

export interface LegOptions {
  runId: string;
  /** The node id for the command (default `command`). */
  nodeId?: string;
  /** Passed to acquireLock. */
  lock?: AcquireOptions;
  /** Called once the child's group is recorded, before it runs. */
  onSpawn?: (pgid: number) => void;
  /** Receives what the leg's guard noticed (default: a `runwarden:` line on stderr). */
  onNotice?: (line: string) => void;
}

export interface LegResult {
  /** The child's exit code, or null if a signal ended it. */
  code: number | null;
  /** The signal that ended the child, or null. */
  signal: NodeJS.Signals | null;
  /** What runwarden should exit with: the code, or 128+N for signal N. */
  exitCode: number;
  /** The child's process group id, when it started. */
  pgid: number | undefined;
  /** The run directory was removed or replaced while the leg ran: its verdict is not where readers look. */
  runDirLost: boolean;
  /**
   * The closing events that could not be written because the disk (or the
   * quota) was full, despite the room kept for them; undefined when all were
   * written. The leg then reads ABANDONED.
   */
  unwritten?: Unwritten;
}

/** What a full disk kept out of the stream (see {@link LegResult.unwritten}). */
export interface Unwritten {
  /** The events not written, in order (`node_passed`, `run_finished`, …). */
  events: string[];
  /** The stream they were for. */
  path: string;
  errno: 'ENOSPC' | 'EDQUOT';
  /** Whether room had been kept for them (false where the filesystem cannot reserve). */
  reserve: ClosingReserve;
}

/**
 * Appends a leg's closing events into the room kept for them. A full disk
 * (ENOSPC, EDQUOT) is answered, not thrown: the leg still ends with its
 * command's status, and the caller says what was lost.
 */
function appendClosing(stream: StreamWriter, path: string, events: EventFields[]): Unwritten | undefined {
  for (let i = 0; i < events.length; i++) {
    try {
      stream.append(events[i] as EventFields, { closing: true });
    } catch (e) {
      if (e instanceof WriteError && isDiskFull(e.errno)) {
        return { events: events.slice(i).map((ev) => ev.event), path, errno: e.errno, reserve: stream.reserve };
      }
      throw e;
    }
  }
  return undefined;
}

// Waits for one line on fd 3 (the leg's mark), exports it, closes fd 3, then becomes the command.
// If runwarden dies before releasing it, read sees EOF and the command never runs.
// A bare name found nowhere on PATH exits 127 (not found), as a shell says: `exec`
// alone exits 126 when PATH also holds a directory this user may not search.
const GATE =
  `IFS= read -r ${LEG_MARK_VAR} <&3 || exit 125; export ${LEG_MARK_VAR}; exec 3<&-; ` +
  'case $1 in */*) ;; *) command -v -- "$1" >/dev/null 2>&1 || { printf \'%s: %s: not found\\n\' "$0" "$1" >&2; exit 127; } ;; esac; ' +
  'exec "$@"';

/**
 * Writes exec.pgid atomically (temp file, fsync, rename), so a reader never
 * sees it empty or half-written.
 */
function writePgid(at: number, pgid: number): void {
  const tmp = `${PGID_FILE}.tmp`;
  try {
    unlinkAt(at, tmp); // a leftover from a leg that died mid-write
  } catch {
    /* not ours to remove (a directory): the exclusive create below says so */
  }
  const fd = openAt(at, tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NONBLOCK, 0o600);
  try {
    try {
      writeSync(fd, `${pgid}\n`);
      fsyncSync(fd);
    } finally {
      closeFd(fd);
    }
    renameAt(at, tmp, PGID_FILE);
  } catch (e) {
    try {
      unlinkAt(at, tmp); // a full disk must not leave a half-made record behind
    } catch {
      /* gone already */
    }
    throw e;
  }
}

/** The kernel's words for an errno, from a Node fs error ("EROFS: read-only file system, mkdir …"), else the code. */
function reasonOf(e: NodeJS.ErrnoException): string {
  const m = /^[A-Z0-9]+: ([^,]+),/.exec(e.message);
  return m ? (m[1] as string) : (e.code ?? String(e));
}

/**
 * Creates the run directory `runDir` and any missing parents (0700), one
 * level at a time, so that a level that cannot be made is reported with the
 * kernel's real reason: Node's recursive mkdir reports ENOENT for a
 * read-only parent (EROFS) and for some permission failures, which reads as
 * "the path is wrong" instead of "this cannot be written".
 *
 * @throws WriteError (`EWRITE`, `.errno` = the errno name, `.path` = the
 * level that failed) when the directory cannot be created or is not one.
 */
export function makeRunDir(runDir: string): void {
  const cannot = (at: string, why: string, errno: string | undefined): WriteError =>
    new WriteError(`cannot create the run directory ${runDir}: ${at === resolve(runDir) ? '' : `${at}: `}${why}${errno ? ` (${errno})` : ''}`, 'EWRITE', at, errno);
  const missing: string[] = [];
  const target = resolve(runDir);
  // The run directory's own name is a shown name (names are bytes: kernel/dirfd.ts); its parents are as given.
  const exact = (p: string): string | Buffer => (p === target ? runDirPath(p) : p);
  for (let p = target; ; ) {
    let st;
    try {
      st = statSync(exact(p));
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      // ENOTDIR: some level above is not a directory; walking up finds and names it.
      if (err.code !== 'ENOENT' && err.code !== 'ENOTDIR') throw cannot(p, reasonOf(err), err.code);
      if (err.code === 'ENOENT') missing.push(p);
      const parent = dirname(p);
      if (parent === p) break;
      p = parent;
      continue;
    }
    if (!st.isDirectory()) throw cannot(p, 'it exists and is not a directory', 'ENOTDIR');
    break;
  }
  for (const p of missing.reverse()) {
    try {
      mkdirSync(exact(p), { mode: 0o700 });
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      if (err.code === 'EEXIST') {
        let isDir = false;
        try {
          isDir = statSync(exact(p)).isDirectory();
        } catch {
          /* judged below */
        }
        if (isDir) continue; // made by someone else meanwhile
      }
      throw cannot(p, reasonOf(err), err.code);
    }
  }
}

/** Removes a previous leg's record, so it can never be read as this leg's. */
function forgetPgid(at: number): void {
  try {
    unlinkAt(at, PGID_FILE);
  } catch {
    /* absent, or not ours to remove (a directory): readers validate it anyway */
  }
}

function signalNumber(sig: NodeJS.Signals): number {
  return (osConstants.signals as Record<string, number>)[sig] ?? 0;
}

/**
 * Runs `argv` as one leg of the run in `runDir` (created, with its parents,
 * if missing: {@link makeRunDir}). Throws (before appending or spawning
 * anything) when the run directory cannot be created or the lock cannot be
 * taken; throws WriteError with `.errno` ENOSPC/EDQUOT, before spawning,
 * when the disk has no room for the opening events beside the room kept for
 * the closing ones (a leg that got as far as `run_started` is closed as
 * failed in that room). Otherwise resolves when the child has ended and the
 * leg is closed in the stream, or with {@link LegResult.unwritten} saying
 * which closing events a full disk kept out.
 */
export async function runLeg(runDir: string, argv: readonly string[], opts: LegOptions): Promise<LegResult> {
  if (argv.length === 0 || argv[0] === '') throw new TypeError('runLeg: a command is required');
  const nodeId = opts.nodeId ?? 'command';
  makeRunDir(runDir);
  // The run directory, opened once without following a link (a symlink is
  // refused): the lock, the events and exec.pgid are all written relative to
  // it, so nothing this leg writes can land outside the runs root.
  const lockPath = join(runDir, LOCK_FILE);
  const at = openRunDirForLeg(runDir, lockPath);
  let lock;
  let stream;
  try {
    lock = acquireLockAt(at, lockPath, opts.lock);
  } catch (e) {
    closeFd(at);
    throw e;
  }
  try {
    stream = openStreamWriter(join(runDir, EVENTS_FILE), opts.runId, at);
  } catch (e) {
    lock.release();
    closeFd(at);
    throw e;
  }
  let pgid: number | undefined;
  let pending: NodeJS.Signals | undefined;
  /** Why the child's group could not be recorded (it is then killed before it runs). */
  let unrecorded: NodeJS.ErrnoException | undefined;
  const handlers = new Map<NodeJS.Signals, () => void>();
  for (const sig of FORWARDED_SIGNALS) {
    // Installed before anything starts, so a signal can never kill runwarden
    // between lock and child and leave a leg open behind it.
    const h = () => {
      if (pgid === undefined) {
        pending ??= sig;
        return;
      }
      // Windows: the console gave the child its Ctrl-C too; runwarden waits for it to end.
      if (NO_PROCESS_GROUPS) return;
      try {
        process.kill(-pgid, sig);
      } catch {
        /* the group is already gone */
      }
    };
    handlers.set(sig, h);
    process.on(sig, h);
  }
  const guard = guardLeg(runDir, lock, opts.onNotice ?? ((line) => process.stderr.write(`runwarden: ${line}\n`)));
  try {
    // The run directory's identity, for the mark its command will carry (kernel/legmark.ts).
    const dirId = fstatSync(at, { bigint: true });
    forgetPgid(at);
    const eventsPath = join(runDir, EVENTS_FILE);
    stream.append({ event: 'run_started', command: [...argv] });
    try {
      stream.append({ event: 'node_started', node_id: nodeId });
    } catch (e) {
      // No room left beyond the kept room: the command never runs, and the
      // leg is closed in that room, so it does not read ABANDONED.
      if (e instanceof WriteError && isDiskFull(e.errno)) {
        appendClosing(stream, eventsPath, [{ event: 'run_finished', outcome: 'failed', detail: `disk full before ${nodeId} could start` }]);
      }
      throw e;
    }

    const child = NO_PROCESS_GROUPS
      ? spawn(argv[0] as string, argv.slice(1), { stdio: 'inherit', windowsHide: true })
      : spawn('/bin/sh', ['-c', GATE, 'runwarden-exec', ...argv], {
          detached: true,
          stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
        });
    const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>((resolve) => {
      child.once('error', (error) => resolve({ code: null, signal: null, error }));
      child.once('exit', (code, signal) => resolve({ code, signal }));
    });
    const gate = (child.stdio[3] ?? null) as Writable | null;
    gate?.on('error', () => {}); // the child may die before reading; its exit says so
    if (child.pid !== undefined) {
      try {
        writePgid(at, child.pid);
      } catch (e) {
        killChild(child);
        pending ??= 'SIGKILL';
        unrecorded = e as NodeJS.ErrnoException;
      }
      if (pending !== undefined) {
        // Never let the command start: close the gate unreleased and end the child.
        gate?.destroy();
        killChild(child);
      } else {
        pgid = child.pid;
        opts.onSpawn?.(pgid);
        gate?.end(`${legMark(dirId.dev, dirId.ino, pgid)}\n`);
      }
    }
    const r = await ended;
    guard.check();

    let closing: EventFields[];
    let result: LegResult;
    if (r.error !== undefined) {
      closing = [
        { event: 'node_failed', node_id: nodeId, verdict: 'FAIL', detail: `could not start: ${r.error.message}` },
        { event: 'run_finished', outcome: 'failed', detail: `${nodeId} could not start` },
      ];
      result = { code: null, signal: null, exitCode: 127, pgid: undefined, runDirLost: guard.runDirLost };
    } else if (r.code === 0) {
      closing = [
        { event: 'node_passed', node_id: nodeId, verdict: 'PASS', detail: 'exit code 0' },
        { event: 'run_finished', outcome: 'passed' },
      ];
      result = { code: 0, signal: null, exitCode: 0, pgid, runDirLost: guard.runDirLost };
    } else if (unrecorded !== undefined) {
      // Not a signal anyone sent: runwarden could not write exec.pgid, so it
      // never let the command start (readers could not judge its group).
      const full = isDiskFull(unrecorded.code);
      const detail = `not run: its process group could not be recorded in ${PGID_FILE} (${full ? `disk full, ${unrecorded.code}` : unrecorded.message})`;
      closing = [
        { event: 'node_failed', node_id: nodeId, verdict: 'FAIL', detail },
        { event: 'run_finished', outcome: 'failed', detail: `${nodeId} ${detail}` },
      ];
      process.stderr.write(`runwarden: ${full ? 'disk full: ' : ''}could not record the command's process group in ${join(runDir, PGID_FILE)}: ${unrecorded.message}; the command was not run\n`);
      result = { code: null, signal: null, exitCode: 1, pgid: undefined, runDirLost: guard.runDirLost };
    } else if (pending !== undefined && pgid === undefined) {
      const detail = `interrupted by ${pending} before it started`;
      closing = [
        { event: 'node_failed', node_id: nodeId, verdict: 'FAIL', detail },
        { event: 'run_finished', outcome: 'failed', detail: `${nodeId}: ${detail}` },
      ];
      result = { code: null, signal: pending, exitCode: 128 + signalNumber(pending), pgid: undefined, runDirLost: guard.runDirLost };
    } else {
      const detail = r.signal ? `signal ${r.signal}` : `exit code ${r.code}`;
      closing = [
        { event: 'node_failed', node_id: nodeId, verdict: 'FAIL', detail },
        { event: 'run_finished', outcome: 'failed', detail: `${nodeId} failed: ${detail}` },
      ];
      const exitCode = r.signal ? 128 + signalNumber(r.signal) : (r.code ?? 1);
      result = { code: r.code, signal: r.signal, exitCode, pgid, runDirLost: guard.runDirLost };
    }
    const unwritten = appendClosing(stream, eventsPath, closing);
    if (unwritten !== undefined) result.unwritten = unwritten;
    return result;
  } finally {
    guard.stop();
    for (const [sig, h] of handlers) process.off(sig, h);
    try {
      stream.close();
      lock.release();
    } finally {
      closeFd(at);
    }
  }
}

/** Opens the run directory for a leg ({@link openLockDir}), with the kernel's refusals as WriteError `EWRITE`. */
function openRunDirForLeg(runDir: string, lockPath: string): number {
  try {
    return openLockDir(lockPath);
  } catch (e) {
    if (e instanceof RunwardenError && !(e instanceof NativeError)) throw e;
    const code = errnoCode(e);
    throw new WriteError(`cannot open the run directory ${runDir}: ${code}`, 'EWRITE', runDir, code);
  }
}
