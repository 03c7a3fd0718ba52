/**
 * The Windows build gate: every source of binding.gyp's OS=='win' build
 * compiles for x86-64 and ARM64 Windows (x86_64-windows-gnu,
 * aarch64-windows-gnu) with -Wall -Wextra -Werror under the zig cross
 * compiler (scripts/zig.sh), and the objects link, against an import library
 * of node.exe's N-API exports, into a DLL of the right machine that passes the
 * prebuild checks (scripts/prebuild-check.mjs: N-API-only imports from
 * node.exe, system DLLs only).
 *
 * A compile-and-link check: the x64 build is run by the Windows lane
 * (`npm run test:windows`, under Wine); the ARM64 one is never run.
 */
import { readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, type TestContext } from 'vitest';
import { findZig } from '../scripts/darwin.mjs';
import { checkPrebuild } from '../scripts/prebuild-check.mjs';
import { buildWin, napiSymbols, winBuild } from '../scripts/win.mjs';
import { ROOT } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';

const SLOW = 1_200_000;
const work = mkdtempSync(join(tmpdir(), 'rw-win-build-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const NODEDIR = process.env['npm_config_nodedir'] || '/usr';

/** The COFF machine of a PE file, read from its bytes (the PE format: e_lfanew at 0x3c, then "PE\0\0", then Machine). */
function peMachine(file: string): number {
  const b = readFileSync(file);
  expect(b.toString('latin1', 0, 2)).toBe('MZ');
  const pe = b.readUInt32LE(0x3c);
  expect(b.toString('latin1', pe, pe + 4)).toBe('PE\0\0');
  return b.readUInt16LE(pe + 4);
}

describe('binding.gyp, read for OS==win', () => {
  it('lists the common sources and the Windows ones, none of the POSIX or other platforms', () => {
    const b = winBuild(ROOT);
    expect(b.sources).toEqual(expect.arrayContaining(['native/addon.cc', 'native/fs_win.cc', 'native/win/probe.cc', 'native/win/dirfd.cc']));
    expect(b.sources.filter((s) => /(_linux|_darwin|_other|_posix)\.cc$|native\/(probe|dirfd|runfiles|identity|notify)\.cc$/.test(s))).toEqual([]);
    expect(b.libraries).toEqual(['-lntdll']);
  });

  it("takes node.exe's N-API symbols from node-api-headers, every one of them napi_ or node_api_", () => {
    const names = napiSymbols(ROOT);
    expect(names).toContain('napi_create_function');
    expect(names).toContain('napi_get_uv_event_loop');
    expect(names.filter((n) => !/^(napi|node_api)_/.test(n))).toEqual([]);
  });
});

describe('the Windows sources under zig', () => {
  for (const [arch, machine] of [
    ['x64', 0x8664],
    ['arm64', 0xaa64],
  ] as const) {
    it(`every Windows source compiles for ${arch} with -Wall -Wextra -Werror, and they link into a PE DLL for that machine that passes the prebuild checks`, (ctx: TestContext) => {
      needs(ctx, 'zig');
      const z = findZig();
      if ('why' in z) throw new Error(z.why);
      const out = join(work, arch, 'runwarden.node');
      const r = buildWin(z.zig, ROOT, arch, NODEDIR, out, { werror: true });
      const failed = r.compiled.filter((c) => !c.ok).map((c) => `${c.source}:\n${c.output}`);
      expect(failed, failed.join('\n')).toEqual([]);
      expect(r.compiled.map((c) => c.source)).toEqual(winBuild(ROOT).sources);
      expect(r.linked.ok, r.linked.output).toBe(true);
      expect(peMachine(out)).toBe(machine);
      expect(checkPrebuild(`win32-${arch}`, out)).toEqual([]);
    }, SLOW);
  }
});
