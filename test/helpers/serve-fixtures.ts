/**
 * Run directories for the dashboard tests, written the way a real leg writes
 * them (CONTRACT §2/§3.1): events.jsonl one object per line, state.json with
 * schema 3. Liveness is never faked: a live run is held by a real holder
 * process (test/fixtures/holder.mjs, through test/helpers/lock-procs.ts), an
 * abandoned one was held by a holder that was then SIGKILLed.
 */
import { appendFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { makeRun } from './reading-fixtures.js';
import { startHolder, waitExit, type Holder } from './lock-procs.js';
import { encodeEvents, eventObject } from './events.js';

export type Ev = Record<string, unknown>;

let clock = Date.parse('2026-11-30T08:00:00Z');

/** A fresh RFC 3339 timestamp, a few seconds after the previous one. */
export function ts(stepSec = 7): string {
  clock += stepSec * 1000;
  return new Date(clock).toISOString();
}

/** One event line's object. */
export function ev(runId: string, event: string, fields: Ev = {}): Ev {
  return eventObject({ event, ...fields }, { runId, ts: ts() });
}

export function runDir(root: string, id: string): string {
  return makeRun(root, id, {});
}

/** Writes events.jsonl from objects (or raw lines given as strings). */
export function writeEvents(dir: string, events: (Ev | string)[]): void {
  makeRun(dirname(dir), basename(dir), { events: encodeEvents(events) });
}

export function appendEvents(dir: string, events: Ev[]): void {
  appendFileSync(join(dir, 'events.jsonl'), encodeEvents(events));
}

export interface GraphNode {
  id: string;
  depends_on?: string[];
}

/** Writes state.json: the graph and each node's settled record. */
export function writeState(dir: string, runId: string, name: string, graph: GraphNode[], verdicts: Record<string, { verdict: 'PASS' | 'FAIL' | ''; cost_usd?: number; cost_unknown?: boolean }>): void {
  const state = { schema: 3, run_id: runId, graph: { name, nodes: graph }, nodes: verdicts };
  makeRun(dirname(dir), basename(dir), { state: JSON.stringify(state, null, 2) });
}

/** A run with one leg that passed every node. */
export function passedRun(root: string, id: string, name: string, nodes: GraphNode[], cost = 0.5): string {
  const dir = runDir(root, id);
  const events: Ev[] = [ev(id, 'run_started')];
  const verdicts: Record<string, { verdict: 'PASS'; cost_usd: number }> = {};
  for (const n of nodes) {
    events.push(ev(id, 'node_started', { node_id: n.id, session_id: `s-${n.id}` }));
    events.push(ev(id, 'node_passed', { node_id: n.id, verdict: 'PASS', cost_usd: cost, detail: `${n.id} ok` }));
    verdicts[n.id] = { verdict: 'PASS', cost_usd: cost };
  }
  events.push(ev(id, 'run_finished', { outcome: 'passed' }));
  writeEvents(dir, events);
  writeState(dir, id, name, nodes, verdicts);
  return dir;
}

/**
 * A run whose leg is open: the first `done` nodes passed, the next one
 * started. With `hold`, a real holder takes the lock first (a live leg);
 * without, the lock file is left as the caller arranges.
 */
export function openRun(root: string, id: string, name: string, nodes: GraphNode[], done: number): string {
  const dir = runDir(root, id);
  const events: Ev[] = [ev(id, 'run_started')];
  const verdicts: Record<string, { verdict: 'PASS'; cost_usd: number }> = {};
  nodes.forEach((n, i) => {
    if (i < done) {
      events.push(ev(id, 'node_started', { node_id: n.id }));
      events.push(ev(id, 'node_passed', { node_id: n.id, verdict: 'PASS', cost_usd: 0.25 }));
      verdicts[n.id] = { verdict: 'PASS', cost_usd: 0.25 };
    } else if (i === done) {
      events.push(ev(id, 'node_started', { node_id: n.id }));
    }
  });
  writeEvents(dir, events);
  if (done > 0) writeState(dir, id, name, nodes, verdicts);
  return dir;
}

/** Takes the run's lock with a real holder process (a live leg). */
export function holdRun(dir: string): Promise<Holder> {
  return startHolder(join(dir, 'resume.lock'));
}

/** Holds the run's lock with a real process and SIGKILLs it: the leg died. */
export async function killedHolder(dir: string): Promise<void> {
  const h = await holdRun(dir);
  h.proc.kill('SIGKILL');
  await waitExit(h.proc);
}

export const DIAMOND: GraphNode[] = [
  { id: 'plan' },
  { id: 'impl-api', depends_on: ['plan'] },
  { id: 'impl-ui', depends_on: ['plan'] },
  { id: 'review', depends_on: ['impl-api', 'impl-ui'] },
  { id: 'ship', depends_on: ['review'] },
];
