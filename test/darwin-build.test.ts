/**
 * The darwin build gate: every source of binding.gyp's OS=='mac' build compiles
 * for arm64 and x86-64 macOS (deployment target from binding.gyp) with
 * -Wall -Wextra -Werror, with the zig cross compiler (scripts/zig.sh), and the
 * objects link into a loadable Mach-O module of the right CPU type.
 *
 * This is a compile-and-link check, nothing more: no darwin code runs here.
 * What the shipped prebuilds need from the system is checked from the packed
 * tarball in test/consumer.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, type TestContext } from 'vitest';
import { buildDarwin, compileArgs, DARWIN_TARGETS, findZig, gypConditionHolds, machHeader, macBuild, nodeIncludeDir } from '../scripts/darwin.mjs';
import { ROOT } from './helpers/lock-procs.js';
import { MH_BUNDLE, MH_DYLIB } from './helpers/macho.js';
import { needs } from './helpers/prereq.js';

const SLOW = 1_200_000;
const work = mkdtempSync(join(tmpdir(), 'rw-darwin-build-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The Node headers: the local ones, as scripts/prebuild.mjs uses (N-API's headers are the same everywhere). */
const NODEDIR = process.env['npm_config_nodedir'] || '/usr';

describe('binding.gyp, read for OS==mac', () => {
  it('lists the common sources and the darwin platform files, not the linux or fallback ones', () => {
    const b = macBuild(ROOT);
    expect(b.sources).toContain('native/addon.cc');
    expect(b.sources).toContain('native/fs_darwin.cc');
    expect(b.sources).toContain('native/notify_darwin.cc');
    expect(b.sources.filter((s) => /_(linux|other)\.cc$/.test(s))).toEqual([]);
    expect(b.deploymentTarget).toBe('11.0');
    expect(b.defines).toEqual(expect.arrayContaining(['NAPI_VERSION=8', 'NAPI_DISABLE_CPP_EXCEPTIONS']));
  });

  it('evaluates the conditions it knows and refuses the ones it does not', () => {
    expect(gypConditionHolds("OS=='mac'", 'mac')).toBe(true);
    expect(gypConditionHolds("OS=='linux'", 'mac')).toBe(false);
    expect(gypConditionHolds("OS!='linux' and OS!='mac'", 'mac')).toBe(false);
    expect(gypConditionHolds("OS!='linux' and OS!='mac'", 'freebsd')).toBe(true);
    expect(gypConditionHolds("OS=='win' or OS=='mac'", 'mac')).toBe(true);
    expect(() => gypConditionHolds("target_arch=='arm64'", 'mac')).toThrow(/not understood/);
  });
});

describe('the darwin sources under zig', () => {
  it('-Werror is in force: a source with an unused variable fails to compile (positive control)', (ctx: TestContext) => {
    needs(ctx, 'zig');
    const z = findZig();
    if ('why' in z) throw new Error(z.why);
    const src = join(work, 'unused.cc');
    writeFileSync(src, 'int f() { int unused = 1; return 0; }\n');
    const args = compileArgs('arm64', macBuild(ROOT), nodeIncludeDir(NODEDIR), src, join(work, 'unused.o'), { werror: true });
    const r = spawnSync(z.zig, args, { encoding: 'utf8', env: { ...process.env, ZIG_LOCAL_CACHE_DIR: join(work, 'zig-cache') } });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/unused variable.*-Werror/);
  }, SLOW);

  for (const arch of Object.keys(DARWIN_TARGETS) as Array<keyof typeof DARWIN_TARGETS>) {
    const t = DARWIN_TARGETS[arch];
    it(`every mac source compiles for ${t.triple} with -Wall -Wextra -Werror, and they link into a ${t.cpuName} Mach-O module`, (ctx: TestContext) => {
      needs(ctx, 'zig');
      const z = findZig();
      if ('why' in z) throw new Error(z.why);
      const out = join(work, arch, 'runwarden.node');
      const r = buildDarwin(z.zig, ROOT, arch, NODEDIR, out, { werror: true });
      const failed = r.compiled.filter((c) => !c.ok).map((c) => `${c.source}:\n${c.output}`);
      expect(failed, failed.join('\n')).toEqual([]);
      expect(r.compiled.map((c) => c.source)).toEqual(macBuild(ROOT).sources);
      expect(r.linked.ok, r.linked.output).toBe(true);
      const h = machHeader(out);
      if ('why' in h) throw new Error(h.why);
      expect(h.cputype).toBe(t.cputype);
      expect([MH_BUNDLE, MH_DYLIB]).toContain(h.filetype);
    }, SLOW);
  }
});
