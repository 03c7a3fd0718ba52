// The darwin build of the addon, made on linux with the zig cross compiler
// (scripts/zig.sh): used by scripts/prebuild.mjs for the shipped
// prebuilds/darwin-{arm64,x64}/runwarden.node and by test/darwin-build.test.ts,
// the gate that every darwin source compiles with -Wall -Wextra -Werror.
//
// One home for what the darwin build is: binding.gyp. The sources are its
// `sources` plus those of every condition that holds for OS=='mac' (never a
// second list kept by hand), the defines and include dirs are its own, and the
// compiler flags are what node-gyp makes of its xcode_settings on a Mac
// (MACOSX_DEPLOYMENT_TARGET, GCC_OPTIMIZATION_LEVEL, CLANG_CXX_LANGUAGE_STANDARD)
// plus node-gyp's common.gypi defaults for OS=="mac" (-fno-exceptions,
// -fno-rtti, -fno-strict-aliasing, _DARWIN_USE_64_BIT_INODE=1) and its
// addon.gypi link flags (a bundle, `-undefined dynamic_lookup`: the N-API
// symbols are resolved against the node process that loads it).
//
// Node's headers: N-API's js_native_api.h/node_api.h are the same on every
// platform, so the local ones (/usr/include/node, or --nodedir) serve.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** The pinned zig version: scripts/zig.sh's VERSION, its one home. */
export function zigVersion() {
  const m = /^VERSION=([0-9][0-9.]*)$/m.exec(readFileSync(join(here, 'zig.sh'), 'utf8'));
  if (!m) throw new Error('scripts/zig.sh sets no VERSION');
  return m[1];
}

/** Where scripts/zig.sh caches the compiler (RUNWARDEN_ZIG_HOME, default /opt/runwarden-zig). */
export function zigHome() {
  return process.env.RUNWARDEN_ZIG_HOME || '/opt/runwarden-zig';
}

/**
 * The zig to build with, or why there is none. RUNWARDEN_ZIG names one
 * explicitly (it must be the pinned version); else scripts/zig.sh's complete
 * cache. Never fetches: that is scripts/zig.sh's job, run on purpose.
 */
export function findZig() {
  const want = zigVersion();
  const given = process.env.RUNWARDEN_ZIG;
  const cached = join(zigHome(), want, 'zig');
  const zig = given || (existsSync(join(zigHome(), want, '.complete')) ? cached : undefined);
  if (!zig) return { why: `no zig ${want} at ${cached} (run scripts/zig.sh to fetch it, or set RUNWARDEN_ZIG)` };
  const r = spawnSync(zig, ['version'], { encoding: 'utf8' });
  if (r.status !== 0) return { why: `${zig} does not run: ${r.error ? r.error.message : r.stderr.trim()}` };
  if (r.stdout.trim() !== want) return { why: `${zig} is zig ${r.stdout.trim()}, not the pinned ${want}` };
  return { zig };
}

/** The Mach-O facts of a build (magic, cputype, filetype), or why it is not a thin 64-bit Mach-O. */
export function machHeader(file) {
  const b = readFileSync(file);
  if (b.length < 32 || b.readUInt32LE(0) !== 0xfeedfacf) return { why: `${file} is not a 64-bit Mach-O file` };
  return { cputype: b.readUInt32LE(4), filetype: b.readUInt32LE(12) };
}

/** The two Macs: zig's target triple and the Mach-O cputype a build must carry. */
export const DARWIN_TARGETS = {
  arm64: { triple: 'aarch64-macos', cputype: 0x0100000c, cpuName: 'arm64' },
  x64: { triple: 'x86_64-macos', cputype: 0x01000007, cpuName: 'x86_64' },
};

/**
 * Whether a gyp condition holds for OS=`os`. Only what binding.gyp uses is
 * understood (OS=='x' / OS!='x' joined by `and` / `or`); anything else throws,
 * so a new kind of condition is noticed instead of silently read as false.
 */
