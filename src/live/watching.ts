/**
 * The live engine's root and run watching (engine.ts): which runs exist, by
 * which id, and what the kernel says changed in each.
 *
 * Invariants, and why:
 * - The one owner of what is under the root. Only this listing says which
 *   run directories exist: every surface that follows a root (the
 *   dashboard, its /metrics) takes its runs from the engine, never from a
 *   listing of its own, so no two surfaces can list a run differently.
 * - One name per run, the contract's shown name (CONTRACT §1.1 rule 6,
 *   contract/names.ts through status/list.ts shownName), the rule of every
 *   other surface: a directory is listed by its exact bytes and named by
 *   that rule, and its path is `<root>/<shown name>`, which the kernel layer
 *   reads back to the exact bytes (kernel/dirfd.ts runDirPath). The names
 *   the notifier gives (UTF-8, an invalid byte replaced) are named by the
 *   same rule; one that holds a replaced byte is not guessed at: the root is
 *   listed again.
 * - Watched before listed, so an entry made in between is told, not lost.
 *   Runs are watched newest first: when the kernel's watch budget runs out
 *   (`max_user_watches`), the runs left to polling are the oldest. A run
 *   whose name is not UTF-8 is watched by its exact bytes.
 * - Told, not looking (kernel/notify.ts): a leg's `resume.lock` closing its
 *   last writable descriptor (the leg died or released, CONTRACT §4.1) marks
 *   the run to be probed at once; an append to `events.jsonl` to be read at
 *   once; a rewritten `state.json` to be read again. A reader's read-only
 *   probe closes without writing and is never asked for, so engines and
 *   other readers never wake each other.
 * - A root removed, replaced or back again is listed again within
 *   ROOT_RECHECK_MS (live/rootwatch.ts); the runs of another directory at
 *   the path are new runs. What the listing found of the root itself (missing,
 *   unlistable, entries that are not runs) is told as a `root` change.
 * - Where the notifier has no close-write notice (kernel/system.ts
 *   `closeWrite`: kqueue, whose directory NOTE_WRITE tells only of entries
 *   made, removed or renamed, kqueue(2)), the stream of each run in flight
 *   (open last leg) is followed file by file (DirWatch.follow: EVFILT_VNODE
 *   NOTE_WRITE/NOTE_EXTEND, one descriptor per run in flight), so its
 *   appends are told as inotify tells them; the follow ends when the run
 *   settles. A settled run's append is found by the settled sweep
 *   (live/sweep.ts), a bounded rotation over settled runs' identities.
 * - Past the notifier's watch budget (ENOSPC: inotify's max_user_watches;
 *   EMFILE: kqueue's DIR_DESCRIPTOR_BUDGET, kernel/notify.ts) a run is
 *   polled and counted in `unwatched`.
 * - Reads only: watches only observe; nothing is created under the root.
 */
import { realpathSync } from 'node:fs';
import { sep } from 'node:path';
import { EVENTS_FILE, LOCK_FILE, STATE_FILE } from '../contract/files.js';
import { isPlainName, nameBytes, showName } from '../contract/names.js';
import { systemFacts } from '../kernel/system.js';
import { notifyBackend, openDirWatcher, sharedDirWatcher, type DirEvent, type DirWatch, type DirWatcher } from '../kernel/notify.js';
import { kindOfEntry, runDirPath, type KernelPath } from '../kernel/dirfd.js';
import { rootEntries, shownName } from '../status/list.js';
import type { EngineCore } from './core.js';
import { RootRelistGate } from './relist.js';
import { RootFollower, rootIdentity } from './rootwatch.js';
import type { RunState } from './runstate.js';
import type { LiveRootFacts } from './types.js';

/**
 * The path of the directory `root` resolves to now, links followed, as the
 * notifier takes it (a string; undefined for a path that is not UTF-8), or
 * undefined when there is none.
 */
