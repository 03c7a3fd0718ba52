/**
 * The C floors: compiled from bench/<name>.c (floor.c, the probe's two loops;
 * list-floor.c, the listing's) with the system compiler into bench/out/
 * (gitignored), rebuilt when the source is newer than the binary.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const benchDir = dirname(dirname(fileURLToPath(import.meta.url)));
/** Compiles the probe's floor with `cc -O2` if needed; returns the binary's path and the compiler's version line. */
export function buildFloor() {
  return buildC('floor');
}

/** Compiles bench/<name>.c with `cc -O2` into bench/out/<name> if needed; returns the binary's path and the compiler's version line. */
export function buildC(name) {
  const source = join(benchDir, `${name}.c`);
  const binary = join(benchDir, 'out', name);
  const cc = process.env.CC || 'cc';
  let version;
  try {
    version = execFileSync(cc, ['--version'], { encoding: 'utf8' }).split('\n')[0];
  } catch {
    throw new Error(`bench: no C compiler (${cc}) found; the syscall floor needs one (apt-get install gcc)`);
  }
  if (!existsSync(binary) || statSync(binary).mtimeMs < statSync(source).mtimeMs) {
    mkdirSync(dirname(binary), { recursive: true });
    execFileSync(cc, ['-O2', '-Wall', '-Wextra', '-o', binary, source], { stdio: 'inherit' });
  }
  return { binary, compiler: `${cc} -O2 (${version})` };
}

/**
 * Runs a floor loop `iterations` times on `lockPath`; returns ns per iteration and the last answer.
 * `loop`: 'reference' (the fixed 7-call loop the budget is stated in) or 'same' (the probe's own sequence); see bench/floor.c.
 * `clock`: 'wall' (CLOCK_MONOTONIC) or 'cpu' (the floor process's CPU time).
 */
export function runFloor(bin, lockPath, iterations, loop = 'reference', clock = 'wall') {
  let out;
  try {
    const env = clock === 'cpu' ? { ...process.env, RW_FLOOR_CLOCK: 'cpu' } : process.env;
    out = execFileSync(bin, [lockPath, String(iterations), loop], { encoding: 'utf8', env });
  } catch (err) {
    throw new Error(`bench: the floor failed on ${lockPath}: ${err.stdout || err.message}`, { cause: err });
  }
  return JSON.parse(out);
}
