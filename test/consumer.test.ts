/**
 * runwarden as other Node tools get it: `npm pack`, the tarball installed
 * OFFLINE into fresh projects, and real programs run against it.
 *
 * The runtime dependencies are packed from this checkout's node_modules and
 * handed to the consumer as file: tarballs next to runwarden's, so `npm install
 * --offline` resolves everything without a registry, while runwarden's own
 * install script, "files" list, exports map and dependency ranges are the
 * published ones.
 *
 * Slow on purpose (a pack cross-compiles the arm64 prebuild, and the darwin ones
 * with zig where it is there; each consumer is
 * an npm install and a tsc run); nothing here measures time: every wait is for
 * a condition (a line on a pipe, a tick count).
 */
import { spawn, spawnSync, type ChildProcess, type SpawnSyncOptions, type SpawnSyncReturns } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeEach, describe, expect, it, type TestContext } from 'vitest';
import { DARWIN_TARGETS, findZig } from '../scripts/darwin.mjs';
import { MH_BUNDLE, MH_DYLIB, MH_MAGIC_64, PLATFORM_MACOS, readMachO, tbdExports } from './helpers/macho.js';
import { arm64NodeRoot, lacking, needs } from './helpers/prereq.js';
import { runtimePath } from './helpers/runtimes.js';
import { ROOT } from './helpers/lock-procs.js';
import { images } from './helpers/markdown.js';

const SLOW = 900_000;
const work = mkdtempSync(join(tmpdir(), 'rw-consumer-'));
/** TMPDIR of everything this file runs: the consumer programs' own temporary runs go where afterAll removes them. */
const scratch = join(work, 'tmp');
mkdirSync(scratch);
// Packing runs scripts/prebuild.mjs, which builds on linux only, and the consumers check the linux prebuilds.
beforeEach((ctx) => needs(ctx, 'linux: npm pack builds the prebuilds on linux only'));

/** Every process this file starts and does not wait for: killed before the scratch directory goes. */
const running = new Set<ChildProcess>();
afterAll(() => {
  for (const p of running) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

/**
 * Every package in runwarden's runtime dependency tree, as installed here
 * (`npm ls --omit=dev --all --parseable`): each is packed and handed to the
 * consumer as a file: tarball, so an offline install needs nothing from the
 * registry or the npm cache (a fresh user's cache holds no registry metadata).
 */
function runtimeDeps(): Array<{ name: string; dir: string }> {
  const r = spawnSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: ROOT, encoding: 'utf8' });
  expect(r.status, `npm ls failed:\n${r.stderr}`).toBe(0);
  const dirs = r.stdout.split('\n').filter((d) => d !== '' && d !== ROOT);
  return dirs.map((dir) => ({ name: (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string }).name, dir }));
}

function run(cmd: string, args: string[], opts: SpawnSyncOptions = {}): SpawnSyncReturns<string> {
  const env = { ...(opts.env ?? process.env), TMPDIR: scratch };
  return spawnSync(cmd, args, { encoding: 'utf8', timeout: SLOW, maxBuffer: 64 << 20, ...opts, env }) as SpawnSyncReturns<string>;
}

function ok(r: SpawnSyncReturns<string>, what: string): string {
  expect(r.error, `${what}: ${String(r.error)}`).toBeUndefined();
  expect(r.status, `${what} failed:\n${r.stdout}\n${r.stderr}`).toBe(0);
  return r.stdout;
}

/** The last line of a program's stdout, parsed. */
function lastJson<T>(out: string): T {
  const lines = out.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]) as T;
}

interface Packed {
  tarball: string;
  files: string[];
  arches: string[];
  /** Whether the darwin prebuilds were built (zig was there). */
  darwin: boolean;
  /** name -> file: spec of every tarball a consumer depends on. */
  deps: Record<string, string>;
}

let packed: Packed | undefined;
/** Packs runwarden once (prepack builds the prebuilds) and its runtime dependencies. */
function pack(): Packed {
  if (packed) return packed;
  const dest = join(work, 'tarballs');
  mkdirSync(dest);
  const arches = lacking('cc-arm64').length === 0 ? ['x64', 'arm64'] : ['x64'];
  const darwin = lacking('zig').length === 0;
  // Packed from a copy of the checkout: pack rebuilds dist/ (prepare) and puts
  // prebuilds/ in the package directory for a while (prepack), and test files
  // running beside this one load this checkout's dist/ and build/Release.
  const checkout = join(work, 'checkout');
  const skip = new Set(['node_modules', 'build', 'dist', 'prebuilds', '.git', 'test-results']);
  cpSync(ROOT, checkout, {
    recursive: true,
    filter: (from) => {
      const rel = relative(ROOT, from);
      return !skip.has(rel.split(sep)[0]) && !rel.startsWith(join('bench', 'out')) && !rel.endsWith('.tgz');
    },
  });
  symlinkSync(join(ROOT, 'node_modules'), join(checkout, 'node_modules'), 'dir');
  const out = ok(
    run('npm', ['pack', '--json', '--pack-destination', dest], { cwd: checkout, env: { ...process.env, RUNWARDEN_PREBUILD_ARCH: arches.join(','), RUNWARDEN_PREBUILD_DARWIN: darwin ? 'yes' : 'no', RUNWARDEN_PREBUILD_MUSL: darwin ? 'yes' : 'no', RUNWARDEN_PREBUILD_WIN: darwin ? 'yes' : 'no' } }),
    'npm pack',
  );
  const info = JSON.parse(out.slice(out.indexOf('['))) as Array<{ filename: string; files: Array<{ path: string }> }>;
  const first = info[0];
  const deps: Record<string, string> = { runwarden: `file:${join(dest, first.filename)}` };
  for (const { name, dir } of runtimeDeps()) {
    const r = ok(run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dest, dir], { cwd: dest }), `npm pack ${name}`);
    const [d] = JSON.parse(r.slice(r.indexOf('['))) as Array<{ filename: string }>;
    deps[name] = `file:${join(dest, (d).filename)}`;
  }
  packed = { tarball: join(dest, first.filename), files: first.files.map((f) => f.path).sort(), arches, darwin, deps };
  return packed;
}

/** A PATH of symlinks to node, npm and sh only: no C++ compiler, no make, no python. */
function bareBin(): string {
  const bin = join(work, 'bare-bin');
  if (!existsSync(bin)) {
    mkdirSync(bin);
    const npm = ok(run('sh', ['-c', 'command -v npm']), 'which npm').trim();
    symlinkSync(process.execPath, join(bin, 'node'));
    symlinkSync(realpathSync(npm), join(bin, 'npm'));
    symlinkSync('/bin/sh', join(bin, 'sh'));
  }
  return bin;
}

/**
 * A fresh project that installs the tarball offline (with runwarden's install
 * script allowed, as a consumer who reviewed it would), plus `files`.
 */
