/**
 * The runs the scale benchmarks generate (bench/scale.mjs, bench/runs-scale.mjs),
 * written once so both measure the same shapes: event lines of the contract's
 * schema 3, a marked lock nobody holds, realistic legs and snapshots.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const TS = '2026-08-06T10:00:00Z';

/** One event line of run `id`. */
export const line = (id, event, f = {}) => JSON.stringify({ schema: 3, ts: TS, run_id: id, event, ...f }) + '\n';

/** A marked lock file (CONTRACT marker line and a pid); nobody holds it. */
export const MARKED = 'oh-my-graph-lock 1\n4242\n';

/** One realistic leg: a start, `nodes` nodes started and settled with a detail, and a finish unless `outcome` is ''. */
export function leg(id, nodes, outcome, detailBytes = 120) {
  let s = line(id, 'run_started');
  for (let i = 0; i < nodes; i++) {
    const n = `node-${i}`;
    s += line(id, 'node_started', { node_id: n, session_id: `sess-${i}` });
    s += line(id, 'node_passed', { node_id: n, verdict: 'PASS', detail: 'd'.repeat(detailBytes), cost_usd: 0.0123, usage: { input_tokens: 1200, output_tokens: 340 } });
  }
  if (outcome) s += line(id, 'run_finished', { outcome });
  return s;
}

/** A snapshot of a `nodes`-node graph with `passed` node records. */
export function state(id, nodes, passed) {
  const g = { name: 'bench-graph', nodes: Array.from({ length: nodes }, (_, i) => ({ id: `node-${i}` })) };
  const recs = {};
  for (let i = 0; i < passed; i++) recs[`node-${i}`] = { verdict: 'PASS', cost_usd: 0.0123 };
  return JSON.stringify({ schema: 3, run_id: id, graph: g, nodes: recs });
}

/**
 * Small run number i under `root`; returns its directory. 10 % open legs with
 * a free lock (probed, confirmed ABANDONED), 10 % paused, the rest passed or failed.
 */
export function smallRun(root, i) {
  const id = `20260806-${String(100000 + (i % 900000)).slice(-6)}.${String(i).padStart(9, '0')}-1`;
  const dir = join(root, id);
  mkdirSync(dir);
  const kind = i % 10;
  let events;
  if (kind === 0) events = leg(id, 2, '');
  else if (kind === 1) events = leg(id, 2, 'failed') + line(id, 'run_started') + line(id, 'gate_paused', { node_id: 'node-2' }) + line(id, 'run_finished', { outcome: 'paused' });
  else events = leg(id, 3, kind % 2 ? 'failed' : 'passed');
  writeFileSync(join(dir, 'events.jsonl'), events);
  writeFileSync(join(dir, 'state.json'), state(id, 3, kind % 2 ? 2 : 3));
  writeFileSync(join(dir, 'resume.lock'), MARKED);
  return dir;
}
