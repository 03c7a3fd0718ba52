/**
 * A leg for library users (CONTRACT §4.1, §2.6, §4.5): what `runwarden exec`
 * does around a command, as calls a Node tool makes around its own work.
 * `startLeg` takes the run's lock and appends `run_started`; `append` adds
 * node and gate events; `finish` appends `run_finished` and releases. A leg
 * finished this way reads PASS, FAIL or PAUSED like an exec leg's; a leg
 * whose process dies, or that is released or disposed without `finish`,
 * reads ABANDONED (its last leg is open and its lock is free).
 *
 * Invariants:
 * - The ordering invariant of CONTRACT §4.1: the lock is taken before
 *   `run_started` is appended and released only after `run_finished` (or,
 *   without a finish, after the last event), so no reader sees an open leg
 *   without a held lock while the leg lives.
 * - Every line goes through the stream writer exec uses (write/append.ts):
 *   one write(2) of one complete line, fsync, the 1 MiB cap, a replaced
 *   events.jsonl followed, and room kept past the end for `run_finished`,
 *   so a disk filled while the leg runs cannot keep its `finish` out.
 * - A leg never writes while it may not own the run: before each event it
 *   checks that the run directory is the one it started in and that the
 *   lock path still names the file it holds. A replaced file is retaken
 *   (as exec's guard does); a removed file, a replaced file another process
 *   holds, or a vanished run directory makes the leg lost: that append and
 *   every later write throw LockLostError (`ELOCKLOST`), and nothing is
 *   written. So a second owner cannot get in unnoticed by the first.
 * - `run_started` and `run_finished` are the leg's own: `append` refuses
 *   them, and refuses lines readers would skip (a node event without a
 *   `node_id`), so what a library leg writes is what readers count.
 */
import { lstatSync } from 'node:fs';
import { runDirPath } from '../kernel/dirfd.js';
import { basename, join, resolve } from 'node:path';
import { LockHeldError, LockLostError, RunwardenError, WriteError, type LockLostReason } from '../contract/errors.js';
import { EVENTS_FILE, LOCK_FILE } from '../contract/files.js';
import { readLastLeg } from '../read/tail.js';
import { acquireLock, acquireLockAsync, type HeldLock } from '../lock/acquire.js';
import { openStreamWriter, type EventFields, type StreamWriter } from './append.js';
import { guardLeg, type LegGuard } from './guard.js';

/** The outcome a leg reports when it finishes (CONTRACT §2.1 `run_finished`). */
export type LegOutcome = 'passed' | 'failed' | 'paused';

/**
 * Where a leg is in its life: `open` (it may append), `finished` (its
 * `run_finished` is written and its lock released), `released` (let go
 * without a finish: readers see ABANDONED), `lost` (it found it no longer
 * owns the run and writes nothing more; release it).
 */
export type LegState = 'open' | 'finished' | 'released' | 'lost';

/**
 * An event a leg appends: one of the node and gate events of CONTRACT §2.1,
 * with its fields. `node_passed` and `node_failed` get `verdict` `PASS` /
 * `FAIL` when it is left out. Fields that are undefined, null, `""` or an
 * empty array are left out of the line. Other fields are written as given
 * (readers pass them through); `schema`, `ts` and `run_id` are filled in.
 */
