/**
 * Turning a command line's RUN and --root into a run directory (CONTRACT
 * §1.1), with bad ids and roots reported as usage errors (exit 2), never as
 * stack traces. Shared by every command that takes a RUN or a root.
 */
import { lstatSync, realpathSync } from 'node:fs';
import { runDirPath } from '../kernel/dirfd.js';
import { basename } from 'node:path';
import { InvalidArgumentError } from 'commander';
import { RunIdError } from '../contract/errors.js';
import { isRunPath, resolveRoot, resolveRunArg } from '../contract/runid.js';
import { listRuns, type RunList } from '../status/list.js';
import { parseLimit, parseStatusFilter, type RunSelection } from '../status/select.js';
import { UserError } from './io.js';

/** Runs `f`, turning a RunIdError into a user error (exit 2). */
export function asUsage<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof RunIdError) throw new UserError(e.message);
    throw e;
  }
}

/** {@link asUsage} for a promise. */
export async function asUsageAsync<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    if (e instanceof RunIdError) throw new UserError(e.message);
    throw e;
  }
}

/** The root from `--root` or the environment, with a bad `--root` as a user error. */
export function rootFrom(option: string | undefined): string {
  return asUsage(() => resolveRoot(option));
}

/** listRuns with library errors turned into user errors (exit 2). */
export function listRunsOrExplain(root: string, select?: RunSelection): RunList {
  return asUsage(() => listRuns(root, select === undefined ? {} : { select }));
}

/**
 * An option parser for commander that refuses a second occurrence of
 * `flag` (a usage error, exit 2): `runs --limit 1 --limit 2` is refused, as
 * `/api/runs?limit=1&limit=2` is (400), so the two never disagree about
 * which one counts.
 */
export function once(flag: string): (value: string, previous: string | undefined) => string {
  return (value, previous) => {
    if (previous !== undefined) throw new InvalidArgumentError(`${flag} is given more than once; give it once`);
    return value;
  };
}

/** The selection flags `runs` takes, parsed; a bad value is a usage error (exit 2). */
export function selectionFrom(opts: { status?: string; graph?: string; id?: string; before?: string; limit?: string }): RunSelection | undefined {
  const sel: RunSelection = {};
  try {
    if (opts.status !== undefined) sel.status = parseStatusFilter(opts.status);
    if (opts.limit !== undefined) sel.limit = parseLimit(opts.limit);
  } catch (e) {
    throw new UserError(e instanceof Error ? e.message : String(e));
  }
  if (opts.graph !== undefined) sel.graph = opts.graph;
  if (opts.id !== undefined) sel.id = opts.id;
  if (opts.before !== undefined) sel.before = opts.before;
  return Object.keys(sel).length === 0 ? undefined : sel;
}

/**
 * The run directory RUN names, checked to exist and be a directory. A RUN
 * that is a path (contract/runid.ts isRunPath: a "/"; on Windows a drive letter or a backslash) is used as given; otherwise an id under `root`, where a
 * symlink is refused as `runs` refuses it.
 */
export function runDirFromArg(run: string, root: string): string {
  let dir = asUsage(() => resolveRunArg(run, root));
  const explicit = isRunPath(run);
  try {
    // A path given as one is the user's own: a link there is resolved once, here,
    // and every later read opens the real directory without following links.
    if (explicit && lstatSync(runDirPath(dir)).isSymbolicLink()) dir = realpathSync(dir);
    const st = lstatSync(runDirPath(dir));
    if (st.isSymbolicLink()) throw new UserError(`run "${run}" under ${root} is a symlink; links under the runs root are not followed`);
    if (!st.isDirectory()) throw new UserError(explicit ? `${dir} is not a directory` : `run "${run}" under ${root} is not a directory`);
  } catch (e) {
    if (e instanceof UserError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new UserError(explicit ? `no run directory at ${dir}` : `no run "${run}" under ${root}`);
    throw new UserError(`cannot read ${dir}: ${code ?? String(e)}`);
  }
  return dir;
}

/** A RUN given as a path (isRunPath) that is a symlink, resolved once (the user's own link); anything else as it is. */
function explicitResolved(run: string, dir: string): string {
  if (!isRunPath(run)) return dir;
  try {
    return lstatSync(runDirPath(dir)).isSymbolicLink() ? realpathSync(dir) : dir;
  } catch {
    return dir;
  }
}

export interface RunTarget {
  root: string;
  runDir: string;
  runId: string;
}

/**
 * Resolves RUN (a run id under the root, or a path: isRunPath) and the
 * root. With `mustExist`, RUN must name an existing run directory (as for
 * `status`), so a typo is reported instead of being waited on; without it
 * (exec, which creates the run) the directory may be missing.
 */
export function runTarget(run: string, rootOption: string | undefined, mustExist = false): RunTarget {
  const root = rootFrom(rootOption);
  const runDir = mustExist ? runDirFromArg(run, root) : explicitResolved(run, asUsage(() => resolveRunArg(run, root)));
  return { root, runDir, runId: basename(runDir) };
}
