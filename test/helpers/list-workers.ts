/**
 * Stand-ins for list-worker.js (status/list-threads.ts) that end early, for
 * the tests that a threaded listing loses nothing to a worker that dies.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * A worker script, written into `dir`, that claims a chunk as list-worker.js
 * does (slot numbers `claim` and `owner` from list-threads.ts) and then
 * throws before sending it.
 */
export function dyingWorker(dir: string, claim: number, owner: number): URL {
  const script = join(dir, 'dying-worker.mjs');
  writeFileSync(
    script,
    [
      "import { workerData } from 'node:worker_threads';",
      'const ctl = new Int32Array(workerData.control);',
      `const k = Atomics.add(ctl, ${claim}, 1);`,
      `Atomics.store(ctl, ${owner} + k, workerData.owner);`,
      "throw new Error('this worker ends holding chunk ' + k);",
    ].join('\n'),
  );
  return pathToFileURL(script);
}
