/**
 * The one rule for tests that need something outside Node: root for mounts,
 * Debian tools (bindfs, strace, rsync, chromium, flock(1), script(1), a C compiler,
 * libfaketime, prometheus and promtool, mkfs.ext2), /dev/fuse, loop devices.
 *
 * A test calls `needs(ctx, ...)` first thing (or from a beforeEach). When
 * everything is present nothing happens. When something is missing:
 *
 * - by default the test is SKIPPED, with the reason as its note, and the
 *   reason is recorded in the test's meta, so that the reporter in
 *   test/helpers/prereq-reporter.ts can end the run with one line naming
 *   every such skip and the Debian package that brings what was missing;
 * - with CI set (as CI sets it: CI=true) or RUNWARDEN_TEST_STRICT=1 the test
 *   FAILS with the same reason: on a machine that was supposed to have
 *   everything, an untested gate must not read as a gate that passed.
 *
 * A skip is a skip: vitest counts it as skipped, never as passed.
 *
 * What a system cannot have at all is not missing: on darwin a test that needs
 * /proc, inotify, mount(8) or Debian's tools, and anywhere but x86-64 linux one
 * that needs the zig cross compiler (its npm package exists for that host only),
 * is skipped with "linux only: <reason>" (or "x86-64 linux only: …") even when
 * strict, because no installation on that machine could make it run. A test
 * says so with `needs(ctx, 'linux: <reason>')`; the prerequisites below that
 * exist only on linux say it by themselves. A test of what only darwin does
 * (on a Mac or in the XNU model) says `needs(ctx, 'darwin: <reason>')`, and
 * is skipped with "darwin only: <reason>" on linux.
 *
 * On Windows (the Wine lane, scripts/test-windows.mjs) the same holds for what only POSIX systems
 * have (sh, signals, process groups, FIFOs, sockets in the filesystem, modes): a test says
 * `needs(ctx, 'posix: <reason>')` and is skipped there with "POSIX only: <reason>"; Debian's tools
 * and linux's prerequisites are impossible there too. A test of what only Windows has says
 * `needs(ctx, 'windows: <reason>')` ("Windows only: …" elsewhere), and one of what Windows has but
 * Wine does not show as Windows does says `needs(ctx, 'not-wine: <reason>')` (skipped under Wine,
 * which scripts/test-windows.mjs says by RUNWARDEN_WINE=1, with "Windows itself only: …").
 *
 * The XNU model (scripts/darwin-model.mjs: the darwin sources built for linux against a model of
 * darwin's interfaces, loaded through RUNWARDEN_ADDON, as `npm run test:darwin-model` does) is
 * darwin here: what linux alone has is skipped with "linux only: <reason>", as on a Mac.
 *
 * The baseline every test may assume without asking: Node, a POSIX sh, bash,
 * coreutils (sleep, true, mkfifo, rm, cat) — all Essential in Debian — and
 * the C++ toolchain `npm ci` already needed to build the addon.
 */
