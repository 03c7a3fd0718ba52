/**
 * A command under /usr/bin/time, the one way the scale benches measure the
 * CLI (bench/scale.mjs, bench/list-floor.mjs): its wall clock, its CPU time
 * (user + system) and its peak RSS, as GNU time reports them.
 */
import { spawnSync } from 'node:child_process';

/** Where GNU time is expected; the benches check it exists before they start. */
export const TIME = '/usr/bin/time';

/**
 * Runs `argv` (with `env` added to this process's) under {@link TIME}:
 * `wall` and `cpu` in seconds, `rss` in MB, and the command's stdout.
 * Throws when it exits non-zero or time printed nothing.
 */
export function timed(argv, env = {}) {
  const r = spawnSync(TIME, ['-f', 'RWTIME %e %U %S %M', ...argv], { encoding: 'utf8', maxBuffer: 1 << 30, env: { ...process.env, ...env } });
  if (r.status !== 0) throw new Error(`${argv.join(' ')} failed (${r.status}): ${r.stderr.slice(-500)}`);
  const m = /RWTIME (\S+) (\S+) (\S+) (\S+)/.exec(r.stderr);
  if (m === null) throw new Error(`no timing in: ${r.stderr.slice(-500)}`);
  return { wall: Number(m[1]), cpu: Number(m[2]) + Number(m[3]), rss: Number(m[4]) / 1024, stdout: r.stdout };
}