function resolvedDir(root: string): string | undefined {
  let real: Buffer;
  try {
    real = realpathSync.native(root, { encoding: 'buffer' });
  } catch {
    return undefined;
  }
  const text = real.toString('utf8');
  return Buffer.from(text, 'utf8').equals(real) ? text : undefined;
}

/** What watching asks of the rest of the engine. */
export interface WatchingHost {
  /** Follows the run directory `dir` (absolute, normalised), whose shown name is `id`. */
  trackAt(dir: string, id: string): void;
  /** Stops following `r`; `announce` tells subscribers it was removed. */
  drop(r: RunState, announce: boolean): void;
}

/**
 * The path the notifier watches for a run directory: its exact bytes, as a
 * string where they are UTF-8 and as a Buffer where they are not
 * (kernel/notify.ts DirWatcher.watch takes either).
 */
function watchPath(dir: string): KernelPath {
  if (!dir.includes('\\')) return dir; // no escape: the path is its bytes
  const exact = runDirPath(dir);
  if (typeof exact === 'string') return exact;
  const text = exact.toString('utf8');
  return Buffer.from(text, 'utf8').equals(exact) ? text : exact;
}

/** The root's and the runs' watches, and the root's listing (see the module comment). */
export class Watching {
  watcher: DirWatcher | undefined;
  private rootWatch: DirWatch | undefined;
  /** The identity of the directory the runs were listed from, and its follower (live/rootwatch.ts). */
  private rootId: string | undefined;
  private rootFollow: RootFollower | undefined;
  /** Whether a safety pass lists the root again (live/relist.ts). */
  private readonly rootGate = new RootRelistGate();
  private facts: LiveRootFacts = { missing: false, error: null, strays: 0 };
  /** Every run's watch listener (the run is its context: no closure per run). */
  private readonly runListener = (e: DirEvent, r: RunState): void => this.onRunEvent(r, e);
  /** The runs whose stream is followed file by file (kqueue: no close-write notice; see the module comment). */
  private readonly streams = new Set<RunState>();
  /** Whether the watch budget's refusal (EMFILE) was said already (once per engine). */
  private saidBudget = false;
  /** Whether the root's watch was refused and that was said (said again after a watch was granted). */
  private saidRoot = false;

  constructor(
    private readonly core: EngineCore,
    private readonly host: WatchingHost,
    /** The runs root (absolute, normalised), or undefined for an engine of single runs. */
    private readonly root: string | undefined,
  ) {}

  /** What the last listing found of the root. */
  get rootFacts(): LiveRootFacts {
    return this.facts;
  }

  /** Opens the notifier (the process's shared one with `shared`), or says why there is none. */
  open(): void {
    const core = this.core;
    const notify = core.options.notify !== false;
    const shared = core.borrowed && notify ? sharedDirWatcher() : undefined;
    if (shared !== undefined) {
      this.watcher = shared;
      core.stats.backend = notifyBackend() === 'kqueue' ? 'kqueue' : 'inotify';
    } else if (core.borrowed && notify) {
      core.say(`change notification is unavailable here (${notifyBackend()}); open legs are polled every ${core.pollMs} ms`);
    } else if (notify) {
      const max = core.options.maxWatches;
      const opened = openDirWatcher({
        ref: core.ref,
        onOverflow: () => this.overflow(),
        onBroken: (code) => this.degrade(`the change notifier failed (${code})`),
        ...(max === undefined ? {} : { maxWatches: max }),
      });
      if (typeof opened === 'string') {
        core.say(`change notification is unavailable here (${notifyBackend()}: ${opened}); open legs are polled every ${core.pollMs} ms`);
      } else {
        this.watcher = opened;
        core.stats.backend = notifyBackend() === 'kqueue' ? 'kqueue' : 'inotify';
      }
    } else {
      core.say(`change notification is off; open legs are polled every ${core.pollMs} ms`);
    }
    // Runs tracked before the notifier was there get their watch now.
    if (this.watcher !== undefined) for (const r of core.runsByDir.values()) if (r.watch === undefined) this.rewatch(r);
    if (this.root !== undefined) {
      this.rootFollow = new RootFollower(this.root, () => this.scanRoot(), { ref: core.ref });
      this.watchRoot();
      this.scanRoot();
    }
  }

