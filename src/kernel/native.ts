/**
 * The single typed seam to the C++ addon (native/addon.cc and the platform
 * file behind native/platform.h). Nothing else in src/ touches the binding
 * object; everything goes through `native()` and `nativeConstants()`.
 *
 * Loading is lazy: importing runwarden has no side effects, and the addon is
 * loaded (and handed the error class) on the first call that needs the kernel.
 * Where it comes from, in order (README "Install"):
 *
 * 1. a path given by `setAddonPath()`, else the `RUNWARDEN_ADDON` environment
 *    variable: an explicit choice, and the only one tried — if it fails, the
 *    loader says so rather than quietly loading some other file;
 * 2. the prebuilt binary shipped in the tarball for this platform
 *    (`prebuilds/<platform>-<arch>/runwarden.node`, linux x64 and arm64 with
 *    glibc or musl, darwin arm64 and x64, win32 x64 and arm64), if it loads
 *    and its constants match;
 * 3. the compiled build, found by `bindings` (build/Release and the other
 *    places node-gyp may put it).
 *
 * A load failure is an AddonLoadError naming every candidate and why each
 * one failed. The explicit path and the prebuild are opened with
 * `process.dlopen` and `bindings` is required lazily, so a bundler that
 * cannot follow either still produces a bundle that runs with
 * `RUNWARDEN_ADDON`.
 *
 * The numbers the addon answers with (probe stages, flock operations, the
 * slots of the probe's `out` array) are not copied here: the addon exports
 * them (`constants`, generated in C++ from the same lists as its enums), and
 * this module checks them once, at load, against the names TypeScript reads
 * them by. A mismatch (an addon built from another version's sources) is an
 * AddonLoadError (`ERR_RUNWARDEN_NATIVE`) naming what differs, never a probe
 * that reads a stage by the wrong number.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AddonLoadError, NativeError } from '../contract/errors.js';
import { addonFileProblem } from './addon-file.js';
import { unsupportedRuntime } from './runtime.js';

export { addonFileProblem };

/** The layout version of `constants` this TypeScript reads (facts.h `kSeamVersion`). */
export const SEAM_VERSION = 2;

/** The probe stages TypeScript interprets, by name (native/facts.h `RW_STAGES`). */
export const STAGE_NAMES = [
  'FsNotLocal',
  'FsError',
  'OpenError',
  'NotRegular',
  'ReadError',
  'SharedGranted',
  'SharedContended',
  'SharedError',
  'NoFlock',
] as const;
/** The slots of the probe's `out` array, by name (native/facts.h `RW_OUT_SLOTS`). */
export const OUT_SLOT_NAMES = ['fsType', 'errno', 'mode', 'headLength', 'fileSize', 'recordLockPid'] as const;
/** The flock operations, by name (native/facts.h `RW_FLOCK_OPS`). */
export const FLOCK_OP_NAMES = ['Shared', 'Exclusive', 'Unlock'] as const;

export type StageName = (typeof STAGE_NAMES)[number];
export type OutSlotName = (typeof OUT_SLOT_NAMES)[number];
export type FlockOpName = (typeof FLOCK_OP_NAMES)[number];

/** The addon's constants, checked: every name TypeScript reads, with the addon's number for it. */
export interface NativeConstants {
  readonly seamVersion: number;
  readonly stage: Readonly<Record<StageName, number>>;
  readonly outSlot: Readonly<Record<OutSlotName, number>>;
  /** How many slots the probe's `out` array needs. */
  readonly outLength: number;
  readonly flockOp: Readonly<Record<FlockOpName, number>>;
  /** How this platform names filesystem types: linux by magic number, darwin by name. */
  readonly fsTypeKind: 'magic' | 'name';
}

/** `kill(pid, 0)` classified: ESRCH, success or EPERM, anything else. */
export type ProcessPresence = 'gone' | 'present' | 'unknown';

