/**
 * The worker thread behind {@link OffThreadModel} (offthread.ts): it owns
 * one {@link DashboardModel} and answers the main thread's requests with it.
 *
 * Why a thread: every read under the root is synchronous (a tail walk, a
 * whole-stream fold, a snapshot parse of up to 16 MiB), and a single hostile
 * run makes one of those take seconds. Here they block only this thread; the
 * server's event loop keeps accepting connections, serving the page and its
 * assets, and beating live streams meanwhile. Requests are answered one at a
 * time, in order, so the model's caches see the same sequence of calls as
 * they would in one thread.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { DashboardModel, type ModelOptions } from './model.js';
import type { ModelRequest, ModelReply, ObserverMessage, WorkerFault, WorkerInit } from './offthread.js';

const port = parentPort;
if (port === null) throw new Error('serve/model-worker.js must run as a worker thread');
const { root, options, observe, crash } = workerData as WorkerInit & WorkerFault;
const tell = (m: ObserverMessage): void => port.postMessage(m);
const full: ModelOptions = observe
  ? { ...options, observer: { probed: (seconds, liveness) => tell({ observe: 'probed', seconds, liveness }), scanned: (errors) => tell({ observe: 'scanned', errors }) } }
  : options;
const model = new DashboardModel(root, full);
// A live model: tell the main thread its version now and after every change it sees.
if (model.version !== undefined) {
  tell({ observe: 'changed', version: model.version });
  model.subscribe(() => tell({ observe: 'changed', version: model.version }));
}

let queue: Promise<void> = Promise.resolve();
port.on('message', (req: ModelRequest) => {
  // OffThreadOptions.failThreads: this thread crashes as its first request arrives (an uncaught error ends it).
  if (crash) throw new Error('the reader thread crashed (OffThreadOptions.failThreads)');
  queue = queue.then(async () => {
    let reply: ModelReply;
    try {
      const value =
        req.op === 'close'
          ? model.close()
          : req.op === 'runs'
          ? model.runsDocument(req.select)
          : req.op === 'dashboard'
            ? await model.dashboard()
            : req.op === 'reports'
              ? await model.currentReports(req.maxAgeMs)
              : await model.page(req.id, req.dir);
      reply = { seq: req.seq, ok: true, value };
    } catch (e) {
      reply = { seq: req.seq, ok: false, message: e instanceof Error ? e.message : String(e) };
    }
    port.postMessage(reply);
  });
});