  /** Releases every watch (the notifier too, when it is the engine's own). */
  close(): void {
    this.rootFollow?.close();
    if (this.core.borrowed) {
      // Not ours to close: release only our watches on it.
      for (const r of this.core.runsByDir.values()) r.watch?.close();
      this.rootWatch?.close();
    } else {
      this.watcher?.close();
    }
    this.watcher = undefined;
    this.rootWatch = undefined;
    this.streams.clear();
  }

  /**
   * Follows `r`'s stream file by file while its last leg is open, and stops
   * when it settles (module comment). Called after each read of the stream;
   * a follow of a stream already followed costs nothing (DirWatch.follow),
   * and a stream replaced (its file watch gone) is followed again.
   */
  followStream(r: RunState): void {
    const w = r.watch;
    if (w?.follow === undefined || systemFacts().entryWrites) return;
    if (r.fold.open) {
      w.follow([EVENTS_FILE]);
      this.streams.add(r);
    } else if (this.streams.delete(r)) {
      w.follow([]);
    }
  }

  /** Forgets `r`'s stream follow (its watch is closing, which drops the file watch with it). */
  unfollowStream(r: RunState): void {
    this.streams.delete(r);
  }

  /** The notifier failed: every run is polled from now on. */
  private degrade(why: string): void {
    const core = this.core;
    core.say(`${why}; open legs of runs without a watch are polled every ${core.pollMs} ms`);
    if (!core.borrowed) this.watcher?.close();
    this.watcher = undefined;
    this.rootWatch = undefined;
    for (const r of core.runsByDir.values()) r.watch = undefined;
    this.streams.clear();
    core.stats.unwatched = core.runsByDir.size;
    core.stats.backend = 'polling';
  }

  /** Events were lost: look at everything again (a turn at a time: the engine's flush). */
  private overflow(): void {
    const core = this.core;
    core.stats.overflows++;
    if (this.root !== undefined) this.scanRoot();
    for (const r of core.runsByDir.values()) {
      r.dirtyStream = r.dirtySnapshot = r.dirtyProbe = true;
      core.mark(r);
    }
  }

  /** Lists the root again when live/relist.ts says a safety pass should. */
  relistIfDue(): void {
    if (this.root !== undefined && this.rootGate.due(this.root)) this.scanRoot();
  }

  /**
   * Watches the directory the root resolves to now. A root may be any path
   * to a directory (a symlink, a chain of them, `..`, a bind mount): the
   * notifier watches a directory and follows no link, so it is given the
   * directory's own path; the root's identity (rootwatch.ts) tells when the
   * path resolves to another one, and the watch is made again then.
   */
  private watchRoot(): void {
    if (this.watcher === undefined || this.rootWatch !== undefined) return;
    const target = resolvedDir(this.root as string);
    if (target === undefined) return; // gone, or a path the notifier cannot take: the root's follower and listings go on
    const a = this.watcher.watch(target, (e) => this.onRootEvent(e));
    if (a.ok) {
      this.saidRoot = false;
      this.rootWatch = a.watch;
      return;
    }
    this.refused(a.code);
    if (!this.saidRoot && a.code !== 'ENOENT') {
      this.saidRoot = true;
      this.core.say(`the runs root cannot be watched (${a.code}); runs made or removed under it are found by the safety pass`);
    }
  }

  /** Says why a watch was refused: the kernel's limit (ENOSPC), or the descriptor budget (EMFILE, said once). */
  private refused(code: string): void {
    if (code === 'ENOSPC') this.core.say(`the kernel refused more inotify watches (ENOSPC: fs.inotify.max_user_watches is reached)`);
    else if (code === 'EMFILE' && !this.saidBudget) {
      this.saidBudget = true;
      this.core.say(`past the watch budget (EMFILE: each kqueue watch holds a descriptor); runs without a watch are polled every ${this.core.pollMs} ms`);
    }
  }

