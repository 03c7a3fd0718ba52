/**
 * scripts/release-gate.mjs (package.json prepublishOnly) refuses a tarball
 * that lacks a prebuild or holds one that fails its checks, naming each
 * problem. The bad prebuilds are made here, by the system's C compiler and
 * by zig, not by the scripts under test: an ELF module that needs a libuv
 * symbol, one for the wrong machine, a glibc build where the musl one
 * belongs, and a darwin module linked the way the linker does by default
 * (its install name the path it was written to), and Windows DLLs that import a
 * libuv function from node.exe or a Visual C++ runtime DLL, or are built for
 * the other machine. A tarball that passes is
 * checked in test/consumer.test.ts, on the package it packs.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findZig } from '../scripts/darwin.mjs';
import { ROOT } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';

const work = mkdtempSync(join(tmpdir(), 'rw-release-gate-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function gate(tarball: string): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'release-gate.mjs'), '--tarball', tarball], { encoding: 'utf8', timeout: 300_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function tarball(name: string, files: Record<string, string>): string {
  const dir = join(work, name);
  mkdirSync(join(dir, 'package'), { recursive: true });
  writeFileSync(join(dir, 'package', 'package.json'), '{"name":"runwarden"}\n');
  for (const [to, from] of Object.entries(files)) {
    mkdirSync(join(dir, 'package', to, '..'), { recursive: true });
    copyFileSync(from, join(dir, 'package', to));
  }
  const out = join(work, `${name}.tgz`);
  const r = spawnSync('tar', ['czf', out, '-C', dir, 'package'], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return out;
}

const NAPI_MODULE = `
#include <unistd.h>
typedef void* napi_env; typedef void* napi_value;
extern int napi_create_function(napi_env, const char*, unsigned long, void*, void*, napi_value*);
extern int uv_poll_init(void*, void*, int);
napi_value napi_register_module_v1(napi_env env, napi_value exports) {
  napi_value f; napi_create_function(env, "f", 1, 0, 0, &f); uv_poll_init(0, 0, (int)getpid()); return exports;
}
`;

describe('the release gate', () => {
  it('refuses a tarball with no prebuild, naming every one that is missing', (ctx) => {
    needs(ctx, 'zig');
    const r = gate(tarball('empty', {}));
    expect(r.status).toBe(1);
    for (const t of ['linux-x64', 'linux-arm64', 'linuxmusl-x64', 'linuxmusl-arm64', 'darwin-x64', 'darwin-arm64', 'win32-x64', 'win32-arm64']) {
      expect(r.stderr).toContain(`${t}: prebuilds/${t}/runwarden.node is missing`);
    }
  });

  it('refuses prebuilds that fail their checks: a libuv symbol, the wrong machine, glibc where musl belongs, a build path as install name', (ctx) => {
    needs(ctx, 'zig', 'cc');
    const z = findZig();
    if ('why' in z) throw new Error(z.why);
    const src = join(work, 'm.c');
    writeFileSync(src, NAPI_MODULE);
    const elf = join(work, 'm.so');
    const cc = spawnSync('cc', ['-shared', '-fPIC', '-O1', src, '-o', elf], { encoding: 'utf8' });
    expect(cc.status, cc.stderr).toBe(0);
    // The linker's default install name is the output path: a path of this machine.
    const mach = join(work, 'build-tmp', 'm.dylib');
    mkdirSync(join(work, 'build-tmp'));
    const zl = spawnSync(z.zig, ['cc', '-target', 'aarch64-macos.11.0', '-shared', '-Wl,-undefined,dynamic_lookup', src, '-o', mach], { encoding: 'utf8', env: { ...process.env, ZIG_LOCAL_CACHE_DIR: join(work, 'zc') } });
    expect(zl.status, zl.stderr).toBe(0);
    const r = gate(
      tarball('bad', {
        'prebuilds/linux-x64/runwarden.node': elf,
        'prebuilds/linux-arm64/runwarden.node': elf,
        'prebuilds/linuxmusl-x64/runwarden.node': elf,
        'prebuilds/darwin-arm64/runwarden.node': mach,
      }),
    );
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/linux-x64: needs libuv symbols \(not Node-API\): uv_poll_init/);
    expect(r.stderr).toMatch(/linux-arm64: ELF machine 0x3e, not AArch64/);
    expect(r.stderr).toMatch(/linuxmusl-x64: needs glibc symbol versions/);
    expect(r.stderr).toContain(`darwin-arm64: install name ${mach} is a path of the build machine`);
    expect(r.stderr).toMatch(/darwin-arm64: needs libuv symbols \(not Node-API\): _uv_poll_init/);
    expect(r.stderr).toContain('linuxmusl-arm64: prebuilds/linuxmusl-arm64/runwarden.node is missing');
    expect(r.stdout).not.toMatch(/: ok$/m);
  });

  it('refuses Windows prebuilds that import libuv from node.exe, that need a Visual C++ runtime, or are for the other machine', (ctx) => {
    needs(ctx, 'zig');
    const z = findZig();
    if ('why' in z) throw new Error(z.why);
    const env = { ...process.env, ZIG_LOCAL_CACHE_DIR: join(work, 'zcw') };
    // An import library for node.exe that has a libuv function beside N-API's, and one for a Visual C++ runtime.
    writeFileSync(join(work, 'node.def'), 'LIBRARY node.exe\nEXPORTS\nnapi_create_function\nuv_poll_init\n');
    writeFileSync(join(work, 'vcrt.def'), 'LIBRARY VCRUNTIME140.dll\nEXPORTS\nvc_helper\n');
    for (const d of ['node', 'vcrt']) {
      const r = spawnSync(z.zig, ['dlltool', '-m', 'i386:x86-64', '-d', join(work, `${d}.def`), '-l', join(work, `lib${d}.a`)], { encoding: 'utf8', env });
      expect(r.status, r.stderr).toBe(0);
    }
    const src = join(work, 'w.c');
    writeFileSync(
      src,
      `typedef void* napi_env; typedef void* napi_value;
__declspec(dllimport) int napi_create_function(napi_env, const char*, unsigned long, void*, void*, napi_value*);
__declspec(dllimport) int uv_poll_init(void*, void*, int);
__declspec(dllimport) int vc_helper(void);
__declspec(dllexport) napi_value napi_register_module_v1(napi_env env, napi_value exports) {
  napi_value f; napi_create_function(env, "f", 1, 0, 0, &f); uv_poll_init(0, 0, vc_helper()); return exports;
}
`,
    );
    const dll = join(work, 'w.dll');
    const l = spawnSync(z.zig, ['cc', '-target', 'x86_64-windows-gnu', '-shared', src, join(work, 'libnode.a'), join(work, 'libvcrt.a'), '-o', dll], { encoding: 'utf8', env, cwd: work });
    expect(l.status, l.stderr).toBe(0);
    const r = gate(tarball('badwin', { 'prebuilds/win32-x64/runwarden.node': dll, 'prebuilds/win32-arm64/runwarden.node': dll }));
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('win32-x64: imports from node.exe what is not N-API: uv_poll_init');
    expect(r.stderr).toMatch(/win32-x64: imports VCRUNTIME140\.dll/);
    expect(r.stderr).toContain('win32-x64: imports libuv symbols: uv_poll_init');
    expect(r.stderr).toMatch(/win32-arm64: PE machine 0x8664, not ARM64/);
    expect(r.stdout).not.toMatch(/^release-gate: win32-(x64|arm64): ok$/m);
  });
});
