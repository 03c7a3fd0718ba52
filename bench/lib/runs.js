/**
 * The runs the scale benchmarks generate (bench/scale.mjs, bench/runs-scale.mjs),
 * written once so both measure the same shapes: event lines of the contract's
 * schema 3, a marked lock nobody holds, realistic legs and snapshots.
 */
import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
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

/** Words whose JSON an ASCII-only encoder writes with `\\u` escapes of characters no leg word holds. */
const ESCAPED = ['it\u2019s', '\u001b[1mverdict\u001b[0m', '\u201cquoted\u201d', 'na\u00efve'];

const WORDS = 'the quick brown fox jumps over a lazy dog while tests run and a node reports its verdict with usage tokens and cost'.split(' ');

/**
 * A run whose stream is ONE leg of about `bytes`: a start, node events with
 * varied text (so the byte search meets ordinary prose, not one repeated
 * letter), and for a closed leg a finish. No snapshot; a marked lock nobody
 * holds, so an open leg is ABANDONED (probed free and confirmed). The shape
 * of bench/scale.mjs part B, for bench/check.mjs's long-leg headlines.
 * With `escaped`, the text also holds what an encoder that writes ASCII
 * only makes of a terminal's colours and typographic quotes (`\u001b[1m`,
 * `\u2019`) in five words a line. Returns the bytes written.
 */
export function oneLegRun(root, i, bytes, closed, escaped = false) {
  const id = `20260806-140000.${String(i).padStart(9, '0')}-1`;
  const dir = join(root, id);
  mkdirSync(dir);
  let block = '';
  for (let k = 0; block.length < Math.min(bytes, 1 << 20) - 2048; k++) {
    let detail = '';
    for (let w = 0; w < 50; w++) detail += (escaped && w % 10 === 3 ? ESCAPED[(k + w) % ESCAPED.length] : WORDS[(k * 7 + w * 13) % WORDS.length]) + ' ';
    const text = line(id, k % 2 ? 'node_passed' : 'node_started', { node_id: `node-${k % 40}`, verdict: 'PASS', detail });
    block += escaped ? text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : text;
  }
  const blockBuf = Buffer.from(block);
  const fd = openSync(join(dir, 'events.jsonl'), 'w');
  let written = writeSync(fd, line(id, 'run_started', { command: ['agent', 'run'] }));
  while (written + blockBuf.length <= bytes) written += writeSync(fd, blockBuf);
  if (closed) written += writeSync(fd, line(id, 'run_finished', { outcome: 'passed' }));
  closeSync(fd);
  writeFileSync(join(dir, 'resume.lock'), MARKED);
  return written;
}