function consumer(
  name: string,
  files: Record<string, string>,
  env: NodeJS.ProcessEnv = process.env,
  scripts: { allow: boolean; strict?: boolean } = { allow: true },
): { dir: string; install: SpawnSyncReturns<string> } {
  const p = pack();
  const dir = join(work, name);
  mkdirSync(dir);
  writeFileSync(
    join(dir, 'package.json'),
    // npm keys allowScripts by a dependency's resolved identity: for a tarball, its file: spec. The other
    // dependencies' scripts are denied: a consumer gets them from the registry, where npm runs no `prepare`,
    // while from a file: tarball it would count prom-client's `prepare` (husky) as an install script.
    JSON.stringify(
      {
        name: `consumer-${name}`,
        version: '1.0.0',
        private: true,
        type: 'module',
        dependencies: p.deps,
        allowScripts: Object.fromEntries(Object.entries(p.deps).map(([dep, spec]) => [spec, dep === 'runwarden' ? scripts.allow : false])),
      },
      null,
      2,
    ),
  );
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    writeFileSync(join(dir, f), text);
  }
  const install = run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--foreground-scripts', ...(scripts.strict ? ['--strict-allow-scripts'] : [])], { cwd: dir, env });
  return { dir, install };
}

// ---------------------------------------------------------------- programs

/** (a) ESM TypeScript: a lock with `using`, a leg through startLeg, probes from a child, PASS. */
const ESM_TS = `
import { acquireLock, startLeg, runStatus, LOCK_FILE, type ProbeResult, type Status } from 'runwarden';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** What another process sees: a probe run by a child node, never this process. */
function childProbe(lockPath: string): ProbeResult {
  const code = \`import('runwarden').then((m) => process.stdout.write(JSON.stringify(m.probeLock(\${JSON.stringify(lockPath)}))))\`;
  const r = spawnSync(process.execPath, ['-e', code], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout) as ProbeResult;
}

const runDir = join(mkdtempSync(join(tmpdir(), 'rw-esm-')), 'run-1');
const lockPath = join(runDir, LOCK_FILE);
const out: { locked?: string; afterUsing?: string; duringLeg?: string; statusDuringLeg?: Status | null; status?: Status | null; after?: string } = {};
{
  using lock = acquireLock(lockPath);
  out.locked = lock.held ? childProbe(lockPath).liveness : 'not held';
}
out.afterUsing = childProbe(lockPath).liveness;
{
  using leg = startLeg(runDir);
  leg.append({ event: 'node_started', node_id: 'build' });
  leg.append({ event: 'node_passed', node_id: 'build' });
  out.duringLeg = childProbe(lockPath).liveness;
  out.statusDuringLeg = runStatus(runDir).status;
  leg.finish('passed');
}
out.status = runStatus(runDir).status;
out.after = childProbe(lockPath).liveness;
console.log(JSON.stringify(out));
`;

const ESM_TSCONFIG = (typeRoots: string) =>
  JSON.stringify({
    compilerOptions: {
      strict: true,
      target: 'ES2022',
      module: 'nodenext',
      moduleResolution: 'nodenext',
      lib: ['ES2022', 'ESNext.Disposable'],
      types: ['node'],
      typeRoots: [typeRoots],
      outDir: 'out',
      skipLibCheck: false,
    },
    files: ['main.ts'],
  });

/** (b) CommonJS, plain: require(), a lock, a second owner refused in a child with the documented code. */
const CJS_MAIN = `
const rw = require('runwarden');
const { spawnSync } = require('node:child_process');
const { mkdtempSync } = require('node:fs');
const { join } = require('node:path');
const { tmpdir } = require('node:os');
const lockPath = join(mkdtempSync(join(tmpdir(), 'rw-cjs-')), 'run', rw.LOCK_FILE);
const lock = rw.acquireLock(lockPath);
const code = \`const rw = require('runwarden');
try { rw.acquireLock(\${JSON.stringify(lockPath)}); console.log(JSON.stringify({ took: true })); }
catch (e) { console.log(JSON.stringify({ name: e.name, code: e.code, base: e instanceof rw.RunwardenError, held: e instanceof rw.LockHeldError })); }\`;
const child = spawnSync(process.execPath, ['-e', code], { encoding: 'utf8' });
lock.release();
console.log(JSON.stringify({ child: JSON.parse(child.stdout), probeAfter: rw.probeLock(lockPath).liveness, exports: typeof rw.startLeg }));
`;

/**
 * (b) TypeScript CommonJS (module nodenext): type-checks against the CommonJS
 * build's declarations, emits require(), runs.
 */
const CJS_TS = `
import { probeLock, RunwardenError, type ProbeResult } from 'runwarden';
const r: ProbeResult = probeLock(process.argv[2] ?? '/nonexistent-rw/resume.lock');
if (r.liveness === 'unknown') {
  console.log(JSON.stringify({ liveness: r.liveness, reason: r.reason, base: typeof RunwardenError }));
}
`;
/** The same project with a type error: tsc must reject it, or the types were never read. */
const CJS_TS_BAD = `
import { probeLock } from 'runwarden';
const n: number = probeLock('/nonexistent-rw/resume.lock');
console.log(n);
`;
const CJS_TSCONFIG = (typeRoots: string, file: string) =>
  JSON.stringify({
    compilerOptions: { strict: true, target: 'ES2022', module: 'nodenext', moduleResolution: 'nodenext', types: ['node'], typeRoots: [typeRoots], outDir: 'out', skipLibCheck: false },
    files: [file],
  });