export function gypConditionHolds(expr, os) {
  return expr.split(/\s+or\s+/).some((alt) =>
    alt.split(/\s+and\s+/).every((term) => {
      const m = /^\s*OS\s*(==|!=)\s*(['"])([A-Za-z0-9_]+)\2\s*$/.exec(term);
      if (!m) throw new Error(`binding.gyp condition not understood: ${JSON.stringify(expr)}`);
      return m[1] === '==' ? os === m[3] : os !== m[3];
    }),
  );
}

/** `<!(cmd)` in a gyp value: the command's output, run from `root` as gyp would. */
function expandCommand(value, root) {
  const m = /^<!\((.*)\)$/.exec(value);
  if (!m) return value;
  const r = spawnSync('sh', ['-c', m[1]], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`binding.gyp command failed: ${m[1]}\n${r.stderr}`);
  return r.stdout.trim();
}

/**
 * binding.gyp's build for OS=='mac': sources (relative to root), defines,
 * include dirs (absolute), C++ flags and the deployment target.
 */
export function macBuild(root) {
  const text = readFileSync(join(root, 'binding.gyp'), 'utf8');
  // gyp files are Python literals; this one is JSON once `#` comments are dropped.
  const gyp = JSON.parse(text.replace(/^\s*#.*$/gm, ''));
  const targets = gyp.targets ?? [];
  if (targets.length !== 1) throw new Error(`binding.gyp: expected one target, found ${targets.length}`);
  const t = targets[0];
  const sources = [...(t.sources ?? [])];
  const defines = [...(t.defines ?? [])];
  const includeDirs = [...(t.include_dirs ?? [])];
  const xcode = { ...(t.xcode_settings ?? {}) };
  for (const [expr, then, otherwise] of t.conditions ?? []) {
    const branch = gypConditionHolds(expr, 'mac') ? then : otherwise;
    if (!branch) continue;
    for (const key of Object.keys(branch)) {
      if (!['sources', 'defines', 'include_dirs', 'xcode_settings'].includes(key)) {
        throw new Error(`binding.gyp: a condition sets ${key}, which scripts/darwin.mjs does not apply`);
      }
    }
    sources.push(...(branch.sources ?? []));
    defines.push(...(branch.defines ?? []));
    includeDirs.push(...(branch.include_dirs ?? []));
    Object.assign(xcode, branch.xcode_settings ?? {});
  }
  const std = xcode.CLANG_CXX_LANGUAGE_STANDARD ?? 'gnu++17';
  const opt = xcode.GCC_OPTIMIZATION_LEVEL ?? 's';
  const deploymentTarget = xcode.MACOSX_DEPLOYMENT_TARGET;
  if (!deploymentTarget) throw new Error('binding.gyp sets no MACOSX_DEPLOYMENT_TARGET');
  // The warnings binding.gyp asks of every compile (cflags_cc), kept on darwin too.
  const warnings = (t.cflags_cc ?? []).filter((f) => /^-W/.test(f));
  return {
    sources,
    defines: ['_DARWIN_USE_64_BIT_INODE=1', ...defines],
    includeDirs: includeDirs.map((d) => resolve(root, expandCommand(d, root))),
    cxxflags: [`-std=${std}`, `-O${opt}`, '-fno-exceptions', '-fno-rtti', '-fno-strict-aliasing', '-fPIC', ...warnings],
    deploymentTarget,
  };
}

/** The directory holding node_api.h: `<nodedir>/include/node`. */
export function nodeIncludeDir(nodedir) {
  const dir = join(nodedir, 'include', 'node');
  if (!existsSync(join(dir, 'node_api.h'))) throw new Error(`${dir} has no node_api.h`);
  return dir;
}

function targetOf(arch, build) {
  const t = DARWIN_TARGETS[arch];
  if (!t) throw new Error(`unknown darwin arch ${arch} (known: ${Object.keys(DARWIN_TARGETS).join(', ')})`);
  return `${t.triple}.${build.deploymentTarget}`;
}

/** zig c++ arguments compiling one source to an object. */
export function compileArgs(arch, build, nodeInclude, source, object, { werror = false } = {}) {
  return [
    'c++',
    '-target',
    targetOf(arch, build),
    ...build.cxxflags,
    ...(werror ? ['-Werror'] : []),
    ...build.defines.map((d) => `-D${d}`),
    ...build.includeDirs.map((d) => `-I${d}`),
    `-I${nodeInclude}`,
    '-c',
    source,
    '-o',
    object,
  ];
}

/**
 * zig c++ arguments linking objects into the loadable module node dlopens. The
 * install name (LC_ID_DYLIB) is set, or the linker would record the output's
 * path on the building machine (a temporary directory) in the shipped file.
 */
export function linkArgs(arch, build, objects, output) {
  return ['c++', '-target', targetOf(arch, build), '-shared', '-Wl,-undefined,dynamic_lookup', '-Wl,-install_name,@rpath/runwarden.node', ...objects, '-o', output];
}

/**
 * Compiles every mac source for `arch` and links them into `output`. Returns
 * per-source results; throws nothing for a failed compile (the caller says
 * what failed), so the gate can report every failing source at once.
 */
export function buildDarwin(zig, root, arch, nodedir, output, { werror = false } = {}) {
  const build = macBuild(root);
  const nodeInclude = nodeIncludeDir(nodedir);
  const work = mkdtempSync(join(tmpdir(), `runwarden-darwin-${arch}-`));
  const compiled = [];
  try {
    const objects = [];
    for (const src of build.sources) {
      const obj = join(work, `${basename(src).replace(/\.[^.]+$/, '')}.o`);
      const r = spawnSync(zig, compileArgs(arch, build, nodeInclude, join(root, src), obj, { werror }), { cwd: root, encoding: 'utf8', env: zigEnv(work) });
      compiled.push({ source: src, ok: r.status === 0, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` });
      objects.push(obj);
    }
    if (compiled.some((c) => !c.ok)) return { compiled, linked: { ok: false, output: 'not linked: a source failed to compile' } };
    mkdirSync(resolve(output, '..'), { recursive: true });
    const r = spawnSync(zig, linkArgs(arch, build, objects, output), { cwd: root, encoding: 'utf8', env: zigEnv(work) });
    return { compiled, linked: { ok: r.status === 0 && existsSync(output), output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` } };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * zig keeps a cache of compiled objects and of its bundled libc; a private
 * local cache per build keeps concurrent builds (the suite, a pack) apart,
 * while the global cache (where zig's own libc pieces are built once) stays
 * shared under ZIG_GLOBAL_CACHE_DIR when set, else zig's default.
 */
function zigEnv(work) {
  return { ...process.env, ZIG_LOCAL_CACHE_DIR: join(work, 'zig-cache') };
}
