#!/usr/bin/env node
/**
 * serve's start-up and memory, the quick way (a loop for working on them; the
 * judged numbers come from serve-scale.mjs --targets, with Chromium, holders
 * and kills). Builds (or reuses) a root of N settled runs (3-line streams, a
 * marked lock nobody holds, no snapshot: the shape serve-scale uses), spawns
 * `runwarden serve` on it, polls GET /api/dashboard until its tallies count
 * every run, and prints, as one JSON line: ms from spawn to that document
 * (`ready`), and serve's VmHWM / VmRSS / RssAnon / RssFile (MB = 10^6 bytes)
 * then and at each of the given seconds after it (the document is fetched
 * once a second meanwhile, as a page would keep the hub busy). The root is
 * kept under os.tmpdir() for the next run (delete it by hand).
 *
 * usage: node bench/serve-start.mjs [--runs N] [--after 12,40]
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveUrl, sleep } from './lib/procs.js';
import { line, MARKED } from './lib/runs.js';

const args = process.argv.slice(2);
const opt = (name, dflt) => (args.includes(name) ? args[args.indexOf(name) + 1] : dflt);
const N = Number(opt('--runs', '100000'));
const AFTER = opt('--after', '12,40').split(',').map(Number);
const BIN = join(dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'runwarden.js');
const root = join(tmpdir(), `rw-serve-start-${N}`);

if (!existsSync(root)) {
  const building = root + '.building';
  mkdirSync(building, { recursive: true });
  for (let i = 0; i < N; i++) {
    const id = `20261130-${String(i).padStart(9, '0')}-1`;
    mkdirSync(join(building, id), { recursive: true });
    writeFileSync(join(building, id, 'events.jsonl'), line(id, 'run_started') + line(id, 'node_passed', { node_id: 'a', verdict: 'PASS' }) + line(id, 'run_finished', { outcome: 'passed' }));
    writeFileSync(join(building, id, 'resume.lock'), MARKED);
  }
  renameSync(building, root);
}

const memory = (pid) =>
  Object.fromEntries(
    readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .filter((l) => /^(VmHWM|VmRSS|RssAnon|RssFile):/.test(l))
      .map((l) => {
        const [k, v] = l.split(/:\s+/);
        return [k, Math.round((parseInt(v, 10) * 1024) / 1e6)];
      }),
  );
const get = (url) =>
  new Promise((resolve, reject) =>
    http
      .get(url, (r) => {
        let body = '';
        r.on('data', (d) => (body += d));
        r.on('end', () => resolve({ code: r.statusCode, body }));
      })
      .on('error', reject),
  );

const t0 = performance.now();
const serve = spawn(process.execPath, [BIN, 'serve', '--root', root, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
const url = await serveUrl(serve);
for (;;) {
  const r = await get(url + 'api/dashboard');
  const doc = r.code === 200 ? JSON.parse(r.body) : undefined;
  if (doc?.tallies !== undefined && Object.values(doc.tallies).reduce((a, b) => a + b, 0) === N) break;
  await sleep(100);
}
const ready = Math.round(performance.now() - t0);
const at = { ready: memory(serve.pid) };
for (const s of AFTER) {
  while (performance.now() - t0 < ready + s * 1000) {
    await get(url + 'api/dashboard');
    await sleep(1000);
  }
  at[`${s}s`] = memory(serve.pid);
}
console.log(JSON.stringify({ runs: N, ready, at }));
serve.kill('SIGTERM');