export type LegEvent =
  | {
      /** A node began running. */
      event: 'node_started';
      /** The node (non-empty; readers drop a node event without one). */
      node_id: string;
      /** The agent session that runs it, when there is one. */
      session_id?: string;
      [field: string]: unknown;
    }
  | {
      /** A node ended well. */
      event: 'node_passed';
      /** The node (non-empty). */
      node_id: string;
      /** Always `PASS`; filled in when left out. */
      verdict?: 'PASS';
      /** A line for a human about how it ended. */
      detail?: string;
      /** What the node cost, in US dollars. */
      cost_usd?: number;
      /** True when the cost is not known (then a run's total is a lower bound). */
      cost_unknown?: boolean;
      /** Token or resource usage, passed through and not interpreted. */
      usage?: unknown;
      [field: string]: unknown;
    }
  | {
      /** A node ended badly. */
      event: 'node_failed';
      /** The node (non-empty). */
      node_id: string;
      /** Always `FAIL`; filled in when left out. */
      verdict?: 'FAIL';
      /** A line for a human about how it ended. */
      detail?: string;
      /** What the node cost, in US dollars. */
      cost_usd?: number;
      /** True when the cost is not known (then a run's total is a lower bound). */
      cost_unknown?: boolean;
      /** Token or resource usage, passed through and not interpreted. */
      usage?: unknown;
      [field: string]: unknown;
    }
  | {
      /** A node is run again after a failure. */
      event: 'node_retried';
      /** The node (non-empty). */
      node_id: string;
      /** How many retries so far. */
      retries?: number;
      [field: string]: unknown;
    }
  | {
      /** A gate stopped for a human (`gate_paused`), or the human's answer. */
      event: 'gate_paused' | 'gate_approved' | 'gate_rejected';
      /** The gate's node (non-empty). */
      node_id: string;
      [field: string]: unknown;
    };

/** The event names {@link Leg.append} takes. */
export const LEG_EVENTS: readonly LegEvent['event'][] = [
  'node_started',
  'node_passed',
  'node_failed',
  'node_retried',
  'gate_paused',
  'gate_approved',
  'gate_rejected',
];

/** Options for {@link startLeg}. */
export interface StartLegOptions {
  /** The `run_id` written into every event (default: the run directory's name). */
  runId?: string;
  /** `planning` opens the leg in the planning phase (status PLANNING) until {@link Leg.endPlanning}. */
  phase?: 'planning';
  /** The pid label written into the lock file (default: this process). */
  pid?: number;
  /** How long to retry a contended lock, blocking (ms, default 100); see `acquireLock`. */
  retryMs?: number;
  /**
   * Start even though the stream shows an open leg and `resume.lock` is
   * missing (a missing lock proves nothing about that leg; CONTRACT §4.1,
   * `exec --force`). Default false: such a start is refused.
   */
  force?: boolean;
  /**
   * Watch the run directory between appends, as an exec leg does (CONTRACT
   * §4.5 rule 3), so a lock file replaced by a restore or sync is retaken at
   * once rather than at the next append (default true). The watch never
   * keeps the process alive.
   */
  guard?: boolean;
  /** Receives one line for each thing the guard noticed (a retake, a removed lock file). Default: nothing. */
  onNotice?: (line: string) => void;
}

/** Options for {@link startLegAsync}: {@link StartLegOptions}, waiting like `acquireLockAsync`. */
export interface StartLegAsyncOptions extends Omit<StartLegOptions, 'retryMs'> {
  /** How long to wait for a contended lock (ms, default 100; `Infinity` until aborted). */
  timeoutMs?: number;
  /** Cancels the wait (`AbortError`, `ABORT_ERR`); nothing is taken or written. */
  signal?: AbortSignal;
}

/**
 * One leg of a run, written by this process. Disposable: `using leg =
 * startLeg(dir)` releases it when the block ends; a leg that was not
 * finished by then reads ABANDONED, exactly like one whose process died.
 */
