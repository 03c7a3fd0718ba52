/**
 * Turning a command line's RUN and --root into a run directory (SPEC A.1),
 * with bad ids reported as usage errors (exit 2), never as stack traces.
 */
import { lstatSync } from 'node:fs';
import { basename } from 'node:path';
import { resolveRoot, resolveRunArg, RunIdError } from '../status.js';
import { UserError } from './io.js';

export interface RunTarget {
  root: string;
  runDir: string;
  runId: string;
}

/**
 * Resolves RUN (a run id under the root, or a path containing "/") and the
 * root. With `mustExist`, a RUN that names no directory is a usage error, so a
 * typo is reported instead of being waited on.
 */
export function runTarget(run: string, rootOption: string | undefined, mustExist = false): RunTarget {
  let target: RunTarget;
  try {
    const root = resolveRoot(rootOption);
    const runDir = resolveRunArg(run, root);
    target = { root, runDir, runId: basename(runDir) };
  } catch (e) {
    if (e instanceof RunIdError) throw new UserError(e.message);
    throw e;
  }
  if (mustExist) {
    let isDir = false;
    try {
      isDir = lstatSync(target.runDir).isDirectory();
    } catch {
      /* missing */
    }
    if (!isDir) {
      const where = run.includes('/') ? target.runDir : `${target.runId} under ${target.root}`;
      throw new UserError(`no run directory ${where}`);
    }
  }
  return target;
}
