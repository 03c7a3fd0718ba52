/**
 * The one "wrote nothing" check of the suite: a fingerprint of everything
 * under one or more directories, compared before and after a reader ran.
 *
 * Each entry (the directories themselves included) is keyed by its path and
 * described by what any write would change: type, inode, link count, owner,
 * mode, size, mtime and ctime to the nanosecond, a sha256 of a regular file's
 * content, a symlink's target, and a directory's sorted entry list (so an
 * entry made and removed again still shows in the directory's mtime/ctime,
 * and a new one shows twice). ctime matters: a chmod, chown, link or a
 * rename-over-same-content changes nothing else. Names are read as bytes, so
 * a run named by a non-UTF-8 byte is fingerprinted as itself, and only
 * regular files are ever opened (a FIFO or a device would block or change).
 * A directory this process may not read is recorded as such, not skipped.
 */
import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, readlinkSync, type BigIntStats } from 'node:fs';

/** A path's bytes with anything outside printable ASCII as \xNN, so keys are exact and readable. */
function shown(path: Buffer): string {
  let s = '';
  for (const b of path) s += b >= 0x20 && b < 0x7f && b !== 0x5c ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`;
  return s;
}

function kind(st: BigIntStats): string {
  if (st.isFile()) return 'file';
  if (st.isDirectory()) return 'dir';
  if (st.isSymbolicLink()) return 'link';
  if (st.isFIFO()) return 'fifo';
  if (st.isSocket()) return 'socket';
  if (st.isCharacterDevice()) return 'chardev';
  if (st.isBlockDevice()) return 'blockdev';
  return 'other';
}

function describe(path: Buffer, st: BigIntStats, into: Record<string, string>): void {
  const base = `${kind(st)} ino=${st.ino} nlink=${st.nlink} uid=${st.uid} gid=${st.gid} mode=${st.mode.toString(8)} size=${st.size} mtime=${st.mtimeNs} ctime=${st.ctimeNs}`;
  let extra = '';
  if (st.isFile()) {
    try {
      extra = ` sha256=${createHash('sha256').update(readFileSync(path)).digest('hex')}`;
    } catch (e) {
      extra = ` unreadable=${(e as NodeJS.ErrnoException).code ?? 'error'}`;
    }
  } else if (st.isSymbolicLink()) {
    extra = ` target=${shown(readlinkSync(path, { encoding: 'buffer' }))}`;
  }
  into[shown(path)] = base + extra;
}

function walk(dir: Buffer, into: Record<string, string>): void {
  const st = lstatSync(dir, { bigint: true });
  describe(dir, st, into);
  if (!st.isDirectory()) return;
  let names: Buffer[];
  try {
    names = readdirSync(dir, { encoding: 'buffer' }).sort((a, b) => Buffer.compare(a, b));
  } catch (e) {
    into[shown(dir)] += ` entries=unreadable:${(e as NodeJS.ErrnoException).code ?? 'error'}`;
    return;
  }
  into[shown(dir)] += ` entries=[${names.map(shown).join('/')}]`;
  for (const name of names) {
    const p = Buffer.concat([dir, Buffer.from('/'), name]);
    walk(p, into);
  }
}

/**
 * Everything under each of `dirs` (and the dirs themselves), keyed by path:
 * compare two calls with toEqual, and the diff names what changed.
 */
export function fingerprint(...dirs: string[]): Record<string, string> {
  const into: Record<string, string> = {};
  for (const d of dirs) walk(Buffer.from(d), into);
  return into;
}

/** The same fingerprint of one directory as lines (`path description`), under the name older tests import. */
export function tree(dir: string): string[] {
  return Object.entries(fingerprint(dir)).map(([p, d]) => `${p} ${d}`);
}