export interface Leg extends Disposable, AsyncDisposable {
  /** The run directory, absolute. */
  readonly runDir: string;
  /** The `run_id` its events carry. */
  readonly runId: string;
  /** The lock file it holds. */
  readonly lockPath: string;
  /** See {@link LegState}. */
  readonly state: LegState;
  /** How many times the lock was retaken on a replaced lock file. */
  readonly retaken: number;
  /**
   * `kept` while room for `run_finished` is kept past the end of the stream
   * (CONTRACT §2.6: every `append` keeps 16 KiB free after its event, and
   * refuses with `EWRITE`/`ENOSPC` rather than eat into it);
   * `unsupported` where the filesystem cannot reserve space (ramfs, ext2,
   * many FUSE and network filesystems): the leg writes without that room,
   * and a full disk can then keep `finish` from being recorded.
   */
  readonly closingReserve: 'kept' | 'unsupported';
  /**
   * Appends one node or gate event. Checks ownership first (see
   * {@link Leg.check}).
   * @throws LockLostError (`ELOCKLOST`) when the leg no longer owns the run; nothing is written.
   * @throws WriteError `ECLOSED` after finish or release; `EWRITE` when the kernel refused the write,
   *   with `.errno` `ENOSPC`/`EDQUOT` ("disk full") also when the room kept for `run_finished`
   *   could not be kept after this event (nothing is written; `finish` still fits).
   * @throws TypeError / RangeError for an event readers would skip or a line over 1 MiB.
   */
  append(event: LegEvent): void;
  /**
   * Ends the planning phase of a leg started with `phase: 'planning'`: appends
   * the untagged `run_started` of the same leg (CONTRACT §2.3), after which the
   * run reads RUNNING.
   */
  endPlanning(): void;
  /**
   * Appends `run_finished` with `outcome` (and `detail`), then releases the
   * lock. After this the run reads PAUSED for `paused`; PASS for `passed`
   * when it has no snapshot (or every graph node passed), else FAIL.
   * @throws LockLostError when the leg no longer owns the run (nothing written; the lock is still held until release).
   */
  finish(outcome: LegOutcome, detail?: string): void;
  /**
   * Checks now that the leg still owns its run: retakes a replaced lock
   * file, and throws LockLostError (marking the leg `lost`) for a removed
   * lock file, a replaced one another process holds, or a vanished run
   * directory. Writes nothing; two or three lstats.
   */
  check(): void;
  /**
   * Lets go without a finish: stops watching, closes the stream, releases
   * the lock. The last leg stays open, so readers see ABANDONED. Safe to
   * call more than once and after `finish`.
   */
  release(): void;
  /** `release()`, for `using`. */
  [Symbol.dispose](): void;
  /** `release()`, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

const ALLOWED = new Set<string>(LEG_EVENTS);
const FILLED = ['schema', 'ts', 'run_id'] as const;
const STRING_FIELDS = ['phase', 'outcome'] as const;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Refuses, before anything is written, an event readers would skip or misread. */
function validEvent(ev: unknown): EventFields {
  if (!isRecord(ev)) throw new TypeError('append(event): event must be an object such as { event: "node_started", node_id: "build" }');
  const name = ev['event'];
  if (name === 'run_started' || name === 'run_finished') {
    throw new TypeError(`append(event): "${name}" is written by the leg itself (startLeg, endPlanning, finish)`);
  }
  if (typeof name !== 'string' || !ALLOWED.has(name)) {
    throw new TypeError(`append(event): event must be one of ${LEG_EVENTS.join(', ')}; got ${JSON.stringify(name) ?? String(name)}`);
  }
  const id = ev['node_id'];
  if (typeof id !== 'string' || id.length === 0) throw new TypeError(`append(event): a ${name} event needs a non-empty string node_id`);
  for (const f of FILLED) if (f in ev && ev[f] !== undefined) throw new TypeError(`append(event): "${f}" is filled in by the leg; leave it out`);
  for (const f of STRING_FIELDS) {
    const v = ev[f];
    if (v !== undefined && v !== null && typeof v !== 'string') throw new TypeError(`append(event): "${f}" must be a string when present`);
  }
  const fields: EventFields = { ...ev, event: name };
  if (name === 'node_passed' && fields['verdict'] === undefined) fields['verdict'] = 'PASS';
  if (name === 'node_failed' && fields['verdict'] === undefined) fields['verdict'] = 'FAIL';
  return fields;
}

function validOptions(runDir: unknown, opts: StartLegOptions | StartLegAsyncOptions): void {
  if (typeof runDir !== 'string' || runDir.length === 0) throw new TypeError('startLeg(runDir): runDir must be a non-empty string');
  if (opts.runId !== undefined && (typeof opts.runId !== 'string' || opts.runId.length === 0)) throw new TypeError('runId must be a non-empty string');
  if (opts.phase !== undefined && opts.phase !== 'planning') throw new TypeError('phase must be "planning" when given');
}

/** The refusal for an open leg with no lock file, as a code a caller can branch on. */
function lockMissingRefusal(runDir: string, lockPath: string): LockHeldError {
  return new LockHeldError(
    `run ${runDir} has a leg that never reported an end, and no ${LOCK_FILE}: it cannot be told whether that leg is still running ` +
      `(a missing lock is not evidence that it stopped). If you know it is not running, start with { force: true }.`,
    { path: lockPath },
  );
}

/** CONTRACT §4.1 (runwarden): an open last leg with no lock file is refused without `force`. */
function preflight(runDir: string, lockPath: string, force: boolean): void {
  if (force) return;
  // An unreadable stream (StreamError) is no place to append to: it is thrown as it is.
  if (!readLastLeg(join(runDir, EVENTS_FILE)).leg.open) return;
  try {
    lstatSync(lockPath);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw lockMissingRefusal(runDir, lockPath);
  }
}

/** A kernel refusal met while writing, as WriteError `EWRITE` with its errno. */
function writeCoded<T>(path: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof RunwardenError || !(err instanceof Error)) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    if (typeof code !== 'string') throw err;
    throw new WriteError(`cannot write events to "${path}": ${err.message}`, 'EWRITE', path, code);
  }
}