/** The addon's exports, exactly. */
export interface NativeBinding {
  init(errorClass: typeof NativeError): void;
  /** `op` from `constants.flockOp` (Windows: LockFileEx on the leg's byte). true = granted, false = contended (EWOULDBLOCK, ERROR_LOCK_VIOLATION); throws NativeError otherwise. */
  flock(fd: number, op: number): boolean;
  /**
   * The pid of the process whose record lock (fcntl(2), lockf(3)) keeps a flock of kind `op`
   * (`constants.flockOp` Shared or Exclusive) out of the file open as `fd`, where the two are one
   * list (darwin); 0 when a flock does, when nothing does, or where they are apart (linux). Throws
   * NativeError. Absent from an older addon.
   */
  recordLockHolder?(fd: number, op: number): number;
  /** Every errno name the addon's <errno.h> defines, with its number; the addon's numbers are named by it. Absent from an older addon. */
  readonly errnos?: Readonly<Record<string, number>>;
  /** linux: statfs f_type; darwin: f_fstypename; Windows: the volume's filesystem name, `remote:` before a network one's. Throws NativeError. */
  fsType(dir: string | Buffer): number | string;
  /** kill(pid, 0) classified (Windows: a handle from OpenProcess, waited on for 0 ms); refuses pid <= 0 before the syscall. */
  pidProbe(pid: number): ProcessPresence;
  /** kill(-pgid, 0) classified (Windows, which has no process groups: `unknown`); refuses pgid <= 1 before the syscall. */
  groupProbe(pgid: number): ProcessPresence;
  /**
   * This process's RLIMIT_NOFILE (getrlimit(2)), soft and hard; RLIM_INFINITY is Infinity; and
   * `perProcess`, where the kernel caps it whatever it says (darwin kern.maxfilesperproc). Throws
   * NativeError. Absent from an addon built from older sources.
   */
  descriptorLimit?(): { soft: number; hard: number; perProcess?: number };
  /** The allocator's free memory back to the kernel (malloc_trim; darwin: malloc_zone_pressure_relief); true when some was. Absent from an addon built from older sources. */
  releaseFreeMemory?(): boolean;
  /**
   * Registers, once, the known-local list and the two buffers every later
   * probeFacts() call fills, so the hot call passes only its path. `out`
   * needs `constants.outLength` slots.
   */
  probeSetup(localTypes: Uint32Array | string[], head: Buffer, out: Float64Array): void;
  /**
   * One crossing for a whole probe's facts, in CONTRACT §4.2 order (statfs of
   * the lock file's directory first). Returns one of `constants.stage`; fills
   * the registered `head` (up to its length) and `out` (read it by
   * `constants.outSlot`). `localTypes`, when given, replaces the registered
   * list for this call only (a test seam).
   */
  probeFacts(lockPath: string | Buffer, localTypes?: Uint32Array | string[]): number;
  /**
   * probeFacts() for the entry `name` of the directory open as `dirfd`: the
   * same stages and slots, with no path resolved at all.
   */
  probeFactsAt(dirfd: number, name: string | Buffer, localTypes?: Uint32Array | string[]): number;
  /** open(path, O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC); a Buffer path is taken byte for byte. Throws NativeError. */
  openDirNoFollow(path: string | Buffer): number;
  /** openat(dirfd, name, flags|O_NOFOLLOW|O_CLOEXEC, mode = 0o600); `name` is one entry (no '/', not '.' or '..'). Throws NativeError. */
  openAt(dirfd: number, name: string | Buffer, flags: number, mode?: number): number;
  /** fstatfs of an open descriptor (linux f_type; darwin f_fstypename). Throws NativeError. */
  fsTypeFd(fd: number): number | string;
  /** renameat(dirfd, from, dirfd, to). Throws NativeError. */
  renameAt(dirfd: number, from: string | Buffer, to: string | Buffer): void;
  /** unlinkat(dirfd, name, 0): true when removed, false when absent. Throws NativeError. */
  unlinkAt(dirfd: number, name: string | Buffer): boolean;
  /** fstatat(dirfd, name, AT_SYMLINK_NOFOLLOW) as [dev, ino], or null when absent. Throws NativeError. */
  identityAt(dirfd: number, name: string | Buffer): [bigint, bigint] | null;
  /** close(2) of a descriptor the addon opened (EINTR and EBADF are not errors). Throws NativeError otherwise. */
  closeFd(fd: number): void;
  /**
   * Allocates the blocks of `[offset, offset + length)` of the open file `fd`
   * without changing its size (linux `fallocate(FALLOC_FL_KEEP_SIZE)`,
   * darwin `F_PREALLOCATE`; native/reserve.cc). `unsupported` where the
   * filesystem or platform cannot; `ENOSPC` / `EDQUOT` when there is no room.
   * Throws NativeError for any other failure.
   */
  reserveSpace(fd: number, offset: number, length: number): 'reserved' | 'unsupported' | 'ENOSPC' | 'EDQUOT';
  /**
   * The greatest index below `end` at which one of `needles` begins inside
   * `haystack`, or -1. `needles` packs 1 to 8 patterns of 1 to 64 bytes as
   * [length byte][bytes]…. A byte search, nothing more (the tail reader's).
   */
  lastMatch(haystack: Uint8Array, end: number, needles: Uint8Array, path?: string): number;
  /**
   * The byte search's paths this process can take (native/scan.cc), widest first: `avx512vbmi`, `avx2`, then the
   * 16-byte one, named for what it compiles to (`sse2` on x86-64, `neon` on arm64). `lastMatch` takes the first
   * unless given another of these by name (a RangeError for one this process lacks).
   */
  searchPaths(): string[];
  /**
   * Registers the two entry names a run directory's files are read by, the
   * buffers that receive their bytes and the `out` array that receives the
   * facts (native/runfiles.cc); returns the handle {@link runFiles} takes.
   */
  runFilesSetup(events: string, state: string, tail: Buffer, snapshot: Buffer, out: Float64Array): unknown;
  /**
   * Opens the run directory at `path` (O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC) and
   * reads the wanted files relative to it (bit 0 the stream's last bytes, bit 1
   * the snapshot whole) in one crossing. Returns the directory's descriptor,
   * left open for the caller, or -1 (the errno in `out`). Failures of the files
   * are facts in `out` (runFilesLayout), never thrown.
   */
  runFiles(handle: unknown, path: string | Buffer, want: number): number;
  /**
   * Every entry of the directory at `path` but . and .., in ascending byte
   * order: names as latin1 strings (one character per byte, the exact
   * bytes), `kinds[i]` the letter of names[i]'s kind (d directory, l
   * symlink, f file, p fifo, s socket, c/b device, ? unknown). Links in
   * `path` are followed. Throws NativeError (ENOENT, ENOTDIR, EACCES …).
   */
  readDirSorted(path: string | Buffer): { names: string[]; kinds: string };
  /**
   * lstat(2) of `dirs[i]/names[j]` for every directory and name (symlinks
   * not followed), in one crossing: file (i, j)'s facts go to
   * `out[(i * names.length + j) * fileIdentityStride …]` as errno (0 when
   * answered), device, inode, size, mtime seconds, mtime nanoseconds; an
   * unanswered file has zeros after its errno. `names` holds 1 to 8 entry
   * names. Throws only for bad arguments (native/identity.cc).
   */
  fileIdentities(dirs: readonly (string | Buffer)[], names: readonly string[], out: Float64Array): void;
  /** Slots per path in fileIdentities' `out`. */
  readonly fileIdentityStride: number;
  /** Where runFiles puts each fact in `out`, by name. */
  readonly runFilesLayout: RunFilesLayout;
  /** Change notification (native/notify.h): inotify on linux, kqueue on darwin (untested), none elsewhere (Windows: open legs are polled). */
  readonly notify: NativeNotify;
  readonly hasFlock: boolean;
  readonly platform: 'linux' | 'darwin' | 'win32' | 'other';
  /**
   * What the system offers (native/platform.h kHasProcFs, kHolderTable, kOneLockList), read by
   * src/kernel/system.ts instead of the platform's name. Absent from an older addon.
   */
  readonly system?: { readonly procfs: boolean; readonly holderTable: 'proc-locks' | 'libproc' | 'none'; readonly lock?: 'flock' | 'LockFileEx' | 'none'; readonly oneLockList?: boolean };
  /**
   * Every descriptor of another inspectable process on a file of device `dev` (darwin: libproc), with
   * `unreadable` the pids of the processes whose descriptors could not all be read. Throws ENOSYS
   * where there is no such census. Absent from an older addon.
   */
  openFilesOnDevice?(dev: number, exceptPid: number, ino: number, writers: boolean, name: Buffer): { files: { pid: number; ino: number; write: boolean; path: Buffer }[]; unreadable: number[] };
  /** Frozen; read through {@link nativeConstants}, which has checked it. */
  readonly constants: unknown;
}

