/**
 * scripts/release-gate.mjs (package.json prepublishOnly) refuses a tarball
 * that lacks a prebuild or holds one that fails its checks, naming each
 * problem. The bad prebuilds are made here, by the system's C compiler and
 * by zig, not by the scripts under test: an ELF module that needs a libuv
 * symbol, one for the wrong machine, a glibc build where the musl one
 * belongs, and a darwin module linked the way the linker does by default
 * (its install name the path it was written to). A tarball that passes is
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
    for (const t of ['linux-x64', 'linux-arm64', 'linuxmusl-x64', 'linuxmusl-arm64', 'darwin-x64', 'darwin-arm64']) {
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
});
