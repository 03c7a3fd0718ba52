/**
 * The runs root itself, followed: removed, renamed away, replaced by another
 * directory, and back again (bad input: a root replaced or removed
 * while served).
 *
 * Invariants, and why:
 * - A root is known by its identity (device and inode of the directory at
 *   the path, through a link as readdir lists it), never by its path alone:
 *   `mv root root.old && mv new root` keeps the path and changes everything
 *   under it, and a watch on the old directory follows it to root.old.
 * - Looked at again at a bounded interval ({@link ROOT_RECHECK_MS}), one
 *   stat, while the owner is open: a root that comes back (mkdir, or a
 *   directory renamed into place) is picked up within it, as is a root
 *   replaced by a rename over it, which the old directory's watch may never
 *   announce. No watch on the root's parent: the parent is often a busy
 *   directory (a tmp dir, a home), whose every change would wake the owner.
 * - Reads only: a stat; nothing is created, written or removed.
 */
import { statSync } from 'node:fs';

/** How often (ms) the root's identity is looked at again, at most. */
export const ROOT_RECHECK_MS = 1000;

/** The identity of the directory at `root` (`dev:ino`), or undefined when there is none (absent, not a directory, unreadable). */
export function rootIdentity(root: string): string | undefined {
  try {
    const st = statSync(root, { bigint: true });
    return st.isDirectory() ? `${st.dev}:${st.ino}` : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Calls `onChange` when the identity of the directory at `root` differs from
 * the last one seen (it went, came, or is another directory), looking every
 * `intervalMs` and whenever {@link RootFollower.check} is called.
 */
export class RootFollower {
  private last: string | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly root: string,
    private readonly onChange: (identity: string | undefined) => void,
    options: { intervalMs?: number; ref?: boolean } = {},
  ) {
    this.last = rootIdentity(root);
    this.timer = setInterval(() => this.check(), options.intervalMs ?? ROOT_RECHECK_MS);
    if (options.ref !== true) this.timer.unref();
  }

  /** The identity last seen. */
  get identity(): string | undefined {
    return this.last;
  }

  /** Looks now; true (and the owner told) when the identity changed. */
  check(): boolean {
    if (this.timer === undefined) return false;
    const now = rootIdentity(this.root);
    if (now === this.last) return false;
    this.last = now;
    this.onChange(now);
    return true;
  }

  close(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }
}
