/**
 * What the live engine keeps per run (engine.ts), in as few bytes as a
 * settled run allows: at 100,000 runs these records are most of serve's
 * heap.
 *
 * Invariants, and why:
 * - A settled run (its last leg closed, let go by `settledForget`) holds
 *   seven words: its name and directory, its report, its watch, its
 *   identity slot, a word of flags, and no {@link RunMore} (its fold is the
 *   shared FORGOTTEN one, its error null). Every field that only a run being read, followed or
 *   probed needs lives in a RunMore, made at the first write of a value
 *   other than its default and dropped by {@link RunState.shed} once every
 *   such field is back at its default. Reads of a field without a RunMore
 *   answer the default, so the engine's code reads and writes them as the
 *   plain fields they stand for (a plain object of 35 fields would take 304
 *   bytes per run).
 * - The flags are bits of one number, for the same reason.
 * - What tells that a run's files changed lives in shared slabs
 *   ({@link SigSlots}), addressed by slot number: a view object per run cost
 *   96 bytes more, and the identities whole 96 bytes more again.
 */
import { join } from 'node:path';
import type { StreamError } from '../contract/errors.js';
import type { StreamEvent } from '../contract/events.js';
import { EVENTS_FILE, LOCK_FILE, STATE_FILE } from '../contract/files.js';
import { StreamFold } from '../contract/fold.js';
import type { RunReport } from '../contract/types.js';
import type { DirWatch } from '../kernel/notify.js';
import type { LineSplitter } from '../read/lines.js';
import type { SnapshotRead } from '../read/snapshot.js';
import type { TailFacts, TailStepper } from '../read/tail.js';
import type { LiveLine } from './types.js';

/** The files whose identities tell that a run changed (RunState.sig). */
export const RUN_FILES: readonly string[] = [EVENTS_FILE, STATE_FILE];

// A run's stream, snapshot and lock paths, made when needed: kept per run, they would cost ~200 bytes each at 100,000 runs.
export function eventsOf(r: RunState): string {
  return join(r.dir, EVENTS_FILE);
}
export function stateOf(r: RunState): string {
  return join(r.dir, STATE_FILE);
}
export function lockOf(r: RunState): string {
  return join(r.dir, LOCK_FILE);
}

/**
 * The empty lists every run holds while it has nothing to tell (frozen: a
 * run's own list is made at its first push).
 */
export const NO_EVENTS: { event: StreamEvent; offset: number }[] = Object.freeze([]) as unknown as { event: StreamEvent; offset: number }[];
export const NO_LINES: LiveLine[] = Object.freeze([]) as unknown as LiveLine[];

/** The empty print every run starts with (never written to: a print is replaced, not filled). */
export const NO_BYTES = Buffer.alloc(0);

/**
 * The fold a run holds before its first read and while it is let go
 * (`settledForget`): closed, and never applied to (the engine gives the run
 * a fold of its own, and reads its stream from the start, before anything
 * else).
 */
export const FORGOTTEN = new StreamFold();

/** The fields of a run being read, followed or probed (see the module comment); each starts at its default. */
class RunMore {
  /** The run's stream fold (FORGOTTEN until first read, and again once let go). */
  fold: StreamFold = FORGOTTEN;
  /** Why the run cannot be reported, or null. */
  error: string | null = null;
  /** Cuts the stream into lines while a read is under way or a partial last line is held; dropped when neither (it is made again at the offset), as kept, it and its closures would be an eighth of the engine's heap at 100,000 runs. */
  splitter: LineSplitter | undefined = undefined;
  /** Stream bytes read and folded. */
  offset: number = 0;
  /** The stream file's identity when it was last read (replaced or not). */
  ident: string | undefined = undefined;
  /** The bytes just before `offset` (a rewrite shows as different bytes). */
  print: Buffer = NO_BYTES;
  /** The tail reader's restart point: the offset of the last run_started (-1: none). */
  lastStart: number = -1;
  /** Lines skipped since it. */
  skipsSinceLastStart: number = 0;
  /** The restart point before the last run_finished. */
  restart: number = 0;
  /** Lines skipped since that one. */
  skipsSinceRestart: number = 0;
  /** Why the stream could not be read, or null. */
  streamError: unknown = null;
  /** The snapshot read for the next derivation (a settled run keeps none). */
  snapshot: SnapshotRead | undefined = undefined;
  /** `events`: events read and not yet told. */
  newEvents: { event: StreamEvent; offset: number }[] = NO_EVENTS;
  /** `lines`: lines read and not yet told. */
  newLines: LiveLine[] = NO_LINES;
  /** `lines`: the stream-error told, if any (then no more lines are told). */
  told: StreamError | undefined = undefined;
  /** A first read by the tail reader under way (a step per turn), with its own descriptor. */
  tail: TailStepper | undefined = undefined;
  /** What that read found, until a byte more is read: the reference path's first read (inspect.ts `first`). */
  tailFacts: TailFacts | undefined = undefined;
  /** The exit watch on the likely holder of the run's held lock, if any. */
  holder: DirWatch | undefined = undefined;
  /** The last holder pid whose exit was told while the run was followed (not watched again: see engine.ts). */
  exitedPid: number | undefined = undefined;
  /** Follow-up probes taken since that exit while the lock stayed held (HOLDER_FOLLOW_UP_MS). */
  followUps: number = 0;
  /** The follow-up probe pending, if any. */
  followUp: NodeJS.Timeout | undefined = undefined;
}

