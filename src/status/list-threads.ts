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
import { inspectBatch } from './inspect.js';
import { entrySkip, inspectionSkip, reportText, rootEntries, RunsDocumentWriter, shownName, type RunList, type SkippedEntry } from './list.js';

/** Run directories per chunk: large enough that a message per chunk costs little, small enough to keep the threads even. */
export const CHUNK_RUNS = 256;
/** How many chunks may be claimed beyond the one being written. */
export const AHEAD = 8;

/**
 * A worker's young generation, MB (V8's resourceLimits.maxYoungGenerationSizeMb).
 * At 100,000 runs with two threads, peak RSS was 156–173 MB with 8, 150–152
 * with 4 and 144–146 with 2, in the same wall time (interleaved runs).
 */
const WORKER_YOUNG_MB = 2;

/** Slots of the shared control array: the next chunk to claim, the chunks written, the chunks sent by workers; then each chunk's owner. */
export const CLAIM = 0;
export const WRITTEN = 1;
export const SENT = 2;
export const OWNER = 3;
/** The owner number of the main thread; worker i (from 1) is i + 1. Zero: not claimed (or claimed and not yet recorded). */
const MAIN_OWNER = 1;

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
}

/** One item of a chunk: a report's text ({@link reportText}) or the run's skip. */
export type ChunkItem = string | SkippedEntry;

/** What a worker sends per chunk. */
export interface ChunkMessage {
  chunk: number;
  items: ChunkItem[];
}

/** Inspects the run directories `chunk` (shown names) under `abs`, as the sequential listing would. */
export function inspectChunk(abs: string, chunk: readonly string[]): ChunkItem[] {
  // One batch per chunk: one read of the kernel's lock table for all its free probes (inspect.ts).
  return inspectBatch(chunk.map((name) => join(abs, name))).map((r, i) => (r.ok ? reportText(r.inspection.report) : inspectionSkip(chunk[i] as string, r.error)));
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
  return { count: names.length, bytes, ends: ends.buffer as SharedArrayBuffer };
}

/** Chunk `k` of packed names. */
export function packedChunk(names: PackedNames, k: number): string[] {
  const view = Buffer.from(names.bytes);
  const ends = new Int32Array(names.ends);
  const out: string[] = [];
  for (let i = k * CHUNK_RUNS; i < Math.min(names.count, (k + 1) * CHUNK_RUNS); i++) out.push(view.toString('utf8', i === 0 ? 0 : (ends[i - 1] as number), ends[i] as number));
  return out;
}

/**
 * Claims the next chunk for owner `owner` when it lies within {@link AHEAD}
 * of the chunk being written: its number, or -1 (none left, or too far
 * ahead for now).
 */
export function claimChunk(ctl: Int32Array, chunks: number, owner: number): number {
  if (Atomics.load(ctl, CLAIM) - Atomics.load(ctl, WRITTEN) >= AHEAD) return -1;
  const k = Atomics.add(ctl, CLAIM, 1);
  if (k >= chunks) return -1;
  Atomics.store(ctl, OWNER + k, owner);
  return k;
}

/** Atomics.waitAsync (Node 16+; not yet in TypeScript's es2022 lib). */
const waitAsync = (Atomics as unknown as { waitAsync(a: Int32Array, i: number, v: number, ms: number): { async: false; value: string } | { async: true; value: Promise<string> } }).waitAsync;

/**
 * From how many run directories a second thread is used by default: below
 * this a worker's start-up (its own module load, ~0.1 s) costs more than it
 * saves. Measured on the 2-core machine of bench/RESULTS.md: even at 10,000
 * runs (1.0–1.2 s wall with two threads against 1.1–1.35 s with one); at
 * 100,000, 4.6–5.8 s against 6.7–7.1 s.
 */
export const THREADS_DEFAULT_FROM_RUNS = 20_000;