  private onRootEvent(e: DirEvent): void {
    const core = this.core;
    core.stats.batches = this.watcher?.stats.batches ?? core.stats.batches;
    if (e.kind === 'gone') {
      this.rootWatch = undefined;
      this.scanRoot();
      return;
    }
    if (e.kind === 'changed') {
      this.scanRoot();
      return;
    }
    if (e.name === '' || (e.kind !== 'appeared' && e.kind !== 'vanished')) return;
    // The notifier's names are UTF-8 with an invalid byte replaced: such a name is read from a listing, not
    // guessed, and each run followed under a name it may stand for is followed afresh (an exchange keeps both
    // names, which a listing alone cannot tell).
    if (e.name.includes('\ufffd')) {
      this.scanRoot();
      for (const r of [...core.runsByDir.values()]) if (r.id.includes('\\') && nameBytes(r.id).toString('utf8') === e.name) this.renamed(r.dir, r.id, r);
      return;
    }
    const id = isPlainName(e.name) ? e.name : showName(Buffer.from(e.name, 'utf8'));
    const root = this.root as string;
    const dir = root.endsWith(sep) ? root + id : `${root}${sep}${id}`;
    const r = core.runsByDir.get(dir);
    if (!e.isDir) this.strays(e.kind === 'appeared' ? this.facts.strays + 1 : Math.max(0, this.facts.strays - 1));
    if (r !== undefined || e.isDir) this.renamed(dir, id, r);
  }

  /**
   * An entry came to or left the name of run directory `dir`: whatever was
   * followed there is dropped, and the directory at the name now, if any, is
   * followed afresh. The event's kind is not trusted to say which directory
   * is there: a rename over an empty directory, an exchange of two runs
   * (`renameat2` RENAME_EXCHANGE: each name's entry leaves and another
   * arrives) or a burst of renames all tell a name that is tracked already,
   * and a run's watch follows its directory's inode, not its name.
   */
  private renamed(dir: string, id: string, r: RunState | undefined): void {
    if (r !== undefined) this.host.drop(r, true);
    if (kindOfEntry(runDirPath(dir)) === 'directory') this.host.trackAt(dir, id);
  }

  private strays(n: number): void {
    if (n === this.facts.strays) return;
    this.tell({ ...this.facts, strays: n });
  }

  /** Keeps new root facts and tells subscribers of them. */
  private tell(facts: LiveRootFacts): void {
    this.facts = facts;
    this.core.emit({ type: 'root', ...facts });
  }

  /** Lists the root: tracks new run directories, drops vanished ones. Symlinks are never followed. */
  scanRoot(): void {
    const core = this.core;
    const root = this.root as string;
    this.rootGate.listing(root);
    core.stats.rootListings++;
    const id = rootIdentity(root);
    if (id !== this.rootId) this.rootMoved(id);
    // Watched before it is listed, so an entry made in between is told, not lost.
    if (id !== undefined) this.watchRoot();
    let listed;
    let error: string | null = null;
    try {
      listed = rootEntries(root);
    } catch (e) {
      error = e instanceof Error ? e.message : String(e);
    }
    if (listed !== undefined) this.watchRoot();
    const names = listed?.names ?? [];
    const kinds = listed?.kinds ?? '';
    let strays = 0;
    // The root is absolute and normalised, and an entry's name is one component (never '', '.',
    // '..' or with a '/'), so the path is their concatenation with the system's separator (the
    // one join puts there: `\` on Windows): join and resolve would normalise each one again,
    // ~0.3 s at 100,000 runs.
    const prefix = root.endsWith(sep) ? root : root + sep;
    const parts = [prefix, ''];
    const first = core.runsByDir.size === 0;
    // The first listing tracks every name (nothing to drop, no set of 100,000 paths to build).
    const present = first ? undefined : new Set<string>();
    for (let i = 0; i < names.length; i++) {
      if (kinds[i] !== 'd') {
        strays++;
        continue;
      }
      // join(''): one flat string (a + would keep a cons of two, and a flat copy once read), the name a slice of it.
      parts[1] = shownName(names[i] as string);
      const dir = parts.join('');
      if (present === undefined) this.host.trackAt(dir, dir.slice(prefix.length));
      else present.add(dir);
    }
    if (present !== undefined) {
      for (const r of [...core.runsByDir.values()]) if (!present.has(r.dir)) this.host.drop(r, true);
      for (const d of present) if (!core.runsByDir.has(d)) this.host.trackAt(d, d.slice(prefix.length));
    }
    const facts: LiveRootFacts = { missing: listed === undefined && error === null, error, strays };
    const was = this.facts;
    if (facts.missing !== was.missing || facts.error !== was.error || facts.strays !== was.strays) this.tell(facts);
  }