const REPORTED_BIT = 1;
const DIRTY_STREAM_BIT = 2;
const DIRTY_SNAPSHOT_BIT = 4;
const DIRTY_PROBE_BIT = 8;
const ANNOUNCE_BIT = 16;
const NEWER_BIT = 32;
const HELD_BIT = 64;
const BEHIND_BIT = 128;
const SOUGHT_BIT = 256;

/** One run the engine follows. */
export class RunState {
  report: RunReport | null = null;
  watch: DirWatch | undefined = undefined;
  /** The slot of the identities of events.jsonl and state.json (kernel/identity.ts) when last processed ({@link SigSlots}); -1 once dropped. */
  sig: number;
  private bits: number;
  private more: RunMore | undefined = undefined;

  constructor(
    readonly id: string,
    readonly dir: string,
    sig: number,
  ) {
    this.sig = sig;
    this.bits = DIRTY_STREAM_BIT | DIRTY_SNAPSHOT_BIT | DIRTY_PROBE_BIT;
  }

  /** Drops the RunMore when every one of its fields is back at its default (a settled run let go). */
  shed(): void {
    const m = this.more;
    if (m === undefined) return;
    if (m.fold === FORGOTTEN &&
      m.error === null &&
      m.splitter === undefined &&
      m.offset === 0 &&
      m.ident === undefined &&
      m.print === NO_BYTES &&
      m.lastStart === -1 &&
      m.skipsSinceLastStart === 0 &&
      m.restart === 0 &&
      m.skipsSinceRestart === 0 &&
      m.streamError === null &&
      m.snapshot === undefined &&
      m.newEvents === NO_EVENTS &&
      m.newLines === NO_LINES &&
      m.told === undefined &&
      m.tail === undefined &&
      m.tailFacts === undefined &&
      m.holder === undefined &&
      m.exitedPid === undefined &&
      m.followUps === 0 &&
      m.followUp === undefined)
      this.more = undefined;
  }

  /** The run's stream fold (FORGOTTEN until first read, and again once let go). */
  get fold(): StreamFold {
    return this.more === undefined ? FORGOTTEN : this.more.fold;
  }
  set fold(v: StreamFold) {
    if (this.more === undefined) {
      if (v === FORGOTTEN) return;
      this.more = new RunMore();
    }
    this.more.fold = v;
  }
  /** Why the run cannot be reported, or null. */
  get error(): string | null {
    return this.more === undefined ? null : this.more.error;
  }
  set error(v: string | null) {
    if (this.more === undefined) {
      if (v === null) return;
      this.more = new RunMore();
    }
    this.more.error = v;
  }
  /** Whether the run holds a RunMore (for tests of its size). */
  get compact(): boolean {
    return this.more === undefined;
  }

  private flag(bit: number, on: boolean): void {
    this.bits = on ? this.bits | bit : this.bits & ~bit;
  }

