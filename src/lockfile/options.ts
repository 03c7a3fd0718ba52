/**
 * proper-lockfile 4.x's options, read as it reads them (its lib/lockfile.js
 * and lib/adapter.js; node-retry 0.12 for `retries`), so the same object means
 * the same thing here: the defaults, the clamps (`stale` at least 2000 ms,
 * `update` between 1000 ms and `stale / 2`), `retries` as a number or as
 * node-retry's options, and the sync calls refusing retries (`ESYNC`).
 *
 * What differs is only what the values govern (docs/lockfile.md): `stale`
 * judges lock directories that no live runwarden holder owns (proper-lockfile
 * processes' and dead holders' on filesystems without a kernel lock), and
 * `update` is how often the holder's thread refreshes the directory's mtime
 * for those processes; neither can make a runwarden holder lose its lock.
 */
import * as nodeFs from 'node:fs';
import { ProperLockfileError } from '../contract/errors.js';

/** node-retry's options, as `retries` takes them (compatible with @types/retry's OperationOptions). */
export interface RetryOptions {
  /** How many times to retry after the first attempt (default 10 when an object is given). */
  retries?: number | undefined;
  /** The exponential factor between waits (default 2). */
  factor?: number | undefined;
  /** The first wait, in ms (default 1000). */
  minTimeout?: number | undefined;
  /** The longest wait, in ms (default Infinity). */
  maxTimeout?: number | undefined;
  /** Multiply each wait by a random factor from 1 to 2 (default false). */
  randomize?: boolean | undefined;
  /** Retry forever, the waits starting over once used up (default false). */
  forever?: boolean | undefined;
  /** Unref the retry timers (default false). */
  unref?: boolean | undefined;
  /** Give up once this many ms have passed since the first attempt (default Infinity). */
  maxRetryTime?: number | undefined;
}

/** A callback-style `fs`, as proper-lockfile's `fs` option is; runwarden calls only its `realpath` (and `realpathSync` from the sync calls). */
type RealpathFs = {
  realpath?: (path: string, callback: (err: NodeJS.ErrnoException | null, resolved?: string) => void) => void;
  realpathSync?: (path: string) => string;
};

/** The options every call takes. */
export interface CommonOptions {
  /**
   * Resolve `file` with `fs.realpath` first (default true), so links to one
   * file share one lock; the file must then exist (ENOENT otherwise).
   */
  realpath?: boolean | undefined;
  /**
   * proper-lockfile's `fs` option. runwarden uses it for `realpath` only
   * (`realpathSync` in the sync calls); the lock itself is taken with the
   * kernel's calls (docs/lockfile.md, "What differs").
   */
  fs?: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- @types/proper-lockfile's type, kept so its options are assignable
  /** The lock directory (default `${file}.lock`). */
  lockfilePath?: string | undefined;
}

/** Options of `lock` and `lockSync` (@types/proper-lockfile's LockOptions). */
export interface LockOptions extends CommonOptions {
  /**
   * After how many ms a lock directory that no live runwarden holder owns
   * counts as abandoned (default 10000, at least 2000), judged by its mtime
   * as proper-lockfile judges it. A runwarden holder's lock is never stale.
   */
  stale?: number | undefined;
  /**
   * How often the holder's thread refreshes the lock directory's mtime, for
   * proper-lockfile processes (default `stale / 2`, from 1000 to `stale / 2`).
   */
  update?: number | undefined;
  /** How many times to try again, and when (node-retry's options); default 0. The sync calls refuse any. */
  retries?: number | RetryOptions | undefined;
  /**
   * Called when the lock is lost: its lock directory or runwarden's sidecar
   * file removed or replaced by someone else. Default: throws the error
   * (`ECOMPROMISED`), which ends the process unless it is caught.
   */
  onCompromised?: ((err: Error) => any) | undefined; // eslint-disable-line @typescript-eslint/no-explicit-any -- as @types/proper-lockfile
}

/** Options of `unlock` and `unlockSync`. */
export type UnlockOptions = CommonOptions;

