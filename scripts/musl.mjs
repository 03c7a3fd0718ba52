// The musl builds of the addon (prebuilds/linuxmusl-{x64,arm64}), made on
// any x86-64 linux with the zig cross compiler (scripts/zig.sh), which brings
// musl's headers and libc.so stub and links its own libc++ in: the result
// needs nothing but musl's libc.so and the N-API symbols of the process that
// loads it (checked by scripts/prebuild-check.mjs).
//
// One home for what the linux build is: binding.gyp. The sources are its
// `sources` plus those of every condition that holds for OS=='linux', the
// defines and include dirs its own, the flags its cflags_cc plus node-gyp's
// common.gypi defaults on linux (-fno-exceptions, -fno-rtti, -fPIC).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { gypConditionHolds, nodeIncludeDir } from './darwin.mjs';

/** The two musl targets: zig's triple per architecture. */
export const MUSL_TARGETS = {
  x64: { triple: 'x86_64-linux-musl' },
  arm64: { triple: 'aarch64-linux-musl' },
};

function expandCommand(value, root) {
  const m = /^<!\((.*)\)$/.exec(value);
  if (!m) return value;
  const r = spawnSync('sh', ['-c', m[1]], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`binding.gyp command failed: ${m[1]}\n${r.stderr}`);
  return r.stdout.trim();
}

/** binding.gyp's build for OS=='linux': sources (relative to root), defines, include dirs (absolute), C++ flags. */
export function linuxBuild(root) {
  const gyp = JSON.parse(readFileSync(join(root, 'binding.gyp'), 'utf8').replace(/^\s*#.*$/gm, ''));
  const t = gyp.targets?.[0];
  if (!t || gyp.targets.length !== 1) throw new Error('binding.gyp: expected one target');
  const sources = [...(t.sources ?? [])];
  const defines = [...(t.defines ?? [])];
  const includeDirs = [...(t.include_dirs ?? [])];
  const cflags = [...(t.cflags_cc ?? [])];
  for (const [expr, then, otherwise] of t.conditions ?? []) {
    const branch = gypConditionHolds(expr, 'linux') ? then : otherwise;
    if (!branch) continue;
    for (const key of Object.keys(branch)) {
      if (!['sources', 'defines', 'include_dirs', 'cflags_cc'].includes(key)) throw new Error(`binding.gyp: a condition sets ${key}, which scripts/musl.mjs does not apply`);
    }
    sources.push(...(branch.sources ?? []));
    defines.push(...(branch.defines ?? []));
    includeDirs.push(...(branch.include_dirs ?? []));
    cflags.push(...(branch.cflags_cc ?? []));
  }
  return {
    sources,
    defines,
    includeDirs: includeDirs.map((d) => resolve(root, expandCommand(d, root))),
    cxxflags: ['-fno-exceptions', '-fno-rtti', '-fPIC', ...cflags],
  };
}

/**
 * Compiles every linux source for musl on `arch` and links them into
 * `output`. Per-source results; a failed compile throws nothing (the caller
 * says what failed).
 */
export function buildMusl(zig, root, arch, nodedir, output, { werror = false } = {}) {
  const t = MUSL_TARGETS[arch];
  if (!t) throw new Error(`unknown musl arch ${arch} (known: ${Object.keys(MUSL_TARGETS).join(', ')})`);
  const build = linuxBuild(root);
  const nodeInclude = nodeIncludeDir(nodedir);
  const work = mkdtempSync(join(tmpdir(), `runwarden-musl-${arch}-`));
  const env = { ...process.env, ZIG_LOCAL_CACHE_DIR: join(work, 'zig-cache') };
  const compiled = [];
  try {
    const objects = [];
    for (const src of build.sources) {
      const obj = join(work, `${basename(src).replace(/\.[^.]+$/, '')}.o`);
      const args = ['c++', '-target', t.triple, ...build.cxxflags, ...(werror ? ['-Werror'] : []), ...build.defines.map((d) => `-D${d}`), ...build.includeDirs.map((d) => `-I${d}`), `-I${nodeInclude}`, '-c', join(root, src), '-o', obj];
      const r = spawnSync(zig, args, { cwd: root, encoding: 'utf8', env });
      compiled.push({ source: src, ok: r.status === 0, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` });
      objects.push(obj);
    }
    if (compiled.some((c) => !c.ok)) return { compiled, linked: { ok: false, output: 'not linked: a source failed to compile' } };
    mkdirSync(resolve(output, '..'), { recursive: true });
    // -s: no symbol table beyond the dynamic one, as the glibc prebuilds are stripped.
    const r = spawnSync(zig, ['c++', '-target', t.triple, '-shared', '-s', ...objects, '-o', output], { cwd: root, encoding: 'utf8', env });
    return { compiled, linked: { ok: r.status === 0 && existsSync(output), output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` } };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
