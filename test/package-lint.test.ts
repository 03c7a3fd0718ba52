/**
 * The packed tarball, as the ecosystem's package linters see it: publint (the
 * package.json fields against the files actually packed) and
 * @arethetypeswrong/cli (what TypeScript resolves, under each module mode,
 * against what Node loads).
 *
 * And the documentation it carries, as a user who ran `npm install runwarden`
 * reads it in node_modules: every relative link and image of every Markdown
 * page in the tarball, and every file and section a `--help` names, resolves
 * inside the unpacked package.
 *
 * The tarball is `npm pack --ignore-scripts` of this checkout's built dist/:
 * the scripts only add the prebuilt addons (prepack), which neither linter
 * reads, and would rebuild dist/ under the feet of test files running beside
 * this one. Offline: both tools run from node_modules on a local file, attw
 * with --no-definitely-typed so it never looks up @types on the registry.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from './helpers/lock-procs.js';
import { anchors, brokenLink, githubSlug, relativeLinks } from './helpers/markdown.js';

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

/** Every Markdown file under `dir`, as paths joined onto it. */
function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.md'))
    .map((e) => join(e.parentPath, e.name));
}

/** Each link of each page under `pkg` that does not resolve inside `pkg`, as `page:line: why`; and how many links were read. */
function brokenInPackage(pkg: string): { broken: string[]; checked: number } {
  const broken: string[] = [];
  let checked = 0;
  for (const page of markdownFiles(pkg)) {
    for (const link of relativeLinks(readFileSync(page, 'utf8'))) {
      checked++;
      const why = brokenLink(page, link, pkg);
      if (why !== undefined) broken.push(`${relative(pkg, page)}:${link.line}: ${why}`);
    }
  }
  return { broken, checked };
}

/**
 * The files and sections a help text names: a path under docs/, deploy/ or etc/, and the
 * quoted heading after a Markdown path (`docs/prometheus.md, "Many hosts: Prometheus"`).
 */
function helpReferences(help: string): Array<{ path: string; heading: string | undefined }> {
  const flat = help.replace(/\s+/g, ' ');
  return [...flat.matchAll(/\b((?:docs|deploy|etc|bench)\/[\w./-]*[\w/])(?:,? "([^"]+)")?/g)].map((m) => ({ path: m[1], heading: m[2] }));
}

describe('the documentation the packed tarball carries', () => {
  it('README.md, docs/ (the API reference included), the alert rules and the API report are in it', () => {
    const pkg = join(unpacked, 'package');
    for (const f of ['README.md', 'docs/README.md', 'docs/cli.md', 'docs/install.md', 'docs/library.md', 'docs/prometheus.md', 'docs/changes.md', 'docs/api/README.md', 'docs/dashboard.png', 'deploy/prometheus/runwarden-rules.yml', 'etc/runwarden.api.md']) {
      expect(existsSync(join(pkg, f)), f).toBe(true);
    }
  });

  it('every relative link and image of every Markdown page in it resolves inside the package, file and #anchor', () => {
    const { broken, checked } = brokenInPackage(join(unpacked, 'package'));
    expect(checked).toBeGreaterThan(300); // README, docs/ and the generated reference: the pages were read
    expect(broken).toEqual([]);
  });

  it('a page linking a file the package leaves out, or a heading that is not there, is caught (positive control)', () => {
    const copy = join(work, 'docs-control');
    cpSync(join(unpacked, 'package'), copy, { recursive: true });
    writeFileSync(join(copy, 'docs', 'extra.md'), '# X\n\nraw numbers in [RESULTS](../bench/RESULTS.md), code in [tail](../src/read/tail.ts), [cli](cli.md#no-such-part)\n');
    expect(brokenInPackage(copy).broken).toEqual([
      'docs/extra.md:3: ../bench/RESULTS.md: no file bench/RESULTS.md',
      'docs/extra.md:3: ../src/read/tail.ts: no file src/read/tail.ts',
      'docs/extra.md:3: cli.md#no-such-part: no heading or explicit anchor #no-such-part in docs/cli.md',
    ]);
  });

  it('every file and section a --help names is in the package, read from the packed CLI', () => {
    const pkg = join(unpacked, 'package');
    // The packed CLI, run with this checkout's dependencies (--help loads no addon).
    if (!existsSync(join(pkg, 'node_modules'))) symlinkSync(join(ROOT, 'node_modules'), join(pkg, 'node_modules'), 'dir');
    const help = (args: string[]): string => {
      const r = spawnSync(process.execPath, [join(pkg, 'bin', 'runwarden.js'), ...args, '--help'], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, NO_COLOR: '1' } });
      expect(r.status, r.stderr).toBe(0);
      return r.stdout;
    };
    const top = help([]);
    const commands = [...top.split('\nCommands:\n')[1].matchAll(/^ {2}([a-z]+) /gm)].map((m) => m[1]).filter((c) => c !== 'help');
    expect(commands).toHaveLength(8);
    const missing: string[] = [];
    const refs: string[] = [];
    for (const [name, text] of [['runwarden', top], ...commands.map((c) => [c, help([c])])]) {
      for (const { path, heading } of helpReferences(text)) {
        refs.push(`${name}: ${path}${heading ? ` "${heading}"` : ''}`);
        if (!existsSync(join(pkg, path))) missing.push(`${name} --help: ${path}: not in the package`);
        else if (heading !== undefined && !anchors(readFileSync(join(pkg, path), 'utf8')).has(githubSlug(heading))) missing.push(`${name} --help: ${path}: no section "${heading}"`);
      }
    }
    // serve and metrics point at docs/prometheus.md and the rules: the texts were read.
    expect(refs).toEqual(expect.arrayContaining(['serve: docs/prometheus.md "Many hosts: Prometheus"', 'metrics: deploy/prometheus/']));
    expect(missing).toEqual([]);
    // The reader of references (positive control): a wrapped heading, a path without one.
    expect(helpReferences('see docs/x.md "Many\n  hosts", and deploy/y/.')).toEqual([
      { path: 'docs/x.md', heading: 'Many hosts' },
      { path: 'deploy/y/', heading: undefined },
    ]);
  });
});