  /** Whether a report or error was told (the next one is told only if it differs). */
  get reported(): boolean {
    return (this.bits & REPORTED_BIT) !== 0;
  }
  set reported(v: boolean) {
    this.flag(REPORTED_BIT, v);
  }
  /** The stream may have bytes not yet read. */
  get dirtyStream(): boolean {
    return (this.bits & DIRTY_STREAM_BIT) !== 0;
  }
  set dirtyStream(v: boolean) {
    this.flag(DIRTY_STREAM_BIT, v);
  }
  /** The snapshot must be read again. */
  get dirtySnapshot(): boolean {
    return (this.bits & DIRTY_SNAPSHOT_BIT) !== 0;
  }
  set dirtySnapshot(v: boolean) {
    this.flag(DIRTY_SNAPSHOT_BIT, v);
  }
  /** The lock must be probed again. */
  get dirtyProbe(): boolean {
    return (this.bits & DIRTY_PROBE_BIT) !== 0;
  }
  set dirtyProbe(v: boolean) {
    this.flag(DIRTY_PROBE_BIT, v);
  }
  /** Tell subscribers after the next derivation even if the report did not change. */
  get announce(): boolean {
    return (this.bits & ANNOUNCE_BIT) !== 0;
  }
  set announce(v: boolean) {
    this.flag(ANNOUNCE_BIT, v);
  }
  /** `lines`: a newer-schema line was seen (the run is then derived by the reference path). */
  get newer(): boolean {
    return (this.bits & NEWER_BIT) !== 0;
  }
  set newer(v: boolean) {
    this.flag(NEWER_BIT, v);
  }
  /** `lines`: the subscriber has not asked for more since the last lines told. */
  get held(): boolean {
    return (this.bits & HELD_BIT) !== 0;
  }
  set held(v: boolean) {
    this.flag(HELD_BIT, v);
  }
  /** `lines`: bytes are known to be unread (the run is not derived until they are). */
  get behind(): boolean {
    return (this.bits & BEHIND_BIT) !== 0;
  }
  set behind(v: boolean) {
    this.flag(BEHIND_BIT, v);
  }
  /** The holder was sought and none could be watched (no pid found, the budget, a refusal): not sought again at every derivation of a busy run, only once its lock file changes or the lock is no longer held. */
  get sought(): boolean {
    return (this.bits & SOUGHT_BIT) !== 0;
  }
  set sought(v: boolean) {
    this.flag(SOUGHT_BIT, v);
  }
  /** Cuts the stream into lines while a read is under way or a partial last line is held; dropped when neither (it is made again at the offset), as kept, it and its closures would be an eighth of the engine's heap at 100,000 runs. */
  get splitter(): LineSplitter | undefined {
    return this.more === undefined ? undefined : this.more.splitter;
  }
  set splitter(v: LineSplitter | undefined) {
    if (this.more === undefined) {
      if (v === undefined) return;
      this.more = new RunMore();
    }
    this.more.splitter = v;
  }
  /** Stream bytes read and folded. */
  get offset(): number {
    return this.more === undefined ? 0 : this.more.offset;
  }
  set offset(v: number) {
    if (this.more === undefined) {
      if (v === 0) return;
      this.more = new RunMore();
    }
    this.more.offset = v;
  }
  /** The stream file's identity when it was last read (replaced or not). */
  get ident(): string | undefined {
    return this.more === undefined ? undefined : this.more.ident;
  }
  set ident(v: string | undefined) {
    if (this.more === undefined) {
      if (v === undefined) return;
      this.more = new RunMore();
    }
    this.more.ident = v;
  }
  /** The bytes just before `offset` (a rewrite shows as different bytes). */
  get print(): Buffer {
    return this.more === undefined ? NO_BYTES : this.more.print;
  }
  set print(v: Buffer) {
    if (this.more === undefined) {
      if (v === NO_BYTES) return;
      this.more = new RunMore();
    }
    this.more.print = v;
  }
  /** The tail reader's restart point: the offset of the last run_started (-1: none). */
  get lastStart(): number {
    return this.more === undefined ? -1 : this.more.lastStart;
  }
  set lastStart(v: number) {
    if (this.more === undefined) {
      if (v === -1) return;
      this.more = new RunMore();
    }
    this.more.lastStart = v;
  }
  /** Lines skipped since it. */
  get skipsSinceLastStart(): number {
    return this.more === undefined ? 0 : this.more.skipsSinceLastStart;
  }
  set skipsSinceLastStart(v: number) {
    if (this.more === undefined) {
      if (v === 0) return;
      this.more = new RunMore();
    }
    this.more.skipsSinceLastStart = v;
  }
  /** The restart point before the last run_finished. */
  get restart(): number {
    return this.more === undefined ? 0 : this.more.restart;
  }
  set restart(v: number) {
    if (this.more === undefined) {
      if (v === 0) return;
      this.more = new RunMore();
    }
    this.more.restart = v;
  }
  /** Lines skipped since that one. */
  get skipsSinceRestart(): number {
    return this.more === undefined ? 0 : this.more.skipsSinceRestart;
  }
  set skipsSinceRestart(v: number) {
    if (this.more === undefined) {
      if (v === 0) return;
      this.more = new RunMore();
    }
    this.more.skipsSinceRestart = v;
  }
  /** Why the stream could not be read, or null. */
  get streamError(): unknown {
    return this.more === undefined ? null : this.more.streamError;
  }
  set streamError(v: unknown) {
    if (this.more === undefined) {
      if (v === null) return;
      this.more = new RunMore();
    }
    this.more.streamError = v;
  }
  /** The snapshot read for the next derivation (a settled run keeps none). */
  get snapshot(): SnapshotRead | undefined {
    return this.more === undefined ? undefined : this.more.snapshot;
  }
  set snapshot(v: SnapshotRead | undefined) {
    if (this.more === undefined) {
      if (v === undefined) return;
      this.more = new RunMore();
    }
    this.more.snapshot = v;
  }
  /** `events`: events read and not yet told. */
  get newEvents(): { event: StreamEvent; offset: number }[] {
    return this.more === undefined ? NO_EVENTS : this.more.newEvents;
  }
  set newEvents(v: { event: StreamEvent; offset: number }[]) {
    if (this.more === undefined) {
      if (v === NO_EVENTS) return;
      this.more = new RunMore();
    }
    this.more.newEvents = v;
  }
  /** `lines`: lines read and not yet told. */
  get newLines(): LiveLine[] {
    return this.more === undefined ? NO_LINES : this.more.newLines;
  }
  set newLines(v: LiveLine[]) {
    if (this.more === undefined) {
      if (v === NO_LINES) return;
      this.more = new RunMore();
    }
    this.more.newLines = v;
  }
  /** `lines`: the stream-error told, if any (then no more lines are told). */
  get told(): StreamError | undefined {
    return this.more === undefined ? undefined : this.more.told;
  }
  set told(v: StreamError | undefined) {
    if (this.more === undefined) {
      if (v === undefined) return;
      this.more = new RunMore();
    }
    this.more.told = v;
  }
  /** A first read by the tail reader under way (a step per turn), with its own descriptor. */
  get tail(): TailStepper | undefined {
    return this.more === undefined ? undefined : this.more.tail;
  }
  set tail(v: TailStepper | undefined) {
    if (this.more === undefined) {
      if (v === undefined) return;
      this.more = new RunMore();
    }
    this.more.tail = v;
  }
  /** What that read found, until a byte more is read: the reference path's first read (inspect.ts `first`). */
  get tailFacts(): TailFacts | undefined {
    return this.more === undefined ? undefined : this.more.tailFacts;
  }
  set tailFacts(v: TailFacts | undefined) {
    if (this.more === undefined) {
      if (v === undefined) return;
      this.more = new RunMore();
    }
    this.more.tailFacts = v;
  }
  /** The exit watch on the likely holder of the run's held lock, if any. */
  get holder(): DirWatch | undefined {
    return this.more === undefined ? undefined : this.more.holder;
  }
  set holder(v: DirWatch | undefined) {
    if (this.more === undefined) {
      if (v === undefined) return;
      this.more = new RunMore();
    }
    this.more.holder = v;
  }
  /** The last holder pid whose exit was told while the run was followed (not watched again: see engine.ts). */
  get exitedPid(): number | undefined {
    return this.more === undefined ? undefined : this.more.exitedPid;
  }
  set exitedPid(v: number | undefined) {
    if (this.more === undefined) {
      if (v === undefined) return;
      this.more = new RunMore();
    }
    this.more.exitedPid = v;
  }
  /** Follow-up probes taken since that exit while the lock stayed held (HOLDER_FOLLOW_UP_MS). */
  get followUps(): number {
    return this.more === undefined ? 0 : this.more.followUps;
  }
  set followUps(v: number) {
    if (this.more === undefined) {
      if (v === 0) return;
      this.more = new RunMore();
    }
    this.more.followUps = v;
  }
  /** The follow-up probe pending, if any. */
  get followUp(): NodeJS.Timeout | undefined {
    return this.more === undefined ? undefined : this.more.followUp;
  }
  set followUp(v: NodeJS.Timeout | undefined) {
    if (this.more === undefined) {
      if (v === undefined) return;
      this.more = new RunMore();
    }
    this.more.followUp = v;
  }
}

