/**
 * The byte search's portable path, run: native/scan.cc built for linux-arm64
 * (16 bytes a step, NEON), loaded by Debian's arm64 node under qemu-user,
 * answering the same cases as this machine's path (test/helpers/
 * search-cases.ts) against a byte-by-byte search. It is the path darwin arm64
 * and linux arm64 take; this CPU takes the AVX-512 VBMI one, and the XNU
 * model lane the AVX2 one. qemu runs the instructions, not their speed: this
 * says the answers are right, nothing of the cost.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, describe, expect, it, type TestContext } from 'vitest';
import { nodeIncludeDir } from '../scripts/darwin.mjs';
import { arm64NodeRoot, needs } from './helpers/prereq.js';
import { removeTree } from './helpers/remove-tree.js';
import { searchCases } from './helpers/search-cases.js';

const ROOT = resolve(import.meta.dirname, '..');
const NODEDIR = process.env['npm_config_nodedir'] || '/usr';
const work = mkdtempSync(join(tmpdir(), 'rw-scan-arm64-'));
afterAll(() => removeTree(work));

/** An addon of scan.cc alone: its exports, `lastMatch` and `searchPaths`. */
const MODULE = `
#include <napi.h>
#include "scan.h"
Napi::Object Init(Napi::Env env, Napi::Object exports) {
  rw::RegisterScan(env, exports);
  return exports;
}
NODE_API_MODULE(scan, Init)
`;

/** Run by the arm64 node: each case's answer, in order, one JSON array on stdout. */
const RUNNER = `
import { readFileSync } from 'node:fs';
const m = { exports: {} };
process.dlopen(m, process.argv[2]);
const cases = JSON.parse(readFileSync(process.argv[3], 'utf8'));
const paths = m.exports.searchPaths();
const answers = cases.map((c) => {
  const outer = Buffer.from(c.outer, 'base64');
  return m.exports.lastMatch(outer.subarray(c.off, c.off + c.len), c.end, Buffer.from(c.packed, 'base64'), 'neon');
});
process.stdout.write(JSON.stringify({ arch: process.arch, paths, answers }));
`;

describe("lastMatch's portable path (arm64, under qemu)", () => {
  it('on the neon path: answers every case as a byte-by-byte search does', (ctx: TestContext) => {
    needs(ctx, 'cc-arm64', 'qemu-arm64', 'node-arm64');
    const napi = resolve(createRequire(join(ROOT, 'package.json')).resolve('node-addon-api/package.json'), '..');
    writeFileSync(join(work, 'module.cc'), MODULE);
    const addon = join(work, 'scan-arm64.node');
    const cc = spawnSync(
      'aarch64-linux-gnu-g++',
      ['-std=c++17', '-O2', '-fPIC', '-shared', '-Wall', '-Wextra', '-Werror', '-DNAPI_VERSION=8', '-DNAPI_DISABLE_CPP_EXCEPTIONS', `-I${napi}`, `-I${nodeIncludeDir(NODEDIR)}`, `-I${join(ROOT, 'native')}`, join(ROOT, 'native', 'scan.cc'), join(work, 'module.cc'), '-o', addon],
      { encoding: 'utf8' },
    );
    expect(cc.status, cc.stderr).toBe(0);
    const cases = searchCases(20261205, 150);
    writeFileSync(join(work, 'cases.json'), JSON.stringify(cases.map((c) => ({ outer: c.outer.toString('base64'), off: c.off, len: c.len, end: c.end, packed: c.packed.toString('base64') }))));
    writeFileSync(join(work, 'runner.mjs'), RUNNER);
    const root = arm64NodeRoot();
    const run = spawnSync('qemu-aarch64-static', ['-L', root, join(root, 'usr', 'bin', 'node'), join(work, 'runner.mjs'), addon, join(work, 'cases.json')], { encoding: 'utf8', timeout: 240_000 });
    expect(run.status, `${run.stderr}${run.error ?? ''}`).toBe(0);
    const said = JSON.parse(run.stdout) as { arch: string; paths: string[]; answers: number[] };
    expect(said.arch).toBe('arm64');
    // arm64 has the 16-byte path alone, compiled to NEON, and the answers below came from it by name.
    expect(said.paths).toEqual(['neon']);
    console.log(`lastMatch ran on the ${said.paths[0]} path (linux-arm64 under qemu): ${cases.length} long cases`);
    expect(said.answers).toHaveLength(cases.length);
    cases.forEach((c, i) => expect(said.answers[i], c.label).toBe(c.want));
    // The cases are not all misses.
    expect(cases.filter((c) => c.want >= 0).length).toBeGreaterThan(300);
  }, 300_000);
});
