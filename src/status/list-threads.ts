/**
 * `runs --json` over a large root on several threads: the listing, the
 * order and the document are the main thread's, byte for byte what
 * {@link writeRunsDocument} writes; the per-run inspections (read, probe,
 * confirm: inspect.ts, unchanged) are shared between the main thread and
 * worker threads (list-worker.ts), a chunk of run directories at a time.
 *
 * Invariants, and why:
 * - Same document: the root is listed and sorted once, here. Chunks are
 *   claimed in order from a shared counter by whichever thread is free (the
 *   main thread included, so no core waits on a thread that only writes);
 *   chunk k is written only after chunk k-1, so runs appear newest first as
 *   always. Skips (non-directories here, unreadable runs from any thread)
 *   are put back in entry order.
 * - Bounded memory: no chunk is claimed more than {@link AHEAD} chunks
 *   beyond the one being written, so finished text never piles up while a
 *   slow chunk or a slow stdout holds the order.
 * - Nothing is lost to a thread: a chunk claimed by a worker that ended (an
 *   error, an exit) before sending it is inspected on the main thread.
 * - Readers still write nothing: a worker runs the same inspection as the
 *   main thread would, each with its own descriptors and buffers.
 */
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import type { RunReport } from '../contract/types.js';
import type { ProbeResult } from '../lock/probe.js';
import { inspectBatch, type RunStatusOptions } from './inspect.js';
import { entrySkip, inspectionSkip, reportText, rootEntries, RunsDocumentWriter, shownName, type RootEntries, type RunList, type SkippedEntry } from './list.js';

/** Run directories per chunk: large enough that a message per chunk costs little, small enough to keep the threads even. */
export const CHUNK_RUNS = 256;
/** How many chunks may be claimed beyond the one being written. */
export const AHEAD = 8;

/**
 * A worker's young generation, MB (V8's resourceLimits.maxYoungGenerationSizeMb).
 * A worker's garbage dies young (one chunk's texts), so a small one costs no
 * wall time and keeps two threads' peak memory within the listing's budget
 * (docs/benchmarks.md, "Listing many runs").
 */
const WORKER_YOUNG_MB = 2;

/** Slots of the shared control array: the next chunk to claim, the chunks written, the chunks sent by workers; then each chunk's owner. */
export const CLAIM = 0;
export const WRITTEN = 1;
export const SENT = 2;
export const OWNER = 3;
/** The owner number of the main thread; worker i (from 1) is i + 1. Zero: not claimed (or claimed and not yet recorded). */
const MAIN_OWNER = 1;

/**
 * What a worker sends for each report: `text`, the report's
 * {@link reportText} (`runs --json`); `reports`, the report object itself,
 * copied by the structured clone (serve's first listing, which keeps each
 * report compacted: status/compact.ts).
 */
export type ListWorkerMode = 'text' | 'reports';

/** What a worker is given (list-worker.ts). */
export interface ListWorkerData {
  abs: string;
  /** The run directories' shown names, in listing order, packed ({@link packNames}); chunk k is names [k * CHUNK_RUNS, (k + 1) * CHUNK_RUNS). */
  names: PackedNames;
  /** Int32 slots {@link CLAIM}, {@link WRITTEN}, {@link SENT}, then one {@link OWNER} slot per chunk. */
  control: SharedArrayBuffer;
  /** This worker's owner number (2, 3, …). */
  owner: number;
  /** Where it sends its chunks. */
  port: MessagePort;
  /** What it sends per run (absent: `text`). */
  mode?: ListWorkerMode;
  /** Run directories per inspectBatch within a chunk (absent: the whole chunk at once). */
  batchRuns?: number;
  /** Whether to time its lock probes and send them with each chunk ({@link ChunkMessage.probes}), for the owner's observer. */
  probes?: boolean;
}

/** One lock probe a worker made: monotonic seconds it took, and the answer (RunStatusOptions.onProbe's arguments). */
export type ProbeRecord = [seconds: number, answer: ProbeResult];