/** Runs whose identities one slab holds (see SigSlots). */
const SIG_SLAB_RUNS = 4096;

/** The numbers a slot keeps: two 53-bit hashes. */
const SIG_WORDS = 2;

/** For reading a double's two 32-bit halves without allocating. */
const F64 = new Float64Array(1);
const U32 = new Uint32Array(F64.buffer);

/** Murmur3's finaliser: every input bit moves every output bit. */
function fmix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * The runs' identities (RunState.sig), kept as what tells a change and no
 * more: for each run two 53-bit hashes of the bits of its files' identities
 * (kernel/identity.ts: twelve numbers for a run's two files), in shared
 * slabs addressed by slot number. Kept whole, the twelve numbers would be 96
 * bytes per run (9.6 MB at 100,000 runs); the hashes are 16. A change goes
 * unseen only if both hashes, 106 bits from four independent lanes, come out
 * equal for different identities; and what a change tells is only that the
 * run is read again. A new or reused slot holds NaN, which equals nothing,
 * so its first comparison always tells a change (no real identity is made
 * of NaN).
 */
export class SigSlots {
  private readonly slabs: Float64Array[] = [];
  private next = 0;
  private readonly free: number[] = [];

  /** `len`: the numbers one run's identities take in the buffers compared with. */
  constructor(readonly len: number) {}

  /** A slot that differs from every identity. */
  take(): number {
    const reused = this.free.pop();
    if (reused !== undefined) return reused;
    return this.next++;
  }

  /** Makes `slot` differ from every identity again and keeps it for the next take. */
  give(slot: number): void {
    if (slot < 0) return;
    this.clear(slot);
    this.free.push(slot);
  }

  /**
   * Makes `slot` differ from every identity again without keeping it for a
   * take: for a store addressed by another store's slots (live/sweep.ts).
   */
  clear(slot: number): void {
    if (slot < 0) return;
    const at = this.at(slot);
    this.slabOf(slot).fill(NaN, at, at + SIG_WORDS);
  }

  /** Whether `slot` holds identities: it was compared at least once since it was taken or cleared. */
  known(slot: number): boolean {
    return slot >= 0 && !Number.isNaN(this.slabOf(slot)[this.at(slot)]);
  }

  /**
   * Compares `slot` with the identities in `len` numbers of `fresh` from
   * `from`; when they differ, keeps them in the slot. Answers whether they
   * differed (a dropped run's slot, -1, always differs and keeps nothing).
   */
  takeIfChanged(slot: number, fresh: Float64Array, from: number): boolean {
    if (slot < 0) return true;
    let a = 0x811c9dc5;
    let b = 0x9e3779b9 ^ this.len;
    let c = 0x27d4eb2f;
    let d = 0x165667b1;
    for (let i = from; i < from + this.len; i++) {
      F64[0] = fresh[i] as number;
      for (let k = 0; k < 2; k++) {
        const w = U32[k] as number;
        a = Math.imul(a ^ w, 0x01000193);
        b = Math.imul(b ^ w, 0x5bd1e995);
        c = Math.imul(c ^ w, 0xcc9e2d51);
        d = Math.imul(d ^ w, 0x1b873593);
      }
    }
    const first = fmix(a) * 2 ** 21 + (fmix(b) >>> 11);
    const second = fmix(c) * 2 ** 21 + (fmix(d) >>> 11);
    const slab = this.slabOf(slot);
    const at = this.at(slot);
    if (slab[at] === first && slab[at + 1] === second) return false;
    slab[at] = first;
    slab[at + 1] = second;
    return true;
  }

  /** The slab of `slot`, made (NaN) when a store addressed by another's slots reaches it first. */
  private slabOf(slot: number): Float64Array {
    const k = Math.floor(slot / SIG_SLAB_RUNS);
    while (this.slabs.length <= k) this.slabs.push(new Float64Array(SIG_SLAB_RUNS * SIG_WORDS).fill(NaN));
    return this.slabs[k] as Float64Array;
  }

  private at(slot: number): number {
    return (slot % SIG_SLAB_RUNS) * SIG_WORDS;
  }
}