/** The layout of runFiles' `out` array (native/runfiles.cc). */
export interface RunFilesLayout {
  readonly slot: Readonly<Record<'status' | 'errnum' | 'mode' | 'size' | 'dev' | 'ino' | 'mtimeMs' | 'ctimeMs' | 'bytes' | 'at' | 'fd', number>>;
  readonly status: Readonly<Record<'NotAsked' | 'Read' | 'OpenFailed' | 'StatFailed' | 'NotRegular' | 'ReadFailed' | 'NotRead', number>>;
  readonly fileSlots: number;
  readonly fileBase: number;
  readonly dirErrno: number;
  readonly dirFd: number;
  readonly outLength: number;
}

/** One kernel event as the notifier reports it; wd -2 carries a read failure's errno in `mask`. */
export interface NativeNotifyEvent {
  wd: number;
  mask: number;
  name: string;
}

/** An open notifier: its descriptor is polled by libuv on this thread's loop. */
export interface NativeNotifier {
  /** A watch descriptor (>= 0), or -errno (ENOSPC at max_user_watches, ENOENT, ...). */
  add(path: string | Buffer, mask: number): number;
  /** 0, or -errno. */
  remove(wd: number): number;
  close(): void;
  ref(): void;
  unref(): void;
}

/** The addon's `notify` export. */
export interface NativeNotify {
  readonly backend: 'inotify' | 'kqueue' | 'unsupported';
  /** Event bits by name, this platform's values (linux: the kernel's IN_* bits). */
  readonly mask: Readonly<Record<string, number>>;
  /** A notifier delivering batches to `callback`, or -errno when the kernel refuses one (EMFILE, ENOSYS). */
  open(callback: (events: NativeNotifyEvent[]) => void): NativeNotifier | number;
  /** The process-exit backend (notify.h ExitAdd): `pidfd` on linux, `kqueue` on darwin (untested). Absent from an older addon. */
  readonly exitBackend?: 'pidfd' | 'kqueue' | 'unsupported';
  /**
   * A process-exit notifier: `add(pid)` answers a watch id or -errno (ESRCH: no such process visible;
   * ENOSYS: before linux 5.3); each exit is delivered once as `{wd: id, mask: 0, name: ''}`, and the
   * watch is then gone. -errno when the kernel refuses one. Absent from an older addon.
   */
  openExits?(callback: (events: NativeNotifyEvent[]) => void): NativeExitNotifier | number;
}

