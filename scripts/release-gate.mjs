#!/usr/bin/env node
// The release gate (package.json prepublishOnly): refuses a publish unless the
// package's tarball holds every prebuild a release ships (scripts/
// prebuild-check.mjs RELEASE_PREBUILDS: linux x64/arm64 for glibc and for
// musl, darwin x64/arm64, win32 x64/arm64), each passing its checks (ELF
// machine, glibc floor or musl-only symbols; Mach-O CPU, macOS 11, libSystem
// only, install name, arm64 code signature; PE machine, N-API-only imports
// from node.exe, system DLLs only; no libuv symbol anywhere).
//
//   node scripts/release-gate.mjs                  packs the package (prepack builds
//                                                  every prebuild, which needs zig and
//                                                  g++-aarch64-linux-gnu) and checks that
//   node scripts/release-gate.mjs --tarball FILE   checks a tarball already packed
//
// Prints one line per prebuild; exits 1, naming every problem, when any is
// missing or fails. Needs zig (scripts/zig.sh) for musl's and libSystem's symbol
// lists: without it the gate refuses rather than pass what it could not check.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findZig } from './darwin.mjs';
import { checkPrebuild, RELEASE_PREBUILDS } from './prebuild-check.mjs';

const root = dirname(dirname(fileURLToPath(import.meta.url)));

class Refused extends Error {}
function refuse(lines) {
  throw new Refused(lines.join('\n  '));
}

const work = mkdtempSync(join(tmpdir(), 'runwarden-release-gate-'));
try {
  const zig = findZig();
  if ('why' in zig) refuse([`the checks need zig: ${zig.why}`]);
  const i = process.argv.indexOf('--tarball');
  let tarball;
  if (i !== -1) {
    tarball = resolve(process.argv[i + 1] ?? '');
  } else {
    const env = { ...process.env, RUNWARDEN_PREBUILD_ARCH: 'x64,arm64', RUNWARDEN_PREBUILD_DARWIN: 'yes', RUNWARDEN_PREBUILD_MUSL: 'yes', RUNWARDEN_PREBUILD_WIN: 'yes' };
    const r = spawnSync('npm', ['pack', '--json', '--pack-destination', work], { cwd: root, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 << 20 });
    if (r.status !== 0) refuse([`npm pack failed (exit ${r.status ?? r.signal})`]);
    const info = JSON.parse(r.stdout.slice(r.stdout.indexOf('[')));
    tarball = join(work, info[0].filename);
  }
  const unpacked = join(work, 'unpacked');
  const t = spawnSync('sh', ['-c', 'mkdir -p "$1" && tar xzf "$2" -C "$1"', 'sh', unpacked, tarball], { encoding: 'utf8' });
  if (t.status !== 0) refuse([`${tarball} does not unpack: ${t.stderr.trim()}`]);
  const problems = [];
  for (const target of Object.keys(RELEASE_PREBUILDS)) {
    const file = join(unpacked, 'package', 'prebuilds', target, 'runwarden.node');
    const p = checkPrebuild(target, file, { zig: zig.zig }).map((x) => x.replace(file, `prebuilds/${target}/runwarden.node`));
    process.stdout.write(`release-gate: ${target}: ${p.length === 0 ? 'ok' : `${p.length} problem${p.length === 1 ? '' : 's'}`}\n`);
    problems.push(...p);
  }
  if (problems.length) refuse(problems);
  process.stdout.write(`release-gate: ${tarball}: every prebuild is there and passes its checks\n`);
} catch (err) {
  if (!(err instanceof Refused)) throw err;
  process.stderr.write(`release-gate: REFUSED:\n  ${err.message}\n`);
  process.exitCode = 1;
} finally {
  rmSync(work, { recursive: true, force: true });
}