/** (c) Worker threads: an ESM worker holds, a CommonJS worker and the main thread probe. */
const WORKER_MAIN = `
import { Worker } from 'node:worker_threads';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { probeLock } from 'runwarden';
const lockPath = join(mkdtempSync(join(tmpdir(), 'rw-worker-')), 'run', 'resume.lock');
const holder = new Worker(new URL('./holder-worker.mjs', import.meta.url), { workerData: { lockPath } });
const [first] = await once(holder, 'message');
const cjs = new Worker(new URL('./probe-worker.cjs', import.meta.url), { workerData: { lockPath } });
const [fromCjsWorker] = await once(cjs, 'message');
const fromMain = probeLock(lockPath).liveness;
holder.postMessage('release');
const [released] = await once(holder, 'message');
const afterRelease = probeLock(lockPath).liveness;
await holder.terminate();
await cjs.terminate();
console.log(JSON.stringify({ first, fromCjsWorker, fromMain, released, afterRelease }));
`;
const HOLDER_WORKER = `
import { parentPort, workerData } from 'node:worker_threads';
import { acquireLock } from 'runwarden';
const lock = acquireLock(workerData.lockPath);
parentPort.postMessage(lock.held ? 'held' : 'not held');
parentPort.once('message', () => { lock.release(); parentPort.postMessage('released'); });
`;
const PROBE_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { probeLock } = require('runwarden');
parentPort.postMessage(probeLock(workerData.lockPath).liveness);
`;

/** (d) The app an esbuild bundle is made of. */
const BUNDLE_APP = `
import { acquireLock, probeLock, setAddonPath, AddonLoadError } from 'runwarden';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
if (process.env.APP_ADDON) setAddonPath(process.env.APP_ADDON);
const lockPath = join(mkdtempSync(join(tmpdir(), 'rw-bundle-')), 'run', 'resume.lock');
try {
  const lock = acquireLock(lockPath);
  const seen = probeLock(lockPath).liveness;
  lock.release();
  console.log(JSON.stringify({ held: seen, after: probeLock(lockPath).liveness }));
} catch (e) {
  console.log(JSON.stringify({ name: e.name, code: e.code, addonLoadError: e instanceof AddonLoadError, message: e.message }));
}
`;

/** (f) acquireLockAsync on a lock a child holds: the loop keeps ticking, then the signal aborts it. */
const ASYNC_WAIT = `
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { acquireLockAsync, AbortError, RunwardenError } from 'runwarden';
const lockPath = join(mkdtempSync(join(tmpdir(), 'rw-async-')), 'run', 'resume.lock');
const holderCode = \`import('runwarden').then((m) => { m.acquireLock(\${JSON.stringify(lockPath)}); console.log('held'); process.stdin.resume(); process.stdin.on('end', () => process.exit(0)); })\`;
const holder = spawn(process.execPath, ['-e', holderCode], { stdio: ['pipe', 'pipe', 'inherit'] });
for await (const line of createInterface({ input: holder.stdout })) if (line === 'held') break;

let ticks = 0;
let reached;
const twentyTicks = new Promise((r) => (reached = r));
const interval = setInterval(() => { ticks++; if (ticks === 20) reached(); }, 10);
const ac = new AbortController();
let settled = false;
const waiting = acquireLockAsync(lockPath, { timeoutMs: Infinity, signal: ac.signal }).finally(() => { settled = true; });
waiting.catch(() => {});
await twentyTicks;
const pendingAfterTicks = !settled;
const ticksWhileWaiting = ticks;
ac.abort(new Error('enough'));
let result;
try {
  const lock = await waiting;
  lock.release();
  result = { took: true };
} catch (e) {
  result = { name: e.name, code: e.code, abortError: e instanceof AbortError, base: e instanceof RunwardenError, cause: e.cause?.message };
}
clearInterval(interval);
const probe = spawnSync(process.execPath, ['-e', \`import('runwarden').then((m) => console.log(m.probeLock(\${JSON.stringify(lockPath)}).liveness))\`], { encoding: 'utf8' });
holder.stdin.end();
console.log(JSON.stringify({ pendingAfterTicks, ticksWhileWaiting, result, holderStill: probe.stdout.trim() }));
`;

/** Under qemu: an arm64 node takes the lock through the package (its prebuild), holds until stdin ends. */
const ARM64_HOLDER = `
import { acquireLock } from 'runwarden';
import { loadedAddonPath } from './node_modules/runwarden/dist/kernel/native.js';
const lock = acquireLock(process.argv[2]);
console.log(JSON.stringify({ arch: process.arch, node: process.version, addon: loadedAddonPath(), held: lock.held }));
process.stdin.resume();
process.stdin.on('end', () => { lock.release(); process.exit(0); });
`;

/** Which addon file a consumer's process loads: runs one probe, then asks the loader. */
const WHICH_ADDON = `
import { probeLock } from 'runwarden';
import { loadedAddonPath } from './node_modules/runwarden/dist/kernel/native.js';
const p = probeLock('/nonexistent-rw/resume.lock');
console.log(JSON.stringify({ addon: loadedAddonPath(), liveness: p.liveness }));
`;

/** Under each Node major, ESM: a leg in try … finally, a probe, a live engine opened and closed. */
const VERSIONS_ESM = `
import { LiveEngine, LOCK_FILE, probeLock, runStatus, startLegAsync } from 'runwarden';
import { loadedAddonPath } from './node_modules/runwarden/dist/kernel/native.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
const root = mkdtempSync(join(tmpdir(), 'rw-versions-'));
const runDir = join(root, 'nightly');
const engine = new LiveEngine({ root, ref: false });
await engine.start();
const leg = await startLegAsync(runDir, { timeoutMs: 30_000 });
let during;
try {
  leg.append({ event: 'node_started', node_id: 'build' });
  during = [probeLock(join(runDir, LOCK_FILE)).liveness, runStatus(runDir).status];
  leg.finish('passed');
} finally {
  leg.release();
}
engine.close();
console.log(JSON.stringify({ node: process.versions.node, addon: loadedAddonPath(), during, after: runStatus(runDir).status }));
`;

/** Under each Node major, CommonJS: require() of the CommonJS build, a lock held and probed, released. */
const VERSIONS_CJS = `
const { acquireLock, probeLock } = require('runwarden');
const { mkdtempSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const lockPath = join(mkdtempSync(join(tmpdir(), 'rw-versions-')), 'run', 'resume.lock');
const lock = acquireLock(lockPath);
const held = probeLock(lockPath).liveness;
lock.release();
console.log(JSON.stringify({ node: process.versions.node, held, after: probeLock(lockPath).liveness }));
`;

/**
 * (g) Under Jest 29's module runtime, which loads CommonJS with its own
 * require and has no require(esm): the tests of the Node tools that would adopt
 * runwarden/lockfile run there.
 */
const JEST_TEST = `
const rw = require('runwarden');
const lockfile = require('runwarden/lockfile');
const { mkdtempSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

test('require("runwarden") loads the library', () => {
  expect(typeof rw.probeLock).toBe('function');
  expect(rw.probeLock('/nonexistent-rw/resume.lock').liveness).toBe('unknown');
});

test('require("runwarden/lockfile") has proper-lockfile shape, and its lock is the kernel lock', async () => {
  expect(lockfile.lock).toBe(lockfile);
  const file = join(mkdtempSync(join(tmpdir(), 'rw-jest-')), 'foo');
  writeFileSync(file, '');
  const release = await lockfile.lock(file);
  const refused = await lockfile.lock(file).catch((e) => e);
  expect(refused.code).toBe('ELOCKED');
  expect(refused.message).toBe('Lock file is already being held');
  expect(refused instanceof rw.RunwardenError).toBe(true);
  expect(await lockfile.check(file)).toBe(true);
  await release();
  expect(await lockfile.check(file)).toBe(false);
});

test("the kernel errors keep their codes in the Jest sandbox (made in the realm of Node, not instanceof its Error)", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rw-jest-'));
  const missing = await lockfile.lock(join(dir, 'never-made')).catch((e) => e);
  expect(missing.code).toBe('ENOENT');
  const noDir = await lockfile.lock(join(dir, 'no-dir', 'foo'), { realpath: false }).catch((e) => e);
  expect(noDir.code).toBe('ENOENT');
  expect((await lockfile.check(join(dir, 'never-made')).catch((e) => e)).code).toBe('ENOENT');
});
`;
const JEST_CONFIG = `module.exports = { rootDir: __dirname, testEnvironment: 'node', testMatch: ['<rootDir>/*.jest.js'], transform: {}, watchman: false };\n`;

// ---------------------------------------------------------------- the shared consumer

