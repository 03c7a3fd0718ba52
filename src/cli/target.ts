/**
 * Turning a command line's RUN and --root into a run directory (SPEC A.1),
 * with bad ids reported as usage errors (exit 2), never as stack traces.
 */
import { basename } from 'node:path';
import { resolveRunArg, RunIdError } from '../status/inspect.js';
import { UserError } from './io.js';
import { rootFrom } from './commands/runs.js';
import { runDirFromArg } from './commands/status.js';

export interface RunTarget {
  root: string;
  runDir: string;
  runId: string;
}

/**
 * Resolves RUN (a run id under the root, or a path containing "/") and the
 * root. With `mustExist`, RUN must name an existing run directory (as for
 * `status`), so a typo is reported instead of being waited on; without it
 * (exec, which creates the run) the directory may be missing.
 */
export function runTarget(run: string, rootOption: string | undefined, mustExist = false): RunTarget {
  const root = rootFrom(rootOption);
  let runDir: string;
  if (mustExist) {
    runDir = runDirFromArg(run, root);
  } else {
    try {
      runDir = resolveRunArg(run, root);
    } catch (e) {
      if (e instanceof RunIdError) throw new UserError(e.message);
      throw e;
    }
  }
  return { root, runDir, runId: basename(runDir) };
}
