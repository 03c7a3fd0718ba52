/**
 * `runs --json` over a large root on several threads: the listing, the
 * order and the document are the main thread's, byte for byte what
 * {@link writeRunsDocument} writes; only the per-run inspections (read,
 * probe, confirm: inspect.ts, unchanged) run on worker threads
 * (list-worker.ts), a chunk of run directories at a time.
 *
 * Invariants, and why:
 * - Same document: the root is listed and sorted once, here; chunk k of the
 *   run directories goes to worker k mod W, each worker reports its chunks
 *   in order, and the main thread writes chunk k only after chunk k-1, so
 *   runs appear newest first as always. Skips (non-directories here,
 *   unreadable runs from the workers) are put back in entry order.
 * - Bounded memory: a worker stays at most {@link AHEAD} chunks ahead of the
 *   chunk being written (a shared counter it waits on), so finished text
 *   does not pile up while stdout is slow.
 * - Nothing is lost to a thread: a chunk whose worker died (an error, an
 *   exit) before sending it is inspected on the main thread instead.
 * - Readers still write nothing: a worker runs the same inspection as the
 *   main thread would, each with its own descriptors and buffers.
 */
import { join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { inspectBatch } from './inspect.js';
import { entrySkip, inspectionSkip, reportText, rootEntries, RunsDocumentWriter, shownName, type RunList, type SkippedEntry } from './list.js';

/** Run directories per chunk: large enough that a message per chunk costs little, small enough to keep the threads even. */
export const CHUNK_RUNS = 256;
/** How many chunks a worker may finish before the one being written. */
export const AHEAD = 8;

/** What a worker is given (list-worker.ts). */
export interface ListWorkerData {
  abs: string;
  /** This worker's chunks, in order: each chunk's number and its run directories' shown names. */
  chunks: { k: number; names: string[] }[];
  /** Int32 [0]: the number of chunks written so far. */
  written: SharedArrayBuffer;
}

/** One item of a chunk: a report's text ({@link reportText}) or the run's skip. */
export type ChunkItem = string | SkippedEntry;

/** What a worker sends per chunk. */
export interface ChunkMessage {
  chunk: number;
  items: ChunkItem[];
}

/** Inspects chunk `k` of `names` (run directories under `abs`), as the sequential listing would. */
export function inspectChunk(abs: string, chunk: readonly string[]): ChunkItem[] {
  // One batch per chunk: one read of the kernel's lock table for all its free probes (inspect.ts).
  return inspectBatch(chunk.map((name) => join(abs, name))).map((r, i) => (r.ok ? reportText(r.inspection.report) : inspectionSkip(chunk[i] as string, r.error)));
}

/** Chunk `k` of `names`. */
function chunkOf(names: readonly string[], k: number): string[] {
  return names.slice(k * CHUNK_RUNS, (k + 1) * CHUNK_RUNS);
}

/**
 * How many worker threads to use for `dirs` run directories when `asked`
 * for that many: at most one per chunk; 0 (the listing on this thread) when
 * that is fewer than 2, and by default. Not on by default because, measured
 * on the 2-core machine this was written on (bench/RESULTS.md "Scale"), two
 * threads cost about a third more CPU time and 100 MB more peak memory for
 * the same 100,000 runs; they pay only where idle cores wait for them.
 */
export function threadsFor(dirs: number, asked = 0): number {
  const n = Math.min(asked, Math.ceil(dirs / CHUNK_RUNS));
  return n >= 2 ? n : 0;
}

/**
 * {@link writeRunsDocument} with every run listed (no selection), its
 * inspections spread over `threads` worker threads ({@link threadsFor};
 * none by default).
 * Resolves with what listRuns would return, without `runs`. Throws (before
 * anything is written) as listRuns does.
 */
export async function writeRunsDocumentThreaded(root: string, write: (text: string) => void, threads?: number): Promise<Omit<RunList, 'runs'>> {
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
  const workers = threadsFor(names.length, threads);
  if (workers === 0) {
    for (let k = 0; k < chunks; k++) emit(k, inspectChunk(abs, chunkOf(names, k)));
    return finish();
  }
  const written = new Int32Array(new SharedArrayBuffer(4));
  const pending = new Map<number, ChunkItem[]>();
  const gone = new Set<number>();
  const pool: Worker[] = [];
  let next = 0;
  return new Promise((resolveDone, reject) => {
    let settled = false;
    const settle = (f: () => void): void => {
      if (settled) return;
      settled = true;
      for (const w of pool) void w.terminate();
      f();
    };
    // Writes every chunk that can be written now, in order; a dead worker's next chunk is inspected here.
    const drain = (): void => {
      if (settled) return;
      try {
        while (next < chunks) {
          let items = pending.get(next);
          if (items === undefined) {
            if (!gone.has(next % workers)) return;
            items = inspectChunk(abs, chunkOf(names, next));
          }
          pending.delete(next);
          emit(next, items);
          next++;
          Atomics.store(written, 0, next);
          Atomics.notify(written, 0);
        }
        const result = finish();
        settle(() => resolveDone(result));
      } catch (err) {
        settle(() => reject(err));
      }
    };
    for (let w = 0; w < workers; w++) {
      const mine: ListWorkerData['chunks'] = [];
      for (let k = w; k < chunks; k += workers) mine.push({ k, names: chunkOf(names, k) });
      const data: ListWorkerData = { abs, chunks: mine, written: written.buffer as SharedArrayBuffer };
      const worker = new Worker(new URL('./list-worker.js', import.meta.url), { workerData: data });
      pool.push(worker);
      worker.on('message', (m: ChunkMessage) => {
        if (m.chunk >= next) pending.set(m.chunk, m.items);
        drain();
      });
      // Messages a worker sent before it ended are delivered before 'exit'; whatever it did not send is read here.
      worker.on('error', () => {
        gone.add(w);
        drain();
      });
      worker.on('exit', () => {
        gone.add(w);
        drain();
      });
    }
  });
}