let shared: string | undefined;
/** One project for (a)-(d) and (f): installed once. */
function sharedConsumer(): string {
  if (shared) return shared;
  const { dir, install } = consumer('shared', {
    'main.ts': ESM_TS,
    'tsconfig.json': ESM_TSCONFIG(join(ROOT, 'node_modules', '@types')),
    'cjs/package.json': JSON.stringify({ type: 'commonjs' }),
    'cjs/main.js': CJS_MAIN,
    'cjs/index.ts': CJS_TS,
    'cjs/bad.ts': CJS_TS_BAD,
    'cjs/tsconfig.json': CJS_TSCONFIG(join(ROOT, 'node_modules', '@types'), 'index.ts'),
    'cjs/tsconfig.bad.json': CJS_TSCONFIG(join(ROOT, 'node_modules', '@types'), 'bad.ts'),
    'worker-main.mjs': WORKER_MAIN,
    'holder-worker.mjs': HOLDER_WORKER,
    'probe-worker.cjs': PROBE_WORKER,
    'app.mjs': BUNDLE_APP,
    'async-wait.mjs': ASYNC_WAIT,
    'arm64-holder.mjs': ARM64_HOLDER,
    'which-addon.mjs': WHICH_ADDON,
    'versions.mjs': VERSIONS_ESM,
    'cjs/versions.js': VERSIONS_CJS,
    'cjs/jest.config.js': JEST_CONFIG,
    'cjs/rw.jest.js': JEST_TEST,
  });
  ok(install, 'npm install of the tarball');
  shared = dir;
  return dir;
}

const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
/** esbuild's command: a JS shim or, after its postinstall, the native binary; both run directly. */
const ESBUILD = join(ROOT, 'node_modules', '.bin', 'esbuild');

