/**
 * A worker thread of {@link writeRunsDocumentThreaded} (list-threads.ts):
 * inspects chunks worker, worker + workers, … of the run directories, in
 * order, and sends each chunk's report texts and skips to the main thread,
 * never more than AHEAD chunks ahead of the one being written.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { AHEAD, CHUNK_RUNS, inspectChunk, type ChunkMessage, type ListWorkerData } from './list-threads.js';

const port = parentPort;
if (port === null) throw new Error('status/list-worker.js must run as a worker thread');
const { abs, names, worker, workers, written } = workerData as ListWorkerData;
const done = new Int32Array(written);
for (let k = worker; k * CHUNK_RUNS < names.length; k += workers) {
  for (;;) {
    const at = Atomics.load(done, 0);
    if (k - at < AHEAD) break;
    // Woken by the main thread after each chunk it writes; the bound only re-checks.
    Atomics.wait(done, 0, at, 1000);
  }
  const message: ChunkMessage = { chunk: k, items: inspectChunk(abs, names, k) };
  port.postMessage(message);
}
