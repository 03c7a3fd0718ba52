/**
 * When a safety pass of the live engine lists its root again (the engine
 * is the one lister of a followed root: live/watching.ts).
 *
 * Creating, removing or renaming an entry moves its directory's mtime, and
 * the root's inotify watch tells of it too, so a root whose identity, mtime
 * and ctime are those of the last listing is not listed again, except after
 * {@link ROOT_RELIST_EVERY} passes anyway (once an hour at 30 s passes: at
 * 100,000 runs a listing's garbage, 100,000 names and more, costs a full
 * collection of the heap each time). An mtime under 2 s old when it was
 * taken is not trusted, since a change within the same clock tick as the
 * listing would not show in it. The root is stat'ed through a link, as
 * readdir lists it.
 */
import { statSync } from 'node:fs';

/** An unchanged root is listed again after at most this many passes anyway. */
export const ROOT_RELIST_EVERY = 120;

/** How long (ms) an mtime must be old before a listing taken with it is trusted. */
const MTIME_TRUSTED_AFTER_MS = 2000;

export class RootRelistGate {
  /** The root's identity when it was last listed, when trusted. */
  private listed: string | undefined;
  /** Passes since the last listing. */
  private skipped = 0;

  /**
   * Whether this pass lists `root`; when it does, the caller lists it now
   * and calls {@link RootRelistGate.listing} just before.
   */
  due(root: string): boolean {
    const key = rootKey(root)?.key;
    return !(key !== undefined && key === this.listed && ++this.skipped < ROOT_RELIST_EVERY);
  }

  /**
   * Records a listing of `root` about to be made, whatever asked for it (the
   * first listing, a root that moved, a due pass), so that the first safety
   * pass after start-up does not list an unchanged root a second time (at
   * 100,000 runs ~50 MB of garbage, which would be serve's highest resident
   * set). The identity
   * is taken before the listing, so a change during it shows next time.
   */
  listing(root: string): void {
    const got = rootKey(root);
    this.skipped = 0;
    this.listed = got !== undefined && Date.now() - got.mtimeMs > MTIME_TRUSTED_AFTER_MS ? got.key : undefined;
  }
}

/** The root's identity (device, inode, mtime, ctime), through a link; undefined when it is not a directory or cannot be stat'ed. */
function rootKey(root: string): { key: string; mtimeMs: number } | undefined {
  try {
    const st = statSync(root, { bigint: true });
    if (!st.isDirectory()) return undefined;
    return { key: `${st.dev}:${st.ino}:${st.mtimeNs}:${st.ctimeNs}`, mtimeMs: Number(st.mtimeNs / 1_000_000n) };
  } catch {
    return undefined;
  }
}
