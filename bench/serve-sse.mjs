#!/usr/bin/env node
/**
 * The dashboard's server side alone, without a browser (complements
 * serve-scale.mjs, whose latencies include Chromium's own work and its 5 ms
 * polling): a root of N runs (all settled but 30 in flight, each held by its
 * own holder process), `runwarden serve` as a child process, 20 plain SSE
 * clients on /api/events. Measures the cold GET /api/dashboard, the server's
 * CPU (utime + stime from /proc, every thread) over an idle window with the
 * 20 clients connected (whole window and 5 s slices, so the 30 s safety
 * re-check shows), then append-to-frame (an event appended to a live run
 * until a client receives the patch whose card shows the new node) and
 * death-to-frame (a holder SIGKILLed until a client receives the card
 * abandoned) latencies. Prints a summary; writes nothing but its temp root.
 *
 * usage: node bench/serve-sse.mjs [--runs 10000] [--idle 60] [--kills 10] [--repo DIR] [-- NODE_FLAGS…]
 *   --repo   another checkout's build to run (default: this one), for before/after
 *   after -- flags for the serve process's node, e.g. --cpu-prof --cpu-prof-dir=/tmp/prof
 */
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveUrl } from './lib/procs.js';
import { onFrames } from './lib/sse.js';

const argv = process.argv.slice(2);
const dd = argv.indexOf('--');
const args = dd >= 0 ? argv.slice(0, dd) : argv;
const nodeFlags = dd >= 0 ? argv.slice(dd + 1) : [];
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const repo = opt('--repo', dirname(dirname(fileURLToPath(import.meta.url))));
const N = Number(opt('--runs', '10000'));
const IDLE = Number(opt('--idle', '60'));
const KILLS = Number(opt('--kills', '10'));
const LIVE = 20 + KILLS;
const CLIENTS = 20;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const ev = (id, event, extra = {}) => JSON.stringify({ schema: 3, ts: '2026-11-30T08:00:00Z', run_id: id, event, ...extra }) + '\n';
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)];

const root = mkdtempSync(join(tmpdir(), 'rw-serve-sse-'));
const procs = [];
process.on('exit', () => {
  for (const p of procs) try { p.kill('SIGKILL'); } catch {}
  rmSync(root, { recursive: true, force: true });
});
process.on('SIGINT', () => process.exit(130));
for (let i = 0; i < N - 20; i++) {
  const id = `20261130-${String(i).padStart(9, '0')}-1`;
  mkdirSync(join(root, id));
  writeFileSync(join(root, id, 'events.jsonl'), ev(id, 'run_started') + ev(id, 'node_passed', { node_id: 'a', verdict: 'PASS' }) + ev(id, 'run_finished', { outcome: 'passed' }));
}
const live = [];
for (let k = 0; k < LIVE; k++) {
  const id = `20261201-${String(k).padStart(9, '0')}-1`;
  mkdirSync(join(root, id));
  writeFileSync(join(root, id, 'events.jsonl'), ev(id, 'run_started') + ev(id, 'node_started', { node_id: 'a' }));
  live.push(id);
}
const holders = new Map();
for (const id of live) {
  const p = spawn(process.execPath, [join(repo, 'test/fixtures/holder.mjs'), join(root, id, 'resume.lock')], { stdio: ['ignore', 'pipe', 'inherit'] });
  procs.push(p);
  await new Promise((r) => p.stdout.on('data', (d) => String(d).includes('READY') && r()));
  holders.set(id, p);
}
const serve = spawn(process.execPath, [...nodeFlags, join(repo, 'bin/runwarden.js'), 'serve', '--root', root, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
procs.push(serve);
const url = await serveUrl(serve);
const cpu = () => {
  const f = readFileSync(`/proc/${serve.pid}/stat`, 'utf8');
  const x = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(x[11]) + Number(x[12])) / 100;
};
const out = [`runs ${N} (${LIVE} in flight), ${CLIENTS} SSE clients, repo ${repo}, load average at start ${loadavg().map((x) => x.toFixed(1)).join(' ')}`];
let t0 = performance.now();
const body = await (await fetch(url + 'api/dashboard')).text();
out.push(`cold /api/dashboard ${(performance.now() - t0).toFixed(0)} ms, ${(Buffer.byteLength(body) / 1024).toFixed(0)} KiB`);

// Client 0 keeps each card's state and strip length as the frames arrive.
const cards = new Map();
const waiters = new Set();
function client(i) {
  return new Promise((primed) =>
    http.get(url + 'api/events', (res) =>
      onFrames(res, (kind, data) => {
        if (kind === 'snapshot') primed();
        if (i !== 0 || (kind !== 'snapshot' && kind !== 'patch')) return;
        for (const c of kind === 'snapshot' ? data.runs : data.upsert) cards.set(c.run_id, { state: c.state, cells: c.nodes.length });
        for (const w of [...waiters]) w();
      }),
    ),
  );
}
t0 = performance.now();
await client(0);
out.push(`first snapshot on /api/events after the cold request ${(performance.now() - t0).toFixed(0)} ms`);
for (let i = 1; i < CLIENTS; i++) await client(i);
const waitFor = (pred) =>
  new Promise((r) => {
    const w = () => {
      if (!pred()) return;
      waiters.delete(w);
      r();
    };
    waiters.add(w);
    w();
  });
await sleep(3000);
const c0 = cpu();
t0 = performance.now();
const slices = [];
for (let k = 0; k < IDLE / 5; k++) {
  const a = cpu();
  await sleep(5000);
  slices.push(((cpu() - a) / 5) * 100);
}
out.push(`idle CPU with ${CLIENTS} clients over ${IDLE} s: ${(((cpu() - c0) / ((performance.now() - t0) / 1000)) * 100).toFixed(2)} % of a core (5 s slices: ${slices.map((x) => x.toFixed(1)).join(' ')})`);
const appendMs = [];
for (const id of live.slice(0, Math.min(10, KILLS))) {
  const at = performance.now();
  appendFileSync(join(root, id, 'events.jsonl'), ev(id, 'node_started', { node_id: 'b' }));
  await waitFor(() => (cards.get(id)?.cells ?? 0) >= 2);
  appendMs.push(performance.now() - at);
  await sleep(200);
}
const deathMs = [];
for (const id of live.slice(20)) {
  const at = performance.now();
  holders.get(id).kill('SIGKILL');
  await waitFor(() => cards.get(id)?.state === 'abandoned');
  deathMs.push(performance.now() - at);
  await sleep(300);
}
const f = (xs) => `p50 ${pct(xs, 50).toFixed(0)} / p99 ${pct(xs, 99).toFixed(0)} / max ${Math.max(...xs).toFixed(0)} ms`;
out.push(`append → frame ${f(appendMs)}`);
out.push(`death → frame ${f(deathMs)}`);
out.push(`load average at end ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
serve.kill('SIGINT');
await new Promise((r) => serve.on('exit', r));
process.stdout.write(out.join('\n') + '\n');
process.exit(0);
