/**
 * What the install step says is missing when it has to compile the addon
 * (scripts/node-gyp.mjs, shipped): each tool with where to get it on the
 * platform that runs the install. Xcode's command line tools bring python3,
 * make and clang on a Mac, so a Mac user is never told to use apt-get.
 * Asked of a child process whose PATH holds nothing, so every tool is missing.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from './helpers/lock-procs.js';

const empty = mkdtempSync(join(tmpdir(), 'rw-hints-bin-'));
afterAll(() => rmSync(empty, { recursive: true, force: true }));

/** missingToolchain(platform) with no tool on PATH and no CXX or python setting. */
function missing(platform: string): string[] {
  const script = `import(${JSON.stringify(join(ROOT, 'scripts', 'node-gyp.mjs'))}).then((m) => process.stdout.write(JSON.stringify(m.missingToolchain(${JSON.stringify(platform)}))))`;
  const { CXX: _c, PYTHON: _p, npm_config_python: _n, ...env } = process.env;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...env, PATH: empty } });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as string[];
}

describe('the install step names what a compile lacks, and where to get it on this platform', () => {
  it('on darwin: python3, make and clang from Xcode\'s command line tools, never apt-get', () => {
    expect(missing('darwin')).toEqual([
      'python3 (macOS: xcode-select --install)',
      'make (macOS: xcode-select --install)',
      'a C++ compiler (c++ or clang++; macOS: xcode-select --install)',
    ]);
  });

  it('on linux: Debian\'s packages', () => {
    expect(missing('linux')).toEqual([
      'python3 (Debian: apt-get install python3)',
      'make (Debian: apt-get install make)',
      'a C++ compiler (g++; Debian: apt-get install g++)',
    ]);
  });
});
