/**
 * Being told, instead of looking: directory watches on the kernel's change
 * notification (native/notify.h: inotify on linux; kqueue on darwin, run in
 * the XNU model only; nothing elsewhere), for the live surfaces (`watch`, the live
 * engine behind `serve` and library followers).
 *
 * Invariants, and why:
 * - One kernel notifier per {@link DirWatcher}, polled by libuv on this
 *   thread's loop: no thread is blocked per watched run and nothing blocks
 *   the event loop. Events arrive in batches and are dispatched by watch
 *   descriptor to each directory's listeners.
 * - A run directory is watched as a directory (one watch per run, not one
 *   per file), for the events that can change what a reader derives:
 *   `closeWrite` (the last writable descriptor of an entry was closed: for
 *   `resume.lock`, the leg that held it is gone, CONTRACT §4.1 opens it
 *   read-write), `modify` (an append), entries appearing or vanishing, and
 *   the directory itself going away. `closeNoWrite` is never asked for: a
 *   reader's read-only probe closes with it, and readers must not wake each
 *   other.
 * - Watching never writes: inotify and kqueue only observe.
 * - Expected refusals are answers, not throws: a watch the kernel will not
 *   add (`ENOSPC` at `max_user_watches`, `ENOENT`) is returned as its errno
 *   name, and the caller falls back to polling. A lost queue (overflow) and
 *   a notifier that failed are reported once to the owner, who must then
 *   look again at everything (overflow) or poll (failure).
 */
import type { KernelPath } from './dirfd.js';
import { errnoName } from './errno.js';
import { native, type NativeExitNotifier, type NativeNotifier, type NativeNotifyEvent } from './native.js';
import { watchDescriptorShare } from './limits.js';
import { systemFacts, type SystemFacts } from './system.js';

/**
 * Directory watches one {@link DirWatcher} holds at most where each holds a descriptor (kqueue),
 * and fewer under a low RLIMIT_NOFILE ({@link watchBudgets}): past it, a watch answers `EMFILE`
 * and the caller polls that directory, so a root of any size never brings the process near its
 * descriptor limit, where every open would fail. 160, so that with the 45 or so descriptors of
 * Node, serve and the notifier themselves and one per open page, a serving process holds at most
 * 256 plus one per followed stream (CONTRACT §5.6 rule 4).
 */
export const DIR_DESCRIPTOR_BUDGET = 160;

/** File watches ({@link DirWatch.follow}: one per in-flight run's stream) one {@link DirWatcher} holds at most where each holds a descriptor (kqueue); fewer under a low RLIMIT_NOFILE ({@link watchBudgets}). */
export const FILE_DESCRIPTOR_BUDGET = 256;

/** How many watches of each kind one watcher holds at most; Infinity where that kind holds no descriptor and nothing else bounds it. */
export interface WatchBudgets {
  /** Processes one {@link ExitWatcher} watches at once. */
  exits: number;
  /** Directories one {@link DirWatcher} watches. */
  dirs: number;
  /** Files one {@link DirWatcher} follows. */
  files: number;
}

/**
 * The watch budgets under this process's descriptor limit (CONTRACT §5.7). The kinds of
 * watch that hold a descriptor here (exit watches where each is a pidfd; directory and file
 * watches where each is a kqueue vnode descriptor) split `share` (kernel/limits.ts
 * watchDescriptorShare: half of the soft RLIMIT_NOFILE left after the process's own reserve)
 * evenly, each kind never above its fixed budget ({@link EXIT_WATCH_BUDGET},
 * {@link DIR_DESCRIPTOR_BUDGET}, {@link FILE_DESCRIPTOR_BUDGET}); a kind that holds none keeps
 * its fixed budget (exits) or none (directories, files).
 */