/**
 * A chunk inspected: its runs in listing order (texts, report objects, or
 * whatever the owning thread made of them), and its skips, each with its
 * index in the chunk so that it is put back in entry order.
 */
export interface ChunkResult<T> {
  runs: T[];
  skips: [at: number, skip: SkippedEntry][];
}

/** What a worker sends per chunk. */
export interface ChunkMessage extends ChunkResult<string | RunReport> {
  chunk: number;
  /** The lock probes its inspections made, in order (only when asked for: {@link ListWorkerData.probes}). */
  probes?: ProbeRecord[];
}

/**
 * Inspects the run directories `chunk` (shown names) under `abs`, as the
 * sequential listing would, `batchRuns` at a time (one read of the kernel's
 * lock table per batch with a free probe), each report made into what the
 * caller keeps by `map` as it comes, so the inspections of one batch are
 * all that is alive at once.
 */
export function inspectChunk<T>(abs: string, chunk: readonly string[], map: (report: RunReport) => T, options: RunStatusOptions = {}, batchRuns: number = CHUNK_RUNS): ChunkResult<T> {
  const out: ChunkResult<T> = { runs: [], skips: [] };
  for (let from = 0; from < chunk.length; from += batchRuns) {
    const part = chunk.slice(from, from + batchRuns);
    inspectBatch(
      part.map((name) => join(abs, name)),
      options,
    ).forEach((r, i) => {
      if (r.ok) out.runs.push(map(r.inspection.report));
      else out.skips.push([from + i, inspectionSkip(part[i] as string, r.error)]);
    });
  }
  return out;
}

/** Chunk `k` of `names`. */
export function chunkOf(names: readonly string[], k: number): string[] {
  return names.slice(k * CHUNK_RUNS, (k + 1) * CHUNK_RUNS);
}

/** Names as UTF-8 bytes back to back in shared memory, name i at bytes [ends[i - 1], ends[i]): every worker reads them without a copy of its own. */
export interface PackedNames {
  count: number;
  bytes: SharedArrayBuffer;
  ends: SharedArrayBuffer;
}

/** {@link PackedNames} of `names`. */
export function packNames(names: readonly string[]): PackedNames {
  const ends = new Int32Array(new SharedArrayBuffer(4 * Math.max(1, names.length)));
  let total = 0;
  names.forEach((n, i) => (ends[i] = total += Buffer.byteLength(n)));
  const bytes = new SharedArrayBuffer(Math.max(1, total));
  const view = Buffer.from(bytes);
  names.forEach((n, i) => view.write(n, i === 0 ? 0 : (ends[i - 1] as number)));
  return { count: names.length, bytes, ends: ends.buffer };
}

/** Chunk `k` of packed names. */
export function packedChunk(names: PackedNames, k: number): string[] {
  const view = Buffer.from(names.bytes);
  const ends = new Int32Array(names.ends);
  const out: string[] = [];
  for (let i = k * CHUNK_RUNS; i < Math.min(names.count, (k + 1) * CHUNK_RUNS); i++) out.push(view.toString('utf8', i === 0 ? 0 : ends[i - 1], ends[i]));
  return out;
}

/**
 * Claims the next chunk for owner `owner` when it lies within {@link AHEAD}
 * of the chunk being written: its number, or -1 (none left, or too far
 * ahead of the writing).
 */
export function claimChunk(ctl: Int32Array, chunks: number, owner: number): number {
  if (Atomics.load(ctl, CLAIM) - Atomics.load(ctl, WRITTEN) >= AHEAD) return -1;
  const k = Atomics.add(ctl, CLAIM, 1);
  if (k >= chunks) return -1;
  Atomics.store(ctl, OWNER + k, owner);
  return k;
}

/** Atomics.waitAsync (Node 16+; not yet in TypeScript's es2022 lib). */
const waitAsync = (Atomics as unknown as { waitAsync(this: void, a: Int32Array, i: number, v: number, ms: number): { async: false; value: string } | { async: true; value: Promise<string> } }).waitAsync;

