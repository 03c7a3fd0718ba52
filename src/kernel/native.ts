/**
 * The single typed seam to the C++ addon (native/runwarden.cc). Nothing else
 * in src/ touches the binding object; everything goes through `native()`.
 *
 * Loading is lazy: importing runwarden has no side effects, and the addon is
 * loaded (and handed the error class) on the first call that needs the kernel.
 * A load failure names every path that was tried.
 */
import bindings from 'bindings';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AddonLoadError, NativeError } from '../contract/errors.js';

/** `probeFacts` stage codes; must match `enum Stage` in native/runwarden.cc. */
export const Stage = {
  FsNotLocal: 0,
  FsError: 1,
  OpenError: 2,
  NotRegular: 3,
  ReadError: 4,
  SharedGranted: 5,
  SharedContended: 6,
  SharedError: 7,
  NoFlock: 8,
} as const;

/** `flock` operations understood by the addon. */
export const FlockOp = { Shared: 1, Exclusive: 2, Unlock: 3 } as const;

/** `kill(pid, 0)` classified: ESRCH, success or EPERM, anything else. */
export type ProcessPresence = 'gone' | 'present' | 'unknown';

/** The addon's exports, exactly. */
export interface NativeBinding {
  init(errorClass: typeof NativeError): void;
  /** true = granted, false = contended (EWOULDBLOCK); throws NativeError otherwise. */
  flock(fd: number, op: 1 | 2 | 3): boolean;
  /** linux: statfs f_type; darwin: f_fstypename. Throws NativeError. */
  fsType(dir: string): number | string;
  /** kill(pid, 0) classified; refuses pid <= 0 before the syscall. */
  pidProbe(pid: number): ProcessPresence;
  /** kill(-pgid, 0) classified; refuses pgid <= 1 before the syscall. */
  groupProbe(pgid: number): ProcessPresence;
  /**
   * Registers, once, the known-local list and the two buffers every later
   * probeFacts() call fills, so the hot call passes only its two paths.
   */
  probeSetup(localTypes: Uint32Array | string[], head: Buffer, out: Float64Array): void;
  /**
   * One crossing for a whole probe's facts, in CONTRACT §4.2 order (statfs of
   * the lock file's directory first). Returns a
   * Stage; fills the registered `head` (up to its length) and `out` (see
   * Stage comments in the C++ source: [fsType, errno, st_mode, headLength,
   * fileSize]). `localTypes`, when given, replaces the registered list for
   * this call only (a test seam).
   */
  probeFacts(lockPath: string, localTypes?: Uint32Array | string[]): number;
  readonly hasFlock: boolean;
  readonly platform: 'linux' | 'darwin' | 'other';
}

let loaded: NativeBinding | undefined;

/** The package root: dist/kernel/native.js lives two levels below it. */
function packageRoot(): string {
  return dirname(dirname(dirname(fileURLToPath(import.meta.url))));
}

/** Returns the addon, loading it on first use. */
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
  binding.init(NativeError);
  loaded = binding;
  return binding;
}