export function watchBudgets(share: number = watchDescriptorShare(), facts: Pick<SystemFacts, 'watchHoldsDescriptor' | 'exitWatchHoldsDescriptor'> = systemFacts()): WatchBudgets {
  const kinds = (facts.exitWatchHoldsDescriptor ? 1 : 0) + (facts.watchHoldsDescriptor ? 2 : 0);
  const each = kinds === 0 ? Infinity : Math.floor(share / kinds);
  return {
    exits: facts.exitWatchHoldsDescriptor ? Math.min(EXIT_WATCH_BUDGET, each) : EXIT_WATCH_BUDGET,
    dirs: facts.watchHoldsDescriptor ? Math.min(DIR_DESCRIPTOR_BUDGET, each) : Infinity,
    files: facts.watchHoldsDescriptor ? Math.min(FILE_DESCRIPTOR_BUDGET, each) : Infinity,
  };
}

/** What happened to an entry of a watched directory, or to the directory. */
export type DirEventKind =
  /** The last writable descriptor of the entry was closed (IN_CLOSE_WRITE). */
  | 'written'
  /** The entry was written to (IN_MODIFY). */
  | 'modified'
  /** The entry was created or moved in (IN_CREATE, IN_MOVED_TO). */
  | 'appeared'
  /** The entry was removed or moved out (IN_DELETE, IN_MOVED_FROM). */
  | 'vanished'
  /** The directory itself was removed, moved, or unmounted; its watch is gone. */
  | 'gone'
  /** Something in the directory changed, the platform cannot say what (darwin). */
  | 'changed';

/** One event for a watched directory. `name` is the entry; '' for the directory itself. */
export interface DirEvent {
  kind: DirEventKind;
  name: string;
  /** The entry is a directory (IN_ISDIR). */
  isDir: boolean;
}

export type DirListener = (event: DirEvent) => void;

/** A watch: close it to stop listening (the kernel watch goes with its last listener). */
export interface DirWatch {
  close(): void;
  /**
   * The entries of this directory whose writes must be told as `modified` (an in-flight run's
   * stream). Where the notifier tells a directory's entry writes by name (inotify), nothing is
   * added. Where a directory says only that entries came and went (kqueue: NOTE_WRITE on a
   * directory is never a write to a file inside it), each name gets a watch of its own (one
   * descriptor, within {@link WatchBudgets.files}); a name that is not there yet, or past the
   * budget, is passed over (follow again when it appears; past the budget its appends are found by
   * the owner's re-probe). `follow([])` drops them; closing the watch drops them too.
   */
  follow?(names: readonly string[]): void;
}

/** How a watch request ended: a watch, or the errno name the kernel refused it with. */
export type WatchAnswer = { ok: true; watch: DirWatch } | { ok: false; code: string };

/** Options for {@link openDirWatcher}. */
export interface DirWatcherOptions {
  /** The kernel's queue overflowed: events were lost, so everything watched must be looked at again. */
  onOverflow?: () => void;
  /** The notifier failed (a read error); no more events will come. Called once, with the errno name. */
  onBroken?: (code: string) => void;
  /**
   * A test seam for what cannot be produced here cheaply: after this many
   * kernel watches, {@link DirWatcher.watch} answers `ENOSPC` exactly as the
   * kernel does at `max_user_watches`.
   */
  maxWatches?: number;
  /**
   * Directory watches held at most where each holds a descriptor (default
   * {@link watchBudgets}`().dirs`; unbounded where watches hold none, inotify). Past it, `watch`
   * answers `EMFILE` and {@link DirWatcherStats.overBudget} counts it.
   */
  maxDescriptors?: number;
  /** Keep the event loop alive while the watcher is open (default false: a watcher alone never holds a process open). */
  ref?: boolean;
}

/** How many batches and events a watcher has received, for tests and benchmarks. */
export interface DirWatcherStats {
  batches: number;
  events: number;
  watches: number;
  /** Directory watches refused for the descriptor budget: those directories are polled by their owners. */
  overBudget: number;
  /** File watches held ({@link DirWatch.follow}; kqueue only). */
  files: number;
  /** Files not followed for the descriptor budget ({@link WatchBudgets.files}): their appends are found by re-probes. */
  filesOverBudget: number;
}

