/**
 * The JavaScript runtimes scripts/runtime.sh caches (Bun, Deno, Node majors),
 * where it puts them: ${RUNWARDEN_RUNTIMES_HOME:-~/.cache/runwarden}/<name>,
 * complete once `.complete` is there. Never fetches: that is the script's job,
 * run on purpose (.ci/run runs it).
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './lock-procs.js';

export type Runtime = 'bun' | 'deno' | 'node-20' | 'node-22' | 'node-24' | 'node-26';

function pinned(name: string): string {
  const m = new RegExp(`^${name}=([0-9][0-9.]*)$`, 'm').exec(readFileSync(join(ROOT, 'scripts', 'runtime.sh'), 'utf8'));
  if (!m) throw new Error(`scripts/runtime.sh sets no ${name}`);
  return m[1];
}

function home(): string {
  return process.env['RUNWARDEN_RUNTIMES_HOME'] || join(homedir(), '.cache', 'runwarden');
}

/** The executable of `r` in the cache, or undefined when it is not (completely) there. */
export function runtimePath(r: Runtime): string | undefined {
  const [dir, exe] =
    r === 'bun' ? [`bun-${pinned('BUN_VERSION')}`, join('bin', 'bun')] : r === 'deno' ? [`deno-${pinned('DENO_VERSION')}`, 'deno'] : [r, join('bin', 'node')];
  const d = join(home(), dir);
  return existsSync(join(d, '.complete')) && existsSync(join(d, exe)) ? join(d, exe) : undefined;
}

/** The command that brings `r` into the cache. */
export function fetchCommand(r: Runtime): string {
  return r.startsWith('node-') ? `scripts/runtime.sh node ${r.slice(5)}` : `scripts/runtime.sh ${r}`;
}
