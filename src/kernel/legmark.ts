/**
 * The exec leg's mark (CONTRACT §4.4, orphan evidence): a process group only
 * holds the processes that stayed in it. A daemon the command started with
 * `setsid` (or anything that called setpgid) leaves the group, and
 * `kill(-pgid, 0)` no longer sees it although it may still be working and
 * spending. So an exec leg also puts a mark in its command's environment,
 * which every descendant inherits whatever group or session it moves to:
 *
 *     RUNWARDEN_LEG=<dev>:<ino>:<pgid>
 *
 * `dev` and `ino` identify the run directory (stat, decimal) and `pgid` is
 * the leg's process group, so the mark names one leg of one run and can be
 * computed by a reader from the run directory and `exec.pgid` alone.
 *
 * A reader on linux looks for the mark in `/proc/<pid>/environ` of every
 * process it may read (its own user's; every process for root). That is
 * evidence, never proof of absence: a descendant started with a cleaned
 * environment (`env -i`, sudo, a service manager) does not carry the mark,
 * and another user's processes cannot be read. Callers word what they say
 * accordingly. Reads /proc only, writes nothing, signals nothing.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { monotonicMs } from './clock.js';
import { native } from './native.js';
import { systemFacts } from './system.js';

/** The environment variable that carries the mark. */
export const LEG_MARK_VAR = 'RUNWARDEN_LEG';

/** The mark of the leg whose run directory has identity (dev, ino) and whose process group is `pgid`. */
export function legMark(dev: number | bigint, ino: number | bigint, pgid: number): string {
  return `${BigInt(dev)}:${BigInt(ino)}:${pgid}`;
}

/** What a search for a mark found. */
export type MarkScan =
  /** /proc was searched: `pids` carry the mark; `unreadable` processes could not be read (another user's). */
  | {
      /** The search ran. */
      kind: 'scanned';
      /** The processes whose environment carries the mark. */
      pids: number[];
      /** How many processes could not be read, so an empty `pids` is not proof that none is left. */
      unreadable: number;
    }
  /** No search was possible (no /proc, or it could not be listed). */
  | {
      /** No search ran: nothing may be concluded from it. */
      kind: 'unavailable';
      /** Why, for a human. */
      detail: string;
    };

interface Census {
  at: number;
  /** mark value → pids carrying it. */
  marks: Map<string, number[]>;
  unreadable: number;
}

/**
 * One census of /proc serves every question asked within this many
 * milliseconds (monotonic), so a dashboard tick over many abandoned exec
 * runs reads /proc once, not once per run.
 */
export const CENSUS_REUSE_MS = 250;

let last: Census | undefined;

const PREFIX = Buffer.from(`${LEG_MARK_VAR}=`, 'latin1');

/** The value of the mark in one environ block, if any. */
function markIn(environ: Buffer): string | undefined {
  let at = 0;
  while (at < environ.length) {
    const end = environ.indexOf(0, at);
    const stop = end === -1 ? environ.length : end;
    if (stop - at > PREFIX.length && environ.compare(PREFIX, 0, PREFIX.length, at, at + PREFIX.length) === 0) {
      return environ.toString('latin1', at + PREFIX.length, stop);
    }
    at = stop + 1;
  }
  return undefined;
}

function census(): Census | { detail: string } {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch (e) {
    return { detail: `/proc: ${(e as NodeJS.ErrnoException).code ?? String(e)}` };
  }
  const marks = new Map<string, number[]>();
  let unreadable = 0;
  for (const name of names) {
    if (!/^[1-9][0-9]*$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue; // a reader is not its own evidence
    let environ: Buffer;
    try {
      environ = readFileSync(`/proc/${name}/environ`);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EACCES' || code === 'EPERM') unreadable++;
      continue; // ENOENT / ESRCH: it exited meanwhile
    }
    const mark = markIn(environ);
    if (mark === undefined) continue;
    const list = marks.get(mark);
    if (list === undefined) marks.set(mark, [pid]);
    else list.push(pid);
  }
  return { at: monotonicMs(), marks, unreadable };
}

/**
 * The processes (other than this one) whose environment carries `mark`,
 * read from /proc. Only where the system has a /proc (src/kernel/system.ts): elsewhere (darwin) the
 * answer is `unavailable`.
 */
export function processesMarked(mark: string): MarkScan {
  if (!systemFacts().procfs) return { kind: 'unavailable', detail: `no /proc on ${native().platform}` };
  if (last === undefined || monotonicMs() - last.at > CENSUS_REUSE_MS) {
    const c = census();
    if (!('marks' in c)) return { kind: 'unavailable', detail: c.detail };
    last = c;
  }
  return { kind: 'scanned', pids: [...(last.marks.get(mark) ?? [])].sort((a, b) => a - b), unreadable: last.unreadable };
}