interface Entry {
  wd: number;
  /** With kqueue: the path it was first watched by (its key in `byDir` is {@link pathKey} of it); inotify keeps none. */
  dir?: KernelPath;
  /**
   * The watches on it: one kept as itself, more as a Set. Almost every
   * directory has exactly one (a run's engine), and a Set per directory
   * cost about 150 bytes at 100,000 runs.
   */
  watches: DirWatchOf | Set<DirWatchOf> | undefined;
}

/**
 * A path as a map key: a string as itself, a Buffer (a path that is not
 * UTF-8: callers pass every UTF-8 path as a string) as its bytes in latin1,
 * which no UTF-8 string path equals once it holds a byte above 0x7f.
 */
function pathKey(path: KernelPath): string {
  return typeof path === 'string' ? path : path.toString('latin1');
}

/** The watches of `e`, copied (a listener may close its watch while it is told). */
function watchesOf(e: Entry): DirWatchOf[] {
  const w = e.watches;
  return w === undefined ? [] : w instanceof Set ? [...w] : [w];
}

function addWatch(e: Entry, w: DirWatchOf): void {
  const had = e.watches;
  if (had === undefined) e.watches = w;
  else if (had instanceof Set) had.add(w);
  else e.watches = new Set([had, w]);
}

/** Removes `w` from `e`; answers how many watches are left. */
function removeWatch(e: Entry, w: DirWatchOf): number {
  const had = e.watches;
  if (had === w) {
    e.watches = undefined;
    return 0;
  }
  if (had instanceof Set) {
    had.delete(w);
    return had.size;
  }
  return had === undefined ? 0 : 1;
}

/**
 * One watch on one directory: its listener and the context it is called
 * with. A class, and a context instead of a closure per directory: a
 * closure and its scope per watch cost about 220 bytes at 100,000 runs.
 */
class DirWatchOf implements DirWatch {
  /** Followed entries: name → file watch id (kqueue only). */
  files: Map<string, number> | undefined;
  constructor(
    private readonly owner: DirWatcher,
    readonly entry: Entry,
    private readonly listener: (event: DirEvent, context: unknown) => void,
    private readonly context: unknown,
  ) {}

  tell(event: DirEvent): void {
    this.listener(event, this.context);
  }

  close(): void {
    this.owner.release(this);
  }

  follow(names: readonly string[]): void {
    this.owner.followFiles(this, names);
  }
}

/** The notification backend this platform has: `inotify`, `kqueue` (untested), or `unsupported`. */
export function notifyBackend(): 'inotify' | 'kqueue' | 'unsupported' {
  return native().notify.backend;
}

/** Directory watches over one kernel notifier. */
export class DirWatcher {
  readonly stats: DirWatcherStats = { batches: 0, events: 0, watches: 0, overBudget: 0, files: 0, filesOverBudget: 0 };
  private readonly byWd = new Map<number, Entry>();
  /** File watches (kqueue): id → the watch that follows the file, and its name. */
  private readonly fileWds = new Map<number, { watch: DirWatchOf; name: string }>();
  private readonly maxDescriptors: number;
  private readonly maxFiles: number;
  private readonly fileMask: number;
  /**
   * Each directory's entry by the name it was watched by, kept only where
   * the kernel would not tell: kqueue opens a descriptor per add, so a
   * second watch of a directory must find the first here. inotify answers
   * an add of a directory it already watches (by any name) with the same
   * descriptor, so there the descriptor is the only key: no map of paths
   * (~46 bytes per run at 100,000 runs), and a directory removed and made
   * again under the same name is never taken for the old one while the old
   * watch's IN_IGNORED is still queued.
   */
  private readonly byDir: Map<string, Entry> | undefined;
  private readonly m: Readonly<Record<string, number>>;
  private readonly dirMask: number;
  private closed = false;
  private broken = false;

