// Finding the tools a compile needs, shared by scripts/install.mjs (shipped, runs
// in the consumer's install) and scripts/prebuild.mjs (the maintainers' build).
// runwarden does not depend on node-gyp: npm hands every install script its own
// copy (npm_config_node_gyp), and npm bundles one next to itself.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** An executable on PATH, or undefined. */
export function which(name) {
  const r = spawnSync('sh', ['-c', 'command -v "$1"', 'sh', name], { encoding: 'utf8' });
  return r.status === 0 && r.stdout.trim() !== '' ? r.stdout.trim() : undefined;
}

/**
 * node-gyp's entry script, in the order npm itself would find one: the one npm
 * hands its scripts (npm_config_node_gyp), one installed under `root`, then the
 * copy bundled with npm. Undefined when there is none.
 */
export function findNodeGyp(root) {
  const env = process.env.npm_config_node_gyp;
  if (env && existsSync(env)) return env;
  const local = join(root, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  if (existsSync(local)) return local;
  const npmCli = which('npm');
  if (npmCli) {
    const bundled = join(dirname(dirname(realpathSync(npmCli))), 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
    if (existsSync(bundled)) return bundled;
  }
  const besideNode = join(dirname(dirname(process.execPath)), 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  if (existsSync(besideNode)) return besideNode;
  return undefined;
}

/**
 * A local directory holding this Node's headers (`<dir>/include/node`), so that
 * node-gyp never downloads them: npm's `nodedir` setting when given, else the
 * prefix this node runs from (Debian's /usr, an official tarball's root) when its
 * include/node/node_version.h names the same major version. Undefined when none.
 */
export function localNodedir() {
  const set = process.env.npm_config_nodedir;
  if (set && set !== 'undefined' && set !== 'null') return set;
  const prefix = dirname(dirname(realpathSync(process.execPath)));
  const header = join(prefix, 'include', 'node', 'node_version.h');
  try {
    const m = /#define NODE_MAJOR_VERSION (\d+)/.exec(readFileSync(header, 'utf8'));
    if (m && m[1] === process.versions.node.split('.')[0] && existsSync(join(prefix, 'include', 'node', 'node_api.h'))) return prefix;
  } catch {
    /* no headers there */
  }
  return undefined;
}

/**
 * What a node-gyp compile needs that this machine lacks, as phrases for a
 * message: python3, make, a C++ compiler (CXX, else what make and gyp use by
 * default: g++ on linux, c++/clang++ on darwin), each with where to get it on
 * `platform`: Xcode's command line tools bring all three on a Mac, Debian's
 * packages elsewhere.
 */
export function missingToolchain(platform = process.platform) {
  const mac = platform === 'darwin';
  const get = (debian) => (mac ? 'macOS: xcode-select --install' : `Debian: apt-get install ${debian}`);
  const missing = [];
  const python = process.env.npm_config_python || process.env.PYTHON;
  if (!(python && existsSync(python)) && !which('python3')) missing.push(`python3 (${get('python3')})`);
  if (!which('make')) missing.push(`make (${get('make')})`);
  const cxx = process.env.CXX;
  const compilers = cxx ? [cxx.split(/\s+/)[0]] : mac ? ['c++', 'clang++'] : ['g++'];
  if (!compilers.some((c) => which(c) || existsSync(c))) {
    missing.push(`a C++ compiler (${compilers.join(' or ')}${cxx ? ', from CXX' : ''}; ${get('g++')})`);
  }
  return missing;
}
