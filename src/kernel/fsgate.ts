/**
 * The filesystem gate (CONTRACT §4.2 step 2): the filesystems whose flock(2) is the
 * flock this design assumes. On anything else (NFS, SMB, FUSE, an unknown
 * type) a probe answers unknown without opening the lock file, because over
 * NFS linux emulates flock with POSIX record locks, and even a reader's
 * open-and-close of the file could release a live leg's lock.
 *
 * An over-strict list costs precision (an open leg reads as in flight), never
 * safety, so a type is added here only when its flock is known to be local.
 */

/** linux statfs f_type magics of known-local filesystems. */
export const LINUX_LOCAL_FS: ReadonlyMap<number, string> = new Map([
  [0xef53, 'ext2/3/4'],
  [0x9123683e, 'btrfs'],
  [0x58465342, 'xfs'],
  [0x01021994, 'tmpfs'],
  [0x794c7630, 'overlayfs'],
  [0x2fc12fc1, 'zfs'],
  [0xf2f52010, 'f2fs'],
  [0x858458f6, 'ramfs'],
  [0xca451a4e, 'bcachefs'],
]);

/** darwin statfs f_fstypename values of known-local filesystems. */
export const DARWIN_LOCAL_FS: readonly string[] = ['apfs', 'hfs', 'ufs'];

/**
 * Windows filesystem names (GetVolumeInformationByHandleW) of known-local volumes, where
 * LockFileEx is the local system's byte-range lock. A network volume (a share, a mapped drive)
 * is named `remote:<name>` by the addon and so is never on the list.
 */
export const WINDOWS_LOCAL_FS: readonly string[] = ['NTFS', 'ReFS'];

/** A few well-known non-local linux magics, for naming them in messages only. */
const LINUX_NAMED_OTHER: ReadonlyMap<number, string> = new Map([
  [0x6969, 'nfs'],
  [0x65735546, 'fuse'],
  [0xff534d42, 'cifs'],
  [0xfe534d42, 'smb2'],
  [0x517b, 'smb'],
  [0x01021997, 'v9fs'],
  [0x6e667364, 'nfsd'],
  [0x786f4256, 'virtiofs'],
  [0x73717368, 'squashfs'],
]);

/**
 * The list in the form the addon's probeFacts takes on this platform:
 * names (darwin, Windows) or magics (linux), as the addon's `constants.fsTypeKind` says;
 * `platform` (the addon's) picks the names.
 */
export function nativeLocalList(kind: 'magic' | 'name', override?: readonly (number | string)[], platform?: string): Uint32Array | string[] {
  if (kind === 'name') {
    return override ? override.filter((t): t is string => typeof t === 'string') : [...(platform === 'win32' ? WINDOWS_LOCAL_FS : DARWIN_LOCAL_FS)];
  }
  const types = override ? override.filter((t): t is number => typeof t === 'number') : [...LINUX_LOCAL_FS.keys()];
  return Uint32Array.from(types);
}

/** A readable name for a filesystem type, e.g. `fuse (0x65735546)`. */
export function describeFsType(type: number | string): string {
  if (typeof type === 'string') return type;
  const hex = `0x${type.toString(16)}`;
  const name = LINUX_LOCAL_FS.get(type) ?? LINUX_NAMED_OTHER.get(type);
  return name ? `${name} (${hex})` : hex;
}

/**
 * Whether a filesystem type (a linux magic, a darwin or Windows name, as fsTypeOf answers) is on the
 * known-local list of `platform` (the addon's: a name is darwin's or Windows' by where it was read).
 */
export function isKnownLocalFs(type: number | string, platform: string): boolean {
  if (typeof type !== 'string') return LINUX_LOCAL_FS.has(type);
  return (platform === 'win32' ? WINDOWS_LOCAL_FS : DARWIN_LOCAL_FS).includes(type);
}
