/**
 * The single typed seam to the C++ addon (native/addon.cc and the platform
 * file behind native/platform.h). Nothing else in src/ touches the binding
 * object; everything goes through `native()` and `nativeConstants()`.
 *
 * Loading is lazy: importing runwarden has no side effects, and the addon is
 * loaded (and handed the error class) on the first call that needs the kernel.
 * A load failure names every path that was tried.
 *
 * The numbers the addon answers with (probe stages, flock operations, the
 * slots of the probe's `out` array) are not copied here: the addon exports
 * them (`constants`, generated in C++ from the same lists as its enums), and
 * this module checks them once, at load, against the names TypeScript reads
 * them by. A mismatch (an addon built from another version's sources) is an
 * AddonLoadError (`ERR_RUNWARDEN_NATIVE`) naming what differs, never a probe
 * that reads a stage by the wrong number.
 */
import bindings from 'bindings';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AddonLoadError, NativeError } from '../contract/errors.js';

/** The layout version of `constants` this TypeScript reads (facts.h `kSeamVersion`). */
export const SEAM_VERSION = 1;

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
export const OUT_SLOT_NAMES = ['fsType', 'errno', 'mode', 'headLength', 'fileSize'] as const;
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
  /** `op` from `constants.flockOp`. true = granted, false = contended (EWOULDBLOCK); throws NativeError otherwise. */
  flock(fd: number, op: number): boolean;
  /** linux: statfs f_type; darwin: f_fstypename. Throws NativeError. */
  fsType(dir: string): number | string;
  /** kill(pid, 0) classified; refuses pid <= 0 before the syscall. */
  pidProbe(pid: number): ProcessPresence;
  /** kill(-pgid, 0) classified; refuses pgid <= 1 before the syscall. */
  groupProbe(pgid: number): ProcessPresence;
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
  probeFacts(lockPath: string, localTypes?: Uint32Array | string[]): number;
  /** Change notification (native/notify.h): inotify on linux, kqueue on darwin (untested), none elsewhere. */
  readonly notify: NativeNotify;
  readonly hasFlock: boolean;
  readonly platform: 'linux' | 'darwin' | 'other';
  /** Frozen; read through {@link nativeConstants}, which has checked it. */
  readonly constants: unknown;
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
  add(path: string, mask: number): number;
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
}

let loaded: NativeBinding | undefined;
let checked: NativeConstants | undefined;

/** The package root: dist/kernel/native.js lives two levels below it. */
function packageRoot(): string {
  return dirname(dirname(dirname(fileURLToPath(import.meta.url))));
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
    problems.push(...tableProblems(raw['outSlot'], 'outSlot', OUT_SLOT_NAMES, lengthOk ? (outLength as number) : undefined));
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
  return raw as unknown as NativeConstants;
}

/** Returns the addon, loading it (and checking its constants) on first use. */
export function native(): NativeBinding {
  if (loaded !== undefined) return loaded;
  const root = packageRoot();
  let binding: NativeBinding;
  try {
    binding = bindings({ bindings: 'runwarden.node', module_root: root }) as NativeBinding;
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new AddonLoadError(
      `runwarden: its native addon could not be loaded (package root ${root}).\n${why}\n` +
        `Build it with \`npm rebuild runwarden\` (needs python3, make and a C++ compiler), ` +
        `or expect ${join(root, 'build', 'Release', 'runwarden.node')}.`,
    );
  }
  checked = checkNativeConstants(binding.constants, join(root, 'build', 'Release', 'runwarden.node'));
  binding.init(NativeError);
  loaded = binding;
  return binding;
}

/** The addon's checked constants (loads the addon on first use). */
export function nativeConstants(): NativeConstants {
  if (checked === undefined) native();
  return checked as NativeConstants;
}
