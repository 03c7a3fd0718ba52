/**
 * The packed tarball, as the ecosystem's package linters see it: publint (the
 * package.json fields against the files actually packed) and
 * @arethetypeswrong/cli (what TypeScript resolves, under each module mode,
 * against what Node loads).
 *
 * The tarball is `npm pack --ignore-scripts` of this checkout's built dist/:
 * the scripts only add the prebuilt addons (prepack), which neither linter
 * reads, and would rebuild dist/ under the feet of test files running beside
 * this one. Offline: both tools run from node_modules on a local file, attw
 * with --no-definitely-typed so it never looks up @types on the registry.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from './helpers/lock-procs.js';

const work = mkdtempSync(join(tmpdir(), 'rw-package-lint-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

let tarball = '';
let unpacked = '';

beforeAll(() => {
  expect(existsSync(join(ROOT, 'dist', 'index.js')), 'dist/ is built (npm run build)').toBe(true);
  const r = spawnSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
  expect(r.status, `npm pack failed:\n${r.stderr}`).toBe(0);
  const [info] = JSON.parse(r.stdout.slice(r.stdout.indexOf('['))) as Array<{ filename: string }>;
  tarball = join(work, (info).filename);
  unpacked = join(work, 'unpacked');
  mkdirSync(unpacked);
  const x = spawnSync('tar', ['xzf', tarball, '-C', unpacked], { encoding: 'utf8' });
  expect(x.status, x.stderr).toBe(0);
}, 300_000);

async function lint(pkgDir: string): Promise<{ name: unknown; messages: string[] }> {
  const { messages, pkg } = await publint({ pkgDir, pack: false, level: 'suggestion', strict: true });
  return { name: pkg.name, messages: messages.map((m) => `${m.code}: ${formatMessage(m, pkg, { color: false }) ?? ''}`) };
}

interface AttwProblem {
  kind: string;
  entrypoint?: string;
  resolutionKind?: string;
}

/**
 * attw findings kept on purpose, each with its reason. Anything else it
 * reports fails the test, and so does a kept finding that disappears (then
 * its entry, and what docs/install.md ("What the package linters say") says
 * about it, should go). None is kept: the CommonJS build answers `require`
 * and the ES module entry points answer `import`, each with declarations of
 * its own format, for both entry points (scripts/build-cjs.mjs).
 */
const KEPT: Array<AttwProblem & { why: string }> = [];

describe('the packed tarball', () => {
  it('passes publint (strict, every level), which reads the packed files', async () => {
    const { name, messages } = await lint(join(unpacked, 'package'));
    expect(name).toBe('runwarden');
    expect(messages).toEqual([]);
  });

  it('publint does see the exports map: CommonJS declarations under the import condition are reported (positive control)', async () => {
    const copy = join(work, 'control');
    cpSync(join(unpacked, 'package'), copy, { recursive: true });
    const pkgPath = join(copy, 'package.json');
    const pkg = JSON.parse(readFileSync(pkgPath, 'utf8')) as { exports: Record<string, unknown> };
    // dist/ is CommonJS (dist/package.json), so its .d.ts describe CommonJS: wrong for `import`.
    (pkg.exports['.'] as { import: { types: string } }).import.types = './dist/index.d.ts';
    writeFileSync(pkgPath, JSON.stringify(pkg));
    const { messages } = await lint(copy);
    expect(messages.some((m) => m.startsWith('EXPORTS_TYPES_INVALID_FORMAT: ') && m.includes('pkg.exports["."].import.types'))).toBe(true);
  });

  it('passes @arethetypeswrong/cli but for the findings kept with their reason', () => {
    const cli = join(ROOT, 'node_modules', '@arethetypeswrong', 'cli', 'dist', 'index.js');
    const r = spawnSync(process.execPath, [cli, tarball, '--format', 'json', '--no-definitely-typed', '--no-color'], { encoding: 'utf8', timeout: 300_000, maxBuffer: 64 << 20 });
    expect(r.error).toBeUndefined();
    const out = JSON.parse(r.stdout) as { analysis: { packageName: string; entrypoints: Record<string, unknown> }; problems?: Record<string, AttwProblem[]> };
    // It analysed this package and its entry points (a run that read nothing would also report nothing).
    expect(out.analysis.packageName).toBe('runwarden');
    expect(Object.keys(out.analysis.entrypoints).sort()).toEqual(['.', './lockfile', './package.json']);
    const found = Object.values(out.problems ?? {})
      .flat()
      .map((p) => ({ kind: p.kind, entrypoint: p.entrypoint, resolutionKind: p.resolutionKind }));
    expect(found).toEqual(KEPT.map(({ why: _why, ...p }) => p));
  });
});