/** An open process-exit notifier (one descriptor polled by libuv, however many pids are watched). */
export interface NativeExitNotifier {
  /** A watch id, or -errno. */
  add(pid: number): number;
  /** 0, or -errno (EINVAL: not watched, or it fired). */
  remove(id: number): number;
  close(): void;
  ref(): void;
  unref(): void;
}

let loaded: NativeBinding | undefined;
let checked: NativeConstants | undefined;
/** The absolute path the loaded addon came from. */
let loadedFrom: string | undefined;
/** Set by {@link setAddonPath}; wins over `RUNWARDEN_ADDON`. */
let chosenPath: string | undefined;

/** The environment variable that names an addon file (bundled apps). */
export const ADDON_ENV = 'RUNWARDEN_ADDON';

/**
 * The platforms a prebuilt binary is shipped for: linux with glibc, linux
 * with musl (`linuxmusl-*`), darwin (macOS 11 and later) and Windows (x64 and
 * arm64, linked against node.exe's N-API only); the musl, darwin and Windows
 * ones are cross-compiled with zig (scripts/prebuild.mjs). A package built
 * without zig has none of those; the loader then says the file is not there
 * and falls back as for any missing prebuild.
 */
export const PREBUILD_TARGETS = ['linux-x64', 'linux-arm64', 'linuxmusl-x64', 'linuxmusl-arm64', 'darwin-arm64', 'darwin-x64', 'win32-x64', 'win32-arm64'] as const;

