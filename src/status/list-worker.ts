/**
 * A worker thread of {@link writeRunsDocumentThreaded} (list-threads.ts):
 * inspects the chunks of run directories it was given (every W-th), in
 * order, and sends each chunk's report texts and skips to the main thread,
 * never more than AHEAD chunks ahead of the one being written.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { AHEAD, inspectChunk, type ChunkMessage, type ListWorkerData } from './list-threads.js';

const port = parentPort;
if (port === null) throw new Error('status/list-worker.js must run as a worker thread');
const { abs, chunks, written } = workerData as ListWorkerData;
const done = new Int32Array(written);
for (const { k, names } of chunks) {
  for (;;) {
    const at = Atomics.load(done, 0);
    if (k - at < AHEAD) break;
    // Woken by the main thread after each chunk it writes; the bound only re-checks.
    Atomics.wait(done, 0, at, 1000);
  }
  const message: ChunkMessage = { chunk: k, items: inspectChunk(abs, names) };
  port.postMessage(message);
}