class OpenLeg implements Leg {
  readonly lockPath: string;
  private current: LegState = 'open';
  private lost: LockLostError | undefined;
  private stream: StreamWriter | undefined;
  private guard: LegGuard | undefined;
  private planning: boolean;
  private retakes = 0;
  private lastReserve: 'kept' | 'unsupported' = 'kept';
  private readonly dirIdentity: { dev: bigint; ino: bigint };
  private readonly eventsPath: string;

  constructor(
    readonly runDir: string,
    readonly runId: string,
    private readonly lock: HeldLock,
    opts: StartLegOptions,
  ) {
    this.lockPath = lock.path;
    this.eventsPath = join(runDir, EVENTS_FILE);
    this.planning = opts.phase === 'planning';
    const st = lstatSync(runDirPath(runDir), { bigint: true });
    this.dirIdentity = { dev: st.dev, ino: st.ino };
    try {
      this.stream = writeCoded(this.eventsPath, () => openStreamWriter(this.eventsPath, runId));
      this.write({ event: 'run_started', phase: opts.phase });
    } catch (e) {
      this.stream?.close();
      this.stream = undefined;
      lock.release();
      this.current = 'released';
      throw e;
    }
    if (opts.guard !== false) {
      const notice = opts.onNotice ?? (() => {});
      this.guard = guardLeg(runDir, lock, notice);
    }
  }

  get state(): LegState {
    return this.current;
  }

  get retaken(): number {
    return this.retakes + (this.guard?.retaken ?? 0);
  }

  private loseWith(reason: LockLostReason, message: string): never {
    this.current = 'lost';
    this.lost = new LockLostError(message, this.lockPath, reason);
    throw this.lost;
  }

  check(): void {
    if (this.current === 'lost' && this.lost !== undefined) {
      throw new LockLostError(this.lost.message, this.lockPath, this.lost.reason);
    }
    if (this.current !== 'open') {
      throw new WriteError(`this leg of run ${this.runId} was already ${this.current}; it writes nothing more`, 'ECLOSED', this.eventsPath);
    }
    let dir;
    try {
      dir = lstatSync(runDirPath(this.runDir), { bigint: true });
    } catch {
      dir = undefined;
    }
    if (dir === undefined || dir.dev !== this.dirIdentity.dev || dir.ino !== this.dirIdentity.ino) {
      this.loseWith('run-dir-gone', `the run directory ${this.runDir} was removed or replaced while this leg held it; its events would no longer be where readers look`);
    }
    let state;
    try {
      state = this.lock.retake();
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      this.loseWith('lock-replaced', `${LOCK_FILE} was replaced while this leg held it, and the leg could not take the lock on the new file: ${why}`);
    }
    if (state === 'missing') {
      this.loseWith('lock-missing', `${LOCK_FILE} was removed while this leg held it: another leg could now start beside this one, so this leg writes nothing more`);
    }
    if (state === 'replaced') this.retakes++;
  }

