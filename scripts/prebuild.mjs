#!/usr/bin/env node
// Builds the prebuilt addons the tarball ships: prebuilds/linux-x64/runwarden.node
// and prebuilds/linux-arm64/runwarden.node (glibc), from binding.gyp exactly as it
// is (whatever sources it lists), with node-gyp; and prebuilds/darwin-arm64 and
// prebuilds/darwin-x64/runwarden.node (macOS 11 and later), cross-compiled from
// binding.gyp's OS=='mac' build with zig (scripts/darwin.mjs, scripts/zig.sh). `npm pack` runs it (prepack) and
// removes the result afterwards (postpack, `--clean`), so a prebuild is never older
// than the sources it ships with and never shadows a fresh build/Release in a
// working tree (the loader tries prebuilds first).
//
//   node scripts/prebuild.mjs [--arch x64,arm64] [--darwin auto|yes|no] [--musl auto|yes|no] [--win auto|yes|no] [--nodedir DIR]
//     (or RUNWARDEN_PREBUILD_ARCH=x64, RUNWARDEN_PREBUILD_DARWIN=yes, RUNWARDEN_PREBUILD_MUSL=yes, RUNWARDEN_PREBUILD_WIN=yes)
//   node scripts/prebuild.mjs --clean
//
// --darwin: `auto` (the default) builds both darwin prebuilds when zig is there
// (scripts/zig.sh's cache, or RUNWARDEN_ZIG) and otherwise says, on stderr, that
// the package will have none; `yes` fails without zig (a release: run
// scripts/zig.sh first); `no` builds none. --musl: the same for
// prebuilds/linuxmusl-{x64,arm64} (zig too: scripts/musl.mjs), for each --arch.
// --win: the same for prebuilds/win32-{x64,arm64} (zig: scripts/win.mjs, both
// arches whatever --arch says, as for darwin). Under `npm publish` all three are
// `yes` and both arches are built, whatever was asked: a published package has
// every prebuild (scripts/release-gate.mjs checks the tarball before that).
//
// Every prebuild is checked as it is made (scripts/prebuild-check.mjs: machine,
// C library, symbols, no libuv; Mach-O CPU, macOS 11, libSystem only, install
// name, arm64 signature; PE machine, N-API-only imports from node.exe, system
// DLLs only), and a build that fails a check fails the script.
//
// Each architecture builds in its own temporary copy of binding.gyp + native/, so
// the developer's build/ is untouched. arm64 is cross-compiled with Debian's
// g++-aarch64-linux-gnu (aarch64-linux-gnu-g++). Node headers come from the local
// nodedir (npm's `nodedir` setting, else /usr when /usr/include/node has them):
// nothing is downloaded. N-API (NAPI_VERSION in binding.gyp) keeps one binary good
// for every Node version `engines` admits; the headers' own architecture does not
// matter for N-API.
//
// After each build the script checks the ELF machine of the result, strips it, and
// prints the newest glibc symbol version it needs (the glibc floor docs/install.md states).
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildDarwin, DARWIN_TARGETS, findZig, machHeader } from './darwin.mjs';
import { buildMusl, MUSL_TARGETS } from './musl.mjs';
import { buildWin, WIN_TARGETS } from './win.mjs';
import { parsePe } from './prebuild-check.mjs';
import { checkPrebuild } from './prebuild-check.mjs';
import { findNodeGyp, localNodedir, which } from './node-gyp.mjs';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const out = join(root, 'prebuilds');

/** What each architecture needs: its ELF e_machine, and the tool prefix when cross-compiling from x64. */
const TARGETS = {
  x64: { machine: 0x3e, machineName: 'x86-64', cross: 'x86_64-linux-gnu-' },
  arm64: { machine: 0xb7, machineName: 'AArch64', cross: 'aarch64-linux-gnu-' },
};

function fail(msg) {
  process.stderr.write(`prebuild: ${msg}\n`);
  process.exit(1);
}

function arg(name) {
  const i = process.argv.indexOf(name);
  return i === -1 ? undefined : process.argv[i + 1];
}

if (process.argv.includes('--clean')) {
  rmSync(out, { recursive: true, force: true });
  process.exit(0);
}
if (process.platform !== 'linux') fail(`prebuilds are made on linux (this is ${process.platform})`);

function nodedir() {
  const given = arg('--nodedir') ?? localNodedir();
  if (given) return given;
  const r = spawnSync('npm', ['config', 'get', 'nodedir'], { encoding: 'utf8' });
  const v = r.status === 0 ? r.stdout.trim() : '';
  if (v && v !== 'undefined' && v !== 'null') return v;
  fail('no local Node headers: set npm config nodedir (or pass --nodedir DIR); this script never downloads them');
}

function elfMachine(file) {
  const b = readFileSync(file);
  if (b.length < 20 || b.readUInt32BE(0) !== 0x7f454c46) fail(`${file} is not an ELF file`);
  return b.readUInt16LE(18);
}

