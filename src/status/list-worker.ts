/**
 * A worker thread of the shared listing (list-threads.ts: `runs --json`,
 * and serve's first listing): claims chunks of run directories from the
 * shared counter, inspects each, and sends its runs (report texts, or
 * report objects in `reports` mode), its skips and, when asked, the lock
 * probes it made, never claiming more than AHEAD chunks beyond the one
 * being written.
 */
import { workerData } from 'node:worker_threads';
import type { RunReport } from '../contract/types.js';
import type { RunStatusOptions } from './inspect.js';
import { reportText } from './list.js';
import { AHEAD, CHUNK_RUNS, claimChunk, packedChunk, CLAIM, inspectChunk, SENT, WRITTEN, type ChunkMessage, type ListWorkerData, type ProbeRecord } from './list-threads.js';

const { abs, names, control, owner, port, mode, batchRuns, probes } = workerData as ListWorkerData;
const ctl = new Int32Array(control);
const chunks = Math.ceil(names.count / CHUNK_RUNS);
// The probes of the chunk being inspected, sent with it: the owner tells its observer of them.
let probed: ProbeRecord[] = [];
const options: RunStatusOptions = probes === true ? { onProbe: (seconds, answer) => probed.push([seconds, answer]) } : {};
const map: (report: RunReport) => string | RunReport = mode === 'reports' ? (r) => r : reportText;
for (;;) {
  if (Atomics.load(ctl, CLAIM) >= chunks) break;
  const k = claimChunk(ctl, chunks, owner);
  if (k < 0) {
    // Too far ahead of the writer: woken after each chunk it writes; the bound only re-checks.
    const written = Atomics.load(ctl, WRITTEN);
    if (Atomics.load(ctl, CLAIM) - written >= AHEAD) Atomics.wait(ctl, WRITTEN, written, 1000);
    continue;
  }
  const message: ChunkMessage = { chunk: k, ...inspectChunk(abs, packedChunk(names, k), map, options, batchRuns) };
  if (probes === true) {
    message.probes = probed;
    probed = [];
  }
  port.postMessage(message);
  Atomics.add(ctl, SENT, 1);
  Atomics.notify(ctl, SENT);
}
port.close();