  private write(fields: EventFields, closing = false): void {
    const stream = this.stream;
    if (stream === undefined) throw new WriteError(`this leg of run ${this.runId} is closed`, 'ECLOSED', this.eventsPath);
    writeCoded(this.eventsPath, () => stream.append(fields, { closing }));
  }

  get closingReserve(): 'kept' | 'unsupported' {
    if (this.stream !== undefined) this.lastReserve = this.stream.reserve.state;
    return this.lastReserve;
  }

  append(event: LegEvent): void {
    const fields = validEvent(event);
    this.check();
    this.write(fields);
  }

  endPlanning(): void {
    if (!this.planning) throw new RangeError('endPlanning(): this leg is not in its planning phase');
    this.check();
    this.write({ event: 'run_started' });
    this.planning = false;
  }

  finish(outcome: LegOutcome, detail?: string): void {
    if (outcome !== 'passed' && outcome !== 'failed' && outcome !== 'paused') throw new TypeError('finish(outcome): outcome must be "passed", "failed" or "paused"');
    if (detail !== undefined && typeof detail !== 'string') throw new TypeError('finish(outcome, detail): detail must be a string');
    this.check();
    try {
      this.write({ event: 'run_finished', outcome, detail }, true);
    } catch (e) {
      this.release();
      throw e;
    }
    this.close('finished');
  }

  release(): void {
    if (this.current === 'finished' || this.current === 'released') return;
    this.close('released');
  }

  private close(next: 'finished' | 'released'): void {
    if (this.guard !== undefined) {
      this.guard.stop();
      this.retakes += this.guard.retaken;
      this.guard = undefined;
    }
    if (this.stream !== undefined) this.lastReserve = this.stream.reserve.state;
    try {
      this.stream?.close();
    } finally {
      this.stream = undefined;
      this.current = next;
      this.lock.release();
    }
  }

  [Symbol.dispose](): void {
    this.release();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.release();
  }
}

function target(runDir: string, opts: StartLegOptions | StartLegAsyncOptions): { dir: string; runId: string; lockPath: string } {
  validOptions(runDir, opts);
  const dir = resolve(runDir);
  return { dir, runId: opts.runId ?? basename(dir), lockPath: join(dir, LOCK_FILE) };
}

/**
 * Starts a leg of the run in `runDir` (created 0700 if missing): takes its
 * lock like `acquireLock` (blocking for at most `retryMs`), then appends
 * `run_started`. From here until `finish` or `release`, every reader sees
 * the run in flight.
 *
 * @throws LockHeldError (`ELOCKHELD`) when another leg holds the run, or the
 *   stream shows an open leg and `resume.lock` is missing (without `force`).
 * @throws LockFileError, StreamError, WriteError, UnsupportedPlatformError as their codes say; nothing is left held.
 */
export function startLeg(runDir: string, options: StartLegOptions = {}): Leg {
  const { dir, runId, lockPath } = target(runDir, options);
  preflight(dir, lockPath, options.force === true);
  const lock = acquireLock(lockPath, {
    ...(options.retryMs === undefined ? {} : { retryMs: options.retryMs }),
    ...(options.pid === undefined ? {} : { pid: options.pid }),
  });
  return new OpenLeg(dir, runId, lock, options);
}

/**
 * {@link startLeg} without blocking the event loop: waits for a contended
 * lock like `acquireLockAsync` (`timeoutMs`, `signal`).
 *
 * @throws AbortError (`ABORT_ERR`) when `signal` aborts the wait; nothing is taken or written.
 */
export async function startLegAsync(runDir: string, options: StartLegAsyncOptions = {}): Promise<Leg> {
  const { dir, runId, lockPath } = target(runDir, options);
  preflight(dir, lockPath, options.force === true);
  const lock = await acquireLockAsync(lockPath, {
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    ...(options.pid === undefined ? {} : { pid: options.pid }),
  });
  return new OpenLeg(dir, runId, lock, options);
}