/**
 * From how many run directories a second thread is used by default: below
 * this a worker's start-up (its own module load) costs about what it saves
 * (docs/benchmarks.md, "Listing many runs", has the figures on 2 cores).
 */
export const THREADS_DEFAULT_FROM_RUNS = 20_000;

/**
 * The most threads that may inspect runs: one per core
 * (os.availableParallelism). More never finish sooner, since the work is
 * CPU and each thread costs its own heap (docs/benchmarks.md: 99 threads on
 * 2 cores). `cores` is a test seam.
 */
export function threadsCap(cores: number = availableParallelism()): number {
  return Math.max(1, cores);
}

/**
 * How many threads inspect `dirs` run directories, the main thread
 * included (1: no worker): `asked` when given (RUNWARDEN_THREADS), capped
 * at {@link threadsCap}, at most one per chunk. By default two, where the machine has two cores or more
 * and there are at least {@link THREADS_DEFAULT_FROM_RUNS} runs; else one.
 * Never more by default: a thread costs its own heap, and with the worker's
 * young generation kept small two threads stay under the 150 MB budget at
 * 100,000 runs, for a little more CPU time in all; they pay in wall time where a core would
 * otherwise idle. `cores` is a test seam (default: os.availableParallelism).
 */
export function threadsFor(dirs: number, asked?: number, cores: number = availableParallelism()): number {
  const want = asked === undefined ? (cores >= 2 && dirs >= THREADS_DEFAULT_FROM_RUNS ? 2 : 1) : Math.min(asked, threadsCap(cores));
  return Math.max(1, Math.min(want, Math.ceil(dirs / CHUNK_RUNS)));
}

/** The run directories of a root's entries (shown names, listing order), each one's entry index, and the entries that are not run directories. */
interface RunDirs {
  names: string[];
  entryOf: number[];
  skips: { index: number; skip: SkippedEntry }[];
}

function runDirsOf(entries: RootEntries): RunDirs {
  const dirs: RunDirs = { names: [], entryOf: [], skips: [] };
  for (let index = 0; index < entries.names.length; index++) {
    const name = shownName(entries.names[index] as string);
    const skip = entrySkip(entries.kinds[index] as string, name);
    if (skip !== undefined) dirs.skips.push({ index, skip });
    else {
      dirs.names.push(name);
      dirs.entryOf.push(index);
    }
  }
  return dirs;
}

/** How {@link shareChunks} inspects and hands over a listing's runs. */
interface Sharing<T> {
  /** Threads asked for ({@link threadsFor}). */
  threads: number | undefined;
  workerScript: URL | undefined;
  /** What the workers send, and how. */
  worker: Pick<ListWorkerData, 'mode' | 'batchRuns' | 'probes'>;
  /** Chunk `names` inspected on this thread. */
  here(names: readonly string[]): ChunkResult<T>;
  /** A worker's chunk as this thread keeps it (called as it arrives, before it waits for its turn). */
  arrived(message: ChunkMessage): ChunkResult<T>;
  /** Each run, in listing order. */
  onRun(run: T): void;
  /** Asked between chunks: true ends the listing early (its result is then partial). */
  stop?: () => boolean;
  /** Test seam: this thread claims no chunk of its own, only those a worker left when it ended. */
  workersOnly?: boolean;
}

/** What {@link shareChunks} found: the skips in entry order, and how many chunks came from workers. */
interface Shared {
  skipped: SkippedEntry[];
  byWorkers: number;
}

/**
 * The listing's inspections shared between this thread and workers: runs
 * handed to `onRun` in listing order, the skips (non-directories and
 * unreadable runs) returned in entry order. See the invariants above.
 */