/**
 * The package root (dist/kernel/native.js and src/kernel/native.ts both live
 * two levels below it), or undefined when this code does not run from its
 * package: bundled into an ES module app (no file URL of its own) or into a
 * CommonJS one (whose file is the bundle's, with no runwarden package.json two
 * levels above it).
 */
function packageRoot(): string | undefined {
  const url: unknown = import.meta.url;
  if (typeof url !== 'string' || !url.startsWith('file:')) return undefined;
  const root = dirname(dirname(dirname(fileURLToPath(url))));
  try {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name?: unknown };
    return pkg.name === 'runwarden' ? root : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Points the loader at an addon file (absolute, or relative to the current
 * directory) instead of the prebuilt and compiled ones; `undefined` goes back
 * to the default order. It wins over `RUNWARDEN_ADDON`. Call it before the
 * first call that needs the kernel: once an addon is loaded it stays loaded,
 * so a different path then throws AddonLoadError (the same path is a no-op).
 */
export function setAddonPath(path: string | undefined): void {
  if (path !== undefined && (typeof path !== 'string' || path === '')) {
    throw new TypeError('setAddonPath: path must be a non-empty string or undefined');
  }
  const want = path === undefined ? undefined : resolve(path);
  if (loaded !== undefined) {
    if (want === loadedFrom) return;
    throw new AddonLoadError(
      `runwarden: its native addon is already loaded from ${loadedFrom as string}; ` +
        `setAddonPath(${want === undefined ? 'undefined' : JSON.stringify(want)}) must come before the first call that needs the kernel.`,
    );
  }
  chosenPath = want;
}

/** The absolute path of the loaded addon, or undefined before the first load. */
export function loadedAddonPath(): string | undefined {
  return loadedFrom;
}

/**
 * The C library this linux process runs on: glibc or musl, each with its own
 * prebuilds, or undefined when neither can be told. The libraries mapped into
 * the process say it cheaply (glibc's libc.so.6, musl's ld-musl-*.so.1); when
 * they do not, Node's diagnostic report (about 20 ms) carries glibc's runtime
 * version, and nothing on musl. Asked only when a prebuild is to be loaded.
 */
function linuxLibc(): 'glibc' | 'musl' | undefined {
  try {
    const maps = readFileSync('/proc/self/maps', 'utf8');
    if (/\/ld-musl-[^/\s]*\.so/.test(maps)) return 'musl';
    if (/\/libc\.so\.6$/m.test(maps)) return 'glibc';
  } catch {
    /* no /proc: ask the report */
  }
  try {
    const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: unknown } } | undefined;
    return typeof report?.header?.glibcVersionRuntime === 'string' ? 'glibc' : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The prebuilt binary for this process under `root`, or why there is none to
 * try (another platform, architecture or C library).
 */
export function prebuildFor(root: string): { path: string } | { why: string } {
  let target = `${process.platform}-${process.arch}`;
  if (!(PREBUILD_TARGETS as readonly string[]).includes(target)) {
    return { why: `no prebuild is shipped for ${target} (only ${PREBUILD_TARGETS.join(', ')})` };
  }
  if (process.platform === 'linux') {
    const libc = linuxLibc();
    if (libc === undefined) return { why: `the prebuilds for ${target} need glibc or musl; this process runs on another C library` };
    if (libc === 'musl') target = `linuxmusl-${process.arch}`;
  }
  const path = join(root, 'prebuilds', target, 'runwarden.node');
  if (!existsSync(path)) return { why: `${path} is not there (a source checkout, or a package without prebuilds)` };
  return { path };
}

/**
 * Opens one addon file with `process.dlopen` and checks its constants; throws
 * (an Error from the dynamic loader, or AddonLoadError for a mismatch) when it
 * cannot be used. Exported for the install script.
 */
export function openAddonFile(path: string): { binding: NativeBinding; constants: NativeConstants } {
  if (!existsSync(path)) throw new Error('no such file');
  const problem = addonFileProblem(path);
  if (problem !== undefined) throw new Error(problem);
  const mod = { exports: {} as unknown };
  process.dlopen(mod, path);
  const binding = mod.exports as NativeBinding;
  return { binding, constants: checkNativeConstants(binding.constants, path) };
}

/** One place the loader looked, and why it did not use it. */
interface Attempt {
  readonly what: string;
  readonly why: string;
}

function reason(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return msg.replace(/\n/g, '\n      ');
}
function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Checks one exported table: exactly the names TypeScript knows, each a
 * distinct integer (within `[0, below)` when `below` is given). Returns the
 * problems found, empty when there are none.
 */
function tableProblems(table: unknown, what: string, names: readonly string[], below?: number): string[] {
  if (!isPlainObject(table)) return [`${what} is missing or not an object`];
  const problems: string[] = [];
  const seen = new Map<number, string>();
  for (const name of names) {
    const v = table[name];
    if (!Object.hasOwn(table, name)) {
      problems.push(`${what}.${name} is missing`);
    } else if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || (below !== undefined && v >= below)) {
      problems.push(`${what}.${name} is ${String(v)}, not an integer${below !== undefined ? ` from 0 to ${below - 1}` : ' >= 0'}`);
    } else if (seen.has(v)) {
      problems.push(`${what}.${name} and ${what}.${seen.get(v) as string} are both ${v}`);
    } else {
      seen.set(v, name);
    }
  }
  for (const name of Object.keys(table)) {
    if (!names.includes(name)) problems.push(`${what}.${name} is not one this version knows`);
  }
  if (!Object.isFrozen(table)) problems.push(`${what} is not frozen`);
  return problems;
}