  /** Use {@link openDirWatcher}. */
  constructor(
    private readonly notifier: NativeNotifier,
    private readonly options: DirWatcherOptions,
  ) {
    this.m = native().notify.mask;
    this.byDir = native().notify.backend === 'inotify' ? undefined : new Map();
    const bit = (name: string): number => this.m[name] ?? 0;
    this.dirMask =
      bit('closeWrite') | bit('modify') | bit('create') | bit('delete') | bit('movedFrom') | bit('movedTo') | bit('deleteSelf') | bit('moveSelf') | bit('onlyDir') | bit('dontFollow') | bit('exclUnlink');
    // A followed file's writes, and its truncation: kqueue says NOTE_ATTRIB alone for a file cut short
    // (xnu posts it from VNOP_SETATTR, never NOTE_WRITE), which a reader must see as much as an append.
    this.fileMask = bit('modify') | bit('attrib') | bit('deleteSelf') | bit('moveSelf') | bit('dontFollow');
    const budgets = watchBudgets();
    this.maxDescriptors = systemFacts().watchHoldsDescriptor ? Math.max(0, Math.floor(Math.min(options.maxDescriptors ?? Infinity, budgets.dirs))) : Infinity;
    this.maxFiles = budgets.files;
  }

  /** {@link DirWatch.follow}: file watches where directory watches do not tell entry writes. */
  followFiles(w: DirWatchOf, names: readonly string[]): void {
    if (systemFacts().closeWrite || this.closed || this.broken) return; // inotify names the entry written
    const want = new Set(names);
    const had = w.files ?? new Map<string, number>();
    for (const [name, id] of [...had]) {
      if (want.has(name)) continue;
      had.delete(name);
      this.fileWds.delete(id);
      this.notifier.remove(id);
    }
    for (const name of want) {
      if (had.has(name) || name === '' || name.includes('/')) continue;
      if (this.fileWds.size >= this.maxFiles) {
        this.stats.filesOverBudget++;
        continue;
      }
      const dir = w.entry.dir ?? '';
      const id = this.notifier.add(typeof dir === 'string' ? `${dir}/${name}` : Buffer.concat([dir, Buffer.from(`/${name}`, 'utf8')]), this.fileMask);
      if (id < 0) continue; // not there (yet), or refused: the directory's own events still come
      had.set(name, id);
      this.fileWds.set(id, { watch: w, name });
    }
    w.files = had.size > 0 ? had : undefined;
    this.stats.files = this.fileWds.size;
  }

  private dropFiles(w: DirWatchOf): void {
    if (w.files === undefined) return;
    for (const id of w.files.values()) {
      this.fileWds.delete(id);
      if (!this.closed) this.notifier.remove(id);
    }
    w.files = undefined;
    this.stats.files = this.fileWds.size;
  }

  /** Called by the notifier with each batch. */
  deliver(batch: NativeNotifyEvent[]): void {
    if (this.closed) return;
    this.stats.batches++;
    this.stats.events += batch.length;
    const bit = (name: string): number => this.m[name] ?? 0;
    for (const e of batch) {
      if (e.wd === -2) {
        if (!this.broken) {
          this.broken = true;
          this.options.onBroken?.(errnoName(e.mask));
        }
        return;
      }
      if ((e.mask & bit('queueOverflow')) !== 0) {
        // Events were lost. An owner that rescans is told; otherwise every
        // listener hears that its directory changed in some way.
        if (this.options.onOverflow !== undefined) this.options.onOverflow();
        else for (const entry of [...this.byWd.values()]) for (const w of watchesOf(entry)) w.tell({ kind: 'changed', name: '', isDir: false });
        continue;
      }
      const file = this.fileWds.get(e.wd);
      if (file !== undefined) {
        const gone = (e.mask & (bit('deleteSelf') | bit('moveSelf') | bit('ignored'))) !== 0;
        if (gone) {
          this.fileWds.delete(e.wd);
          file.watch.files?.delete(file.name);
          if ((e.mask & bit('ignored')) === 0 && !this.closed) this.notifier.remove(e.wd);
          this.stats.files = this.fileWds.size;
        }
        if ((e.mask & (bit('modify') | bit('attrib'))) !== 0) file.watch.tell({ kind: 'modified', name: file.name, isDir: false });
        if (gone) file.watch.tell({ kind: 'vanished', name: file.name, isDir: false });
        continue;
      }
      const entry = this.byWd.get(e.wd);
      if (entry === undefined) continue; // removed since; its last events are of no interest
      const kinds: DirEventKind[] = [];
      const isDir = (e.mask & bit('isDir')) !== 0;
      if (e.name === '') {
        if ((e.mask & (bit('deleteSelf') | bit('moveSelf') | bit('unmount') | bit('ignored'))) !== 0) kinds.push('gone');
        else if ((e.mask & (bit('modify') | bit('create'))) !== 0) kinds.push('changed');
      } else {
        if ((e.mask & (bit('create') | bit('movedTo'))) !== 0) kinds.push('appeared');
        if ((e.mask & bit('modify')) !== 0) kinds.push('modified');
        if ((e.mask & bit('closeWrite')) !== 0) kinds.push('written');
        if ((e.mask & (bit('delete') | bit('movedFrom'))) !== 0) kinds.push('vanished');
      }
      if ((e.mask & bit('ignored')) !== 0 || kinds.includes('gone')) {
        this.forget(entry);
        // A directory moved away is still watched by the kernel (inotify ends a watch by itself only with
        // IN_IGNORED; a kqueue descriptor stays open): release it, or each move of a watched root leaks one.
        if ((e.mask & bit('ignored')) === 0 && !this.closed) this.notifier.remove(entry.wd);
      }
      for (const kind of kinds) for (const w of watchesOf(entry)) w.tell({ kind, name: e.name, isDir });
    }
  }