async function shareChunks<T>(abs: string, dirs: RunDirs, s: Sharing<T>): Promise<Shared> {
  const { names, entryOf, skips } = dirs;
  const chunks = Math.ceil(names.length / CHUNK_RUNS);
  const emit = (k: number, result: ChunkResult<T>): void => {
    for (const run of result.runs) s.onRun(run);
    for (const [at, skip] of result.skips) skips.push({ index: entryOf[k * CHUNK_RUNS + at] as number, skip });
  };
  let byWorkers = 0;
  const finish = (): Shared => ({ skipped: skips.sort((a, b) => a.index - b.index).map((x) => x.skip), byWorkers });
  const workers = threadsFor(names.length, s.threads) - 1;
  if (workers <= 0) {
    for (let k = 0; k < chunks && s.stop?.() !== true; k++) emit(k, s.here(chunkOf(names, k)));
    return finish();
  }
  const ctl = new Int32Array(new SharedArrayBuffer(4 * (OWNER + chunks)));
  const pending = new Map<number, ChunkResult<T>>();
  const ports: MessagePort[] = [];
  const pool: Worker[] = [];
  const gone = new Set<number>();
  const packed = packNames(names);
  for (let w = 0; w < workers; w++) {
    const owner = MAIN_OWNER + 1 + w;
    const { port1, port2 } = new MessageChannel();
    const data: ListWorkerData = { abs, names: packed, control: ctl.buffer, owner, port: port2, ...s.worker };
    ports.push(port1);
    // A worker that cannot start (or fails) only leaves its chunks to this thread.
    let worker: Worker;
    try {
      worker = new Worker(s.workerScript ?? new URL('./list-worker.js', import.meta.url), {
        workerData: data,
        transferList: [port2],
        // A small young generation: a worker's garbage dies young (one chunk's texts), and the default
        // (tens of MB per thread) would be most of what a second thread adds to peak memory.
        resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_MB },
      });
    } catch {
      gone.add(owner);
      continue;
    }
    worker.on('error', () => gone.add(owner));
    worker.on('exit', () => gone.add(owner));
    pool.push(worker);
  }
  // Everything the workers sent so far.
  const drain = (): void => {
    for (const port of ports) {
      for (let m = receiveMessageOnPort(port); m !== undefined; m = receiveMessageOnPort(port)) {
        const msg = m.message as ChunkMessage;
        pending.set(msg.chunk, s.arrived(msg));
        byWorkers++;
      }
    }
  };
  try {
    let next = 0;
    while (next < chunks) {
      if (s.stop?.() === true) return finish();
      drain();
      const ready = pending.get(next);
      if (ready !== undefined) {
        pending.delete(next);
        emit(next, ready);
        next++;
        Atomics.store(ctl, WRITTEN, next);
        Atomics.notify(ctl, WRITTEN);
        continue;
      }
      // Work while waiting: the next chunk nobody has claimed.
      const k = s.workersOnly === true ? -1 : claimChunk(ctl, chunks, MAIN_OWNER);
      if (k >= 0) {
        pending.set(k, s.here(chunkOf(names, k)));
        continue;
      }
      // Chunk `next` is a worker's. If that worker has ended without sending it (its messages were
      // all queued before its exit was seen, and drained above), inspect it here.
      const owner = Atomics.load(ctl, OWNER + next);
      if ((owner > MAIN_OWNER && gone.has(owner)) || (owner === 0 && gone.size === workers)) {
        pending.set(next, s.here(chunkOf(names, next)));
        continue;
      }
      const seen = Atomics.load(ctl, SENT);
      drain();
      if (pending.has(next)) continue;
      // Wait for a worker's next chunk, letting this thread's events (a worker's exit) run meanwhile.
      const wait = waitAsync(ctl, SENT, seen, 50);
      if (wait.async) await wait.value;
    }
    return finish();
  } finally {
    for (const port of ports) port.close();
    for (const w of pool) void w.terminate();
  }
}

/**
 * {@link writeRunsDocument} with every run listed (no selection), its
 * inspections shared by `threads` threads, this one included
 * ({@link threadsFor}: by default one, or two for a large root on two
 * cores or more).
 * Resolves with what listRuns would return, without `runs`. Throws (before
 * anything is written) as listRuns does. `workerScript` replaces
 * list-worker.js: a test seam, for a worker that ends before sending.
 */