/**
 * Checks the addon's `constants` export against what this TypeScript reads.
 * Returns them, typed; throws AddonLoadError (`ERR_RUNWARDEN_NATIVE`) naming
 * every mismatch. `where` names the addon in the message. Exported for the
 * tests; callers use {@link nativeConstants}.
 */
export function checkNativeConstants(raw: unknown, where: string): NativeConstants {
  const problems: string[] = [];
  if (!isPlainObject(raw)) {
    problems.push('it exports no constants object');
  } else {
    if (raw['seamVersion'] !== SEAM_VERSION) problems.push(`seamVersion is ${String(raw['seamVersion'])}, this version reads ${SEAM_VERSION}`);
    const outLength = raw['outLength'];
    const lengthOk = typeof outLength === 'number' && Number.isInteger(outLength) && outLength >= OUT_SLOT_NAMES.length && outLength <= 64;
    if (!lengthOk) problems.push(`outLength is ${String(outLength)}, not an integer from ${OUT_SLOT_NAMES.length} to 64`);
    problems.push(...tableProblems(raw['stage'], 'stage', STAGE_NAMES));
    problems.push(...tableProblems(raw['outSlot'], 'outSlot', OUT_SLOT_NAMES, lengthOk ? outLength : undefined));
    problems.push(...tableProblems(raw['flockOp'], 'flockOp', FLOCK_OP_NAMES));
    const kind = raw['fsTypeKind'];
    if (kind !== 'magic' && kind !== 'name') problems.push(`fsTypeKind is ${String(kind)}, not "magic" or "name"`);
    if (!Object.isFrozen(raw)) problems.push('constants is not frozen');
  }
  if (problems.length > 0) {
    throw new AddonLoadError(
      `runwarden: its native addon (${where}) does not match this version's TypeScript: ${problems.join('; ')}.\n` +
        `The addon was probably built from other sources; rebuild it with \`npm rebuild runwarden\`.`,
    );
  }
  return raw as NativeConstants;
}

