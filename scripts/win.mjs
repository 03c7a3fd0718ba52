// The Windows builds of the addon (prebuilds/win32-{x64,arm64}), made on any
// x86-64 linux with the zig cross compiler (scripts/zig.sh): targets
// x86_64-windows-gnu and aarch64-windows-gnu (mingw-w64's headers and import
// libraries, which zig ships), zig's own libc++ linked in, so the result needs
// no Visual C++ runtime: only node.exe's N-API exports and DLLs every Windows
// has (kernel32, ntdll, msvcrt; checked by scripts/prebuild-check.mjs).
//
// N-API is linked as node-gyp links it on Windows: against an import library
// for node.exe's napi_* exports. It is made here with `zig dlltool` from the
// .def files of the node-api-headers package (the Node.js project's list of
// every N-API symbol, a devDependency), so nothing is downloaded and no
// Windows machine is needed.
//
// One home for what the Windows build is: binding.gyp. The sources are its
// `sources` plus those of every condition that holds for OS=='win', the
// defines and include dirs its own, its `libraries` linked (ntdll.lib as
// -lntdll), the flags its cflags_cc plus -fno-exceptions and -fno-rtti (what
// node-gyp's common.gypi asks of every platform's compiler).
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { gypConditionHolds, nodeIncludeDir } from './darwin.mjs';

/** The two Windows targets: zig's triple, dlltool's machine, and the PE machine a build must carry. */
export const WIN_TARGETS = {
  x64: { triple: 'x86_64-windows-gnu', dlltool: 'i386:x86-64', machine: 0x8664, machineName: 'x86-64 (AMD64)' },
  arm64: { triple: 'aarch64-windows-gnu', dlltool: 'arm64', machine: 0xaa64, machineName: 'ARM64' },
};

function expandCommand(value, root) {
  const m = /^<!\((.*)\)$/.exec(value);
  if (!m) return value;
  const r = spawnSync('sh', ['-c', m[1]], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`binding.gyp command failed: ${m[1]}\n${r.stderr}`);
  return r.stdout.trim();
}

/** binding.gyp's build for OS=='win': sources (relative to root), defines, include dirs (absolute), C++ flags, libraries. */
export function winBuild(root) {
  const gyp = JSON.parse(readFileSync(join(root, 'binding.gyp'), 'utf8').replace(/^\s*#.*$/gm, ''));
  const t = gyp.targets?.[0];
  if (!t || gyp.targets.length !== 1) throw new Error('binding.gyp: expected one target');
  const sources = [...(t.sources ?? [])];
  const defines = [...(t.defines ?? [])];
  const includeDirs = [...(t.include_dirs ?? [])];
  const cflags = [...(t.cflags_cc ?? [])];
  const libraries = [...(t.libraries ?? [])];
  for (const [expr, then, otherwise] of t.conditions ?? []) {
    const branch = gypConditionHolds(expr, 'win') ? then : otherwise;
    if (!branch) continue;
    for (const key of Object.keys(branch)) {
      if (!['sources', 'defines', 'include_dirs', 'cflags_cc', 'libraries'].includes(key)) throw new Error(`binding.gyp: a condition sets ${key}, which scripts/win.mjs does not apply`);
    }
    sources.push(...(branch.sources ?? []));
    defines.push(...(branch.defines ?? []));
    includeDirs.push(...(branch.include_dirs ?? []));
    cflags.push(...(branch.cflags_cc ?? []));
    libraries.push(...(branch.libraries ?? []));
  }
  return {
    sources,
    defines,
    includeDirs: includeDirs.map((d) => resolve(root, expandCommand(d, root))),
    cxxflags: ['-fno-exceptions', '-fno-rtti', ...cflags],
    libraries: libraries.map((l) => `-l${l.replace(/\.lib$/i, '')}`),
  };
}

/** The N-API symbols node.exe exports, from node-api-headers' .def files (sorted, unique). */
export function napiSymbols(root) {
  const req = createRequire(join(root, 'package.json'));
  let dir;
  try {
    dir = dirname(req.resolve('node-api-headers/package.json'));
  } catch {
    throw new Error('node-api-headers is not installed (a devDependency: run npm ci)');
  }
  const names = new Set();
  for (const f of ['js_native_api.def', 'node_api.def']) {
    for (const line of readFileSync(join(dir, 'def', f), 'utf8').split(/\r?\n/)) {
      const s = line.trim();
      if (/^(napi|node_api)_\w+$/.test(s)) names.add(s);
    }
  }
  if (names.size === 0) throw new Error(`node-api-headers at ${dir} lists no N-API symbol`);
  return [...names].sort();
}

/**
 * Compiles every Windows source for `arch` and links them into `output`.
 * Per-source results; a failed compile throws nothing (the caller says what
 * failed). `werror` adds -Werror to every compile.
 */
export function buildWin(zig, root, arch, nodedir, output, { werror = false } = {}) {
  const t = WIN_TARGETS[arch];
  if (!t) throw new Error(`unknown Windows arch ${arch} (known: ${Object.keys(WIN_TARGETS).join(', ')})`);
  const build = winBuild(root);
  const nodeInclude = nodeIncludeDir(nodedir);
  const work = mkdtempSync(join(tmpdir(), `runwarden-win-${arch}-`));
  const env = { ...process.env, ZIG_LOCAL_CACHE_DIR: join(work, 'zig-cache') };
  const out = (r) => `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}`;
  const compiled = [];
  try {
    const objects = [];
    for (const src of build.sources) {
      const obj = join(work, `${src.replace(/^native\//, '').replace(/[/\\]/g, '_').replace(/\.[^.]+$/, '')}.o`);
      const args = ['c++', '-target', t.triple, ...build.cxxflags, ...(werror ? ['-Werror'] : []), ...build.defines.map((d) => `-D${d}`), ...build.includeDirs.map((d) => `-I${d}`), `-I${nodeInclude}`, '-c', join(root, src), '-o', obj];
      const r = spawnSync(zig, args, { cwd: root, encoding: 'utf8', env });
      compiled.push({ source: src, ok: r.status === 0, output: out(r) });
      objects.push(obj);
    }
    if (compiled.some((c) => !c.ok)) return { compiled, linked: { ok: false, output: 'not linked: a source failed to compile' } };
    const def = join(work, 'node.def');
    writeFileSync(def, `LIBRARY node.exe\nEXPORTS\n${napiSymbols(root).join('\n')}\n`);
    const lib = join(work, 'libnode.a');
    const d = spawnSync(zig, ['dlltool', '-m', t.dlltool, '-d', def, '-l', lib], { cwd: work, encoding: 'utf8', env });
    if (d.status !== 0 || !existsSync(lib)) return { compiled, linked: { ok: false, output: `zig dlltool failed:\n${out(d)}` } };
    // Linked in the work directory: zig writes an import library (.lib) beside a Windows DLL, which is not shipped.
    const linked = join(work, 'runwarden.node');
    const r = spawnSync(zig, ['c++', '-target', t.triple, '-shared', '-s', ...objects, lib, ...build.libraries, '-o', linked], { cwd: work, encoding: 'utf8', env });
    const ok = r.status === 0 && existsSync(linked);
    if (ok) {
      mkdirSync(resolve(output, '..'), { recursive: true });
      copyFileSync(linked, output);
    }
    return { compiled, linked: { ok, output: out(r) } };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