  /**
   * Watches directory `dir` (not following a symlink at its last component):
   * a string, or a Buffer of the path's exact bytes where they are not UTF-8
   * (every UTF-8 path is given as a string). Answers the watch, or the errno
   * name the kernel refused it with (`ENOSPC` when the watch limit is
   * reached, `ENOENT`, `ENOTDIR`, ...).
   */
  watch(dir: KernelPath, listener: DirListener): WatchAnswer;
  /** As above, `listener` called with `context` too: one function for many directories, no closure per directory. */
  watch<C>(dir: KernelPath, listener: (event: DirEvent, context: C) => void, context: C): WatchAnswer;
  watch(dir: KernelPath, listener: (event: DirEvent, context: unknown) => void, context?: unknown): WatchAnswer {
    if (this.closed || this.broken) return { ok: false, code: 'EBADF' };
    let entry = this.byDir?.get(pathKey(dir));
    if (entry === undefined) {
      if (this.byWd.size >= this.maxDescriptors) {
        this.stats.overBudget++;
        return { ok: false, code: 'EMFILE' };
      }
      const wd = this.notifier.add(dir, this.dirMask);
      if (wd < 0) return { ok: false, code: errnoName(-wd) };
      // inotify: the same directory, by this or another name, gets the descriptor it already has.
      entry = this.byWd.get(wd);
      if (entry === undefined) {
        if (this.options.maxWatches !== undefined && this.byWd.size >= this.options.maxWatches) {
          this.notifier.remove(wd);
          return { ok: false, code: 'ENOSPC' };
        }
        entry = this.byDir === undefined ? { wd, watches: undefined } : { wd, dir, watches: undefined };
        this.byWd.set(wd, entry);
        this.byDir?.set(pathKey(dir), entry);
        this.stats.watches = this.byWd.size;
      }
    }
    const w = new DirWatchOf(this, entry, listener, context);
    addWatch(entry, w);
    return { ok: true, watch: w };
  }

  /** A watch closed (DirWatchOf.close): the kernel watch goes with the directory's last one. */
  release(w: DirWatchOf): void {
    this.dropFiles(w);
    const e = w.entry;
    if (removeWatch(e, w) > 0 || this.byWd.get(e.wd) !== e) return;
    this.forget(e);
    if (!this.closed) this.notifier.remove(e.wd);
  }

  /** How many kernel watches are held. */
  get size(): number {
    return this.byWd.size;
  }

  /** Closes the notifier: no more events, every watch released. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.byWd.clear();
    this.byDir?.clear();
    this.fileWds.clear();
    this.stats.files = 0;
    this.notifier.close();
  }

  /** Drops an entry from the maps by its descriptor and name, not by a walk of every directory watched (which made each removal O(runs)). */
  private forget(entry: Entry): void {
    if (this.byWd.get(entry.wd) === entry) this.byWd.delete(entry.wd);
    if (entry.dir !== undefined && this.byDir?.get(pathKey(entry.dir)) === entry) this.byDir.delete(pathKey(entry.dir));
    this.stats.watches = this.byWd.size;
  }
}