  /**
   * The directory at the root is another one, or none: every run followed
   * was under the old one (which may live on elsewhere, renamed), so each is
   * dropped and announced, and the listing that follows tracks the new
   * directory's runs afresh, a run of the same name included. The old
   * directory's watch goes too: it follows the old directory, not the path.
   */
  private rootMoved(id: string | undefined): void {
    if (this.rootId !== undefined) {
      for (const r of [...this.core.runsByDir.values()]) this.host.drop(r, true);
      this.rootWatch?.close();
      this.rootWatch = undefined;
    }
    this.rootId = id;
  }

  /** Watches a new run (counted in `unwatched` until it is). */
  watchRun(r: RunState): void {
    this.core.stats.unwatched++;
    this.rewatch(r);
  }

  /** Watches an unwatched run (counted in `unwatched` until it is). */
  private rewatch(r: RunState): void {
    const core = this.core;
    if (this.watcher === undefined) return;
    const path = watchPath(r.dir);
    core.stats.unwatched--;
    // One listener for every run, the run as its context (no closure per run).
    const a = this.watcher.watch(path, this.runListener, r);
    if (a.ok) {
      r.watch = a.watch;
      return;
    }
    core.stats.unwatched++;
    this.refused(a.code);
  }

  private onRunEvent(r: RunState, e: DirEvent): void {
    const core = this.core;
    if (this.watcher !== undefined) core.stats.batches = this.watcher.stats.batches;
    if (e.kind === 'gone') {
      r.watch = undefined;
      this.streams.delete(r);
      if (core.follows(r)) {
        // Counted unwatched now, so that drop() (which un-counts a run without a watch) keeps the count exact.
        core.stats.unwatched++;
        // Its directory moved or went; another may be at its name now (the root's events say so too, where the root is watched).
        this.renamed(r.dir, r.id, r);
      }
      return;
    }
    if (e.kind === 'changed') {
      r.dirtyStream = r.dirtySnapshot = r.dirtyProbe = true;
      if (core.announceFiles) r.announce = true;
    } else if (e.name === EVENTS_FILE) {
      r.dirtyStream = true;
      if (core.announceFiles) r.announce = true;
    } else if (e.name === STATE_FILE) {
      r.dirtySnapshot = true;
      if (core.announceFiles) r.announce = true;
    } else if (e.name === LOCK_FILE) {
      if (e.kind === 'written') {
        // The last writable descriptor of the lock file closed: the leg that
        // held it exited, was killed or released. Probe now, and tell
        // subscribers even if the report reads the same (a cache above may
        // hold an older picture than ours).
        if (!r.fold.open && r.report?.status !== 'RUNNING' && r.report?.status !== 'PLANNING') return;
        core.stats.lockWakeups++;
        r.announce = true;
      }
      // 'modified': a leg taking the lock writes its marker (§4.1 step 4).
      r.dirtyProbe = true;
      r.sought = false; // a new holder may be there to watch
    } else {
      return;
    }
    core.mark(r);
  }
}