/** The newest GLIBC_x.y symbol version the file references (its glibc floor). */
function glibcFloor(file, prefix) {
  const objdump = which(`${prefix}objdump`) ?? which('objdump');
  if (!objdump) return 'unknown (no objdump)';
  const r = spawnSync(objdump, ['-T', file], { encoding: 'utf8' });
  const versions = [...r.stdout.matchAll(/GLIBC_(\d+)\.(\d+)(?:\.(\d+))?/g)].map((m) => [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)]);
  if (versions.length === 0) return 'none';
  versions.sort((a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2]);
  const v = versions[versions.length - 1];
  return `${v[0]}.${v[1]}${v[2] ? `.${v[2]}` : ''}`;
}

function build(arch, gyp, headers) {
  const t = TARGETS[arch];
  const cross = process.arch !== arch;
  const env = { ...process.env };
  if (cross) {
    const cxx = which(`${t.cross}g++`);
    if (!cxx) {
      fail(`cross-compiling for linux-${arch} needs ${t.cross}g++ (Debian: apt-get install g++-${t.cross.slice(0, -1)})`);
    }
    Object.assign(env, { CC: `${t.cross}gcc`, CXX: `${t.cross}g++`, LINK: `${t.cross}g++`, AR: `${t.cross}ar` });
  }
  const work = mkdtempSync(join(tmpdir(), `runwarden-prebuild-${arch}-`));
  try {
    copyFileSync(join(root, 'binding.gyp'), join(work, 'binding.gyp'));
    cpSync(join(root, 'native'), join(work, 'native'), { recursive: true });
    // binding.gyp asks node for node-addon-api's include dir from its own directory.
    symlinkSync(join(root, 'node_modules'), join(work, 'node_modules'), 'dir');
    process.stdout.write(`prebuild: linux-${arch}${cross ? ` (cross, ${t.cross}g++)` : ''} with ${gyp}, nodedir ${headers}\n`);
    const r = spawnSync(process.execPath, [gyp, 'rebuild', `--arch=${arch}`, `--nodedir=${headers}`], { cwd: work, env, stdio: 'inherit' });
    if (r.status !== 0) fail(`node-gyp failed for linux-${arch} (exit ${r.status ?? r.signal})`);
    const built = join(work, 'build', 'Release', 'runwarden.node');
    if (!existsSync(built)) fail(`node-gyp left no ${built}`);
    const m = elfMachine(built);
    if (m !== t.machine) fail(`linux-${arch}: the build is ELF machine 0x${m.toString(16)}, not ${t.machineName}`);
    const strip = which(`${cross ? t.cross : ''}strip`) ?? (cross ? undefined : which('strip'));
    if (strip) spawnSync(strip, ['--strip-unneeded', built], { stdio: 'inherit' });
    const dest = join(out, `linux-${arch}`);
    mkdirSync(dest, { recursive: true });
    copyFileSync(built, join(dest, 'runwarden.node'));
    const size = readFileSync(join(dest, 'runwarden.node')).length;
    process.stdout.write(`prebuild: prebuilds/linux-${arch}/runwarden.node ${t.machineName}, ${size} bytes, needs glibc >= ${glibcFloor(built, cross ? t.cross : '')}\n`);
    checked(`linux-${arch}`, join(dest, 'runwarden.node'));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Both darwin prebuilds with zig: every mac source compiled, linked into a module, its Mach-O header checked. */
function buildMac(zig, headers) {
  for (const arch of Object.keys(DARWIN_TARGETS)) {
    const t = DARWIN_TARGETS[arch];
    const dest = join(out, `darwin-${arch}`, 'runwarden.node');
    process.stdout.write(`prebuild: darwin-${arch} (cross, ${zig} c++ -target ${t.triple})\n`);
    const r = buildDarwin(zig, root, arch, headers, dest);
    for (const c of r.compiled) if (!c.ok) process.stderr.write(`${c.source}:\n${c.output}\n`);
    if (r.compiled.some((c) => !c.ok)) fail(`zig failed to compile ${r.compiled.filter((c) => !c.ok).map((c) => c.source).join(', ')} for darwin-${arch}`);
    if (!r.linked.ok) fail(`zig failed to link darwin-${arch}:\n${r.linked.output}`);
    const h = machHeader(dest);
    if ('why' in h) fail(h.why);
    if (h.cputype !== t.cputype) fail(`darwin-${arch}: the build is Mach-O cputype 0x${h.cputype.toString(16)}, not ${t.cpuName}`);
    const size = readFileSync(dest).length;
    process.stdout.write(`prebuild: prebuilds/darwin-${arch}/runwarden.node Mach-O ${t.cpuName}, filetype ${h.filetype}, ${size} bytes\n`);
    checked(`darwin-${arch}`, dest, zig);
  }
}

/** The musl prebuilds with zig, one per architecture asked for. */
function buildMuslAll(zig, headers, arches) {
  for (const arch of arches) {
    const dest = join(out, `linuxmusl-${arch}`, 'runwarden.node');
    process.stdout.write(`prebuild: linuxmusl-${arch} (cross, ${zig} c++ -target ${MUSL_TARGETS[arch].triple})\n`);
    const r = buildMusl(zig, root, arch, headers, dest);
    for (const c of r.compiled) if (!c.ok) process.stderr.write(`${c.source}:\n${c.output}\n`);
    if (r.compiled.some((c) => !c.ok)) fail(`zig failed to compile ${r.compiled.filter((c) => !c.ok).map((c) => c.source).join(', ')} for linuxmusl-${arch}`);
    if (!r.linked.ok) fail(`zig failed to link linuxmusl-${arch}:\n${r.linked.output}`);
    process.stdout.write(`prebuild: prebuilds/linuxmusl-${arch}/runwarden.node, ${readFileSync(dest).length} bytes\n`);
    checked(`linuxmusl-${arch}`, dest, zig);
  }
}

/** Both Windows prebuilds with zig, linked against node.exe's N-API only; the DLLs each imports are printed. */
function buildWinAll(zig, headers) {
  for (const arch of Object.keys(WIN_TARGETS)) {
    const dest = join(out, `win32-${arch}`, 'runwarden.node');
    process.stdout.write(`prebuild: win32-${arch} (cross, ${zig} c++ -target ${WIN_TARGETS[arch].triple})\n`);
    const r = buildWin(zig, root, arch, headers, dest);
    for (const c of r.compiled) if (!c.ok) process.stderr.write(`${c.source}:\n${c.output}\n`);
    if (r.compiled.some((c) => !c.ok)) fail(`zig failed to compile ${r.compiled.filter((c) => !c.ok).map((c) => c.source).join(', ')} for win32-${arch}`);
    if (!r.linked.ok) fail(`zig failed to link win32-${arch}:\n${r.linked.output}`);
    const pe = parsePe(readFileSync(dest));
    process.stdout.write(`prebuild: prebuilds/win32-${arch}/runwarden.node PE ${WIN_TARGETS[arch].machineName}, ${readFileSync(dest).length} bytes, imports ${pe.imports.map((i) => i.dll).join(', ')}\n`);
    checked(`win32-${arch}`, dest, zig);
  }
}

/** Fails the script when the prebuild just made does not pass its checks. */
function checked(target, file, zig) {
  const z = zig ?? (() => {
    const f = findZig();
    return 'zig' in f ? f.zig : undefined;
  })();
  const problems = checkPrebuild(target, file, { zig: z }).filter((p) => z !== undefined || !/needs zig/.test(p));
  if (problems.length) fail(`${target} fails its checks:\n  ${problems.join('\n  ')}`);
}

const gyp = findNodeGyp(root);
if (!gyp) fail('node-gyp not found (npm bundles one; is npm installed next to this node?)');
const headers = nodedir();
// npm sets npm_command for the scripts it runs: a publish ships every prebuild.
const publishing = process.env.npm_command === 'publish';
const arches = publishing ? Object.keys(TARGETS) : (arg('--arch') ?? process.env.RUNWARDEN_PREBUILD_ARCH ?? 'x64,arm64').split(',').filter(Boolean);
for (const a of arches) if (!(a in TARGETS)) fail(`unknown arch ${a} (known: ${Object.keys(TARGETS).join(', ')})`);
const darwin = publishing ? 'yes' : (arg('--darwin') ?? process.env.RUNWARDEN_PREBUILD_DARWIN ?? 'auto');
if (!['auto', 'yes', 'no'].includes(darwin)) fail(`--darwin ${darwin}: expected auto, yes or no`);
const musl = publishing ? 'yes' : (arg('--musl') ?? process.env.RUNWARDEN_PREBUILD_MUSL ?? 'auto');
if (!['auto', 'yes', 'no'].includes(musl)) fail(`--musl ${musl}: expected auto, yes or no`);
const win = publishing ? 'yes' : (arg('--win') ?? process.env.RUNWARDEN_PREBUILD_WIN ?? 'auto');
if (!['auto', 'yes', 'no'].includes(win)) fail(`--win ${win}: expected auto, yes or no`);
const zig = darwin === 'no' && musl === 'no' && win === 'no' ? undefined : findZig();
if (darwin === 'yes' && 'why' in zig) fail(`darwin prebuilds need zig: ${zig.why}`);
if (musl === 'yes' && 'why' in zig) fail(`musl prebuilds need zig: ${zig.why}`);
if (win === 'yes' && 'why' in zig) fail(`Windows prebuilds need zig: ${zig.why}`);
rmSync(out, { recursive: true, force: true });
for (const a of arches) build(a, gyp, headers);
if (darwin !== 'no' && zig && 'zig' in zig) buildMac(zig.zig, headers);
else if (darwin !== 'no' && zig) process.stderr.write(`prebuild: NO darwin prebuilds in this package: ${zig.why}\n`);
if (musl !== 'no' && zig && 'zig' in zig) buildMuslAll(zig.zig, headers, arches);
else if (musl !== 'no' && zig) process.stderr.write(`prebuild: NO musl prebuilds in this package: ${zig.why}\n`);
if (win !== 'no' && zig && 'zig' in zig) buildWinAll(zig.zig, headers);
else if (win !== 'no' && zig) process.stderr.write(`prebuild: NO Windows prebuilds in this package: ${zig.why}\n`);