/** Options of `check` and `checkSync`. */
export interface CheckOptions extends CommonOptions {
  /** As {@link LockOptions.stale}: how old a lock directory no live runwarden holder owns may be and still count as held. */
  stale?: number | undefined;
}

/** Options after defaults and clamps. */
export interface ResolvedLockOptions {
  readonly stale: number;
  readonly update: number;
  readonly realpath: boolean;
  readonly retries: RetryOptions | readonly number[];
  readonly fs: RealpathFs;
  readonly onCompromised: (err: Error) => unknown;
  readonly lockfilePath: string | undefined;
}

const STALE_DEFAULT = 10_000;
const STALE_MIN = 2000;
const UPDATE_MIN = 1000;

function rethrow(err: Error): never {
  throw err;
}

/**
 * `stale` as proper-lockfile reads it: its default is spread under the
 * caller's options, so only an absent key takes it (an explicit undefined,
 * like false or 0, is clamped up to 2000).
 */
export function staleOf(options: { stale?: unknown } | undefined): number {
  const stale = options !== undefined && 'stale' in options ? options.stale : STALE_DEFAULT;
  return Math.max(Number(stale) || 0, STALE_MIN);
}

/** `realpath` as proper-lockfile reads it (default true for an absent key only). */
export function realpathOf(options: { realpath?: unknown } | undefined): boolean {
  return options !== undefined && 'realpath' in options ? Boolean(options.realpath) : true;
}

/** The options of `lock` with proper-lockfile's defaults and clamps. */
export function lockOptions(options: LockOptions | undefined): ResolvedLockOptions {
  const o = { ...options };
  const stale = staleOf(options);
  const raw = o.update == null ? stale / 2 : Number(o.update) || 0;
  const update = Math.max(Math.min(raw, stale / 2), UPDATE_MIN);
  const retries = o.retries || 0;
  return {
    stale,
    update,
    realpath: realpathOf(options),
    retries: typeof retries === 'number' ? { retries } : retries,
    fs: (o.fs as RealpathFs | undefined) ?? nodeFs,
    onCompromised: o.onCompromised ?? rethrow,
    lockfilePath: o.lockfilePath,
  };
}

/** The sync calls' refusal of retries (proper-lockfile's adapter). */
export function refuseRetries(options: LockOptions | undefined): void {
  const r = options?.retries;
  if ((typeof r === 'number' && r > 0) || (r !== null && typeof r === 'object' && !Array.isArray(r) && typeof r.retries === 'number' && r.retries > 0)) {
    throw new ProperLockfileError('Cannot use retries with the sync api', 'ESYNC');
  }
}

function isWaitList(r: RetryOptions | readonly number[]): r is readonly number[] {
  return Array.isArray(r);
}

/**
 * The waits between attempts, as node-retry 0.12's `timeouts()` computes
 * them: `minTimeout × factor^i` (times 1–2 when randomized), capped at
 * `maxTimeout`, ascending; an array is taken as the waits themselves.
 */
export function retryWaits(r: RetryOptions | readonly number[]): number[] {
  if (isWaitList(r)) return [...r];
  const o = { retries: 10, factor: 2, minTimeout: 1000, maxTimeout: Infinity, randomize: false, ...stripUndefined(r) };
  if (o.minTimeout > o.maxTimeout) throw new Error('minTimeout is greater than maxTimeout');
  const waits: number[] = [];
  const one = (i: number): number => Math.min(Math.round((o.randomize ? Math.random() + 1 : 1) * Math.max(o.minTimeout, 1) * Math.pow(o.factor, i)), o.maxTimeout);
  let i = 0;
  for (; i < o.retries; i++) waits.push(one(i));
  if ((r).forever && waits.length === 0) waits.push(one(i));
  return waits.sort((a, b) => a - b);
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * node-retry's choice of the error to report after the last attempt: the
 * one whose message came up most often, the latest among equals.
 */
export function mainError(errors: readonly Error[]): Error | undefined {
  const counts = new Map<string, number>();
  let main: Error | undefined;
  let best = 0;
  for (const e of errors) {
    const n = (counts.get(e.message) ?? 0) + 1;
    counts.set(e.message, n);
    if (n >= best) {
      main = e;
      best = n;
    }
  }
  return main;
}
