/** What the numbers were measured on, for the top of RESULTS.md. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, release, tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { describeFsType, filesystemType } from '../../dist/index.js';

const require = createRequire(import.meta.url);

function sh(cmd, args, cwd) {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', cwd, stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

export function machineInfo(repoRoot) {
  let cpuModel = cpus()[0]?.model ?? 'unknown';
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) cpuModel = m[1].trim();
  } catch {
    /* not linux */
  }
  const nproc = sh('nproc', []) ?? String(cpus().length);
  const commit = sh('git', ['rev-parse', '--short', 'HEAD'], repoRoot);
  // Only what is measured counts as dirty; the bench's own outputs change during a run.
  const dirty = sh('git', ['status', '--porcelain', '--untracked-files=no', '--', 'src', 'native', 'binding.gyp', 'package.json'], repoRoot);
  let fs = 'unknown';
  try {
    fs = describeFsType(filesystemType(tmpdir()));
  } catch {
    /* leave unknown */
  }
  const version = (name) => {
    try {
      return require(`${name}/package.json`).version;
    } catch {
      return 'not installed';
    }
  };
  return {
    cpuModel,
    nproc,
    kernel: `${process.platform} ${release()}`,
    node: process.version,
    tmpdir: tmpdir(),
    fs,
    commit: commit ? `${commit}${dirty ? ' (with uncommitted changes to src/ or native/)' : ''}` : 'unknown',
    peers: { 'proper-lockfile': version('proper-lockfile'), 'fs-ext': version('fs-ext') },
  };
}
