/**
 * A worker thread of {@link writeRunsDocumentThreaded} (list-threads.ts):
 * claims chunks of run directories from the shared counter, inspects each,
 * and sends its report texts and skips to the main thread, never claiming
 * more than AHEAD chunks beyond the one being written.
 */
import { workerData } from 'node:worker_threads';
import { AHEAD, CHUNK_RUNS, claimChunk, packedChunk, CLAIM, inspectChunk, SENT, WRITTEN, type ChunkMessage, type ListWorkerData } from './list-threads.js';

const { abs, names, control, owner, port } = workerData as ListWorkerData;
const ctl = new Int32Array(control);
const chunks = Math.ceil(names.count / CHUNK_RUNS);
for (;;) {
  if (Atomics.load(ctl, CLAIM) >= chunks) break;
  const k = claimChunk(ctl, chunks, owner);
  if (k < 0) {
    // Too far ahead of the writer: woken after each chunk it writes; the bound only re-checks.
    const written = Atomics.load(ctl, WRITTEN);
    if (Atomics.load(ctl, CLAIM) - written >= AHEAD) Atomics.wait(ctl, WRITTEN, written, 1000);
    continue;
  }
  const message: ChunkMessage = { chunk: k, items: inspectChunk(abs, packedChunk(names, k)) };
  port.postMessage(message);
  Atomics.add(ctl, SENT, 1);
  Atomics.notify(ctl, SENT);
}
port.close();