import { spawnSync } from 'node:child_process';
import { findZig } from '../../scripts/darwin.mjs';
import { accessSync, constants, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { MODEL_ADDON } from '../../scripts/darwin-model.mjs';
import type { TestContext } from 'vitest';
import { fetchCommand, runtimePath, type Runtime } from './runtimes.js';

export type Prereq =
  | 'root'
  | 'mount'
  | 'bindfs'
  | 'fuse'
  | 'strace'
  | 'chromium'
  | 'flock'
  | 'script'
  | 'cc'
  | 'faketime'
  | 'prometheus'
  | 'mkfs.ext2'
  | 'loop'
  | 'cc-arm64'
  | 'qemu-arm64'
  | 'node-arm64'
  | 'userns'
  | 'rsync'
  | 'zig'
  /** An x86-64 CPU's instructions, from /proc/cpuinfo: the byte search's wider paths (native/scan.cc). */
  | 'avx512vbmi'
  | 'avx2'
  /** SSE2: every x86-64 CPU (the byte search's 16-byte path there; arm64's is NEON). */
  | 'sse2'
  /** Windows: a mapped network drive, named (`N:`) by RUNWARDEN_TEST_NETWORK_DRIVE (the Wine lane maps one). */
  | 'network-drive'
  /** Windows: a Ctrl-C sender, scripts/wine/ctrlc.c built, named by RUNWARDEN_TEST_CTRLC (the Wine lane builds one). */
  | 'ctrl-c'
  /** A runtime in scripts/runtime.sh's cache (test/helpers/runtimes.ts). */
  | Runtime
  /** A test that only means something on linux; after the colon, why (e.g. `linux: /proc/locks`). */
  | `linux: ${string}`
  /** A test that only means something on darwin, a Mac or the XNU model; after the colon, why (e.g. `darwin: the settled sweep`). */
  | `darwin: ${string}`
  /** A test of what only POSIX systems have (sh, signals, FIFOs, modes); after the colon, why. */
  | `posix: ${string}`
  /** A test of what only Windows has; after the colon, why. */
  | `windows: ${string}`
  /** A test of what Windows has but Wine does not show as Windows does; after the colon, what Wine lacks. */
  | `not-wine: ${string}`;

/** What the reporter gets for a test that lacked something. */
export interface PrereqRecord {
  /** One short phrase per missing thing, e.g. `needs chromium: apt-get install chromium`. */
  missing: string[];
  /** Debian packages that would bring what was missing (none for root or /dev/fuse). */
  packages: string[];
  /** Whether the test failed (strict) rather than skipped. */
  strict: boolean;
}

declare module '@vitest/runner' {
  interface TaskMeta {
    prereq?: PrereqRecord;
  }
}

/** The path chromium is driven at by test/browser-dashboard.test.ts (Debian's package). */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * The multi-threaded libfaketime preload library (Debian's libfaketime, which
 * the faketime package depends on), found under /usr/lib/<multiarch>/faketime
 * or /usr/lib/faketime; undefined when absent. Node is multi-threaded, so the
 * MT build is the one to preload.
 */
export function libfaketime(): string | undefined {
  const dirs = ['/usr/lib/faketime'];
  try {
    for (const name of readdirSync('/usr/lib')) dirs.push(join('/usr/lib', name, 'faketime'));
  } catch {
    /* no /usr/lib */
  }
  for (const d of dirs) {
    const p = join(d, 'libfaketimeMT.so.1');
    try {
      if (statSync(p).isFile()) return p;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

/**
 * Where Debian's arm64 node is unpacked for the prebuild test under qemu
 * (scripts/arm64-node.sh; RUNWARDEN_ARM64_ROOT overrides).
 */
export function arm64NodeRoot(): string {
  return process.env['RUNWARDEN_ARM64_ROOT'] || '/opt/runwarden-arm64-node';
}

/** True when a missing prerequisite must fail the test instead of skipping it. */
export function strictPrereqs(): boolean {
  const ci = (process.env['CI'] ?? '').trim().toLowerCase();
  const strict = (process.env['RUNWARDEN_TEST_STRICT'] ?? '').trim();
  return (ci !== '' && ci !== '0' && ci !== 'false') || (strict !== '' && strict !== '0');
}

/** An executable regular file named `name` on PATH (unsearchable PATH entries are passed over). */
export function onPath(name: string): string | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (dir === '') continue;
    const p = join(dir, name);
    if (isExecutableFile(p)) return p;
  }
  return undefined;
}

function isExecutableFile(p: string): boolean {
  try {
    if (!statSync(p).isFile()) return false;
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** CAP_SYS_ADMIN in this process's effective set (what mount(2) asks for). */
function canMount(): boolean {
  if (process.getuid?.() !== 0) return false;
  try {
    const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    return m !== null && (BigInt(`0x${m[1]}`) & (1n << 21n)) !== 0n;
  } catch {
    return false;
  }
}

interface Check {
  present: () => boolean;
  /** The hosts (`platform` or `platform-arch`) where it can exist at all; elsewhere the test is skipped, even when strict. */
  onlyOn?: readonly string[];
  /** Whether it cannot exist on this host whatever is installed (checked besides `onlyOn`). */
  impossible?: () => boolean;
  /** The phrase for a missing one. */
  missing: string;
  /** The Debian package that brings it, if a package can. */
  pkg?: string;
}

function tool(name: string, pkg: string): Check {
  return { present: () => onPath(name) !== undefined, missing: `needs ${name}: apt-get install ${pkg}`, pkg };
}

/** The flags of this machine's first CPU in /proc/cpuinfo (empty where there is none). */
function cpuFlags(): Set<string> {
  try {
    const m = /^flags\s*:\s*(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    return new Set(m === null ? [] : m[1].split(/\s+/));
  } catch {
    return new Set();
  }
}

/**
 * x86-64 instructions a test runs (the byte search's paths): there where /proc/cpuinfo lists every flag. Only
 * x86-64 can have them; the AVX-512 VBMI path is built for linux only (native/scan.cc), so on darwin, and in the
 * XNU model, it cannot exist.
 */
function cpu(name: string, flags: string[], onlyOn: string[]): Check {
  return {
    present: () => flags.every((f) => cpuFlags().has(f)),
    onlyOn,
    get missing(): string {
      const lacks = flags.filter((f) => !cpuFlags().has(f));
      return lacks.length === 0 ? `needs a CPU with ${name}` : `needs a CPU with ${name} (/proc/cpuinfo lacks ${lacks.join(', ')})`;
    },
  };
}

/** A runtime scripts/runtime.sh fetches from npm, which has it for x86-64 linux only. */
function runtime(r: Runtime): Check {
  return { present: () => runtimePath(r) !== undefined, onlyOn: ['linux-x64'], missing: `needs ${r}: run ${fetchCommand(r)}` };
}

/** Whether this process is Node for Windows under Wine (scripts/test-windows.mjs sets RUNWARDEN_WINE=1). */
export function underWine(): boolean {
  return process.platform === 'win32' && process.env['RUNWARDEN_WINE'] === '1';
}

const CHECKS: Record<Exclude<Prereq, 'zig' | `${'linux' | 'darwin' | 'posix' | 'windows' | 'not-wine'}: ${string}`>, Check> = {
  avx512vbmi: cpu('AVX-512 VBMI', ['avx512f', 'avx512bw', 'avx512vbmi'], ['linux-x64']),
  avx2: cpu('AVX2', ['avx2'], ['linux-x64', 'darwin-x64']),
  sse2: cpu('SSE2', ['sse2'], ['linux-x64', 'darwin-x64']),
  bun: runtime('bun'),
  deno: runtime('deno'),
  'node-20': runtime('node-20'),
  'node-22': runtime('node-22'),
  'node-24': runtime('node-24'),
  'node-26': runtime('node-26'),
  root: {
    present: canMount,
    missing: process.getuid?.() === 0 ? 'needs CAP_SYS_ADMIN to mount (root without it, e.g. an unprivileged container)' : 'needs root, to mount filesystems',
  },
  mount: tool('mount', 'mount'),
  bindfs: tool('bindfs', 'bindfs'),
  fuse: {
    present: () => {
      try {
        return statSync('/dev/fuse').isCharacterDevice();
      } catch {
        return false;
      }
    },
    missing: 'needs /dev/fuse (the fuse kernel module; in a container, --device /dev/fuse)',
  },
  strace: tool('strace', 'strace'),
  rsync: tool('rsync', 'rsync'),
  chromium: { present: () => isExecutableFile(CHROMIUM), missing: `needs ${CHROMIUM}: apt-get install chromium`, pkg: 'chromium' },
  flock: tool('flock', 'util-linux'),
  script: tool('script', 'bsdutils'),
  cc: tool(process.env['CC'] || 'cc', 'gcc'),
  faketime: { present: () => libfaketime() !== undefined, missing: 'needs libfaketimeMT.so.1: apt-get install faketime', pkg: 'faketime' },
  // Debian's prometheus package brings both the server and promtool.
  prometheus: {
    present: () => onPath('prometheus') !== undefined && onPath('promtool') !== undefined,
    missing: 'needs prometheus and promtool: apt-get install prometheus',
    pkg: 'prometheus',
  },
  'mkfs.ext2': tool('mkfs.ext2', 'e2fsprogs'),
  loop: {
    present: () => {
      try {
        return statSync('/dev/loop-control').isCharacterDevice();
      } catch {
        return false;
      }
    },
    missing: 'needs loop devices (/dev/loop-control; in a container, the loop devices passed in)',
  },
  'cc-arm64': tool('aarch64-linux-gnu-g++', 'g++-aarch64-linux-gnu'),
  'qemu-arm64': tool('qemu-aarch64-static', 'qemu-user-static'),
  'node-arm64': {
    present: () => isExecutableFile(join(arm64NodeRoot(), 'usr', 'bin', 'node')),
    missing: `needs Debian's arm64 node unpacked at ${arm64NodeRoot()}: run scripts/arm64-node.sh (as root)`,
  },
  'network-drive': {
    present: () => {
      const d = process.env['RUNWARDEN_TEST_NETWORK_DRIVE'] ?? '';
      return /^[A-Za-z]:$/.test(d) && existsSync(`${d}\\`);
    },
    onlyOn: ['win32'],
    missing: 'needs a mapped network drive named by RUNWARDEN_TEST_NETWORK_DRIVE (e.g. N:); the Wine lane maps one',
  },
  'ctrl-c': {
    present: () => {
      const p = process.env['RUNWARDEN_TEST_CTRLC'] ?? '';
      return p !== '' && existsSync(p);
    },
    onlyOn: ['win32'],
    missing: 'needs a Ctrl-C sender: scripts/wine/ctrlc.c built (zig cc -target x86_64-windows-gnu) and named by RUNWARDEN_TEST_CTRLC; the Wine lane builds one',
  },
  // A user namespace of one's own, whose inotify watch limit (/proc/sys/user/max_inotify_watches)
  // it may lower without touching the machine's: how a test meets a real ENOSPC.
  userns: {
    present: () => spawnSync('unshare', ['-Ur', 'sh', '-c', 'test -w /proc/sys/user/max_inotify_watches'], { stdio: 'ignore' }).status === 0,
    missing: 'needs unprivileged user namespaces (unshare -Ur) with a writable /proc/sys/user/max_inotify_watches',
  },
};

/**
 * Prerequisites that exist only on linux: on another system nothing can be installed to bring them
 * (mounts, FUSE and loop devices, strace, Debian's chromium path and libfaketime, the arm64 emulation,
 * user namespaces; script(1), whose BSD form on darwin takes other arguments).
 */
const LINUX_ONLY: ReadonlyArray<Prereq> = ['script', 'root', 'mount', 'bindfs', 'fuse', 'strace', 'chromium', 'faketime', 'mkfs.ext2', 'loop', 'cc-arm64', 'qemu-arm64', 'node-arm64', 'userns'];
for (const p of LINUX_ONLY) CHECKS[p as keyof typeof CHECKS].onlyOn = ['linux'];
// Debian's tools and a C compiler on PATH are POSIX systems' (flock(1), rsync, cc, prometheus …).
for (const p of ['flock', 'rsync', 'cc', 'prometheus'] as const) CHECKS[p].onlyOn ??= ['linux', 'darwin'];

const ZIG: Check = {
  present: () => !('why' in findZig()),
  onlyOn: ['linux-x64'],
  get missing(): string {
    const z = findZig();
    return 'why' in z ? `needs zig: ${z.why}` : 'needs zig';
  },
};

function checkOf(p: Prereq): Check {
  if (p.startsWith('linux:')) return { present: () => true, onlyOn: ['linux'], missing: p.replace(/^linux:\s*/, 'linux only: ') };
  if (p.startsWith('darwin:')) return { present: () => true, onlyOn: ['darwin'], missing: p.replace(/^darwin:\s*/, 'darwin only: ') };
  if (p.startsWith('posix:')) return { present: () => true, onlyOn: ['linux', 'darwin'], missing: p.replace(/^posix:\s*/, 'POSIX only: ') };
  if (p.startsWith('windows:')) return { present: () => true, onlyOn: ['win32'], missing: p.replace(/^windows:\s*/, 'Windows only: ') };
  if (p.startsWith('not-wine:')) return { present: () => true, impossible: underWine, missing: p.replace(/^not-wine:\s*/, 'Windows itself only (not shown under Wine): ') };
  if (p === 'zig') return ZIG;
  return CHECKS[p as keyof typeof CHECKS];
}

/**
 * The system the tests run against: darwin when the addon is the XNU model build (RUNWARDEN_ADDON
 * naming build/darwin-model/runwarden.node), else this process's platform. Decided from the path,
 * without loading the addon (tests of the addon's loading must be the first to load it).
 */
export function testedPlatform(): string {
  const addon = process.env['RUNWARDEN_ADDON'];
  return addon !== undefined && addon !== '' && resolve(addon) === MODEL_ADDON ? 'darwin' : process.platform;
}

/** Whether the tests run against the XNU model build (darwin's code on this linux kernel). */
export function onDarwinModel(): boolean {
  return testedPlatform() === 'darwin' && process.platform !== 'darwin';
}

/** Whether this host is one where `c` can exist at all. */
function possibleHere(c: Check): boolean {
  const platform = testedPlatform();
  if (c.impossible?.() === true) return false;
  return c.onlyOn === undefined || c.onlyOn.includes(platform) || c.onlyOn.includes(`${platform}-${process.arch}`);
}

/** Why `c` cannot exist on this host: "linux only: …" (its own reason when it has one). */
function impossibleHere(c: Check): string {
  if (/^(x86-64 linux|linux|darwin|POSIX|Windows|Windows itself) only( \(not shown under Wine\))?: /.test(c.missing)) return c.missing;
  const where = (c.onlyOn ?? []).map((h) => (h === 'linux-x64' ? 'x86-64 linux' : h)).join(' or ');
  return `${where} only: ${c.missing}`;
}

const cache = new Map<Prereq, boolean>();

function present(p: Prereq): boolean {
  let v = cache.get(p);
  if (v === undefined) {
    const c = checkOf(p);
    v = possibleHere(c) && c.present();
    cache.set(p, v);
  }
  return v;
}

/** The prerequisites among `wanted` that this machine lacks (empty when all are there). */
export function lacking(...wanted: Prereq[]): Prereq[] {
  return wanted.filter((p) => !present(p));
}

/**
 * Skips the current test (or fails it, when strict) unless every prerequisite
 * is present. Call it before the test does anything; from a beforeEach it
 * covers every test of the file or describe block.
 */
export function needs(ctx: TestContext, ...wanted: Prereq[]): void {
  const absent = lacking(...wanted);
  if (absent.length === 0) return;
  // Something this system cannot have at all: an honest skip, strict or not.
  const impossible = absent.map(checkOf).filter((c) => !possibleHere(c));
  const strict = impossible.length === 0 && strictPrereqs();
  const record: PrereqRecord = {
    missing: impossible.length > 0 ? impossible.map(impossibleHere) : absent.map((p) => checkOf(p).missing),
    packages: impossible.length > 0 ? [] : absent.flatMap((p) => (checkOf(p).pkg === undefined ? [] : [checkOf(p).pkg as string])),
    strict,
  };
  ctx.task.meta.prereq = record;
  const reason = record.missing.join('; ');
  if (strict) {
    throw new Error(`missing prerequisite: ${reason} (CI or RUNWARDEN_TEST_STRICT is set, so this fails instead of skipping)`);
  }
  ctx.skip(reason);
}