describe('the packed tarball', () => {
  it('carries the prebuilds, the public declarations, LICENSE and the install script; no maps, sources or tests', () => {
    const p = pack();
    const f = new Set(p.files);
    // This machine's own prebuild always; the cross-compiled ones are checked by the tests below, each needing its compiler.
    expect(f.has(`prebuilds/linux-${process.arch}/runwarden.node`), process.arch).toBe(true);
    for (const must of ['LICENSE', 'README.md', 'package.json', 'binding.gyp', 'scripts/install.mjs', 'scripts/node-gyp.mjs', 'dist/index.js', 'dist/index.d.ts', 'bin/runwarden.js']) {
      expect(f.has(must), must).toBe(true);
    }
    expect(p.files.filter((x) => x.endsWith('.map'))).toEqual([]);
    // The documentation ships (test/package-lint.test.ts checks its links inside the package); of bench/, only the picture docs/benchmarks.md shows.
    expect(p.files.filter((x) => /^(src|test|bench|\.ci)\//.test(x))).toEqual(['bench/pollers.svg']);
    for (const must of ['docs/README.md', 'docs/cli.md', 'docs/api/README.md', 'docs/dashboard.png', 'deploy/prometheus/runwarden-rules.yml']) expect(f.has(must), must).toBe(true);
    expect(p.files.filter((x) => x.startsWith('scripts/')).sort()).toEqual(['scripts/install.mjs', 'scripts/node-gyp.mjs']);
    // Declarations: the CLI's and the server's are not public; the CommonJS build's .d.ts, and one .d.mts per
    // ES module entry point re-exporting them (docs/install.md, "Module formats").
    expect(p.files.filter((x) => /^dist\/(cli|serve)\/.*\.d\.c?ts$/.test(x))).toEqual([]);
    expect(p.files.filter((x) => /\.d\.c?mts$|\.d\.cts$/.test(x))).toEqual(['dist/index.d.mts', 'dist/lockfile.d.mts']);
    for (const must of ['dist/package.json', 'dist/index.mjs', 'dist/lockfile.js', 'dist/lockfile.mjs', 'dist/lockfile/index.d.ts', 'lockfile/package.json']) expect(f.has(must), must).toBe(true);
    // Every relative import of a shipped declaration is shipped too.
    const unpacked = join(work, 'unpacked');
    mkdirSync(unpacked);
    ok(run('tar', ['xzf', p.tarball, '-C', unpacked]), 'tar');
    for (const d of p.files.filter((x) => /\.d\.c?ts$/.test(x))) {
      const text = readFileSync(join(unpacked, 'package', d), 'utf8');
      for (const m of text.matchAll(/from\s*['"](\.{1,2}\/[^'"]+)\.(c?js)['"]/g)) {
        const target = join(dirname(d), `${m[1]}.d.${m[2] === 'cjs' ? 'cts' : 'ts'}`);
        expect(f.has(target), `${d} imports ${target}`).toBe(true);
      }
    }
    const pkg = JSON.parse(readFileSync(join(unpacked, 'package', 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      devDependencies?: Record<string, string>;
      license: string;
      repository?: unknown;
      homepage?: string;
      bugs?: unknown;
    };
    expect(Object.keys(pkg.dependencies)).not.toContain('node-gyp');
    for (const [name, range] of Object.entries(pkg.dependencies)) expect(range, name).toMatch(/^\^\d+\.\d+\.\d+$/);
    expect(readFileSync(join(unpacked, 'package', 'LICENSE'), 'utf8')).toMatch(new RegExp(`^${pkg.license} License`));
    // No repository is known yet: the metadata names none rather than a guessed URL (README, "Reporting problems").
    expect([pkg.repository, pkg.homepage, pkg.bugs]).toEqual([undefined, undefined, undefined]);
    // README images are paths in the package, not URLs of a guessed repository.
    const readme = readFileSync(join(unpacked, 'package', 'README.md'), 'utf8');
    for (const { target } of images(readme)) {
      expect(target, 'README image').not.toMatch(/^[a-z]+:/);
      expect(existsSync(join(unpacked, 'package', target)), `README image ${target}`).toBe(true);
    }
    const size = readFileSync(p.tarball).length;
    console.log(`tarball ${size} bytes, ${p.files.length} files`);
  }, SLOW);

  it('carries the linux-arm64 prebuild, cross-compiled', (ctx: TestContext) => {
    needs(ctx, 'cc-arm64');
    expect(pack().files).toContain('prebuilds/linux-arm64/runwarden.node');
  }, SLOW);

  it('carries the darwin and Windows prebuilds, and a musl one for each linux architecture packed (zig builds them all)', (ctx: TestContext) => {
    needs(ctx, 'zig');
    const p = pack();
    const want = [
      ...Object.keys(DARWIN_TARGETS).map((a) => `prebuilds/darwin-${a}/runwarden.node`),
      ...p.arches.map((a) => `prebuilds/linuxmusl-${a}/runwarden.node`),
      ...['x64', 'arm64'].map((a) => `prebuilds/win32-${a}/runwarden.node`),
    ];
    expect(p.files.filter((x) => want.includes(x))).toEqual(want.sort());
  }, SLOW);

  it('with all eight prebuilds, holds as many files as docs/install.md says, and is as large within a tenth', (ctx: TestContext) => {
    needs(ctx, 'zig', 'cc-arm64');
    const p = pack();
    const text = readFileSync(join(ROOT, 'docs', 'install.md'), 'utf8').replace(/\s+/g, ' ');
    const m = /`npm pack` with all eight prebuilds, measured [^:]*: ([\d,]+) kB, (\d+) files/.exec(text);
    expect(m, 'docs/install.md states the tarball with all eight prebuilds').not.toBeNull();
    const [kB, files] = [Number((m as RegExpExecArray)[1].replace(/,/g, '')), Number((m as RegExpExecArray)[2])];
    const size = readFileSync(p.tarball).length / 1000;
    expect(p.files.filter((x) => x.startsWith('prebuilds/'))).toHaveLength(8);
    expect(p.files.length, 'files in the tarball').toBe(files);
    expect(Math.abs(size - kB) / kB, `${size.toFixed(0)} kB against the ${kB} kB stated`).toBeLessThanOrEqual(0.1);
  }, SLOW);

  it('passes the release gate (scripts/release-gate.mjs): all eight prebuilds, each passing its checks', (ctx: TestContext) => {
    needs(ctx, 'zig', 'cc-arm64');
    const p = pack();
    const r = run(process.execPath, [join(ROOT, 'scripts', 'release-gate.mjs'), '--tarball', p.tarball]);
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
    expect(r.stdout.match(/^release-gate: [a-z0-9-]+: ok$/gm)).toHaveLength(8);
  }, SLOW);

  it('installs offline with only runtime dependencies, none of them node-gyp', () => {
    const dir = sharedConsumer();
    const ls = ok(run('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: dir }), 'npm ls').trim().split('\n').slice(1);
    const names = ls.map((p) => p.slice(p.lastIndexOf('node_modules/') + 'node_modules/'.length)).sort();
    // runwarden's runtime dependencies and theirs: bindings (+ file-uri-to-path), commander, node-addon-api,
    // prom-client (+ @opentelemetry/api, tdigest, bintrees) for /metrics; node-gyp is not among them.
    expect(names).toEqual(['@opentelemetry/api', 'bindings', 'bintrees', 'commander', 'file-uri-to-path', 'node-addon-api', 'prom-client', 'runwarden', 'tdigest']);
    expect(names).not.toContain('node-gyp');
    const du = ok(run('du', ['-sb', join(dir, 'node_modules')]), 'du');
    console.log(`npm ls --omit=dev: ${names.length} packages, node_modules ${du.split('\t')[0]} bytes`);
  }, SLOW);
});

describe('consumers of the installed tarball', () => {
  it('(a) ESM TypeScript under tsc --strict: a lock with `using`, a leg through startLeg, child probes, PASS', () => {
    const dir = sharedConsumer();
    ok(run(process.execPath, [TSC, '-p', 'tsconfig.json'], { cwd: dir }), 'tsc (ESM, strict)');
    const out = lastJson<Record<string, string>>(ok(run(process.execPath, ['out/main.js'], { cwd: dir }), 'ESM consumer'));
    expect(out).toEqual({ locked: 'held', afterUsing: 'free', duringLeg: 'held', statusDuringLeg: 'RUNNING', status: 'PASS', after: 'free' });
  }, SLOW);

  it('(b) CommonJS: require() works, errors carry the documented class and code; a TypeScript module nodenext project type-checks', () => {
    const dir = sharedConsumer();
    const out = lastJson<{ child: Record<string, unknown>; probeAfter: string; exports: string }>(ok(run(process.execPath, ['cjs/main.js'], { cwd: dir }), 'CJS consumer'));
    expect(out).toEqual({ child: { name: 'LockHeldError', code: 'ELOCKHELD', base: true, held: true }, probeAfter: 'free', exports: 'function' });

    ok(run(process.execPath, [TSC, '-p', 'cjs/tsconfig.json'], { cwd: dir }), 'tsc (CommonJS, module nodenext)');
    const emitted = readFileSync(join(dir, 'cjs', 'out', 'index.js'), 'utf8');
    expect(emitted).toMatch(/require\("runwarden"\)/);
    const ran = lastJson<Record<string, string>>(ok(run(process.execPath, ['cjs/out/index.js'], { cwd: dir }), 'compiled CJS consumer'));
    expect(ran).toEqual({ liveness: 'unknown', reason: 'missing', base: 'function' });
    // The types are real: a wrong use is rejected.
    const bad = run(process.execPath, [TSC, '-p', 'cjs/tsconfig.bad.json'], { cwd: dir });
    expect(bad.status).not.toBe(0);
    expect(bad.stdout).toMatch(/bad\.ts.*TS2322/);
    expect(bad.stdout).not.toMatch(/TS1479|TS7016/);
  }, SLOW);

  it('(c) worker threads: an ESM worker holds, a CommonJS worker and the main thread see it held, then free', () => {
    const dir = sharedConsumer();
    const out = lastJson<Record<string, string>>(ok(run(process.execPath, ['worker-main.mjs'], { cwd: dir }), 'worker consumer'));
    expect(out).toEqual({ first: 'held', fromCjsWorker: 'held', fromMain: 'held', released: 'released', afterRelease: 'free' });
  }, SLOW);

  it('(d) esbuild bundles (ESM and CJS) run away from node_modules with RUNWARDEN_ADDON or setAddonPath, and say what they tried without it', () => {
    const dir = sharedConsumer();
    const out = join(work, 'bundle');
    mkdirSync(out);
    // runwarden is CommonJS: esbuild's ES module output needs a require for the built-ins it requires (docs/install.md, "Bundlers").
    const banner = "--banner:js=import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);";
    ok(run(ESBUILD, ['app.mjs', '--bundle', '--platform=node', '--format=esm', banner, `--outfile=${join(out, 'app.mjs')}`, '--log-level=error'], { cwd: dir }), 'esbuild esm');
    ok(run(ESBUILD, ['app.mjs', '--bundle', '--platform=node', '--format=esm', `--outfile=${join(out, 'bare.mjs')}`, '--log-level=error'], { cwd: dir }), 'esbuild esm, no banner');
    const bare = run(process.execPath, ['bare.mjs'], { cwd: out, env: { ...process.env, RUNWARDEN_ADDON: './runwarden.node' } });
    expect({ status: bare.status, said: /Dynamic require of "node:[a-z_]+" is not supported/.test(bare.stderr) }, 'what docs/install.md says without the banner').toEqual({ status: 1, said: true });
    ok(run(ESBUILD, ['app.mjs', '--bundle', '--platform=node', '--format=cjs', `--outfile=${join(out, 'app.cjs')}`, '--log-level=error'], { cwd: dir }), 'esbuild cjs');
    copyFileSync(join(dir, 'node_modules', 'runwarden', 'prebuilds', `linux-${process.arch}`, 'runwarden.node'), join(out, 'runwarden.node'));
    const env = { ...process.env, RUNWARDEN_ADDON: '' };
    for (const bundle of ['app.mjs', 'app.cjs']) {
      const withEnv = lastJson<Record<string, unknown>>(ok(run(process.execPath, [bundle], { cwd: out, env: { ...env, RUNWARDEN_ADDON: './runwarden.node' } }), `${bundle} + RUNWARDEN_ADDON`));
      expect(withEnv, bundle).toEqual({ held: 'held', after: 'free' });
      const withCall = lastJson<Record<string, unknown>>(ok(run(process.execPath, [bundle], { cwd: out, env: { ...env, APP_ADDON: join(out, 'runwarden.node') } }), `${bundle} + setAddonPath`));
      expect(withCall, bundle).toEqual({ held: 'held', after: 'free' });
      const without = lastJson<{ name: string; code: string; addonLoadError: boolean; message: string }>(ok(run(process.execPath, [bundle], { cwd: out, env }), `${bundle} alone`));
      expect(without, bundle).toMatchObject({ name: 'AddonLoadError', code: 'ERR_RUNWARDEN_NATIVE', addonLoadError: true });
      expect(without.message, bundle).toMatch(/RUNWARDEN_ADDON/);
      // Bundled, the code is not in its package directory, ESM or CommonJS: only an explicit addon path can serve.
      expect(without.message, bundle).toMatch(/package directory is unknown/);
      const wrong = lastJson<{ code: string; message: string }>(ok(run(process.execPath, [bundle], { cwd: out, env: { ...env, RUNWARDEN_ADDON: './nope.node' } }), `${bundle} + a wrong path`));
      expect(wrong.code).toBe('ERR_RUNWARDEN_NATIVE');
      expect(wrong.message).toContain(join(out, 'nope.node'));
    }
  }, SLOW);

  it('(f) acquireLockAsync waits on a held lock while a 10 ms interval keeps ticking, then its signal aborts it and nothing is taken', () => {
    const dir = sharedConsumer();
    const out = lastJson<{ pendingAfterTicks: boolean; ticksWhileWaiting: number; result: Record<string, unknown>; holderStill: string }>(
      ok(run(process.execPath, ['async-wait.mjs'], { cwd: dir }), 'async consumer'),
    );
    expect(out.pendingAfterTicks).toBe(true);
    expect(out.ticksWhileWaiting).toBeGreaterThanOrEqual(20);
    expect(out.result).toEqual({ name: 'AbortError', code: 'ABORT_ERR', abortError: true, base: true, cause: 'enough' });
    expect(out.holderStill).toBe('held');
  }, SLOW);
});

describe('under Jest 29', () => {
  it('(g) Jest\'s own CommonJS runtime (no require(esm)) loads runwarden and runwarden/lockfile from the installed tarball', () => {
    const dir = sharedConsumer();
    const jest = join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js');
    const r = run(process.execPath, [jest, '--config', 'cjs/jest.config.js', '--ci', '--runInBand', '--json'], { cwd: dir });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    const report = JSON.parse(r.stdout.slice(r.stdout.indexOf('{'))) as { numPassedTests: number; numFailedTests: number };
    expect(report).toMatchObject({ numPassedTests: 3, numFailedTests: 0 });
  }, SLOW);
});

describe('the installed tarball under Node 20, 22, 24 and 26 (binaries from scripts/runtime.sh)', () => {
  for (const major of [20, 22, 24, 26] as const) {
    it(`Node ${major}: ESM (a leg, a probe, a live engine) and CommonJS (require(), a lock) with the same prebuild; \`await using\` parses from 24`, (ctx: TestContext) => {
      // The machine's own node serves for its major; the others come from the cache.
      const own = process.versions.node.split('.')[0] === String(major);
      if (!own) needs(ctx, `node-${major}`);
      const node = own ? process.execPath : (runtimePath(`node-${major}`) as string);
      const dir = sharedConsumer();
      const esm = lastJson<{ node: string; addon: string; during: string[]; after: string }>(ok(run(node, ['versions.mjs'], { cwd: dir }), `ESM under Node ${major}`));
      expect(esm.node.split('.')[0]).toBe(String(major));
      expect(esm).toMatchObject({ addon: join(realpathSync(dir), 'node_modules', 'runwarden', 'prebuilds', 'linux-x64', 'runwarden.node'), during: ['held', 'RUNNING'], after: 'PASS' });
      const cjs = lastJson<{ node: string; held: string; after: string }>(ok(run(node, ['cjs/versions.js'], { cwd: dir }), `CommonJS under Node ${major}`));
      expect(cjs).toEqual({ node: esm.node, held: 'held', after: 'free' });
      // README: \`await using\` is plain JavaScript from Node 24, a SyntaxError before.
      const parse = run(node, ['--input-type=module', '-e', 'async function f() { await using x = null; } console.log(typeof f);'], { cwd: dir });
      if (major >= 24) expect(parse.stdout.trim(), parse.stderr).toBe('function');
      else expect(parse.stderr).toMatch(/SyntaxError/);
      console.log(`Node ${esm.node}: ESM and CommonJS ok`);
    }, SLOW);
  }
});

describe('installing without a compiler, and compiling without node-gyp in the dependencies', () => {
  it('(e) with no C++ compiler, make or python on PATH the install succeeds and the prebuild is what loads', () => {
    const bin = bareBin();
    const env = { ...process.env, PATH: bin, CXX: '', CC: '' };
    expect(run('sh', ['-c', 'command -v g++ || command -v c++ || command -v cc || command -v make || command -v python3'], { env }).status).not.toBe(0);
    const { dir, install } = consumer('no-compiler', { 'which-addon.mjs': WHICH_ADDON }, env);
    ok(install, 'install without a compiler');
    expect(install.stdout + install.stderr).toMatch(/using the prebuilt addon prebuilds\/linux-x64\/runwarden\.node/);
    expect(existsSync(join(dir, 'node_modules', 'runwarden', 'build'))).toBe(false);
    const out = lastJson<{ addon: string; liveness: string }>(ok(run(process.execPath, ['which-addon.mjs'], { cwd: dir, env }), 'probe'));
    expect(out).toEqual({ addon: join(realpathSync(dir), 'node_modules', 'runwarden', 'prebuilds', `linux-${process.arch}`, 'runwarden.node'), liveness: 'unknown' });
  }, SLOW);

  it('under --strict-allow-scripts with runwarden\'s install script denied, the install succeeds and the prebuild still loads', () => {
    const { dir, install } = consumer('strict-denied', { 'which-addon.mjs': WHICH_ADDON }, process.env, { allow: false, strict: true });
    ok(install, 'strict install with the script denied');
    expect(install.stdout + install.stderr).not.toMatch(/using the prebuilt addon/);
    expect(existsSync(join(dir, 'node_modules', 'runwarden', 'build'))).toBe(false);
    const out = lastJson<{ addon: string; liveness: string }>(ok(run(process.execPath, ['which-addon.mjs'], { cwd: dir }), 'probe'));
    expect(out).toEqual({ addon: join(realpathSync(dir), 'node_modules', 'runwarden', 'prebuilds', `linux-${process.arch}`, 'runwarden.node'), liveness: 'unknown' });
  }, SLOW);

  it('with no prebuild, `npm rebuild` compiles with npm\'s own node-gyp against local headers (no nodedir setting, nothing downloaded); with no compiler either it names what is missing and fails', (ctx: TestContext) => {
    needs(ctx, 'cc');
    const { dir, install } = consumer('compile', { 'which-addon.mjs': WHICH_ADDON });
    ok(install, 'install');
    const pkgDir = join(dir, 'node_modules', 'runwarden');
    rmSync(join(pkgDir, 'prebuilds'), { recursive: true });
    expect(existsSync(join(dir, 'node_modules', 'node-gyp'))).toBe(false);
    // A HOME without ~/.npmrc: no nodedir setting, so only the install step's own
    // search for local headers keeps node-gyp from downloading them.
    const home = join(work, 'home-without-npmrc');
    mkdirSync(home);
    const { npm_config_nodedir: _unset, ...inherited } = process.env;
    const rebuilt = run('npm', ['rebuild', 'runwarden', '--foreground-scripts', '--offline'], { cwd: dir, env: { ...inherited, HOME: home } });
    ok(rebuilt, 'npm rebuild');
    expect(existsSync(join(home, '.cache', 'node-gyp')), 'node-gyp downloaded headers').toBe(false);
    expect(rebuilt.stdout + rebuilt.stderr).toMatch(/no usable prebuilt addon .*compiling it with node-gyp/);
    const out = lastJson<{ addon: string; liveness: string }>(ok(run(process.execPath, ['which-addon.mjs'], { cwd: dir }), 'probe'));
    expect(out).toEqual({ addon: join(realpathSync(dir), 'node_modules', 'runwarden', 'build', 'Release', 'runwarden.node'), liveness: 'unknown' });

    rmSync(join(pkgDir, 'build'), { recursive: true });
    const bare = run('npm', ['rebuild', 'runwarden', '--foreground-scripts'], { cwd: dir, env: { ...process.env, PATH: bareBin(), CXX: '', CC: '' } });
    expect(bare.status).not.toBe(0);
    const said = bare.stdout + bare.stderr;
    expect(said).toMatch(/Missing: .*python3.*make.*a C\+\+ compiler \(g\+\+/);
    expect(said).toMatch(/npm rebuild runwarden/);
    const failed = lastJson<{ code?: string }>(
      run(process.execPath, ['-e', `import('runwarden').then((m) => { try { m.probeLock('/x/resume.lock'); console.log('{}') } catch (e) { console.log(JSON.stringify({ code: e.code })) } })`], { cwd: dir }).stdout,
    );
    expect(failed).toEqual({ code: 'ERR_RUNWARDEN_NATIVE' });
  }, SLOW);
});

describe('a prebuild that does not load', () => {
  it('one for another machine makes `npm rebuild` compile as if there were none; a truncated one without a compiler fails naming what is missing on one line', (ctx: TestContext) => {
    needs(ctx, 'cc');
    const { dir, install } = consumer('bad-prebuild', { 'which-addon.mjs': WHICH_ADDON });
    ok(install, 'install');
    const pkgDir = join(dir, 'node_modules', 'runwarden');
    const pre = join(pkgDir, 'prebuilds', `linux-${process.arch}`, 'runwarden.node');
    const good = readFileSync(pre);
    // The same file, marked for another machine (ELF e_machine: AArch64 on x86-64, x86-64 elsewhere).
    const wrongArch = Buffer.from(good);
    wrongArch.writeUInt16LE(process.arch === 'x64' ? 0xb7 : 0x3e, 18);
    writeFileSync(pre, wrongArch);
    const home = join(work, 'home-bad-prebuild');
    mkdirSync(home);
    const { npm_config_nodedir: _unset, ...inherited } = process.env;
    const rebuilt = run('npm', ['rebuild', 'runwarden', '--foreground-scripts', '--offline'], { cwd: dir, env: { ...inherited, HOME: home } });
    ok(rebuilt, 'npm rebuild over a wrong-arch prebuild');
    expect(rebuilt.stdout + rebuilt.stderr).toMatch(/no usable prebuilt addon \(prebuilds\/linux-\w+\/runwarden\.node does not load here: .*\); compiling it with node-gyp/);
    const out = lastJson<{ addon: string; liveness: string }>(ok(run(process.execPath, ['which-addon.mjs'], { cwd: dir }), 'probe'));
    expect(out).toEqual({ addon: join(realpathSync(dir), 'node_modules', 'runwarden', 'build', 'Release', 'runwarden.node'), liveness: 'unknown' });

    rmSync(join(pkgDir, 'build'), { recursive: true });
    writeFileSync(pre, good.subarray(0, good.length >> 1));
    const bare = run('npm', ['rebuild', 'runwarden', '--foreground-scripts'], { cwd: dir, env: { ...process.env, PATH: bareBin(), CXX: '', CC: '' } });
    expect(bare.status).not.toBe(0);
    const said = bare.stdout + bare.stderr;
    expect(said).toMatch(/no prebuilt one fits \(prebuilds\/linux-\w+\/runwarden\.node does not load here: /);
    const missing = said.split('\n').filter((l) => /Missing:/.test(l));
    expect(missing).toHaveLength(1);
    expect(missing[0]).toMatch(/Missing: .*python3.*make.*a C\+\+ compiler/);
  }, SLOW);
});

describe('the darwin prebuilds, read from the packed tarball (nothing here runs on a Mac)', () => {
  /** The tarball's darwin prebuild for `arch`, unpacked. */
  function unpackedPrebuild(arch: string): string {
    const p = pack();
    const dir = join(work, 'unpacked-darwin');
    if (!existsSync(dir)) {
      mkdirSync(dir);
      ok(run('tar', ['xzf', p.tarball, '-C', dir]), 'tar');
    }
    return join(dir, 'package', 'prebuilds', `darwin-${arch}`, 'runwarden.node');
  }

  for (const arch of Object.keys(DARWIN_TARGETS) as Array<keyof typeof DARWIN_TARGETS>) {
    const t = DARWIN_TARGETS[arch];
    it(`darwin-${arch}: a 64-bit ${t.cpuName} Mach-O module for macOS 11 that exports napi_register_module_v1 and needs only N-API and libSystem, no libuv`, (ctx: TestContext) => {
      needs(ctx, 'zig');
      const z = findZig();
      if ('why' in z) throw new Error(z.why);
      expect(pack().files).toContain(`prebuilds/darwin-${arch}/runwarden.node`);
      const file = unpackedPrebuild(arch);
      const head = readFileSync(file).readUInt32LE(0);
      expect(head.toString(16)).toBe(MH_MAGIC_64.toString(16));
      const m = readMachO(file);
      expect(m.cputype.toString(16)).toBe(t.cputype.toString(16));
      expect([MH_BUNDLE, MH_DYLIB]).toContain(m.filetype);
      expect(m.build).toEqual({ platform: PLATFORM_MACOS, minos: '11.0' });
      const register = m.symbols.filter((s) => s.name === '_napi_register_module_v1');
      expect(register).toEqual([{ name: '_napi_register_module_v1', defined: true, external: true }]);
      // What libSystem exports on macOS 11 (the deployment target), from zig's stub of it.
      const stub = join(dirname(z.zig), 'lib', 'libc', 'darwin', 'libSystem.11.tbd');
      const libSystem = tbdExports(readFileSync(stub, 'utf8'), `${t.cpuName === 'x86_64' ? 'x86_64' : 'arm64'}-macos`);
      expect(libSystem.has('_flock') && libSystem.has('_kqueue') && libSystem.has('_fstatfs')).toBe(true);
      const undef = [...new Set(m.symbols.filter((s) => !s.defined).map((s) => s.name))];
      expect(undef.filter((n) => /^_uv_/.test(n)), 'libuv symbols: not Node-API').toEqual([]);
      const fromNode = undef.filter((n) => /^_(napi|node_api)_/.test(n));
      expect(fromNode).toContain('_napi_create_function');
      const other = undef.filter((n) => !fromNode.includes(n) && !libSystem.has(n));
      expect(other, `undefined symbols from neither N-API nor libSystem`).toEqual([]);
      // libc++ and libc++abi are linked in (zig's own), so nothing is asked of /usr/lib/libc++.1.dylib.
      expect(undef.filter((n) => /^__Z/.test(n))).toEqual([]);
      console.log(`darwin-${arch}: ${readFileSync(file).length} bytes, filetype ${m.filetype}, ${undef.length} undefined symbols (${fromNode.length} N-API, the rest libSystem)`);
    }, SLOW);
  }
});

describe('the linux prebuilds, read from the packed tarball by binutils', () => {
  it('every ELF prebuild needs no libuv symbol (`nm -D --undefined-only`), and the musl ones no glibc symbol version (`readelf -V`)', (ctx: TestContext) => {
    needs(ctx, 'cc');
    const p = pack();
    const dir = join(work, 'unpacked-elf');
    mkdirSync(dir);
    ok(run('tar', ['xzf', p.tarball, '-C', dir]), 'tar');
    const elves = p.files.filter((f) => /^prebuilds\/linux(musl)?-[a-z0-9]+\/runwarden\.node$/.test(f));
    expect(elves).toContain('prebuilds/linux-x64/runwarden.node');
    for (const f of elves) {
      const file = join(dir, 'package', f);
      const undef = ok(run('nm', ['-D', '--undefined-only', file]), `nm ${f}`).split('\n').map((l) => l.trim().split(/\s+/).pop() ?? '').filter(Boolean);
      expect(undef, f).toContain('napi_create_function');
      expect(undef.filter((n) => /^uv_/.test(n)), `${f}: libuv symbols`).toEqual([]);
      if (f.includes('linuxmusl')) expect(ok(run('readelf', ['-V', '-W', file]), `readelf ${f}`), f).not.toMatch(/GLIBC_/);
      console.log(`${f}: ${undef.length} undefined symbols, none libuv's`);
    }
  }, SLOW);
});

describe('the linux-arm64 prebuild', () => {
  it('runs under qemu-user-static with Debian\'s arm64 node: an arm64 leg holds, an x86-64 probe sees it', async (ctx: TestContext) => {
    needs(ctx, 'cc-arm64', 'qemu-arm64', 'node-arm64');
    const dir = sharedConsumer();
    expect(pack().files).toContain('prebuilds/linux-arm64/runwarden.node');
    const root = arm64NodeRoot();
    const lockPath = join(mkdtempSync(join(work, 'arm64-')), 'run', 'resume.lock');
    const proc = spawn('qemu-aarch64-static', ['-L', root, join(root, 'usr', 'bin', 'node'), 'arm64-holder.mjs', lockPath], { cwd: dir, stdio: ['pipe', 'pipe', 'pipe'] });
    running.add(proc);
    proc.once('exit', () => running.delete(proc));
    let stderr = '';
    proc.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
    let first: string | undefined;
    for await (const line of createInterface({ input: proc.stdout })) {
      first = line;
      break;
    }
    expect(first, stderr).toBeDefined();
    const said = JSON.parse(first as string) as { arch: string; node: string; addon: string; held: boolean };
    expect(said).toMatchObject({ arch: 'arm64', held: true, addon: join(realpathSync(dir), 'node_modules', 'runwarden', 'prebuilds', 'linux-arm64', 'runwarden.node') });
    console.log(`arm64 under qemu: node ${said.node}`);
    const probe = (): string =>
      ok(run(process.execPath, ['-e', `import('runwarden').then((m) => console.log(m.probeLock(${JSON.stringify(lockPath)}).liveness))`], { cwd: dir }), 'x64 probe').trim();
    expect(probe()).toBe('held');
    proc.stdin.end();
    expect(await exited, stderr).toBe(0);
    expect(probe()).toBe('free');
  }, SLOW);
});

describe('the loader, in this checkout', () => {
  const index = join(ROOT, 'dist', 'index.js');
  const built = join(ROOT, 'build', 'Release', 'runwarden.node');
  const script = (body: string): string => `const m = await import(${JSON.stringify(index)}); const out = {}; ${body}; console.log(JSON.stringify(out));`;
  const node = (body: string, env: NodeJS.ProcessEnv = {}): Record<string, unknown> =>
    lastJson(ok(run(process.execPath, ['--input-type=module', '-e', script(body)], { env: { ...process.env, RUNWARDEN_ADDON: '', ...env } }), 'loader script'));

  it('setAddonPath: before the first load it chooses; after it, the same path is a no-op and another throws AddonLoadError', () => {
    const out = node(`
      m.setAddonPath(${JSON.stringify(built)});
      out.first = m.probeLock('/nonexistent-rw/resume.lock').liveness;
      m.setAddonPath(${JSON.stringify(built)});
      try { m.setAddonPath('/elsewhere/runwarden.node'); out.other = 'accepted'; } catch (e) { out.other = e.code; out.says = e.message; }
      try { m.setAddonPath(''); } catch (e) { out.empty = e.name; }`);
    expect(out).toMatchObject({ first: 'unknown', other: 'ERR_RUNWARDEN_NATIVE', empty: 'TypeError' });
    expect(out['says']).toContain(built);
  });

  it('RUNWARDEN_ADDON naming a file that is not an addon fails with that path, and nothing else is tried', () => {
    const notAddon = join(work, 'not-an-addon.node');
    writeFileSync(notAddon, 'not ELF\n');
    const out = node(`try { m.probeLock('/nonexistent-rw/resume.lock'); out.loaded = true; } catch (e) { out.code = e.code; out.message = e.message; }`, { RUNWARDEN_ADDON: notAddon });
    expect(out['code']).toBe('ERR_RUNWARDEN_NATIVE');
    expect(out['message']).toContain(notAddon);
    expect(out['message']).toMatch(/chosen by RUNWARDEN_ADDON; nothing else was tried/);
  });

  it('without a choice or a prebuild it loads the compiled build through bindings', () => {
    const out = node(`m.probeLock('/nonexistent-rw/resume.lock'); out.addon = (await import(${JSON.stringify(join(ROOT, 'dist', 'kernel', 'native.js'))})).loadedAddonPath();`);
    expect(out).toEqual({ addon: built });
  });
});