/**
 * Opens a directory watcher, or answers why there is none: `ENOSYS` where
 * the platform has no notification, `EMFILE` at `max_user_instances`, and so
 * on (an errno name). The caller then polls.
 */
export function openDirWatcher(options: DirWatcherOptions = {}): DirWatcher | string {
  const n = native().notify;
  let watcher: DirWatcher | undefined;
  const opened = n.open((batch) => watcher?.deliver(batch));
  if (typeof opened === 'number') return errnoName(-opened);
  watcher = new DirWatcher(opened, options);
  if (options.ref !== true) opened.unref();
  return watcher;
}

let shared: DirWatcher | string | undefined;

/**
 * One watcher for the whole process, for followers that each watch a
 * directory or two (`followRun`, through its LiveEngine): opened on first use, never holding the
 * process open, so that a program following many runs uses one kernel
 * notifier, not one per run (`max_user_instances` is small). Undefined when
 * the platform has no notification or the kernel refused a notifier; the
 * caller then polls.
 */
export function sharedDirWatcher(): DirWatcher | undefined {
  if (shared === undefined) {
    shared = openDirWatcher({
      onBroken: () => {
        shared = 'broken';
      },
    });
  }
  return typeof shared === 'string' ? undefined : shared;
}

// --- process exits ----------------------------------------------------------

/**
 * Processes one {@link ExitWatcher} watches at once at most, and fewer where
 * each is a descriptor (a pidfd, linux) and RLIMIT_NOFILE is low
 * ({@link watchBudgets}): a root with thousands of live legs never exhausts
 * the descriptors the process needs for its probes. Past it, a watch answers
 * `EMFILE` and the caller keeps its re-probe interval.
 */
export const EXIT_WATCH_BUDGET = 1024;

/** Options for {@link openExitWatcher}. */
export interface ExitWatcherOptions {
  /** Processes watched at once, at most (default and bound: {@link watchBudgets}`().exits`); past it `watch` answers `EMFILE`. */
  max?: number;
  /** The notifier failed; no more exits will be told. Called once, with the errno name. */
  onBroken?: (code: string) => void;
  /** Keep the event loop alive while the watcher is open (default false). */
  ref?: boolean;
}

interface ExitEntry {
  id: number;
  pid: number;
  listeners: Set<() => void>;
}

/** The process-exit backend of this platform: `pidfd` (linux), `kqueue` (darwin, untested) or `unsupported`. */
export function exitBackend(): 'pidfd' | 'kqueue' | 'unsupported' {
  return native().notify.exitBackend ?? 'unsupported';
}

/**
 * Process exits told by the kernel (native/notify.h ExitAdd: a pidfd per
 * process in one epoll set on linux, kqueue EVFILT_PROC/NOTE_EXIT on
 * darwin), over one descriptor polled by libuv on this thread's loop.
 *
 * Invariants, and why:
 * - An exit says only that a process ended. The caller decides what it
 *   means; for a lock's holder it is a reason to probe again, never a
 *   verdict (a wrong or recycled pid costs one probe).
 * - One kernel watch per pid, however many listeners; a watch tells its
 *   listeners once and is then gone (the pidfd is closed at once).
 * - Bounded: at most `max` processes at once (descriptors on linux), and
 *   every descriptor is closed by {@link ExitWatcher.close} or when its
 *   last listener closes its watch.
 * - Refusals are answers: `ESRCH` (no such process visible here: it
 *   exited, or lives in a pid namespace this process cannot see), `ENOSYS`
 *   (linux before 5.3), `EMFILE` (the budget).
 */
export class ExitWatcher {
  readonly stats = { exits: 0, watches: 0 };
  private readonly byId = new Map<number, ExitEntry>();
  private readonly byPid = new Map<number, ExitEntry>();
  private readonly max: number;
  private closed = false;
  private broken = false;