export async function writeRunsDocumentThreaded(root: string, write: (text: string) => void, threads?: number, workerScript?: URL): Promise<Omit<RunList, 'runs'>> {
  const abs = resolve(root);
  const entries = rootEntries(abs);
  const doc = new RunsDocumentWriter(abs, write);
  if (entries === undefined) {
    doc.end([], false, undefined);
    return { root: abs, missing: true, skipped: [], more: false };
  }
  const { skipped } = await shareChunks<string>(abs, runDirsOf(entries), {
    threads,
    workerScript,
    worker: { mode: 'text' },
    here: (names) => inspectChunk(abs, names, reportText),
    arrived: (msg) => msg as ChunkResult<string>,
    onRun: (text) => doc.run(text),
  });
  doc.end(skipped, false, undefined);
  return { root: abs, missing: false, skipped, more: false };
}

/** Options of {@link forEachRunThreaded}. */
export interface ThreadedListOptions {
  /** Threads asked for, this one included ({@link threadsFor}; default: its default for the root's size). A test seam, and RUNWARDEN_THREADS's place. */
  threads?: number;
  /** Replaces list-worker.js (a test seam: a worker that ends early). */
  workerScript?: URL;
  /** Run directories per inspectBatch, on this thread and in the workers (default {@link CHUNK_RUNS}: a chunk at once). */
  batchRuns?: number;
  /**
   * Told of every lock probe, as RunStatusOptions.onProbe: this thread's as
   * they happen, a worker's (timed there) when its chunk arrives.
   */
  onProbe?: RunStatusOptions['onProbe'];
  /** Asked between chunks: true ends the listing early (a caller that closed); what it resolves with is then partial. */
  stop?: () => boolean;
  /** Test seam: this thread inspects only the chunks of workers that ended, so that with live workers every report is a worker's. */
  workersOnly?: boolean;
}

/**
 * forEachRun (list.ts) with every run listed, its inspections shared by
 * threads as {@link writeRunsDocumentThreaded} shares them, for a caller
 * that keeps report objects (serve's first listing): each report is made
 * into what the caller keeps by `map` as soon as it exists (on this thread)
 * or arrives (a worker's structured-clone copy), so neither inspections nor
 * copies outlive their batch; then `onRun` gets them in listing order.
 * The same reports, skips and order as `forEachRun(root, { onProbe })`.
 * Resolves with what forEachRun returns, and how many chunks of
 * {@link CHUNK_RUNS} came from workers (for tests). Throws (before `onRun`
 * is called) as forEachRun does.
 */
export async function forEachRunThreaded<T>(root: string, map: (report: RunReport) => T, onRun: (run: T) => void, options: ThreadedListOptions = {}): Promise<Omit<RunList, 'runs'> & { byWorkers: number }> {
  const abs = resolve(root);
  const entries = rootEntries(abs);
  if (entries === undefined) return { root: abs, missing: true, skipped: [], more: false, byWorkers: 0 };
  const batchRuns = options.batchRuns ?? CHUNK_RUNS;
  const onProbe = options.onProbe;
  const inspectOptions: RunStatusOptions = onProbe === undefined ? {} : { onProbe };
  const { skipped, byWorkers } = await shareChunks<T>(abs, runDirsOf(entries), {
    threads: options.threads,
    workerScript: options.workerScript,
    worker: { mode: 'reports', batchRuns, probes: onProbe !== undefined },
    here: (names) => inspectChunk(abs, names, map, inspectOptions, batchRuns),
    arrived: (msg) => {
      if (onProbe !== undefined) for (const [seconds, answer] of msg.probes ?? []) onProbe(seconds, answer);
      return { runs: (msg.runs as RunReport[]).map(map), skips: msg.skips };
    },
    onRun,
    ...(options.stop === undefined ? {} : { stop: options.stop }),
    ...(options.workersOnly === undefined ? {} : { workersOnly: options.workersOnly }),
  });
  return { root: abs, missing: false, skipped, more: false, byWorkers };
}