/**
 * Loads the addon now (once), so that an install whose addon cannot load
 * says so (AddonLoadError, ERR_RUNWARDEN_NATIVE) before anything else, never
 * as a root that then reads unreadable. For the layers above kernel/, which
 * never touch the addon object itself.
 */
export function loadAddon(): void {
  native();
}

/** Returns the addon, loading it (and checking its constants) on first use. */
export function native(): NativeBinding {
  if (loaded !== undefined) return loaded;
  const refused = unsupportedRuntime();
  if (refused !== undefined) throw new AddonLoadError(refused);
  const attempts: Attempt[] = [];
  const use = (binding: NativeBinding, constants: NativeConstants, from: string): NativeBinding => {
    binding.init(NativeError);
    checked = constants;
    loadedFrom = from;
    loaded = binding;
    return binding;
  };

  const envPath = process.env[ADDON_ENV];
  const explicit = chosenPath ?? (envPath !== undefined && envPath !== '' ? resolve(envPath) : undefined);
  if (explicit !== undefined) {
    const by = chosenPath !== undefined ? 'setAddonPath()' : ADDON_ENV;
    try {
      const { binding, constants } = openAddonFile(explicit);
      return use(binding, constants, explicit);
    } catch (err) {
      throw new AddonLoadError(
        `runwarden: its native addon could not be loaded from ${explicit} (chosen by ${by}; nothing else was tried):\n` +
          `  ${reason(err)}\n` +
          `Point ${by} at the runwarden.node of this runwarden version, built for this platform.`,
      );
    }
  }

  const root = packageRoot();
  if (root === undefined) {
    attempts.push({ what: 'prebuild and compiled build', why: 'this code does not run from its package directory (a bundle?), so the package directory is unknown' });
  } else {
    const pre = prebuildFor(root);
    if ('why' in pre) {
      attempts.push({ what: 'prebuild', why: pre.why });
    } else {
      try {
        const { binding, constants } = openAddonFile(pre.path);
        return use(binding, constants, pre.path);
      } catch (err) {
        attempts.push({ what: `prebuild ${pre.path}`, why: reason(err) });
      }
    }
    try {
      // Required lazily, relative to this file: a bundler does not pull
      // `bindings` (and its require of 'fs') into the bundle.
      const req = createRequire(import.meta.url);
      // bindings dlopens whatever it finds: the usual build outputs are checked first (see addonFileProblem).
      for (const dir of ['Release', 'Debug']) {
        const candidate = join(root, 'build', dir, 'runwarden.node');
        const problem = existsSync(candidate) ? addonFileProblem(candidate) : undefined;
        if (problem !== undefined) throw new Error(`${candidate}: ${problem}`);
      }
      const bindings = req('bindings') as (opts: { bindings: string; module_root: string }) => unknown;
      const binding = bindings({ bindings: 'runwarden.node', module_root: root }) as NativeBinding;
      // bindings does not say which of its paths it loaded; require's cache does.
      const from = Object.keys(req.cache).find((k) => req.cache[k]?.exports === binding) ?? join(root, 'build', 'Release', 'runwarden.node');
      // The same check as the prebuild's: a build from other sources is refused.
      const constants = checkNativeConstants(binding.constants, from);
      return use(binding, constants, from);
    } catch (err) {
      attempts.push({ what: `compiled build (bindings, package root ${root})`, why: reason(err) });
    }
  }
  throw new AddonLoadError(
    `runwarden: its native addon could not be loaded. Tried, in order:\n` +
      attempts.map((a) => `  - ${a.what}: ${a.why}`).join('\n') +
      `\nBuild it with \`npm rebuild runwarden\` (needs python3, make and a C++ compiler), ` +
      `or set ${ADDON_ENV} to an addon file.`,
  );
}

/** The addon's checked constants (loads the addon on first use). */
export function nativeConstants(): NativeConstants {
  if (checked === undefined) native();
  return checked as NativeConstants;
}