/**
 * The most threads that may inspect runs: one per core
 * (os.availableParallelism). More never finish sooner, since the work is
 * CPU and each thread costs its own heap: on 2 cores and 30,000 runs, 99
 * threads peaked at 1,126 MB and took 3.75 s where 2 took 100 MB and 0.74 s
 * (issue 25). `cores` is a test seam.
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
 * 100,000 runs (140–148 MB peak, against 115–120 MB for one), for about a
 * seventh more CPU time in all; they pay in wall time where a core would
 * otherwise idle. `cores` is a test seam (default: os.availableParallelism).
 */
export function threadsFor(dirs: number, asked?: number, cores: number = availableParallelism()): number {
  const want = asked === undefined ? (cores >= 2 && dirs >= THREADS_DEFAULT_FROM_RUNS ? 2 : 1) : Math.min(asked, threadsCap(cores));
  return Math.max(1, Math.min(want, Math.ceil(dirs / CHUNK_RUNS)));
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
  const skips: { index: number; skip: SkippedEntry }[] = [];
  const names: string[] = [];
  const entryOf: number[] = [];
  for (let index = 0; index < entries.names.length; index++) {
    const name = shownName(entries.names[index] as string);
    const skip = entrySkip(entries.kinds[index] as string, name);
    if (skip !== undefined) skips.push({ index, skip });
    else {
      names.push(name);
      entryOf.push(index);
    }
  }
  const chunks = Math.ceil(names.length / CHUNK_RUNS);
  const emit = (k: number, items: readonly ChunkItem[]): void => {
    items.forEach((item, i) => {
      if (typeof item === 'string') doc.run(item);
      else skips.push({ index: entryOf[k * CHUNK_RUNS + i] as number, skip: item });
    });
  };
  const finish = (): Omit<RunList, 'runs'> => {
    const skipped = skips.sort((a, b) => a.index - b.index).map((s) => s.skip);
    doc.end(skipped, false, undefined);
    return { root: abs, missing: false, skipped, more: false };
  };
  const workers = threadsFor(names.length, threads) - 1;
  if (workers <= 0) {
    for (let k = 0; k < chunks; k++) emit(k, inspectChunk(abs, chunkOf(names, k)));
    return finish();
  }
  const ctl = new Int32Array(new SharedArrayBuffer(4 * (OWNER + chunks)));
  const pending = new Map<number, ChunkItem[]>();
  const ports: MessagePort[] = [];
  const pool: Worker[] = [];
  const gone = new Set<number>();
  const packed = packNames(names);
  for (let w = 0; w < workers; w++) {
    const owner = MAIN_OWNER + 1 + w;
    const { port1, port2 } = new MessageChannel();
    const data: ListWorkerData = { abs, names: packed, control: ctl.buffer as SharedArrayBuffer, owner, port: port2 };
    ports.push(port1);
    // A worker that cannot start (or fails) only leaves its chunks to this thread.
    let worker: Worker;
    try {
      worker = new Worker(workerScript ?? new URL('./list-worker.js', import.meta.url), {
        workerData: data,
        transferList: [port2],
        // A small young generation: a worker's garbage dies young (one chunk's texts), and the default
        // (tens of MB per thread) was most of what a second thread added to peak memory.
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
        pending.set(msg.chunk, msg.items);
      }
    }
  };
  try {
    let next = 0;
    while (next < chunks) {
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
      const k = claimChunk(ctl, chunks, MAIN_OWNER);
      if (k >= 0) {
        pending.set(k, inspectChunk(abs, chunkOf(names, k)));
        continue;
      }
      // Chunk `next` is a worker's. If that worker has ended without sending it (its messages were
      // all queued before its exit was seen, and drained above), inspect it here.
      const owner = Atomics.load(ctl, OWNER + next);
      if ((owner > MAIN_OWNER && gone.has(owner)) || (owner === 0 && gone.size === workers)) {
        pending.set(next, inspectChunk(abs, chunkOf(names, next)));
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