  /** Use {@link openExitWatcher}. */
  constructor(
    private readonly notifier: NativeExitNotifier,
    private readonly options: ExitWatcherOptions,
  ) {
    this.max = Math.max(0, Math.floor(Math.min(options.max ?? Infinity, watchBudgets().exits)));
  }

  /** Called by the notifier with each batch. */
  deliver(batch: NativeNotifyEvent[]): void {
    if (this.closed) return;
    for (const e of batch) {
      if (e.wd === -2) {
        if (!this.broken) {
          this.broken = true;
          this.options.onBroken?.(errnoName(e.mask));
        }
        return;
      }
      const entry = this.byId.get(e.wd);
      if (entry === undefined) continue;
      this.forget(entry);
      this.stats.exits++;
      for (const l of [...entry.listeners]) l();
    }
  }

  /**
   * Tells `listener` once when process `pid` exits. Answers the watch (close
   * it to stop listening), or the errno name the watch was refused with.
   */
  watch(pid: number, listener: () => void): WatchAnswer {
    if (this.closed || this.broken) return { ok: false, code: 'EBADF' };
    if (!Number.isInteger(pid) || pid < 1 || pid > 0x7fffffff) return { ok: false, code: 'EINVAL' };
    let entry = this.byPid.get(pid);
    if (entry === undefined) {
      if (this.byId.size >= this.max) return { ok: false, code: 'EMFILE' };
      const id = this.notifier.add(pid);
      if (id < 0) return { ok: false, code: errnoName(-id) };
      entry = { id, pid, listeners: new Set() };
      this.byId.set(id, entry);
      this.byPid.set(pid, entry);
      this.stats.watches = this.byId.size;
    }
    const e = entry;
    e.listeners.add(listener);
    return {
      ok: true,
      watch: {
        close: () => {
          e.listeners.delete(listener);
          if (e.listeners.size > 0 || this.byId.get(e.id) !== e) return;
          this.forget(e);
          if (!this.closed) this.notifier.remove(e.id);
        },
      },
    };
  }

  /** How many processes are watched now. */
  get size(): number {
    return this.byId.size;
  }

  /** Processes watched at once at most (`max`, within {@link watchBudgets}). */
  get budget(): number {
    return this.max;
  }

  /** Whether a watch of a process not yet watched would be refused for the budget (`EMFILE`). */
  get full(): boolean {
    return this.byId.size >= this.max;
  }

  /** Closes the notifier and every watch's descriptor. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.byId.clear();
    this.byPid.clear();
    this.stats.watches = 0;
    this.notifier.close();
  }

  private forget(entry: ExitEntry): void {
    if (this.byId.get(entry.id) === entry) this.byId.delete(entry.id);
    if (this.byPid.get(entry.pid) === entry) this.byPid.delete(entry.pid);
    this.stats.watches = this.byId.size;
  }
}

/**
 * Opens a process-exit watcher, or answers why there is none (an errno
 * name: `ENOSYS` where the platform or the addon has none).
 */
export function openExitWatcher(options: ExitWatcherOptions = {}): ExitWatcher | string {
  const n = native().notify;
  if (typeof n.openExits !== 'function') return 'ENOSYS';
  let watcher: ExitWatcher | undefined;
  const opened = n.openExits((batch) => watcher?.deliver(batch));
  if (typeof opened === 'number') return errnoName(-opened);
  watcher = new ExitWatcher(opened, options);
  if (options.ref !== true) opened.unref();
  return watcher;
}

let sharedExits: ExitWatcher | string | undefined;

/**
 * One exit watcher for the whole process, for followers that each follow a
 * run or two (as {@link sharedDirWatcher}); never holds the process open.
 * Undefined where there is none; the caller keeps its re-probe interval.
 */
export function sharedExitWatcher(): ExitWatcher | undefined {
  if (sharedExits === undefined) {
    sharedExits = openExitWatcher({
      onBroken: () => {
        sharedExits = 'broken';
      },
    });
  }
  return typeof sharedExits === 'string' ? undefined : sharedExits;
}
