/**
 * What CONTRACT §2.5 says the tail reader answers, written from the
 * contract's words alone: nothing here comes from src/ (no parser, fold,
 * needle or constant of the implementation), so a rule the code gets wrong
 * and this gets right shows as a difference. Every line of the file is
 * split and read here, forward, then the rules are applied to that list:
 *
 * - §2.2 rules 1–6: a line ends at `\n`, one `\r` before it dropped; a final
 *   line without `\n` is read like any other; content over 1 MiB, or a
 *   well-shaped line of a schema above 3, makes the stream unreadable (this
 *   throws: the reference is asked only about streams the whole-file fold
 *   reads); a line is used when it is a JSON object with an integer `schema`,
 *   a string `event`, strings (or null) for `ts`, `run_id`, `phase`,
 *   `outcome`, `node_id`, a non-empty string `node_id` for the seven node and
 *   gate events, and nesting no deeper than 64 levels; every other line is
 *   skipped.
 * - §2.3 and §2.4 rule 4: the fold of the last leg (open, started, phase,
 *   lastOutcome, the last start's offset and command) and the paused gates.
 * - §2.5 rule 2: without rule 7, the tail reader's answer is the whole-file
 *   fold's; candidate lines are those holding `n_st`, `n_fi`, `te_pa` or `\u`.
 * - §2.5 rule 7: walking the candidate lines back from the end, once a
 *   `run_finished` was met and no `run_started`, and the earliest such finish
 *   met is not `paused`, a candidate line whose last such byte string starts
 *   before size − 32 KiB is not read: the walk stops there (or at the file's
 *   start with no candidate left) and the lines from the first one starting
 *   after the bound (or from the earliest candidate line met, when that one
 *   crosses it) are folded inside a leg taken as opened before them.
 */
import { readFileSync } from 'node:fs';

/** §2.5 rule 7: how far back a closed leg's start is searched for (32 KiB). */
const BOUND_BYTES = 32 * 1024;
/** §2.2 rule 2: the longest line content a stream may hold. */
const MAX_CONTENT = 1024 * 1024;
/** §2.2 rule 3 (runwarden addition 13): deeper nesting is a malformed line. */
const MAX_DEPTH = 64;
/** §2.5 rule 2: the byte strings a candidate line holds. */
const NEEDLES = ['n_st', 'n_fi', 'te_pa', '\\u005', '\\u006', '\\u007'].map((s) => Buffer.from(s, 'latin1'));
/** §2.1: the events that carry a node. */
const NODE_EVENTS = new Set(['node_started', 'node_passed', 'node_failed', 'node_retried', 'gate_paused', 'gate_approved', 'gate_rejected']);
const STRING_FIELDS = ['ts', 'run_id', 'phase', 'outcome', 'node_id'];

/** The reference's last leg: the fields CONTRACT §2.3 and §2.4 name, as the tail reader reports them. */
export interface ReferenceLeg {
  open: boolean;
  started: boolean;
  phase: string;
  lastOutcome: string;
  legOffset: number;
  gates: string[];
  command?: string[];
}

type Event = Record<string, unknown> & { event: string };

interface Line {
  start: number;
  ev: Event | null;
  /** Where the last needle in the line starts, or -1: not a candidate line. */
  needle: number;
}

function depth(v: unknown): number {
  if (typeof v !== 'object' || v === null) return 0;
  let d = 0;
  for (const x of Array.isArray(v) ? v : Object.values(v)) d = Math.max(d, depth(x));
  return d + 1;
}

/** §2.2 rules 2–4 for one line's content; throws for what makes the stream unreadable. */
function readLine(content: Buffer, at: number): Event | null {
  if (content.length > MAX_CONTENT) throw new Error(`reference: a line over 1 MiB at byte ${at}`);
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder('utf-8').decode(content));
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  if (depth(v) > MAX_DEPTH) return null;
  const o = v as Record<string, unknown>;
  if (!Number.isInteger(o['schema']) || typeof o['event'] !== 'string') return null;
  for (const f of STRING_FIELDS) if (o[f] !== undefined && o[f] !== null && typeof o[f] !== 'string') return null;
  if (NODE_EVENTS.has(o['event']) && (typeof o['node_id'] !== 'string' || o['node_id'] === '')) return null;
  if ((o['schema'] as number) > 3) throw new Error(`reference: schema ${String(o['schema'])} at byte ${at}`);
  return o as Event;
}

/** §2.2 rule 1 and rule 5: every line of the file, with where it starts and whether it is a candidate. */
function linesOf(buf: Buffer): Line[] {
  const out: Line[] = [];
  let s = 0;
  while (s < buf.length) {
    const nl = buf.indexOf(0x0a, s);
    const e = nl < 0 ? buf.length : nl;
    const content = buf.subarray(s, e > s && buf[e - 1] === 0x0d ? e - 1 : e);
    let needle = -1;
    for (const n of NEEDLES) {
      const i = buf.subarray(s, e).lastIndexOf(n);
      if (i >= 0) needle = Math.max(needle, s + i);
    }
    out.push({ start: s, ev: readLine(content, s), needle });
    s = e + 1;
  }
  return out;
}

/** §2.3 and §2.4 rule 4, folded over `lines`; `openedBefore` starts inside a leg whose start is not among them. */
function fold(lines: Line[], openedBefore: boolean): ReferenceLeg {
  const leg: ReferenceLeg = { open: openedBefore, started: openedBefore, phase: '', lastOutcome: '', legOffset: -1, gates: [] };
  const latest = new Map<string, { event: string; at: number }>();
  for (const { start, ev } of lines) {
    if (ev === null) continue;
    if (ev.event === 'run_started') {
      leg.open = true;
      leg.started = true;
      leg.phase = typeof ev['phase'] === 'string' ? ev['phase'] : '';
      leg.legOffset = start;
      const c = ev['command'];
      if (Array.isArray(c) && c.length > 0 && c.every((x) => typeof x === 'string')) leg.command = c;
      else delete leg.command;
    } else if (ev.event === 'run_finished') {
      if (!leg.open) continue; // a lone or duplicate finish changes nothing
      leg.open = false;
      leg.lastOutcome = typeof ev['outcome'] === 'string' ? ev['outcome'] : '';
    } else if (NODE_EVENTS.has(ev.event)) {
      latest.set(ev['node_id'] as string, { event: ev.event, at: start });
    }
  }
  leg.gates = [...latest]
    .filter(([, e]) => e.event === 'gate_paused' && e.at > leg.legOffset)
    .sort((a, b) => a[1].at - b[1].at)
    .map(([id]) => id);
  return leg;
}

/** The reference answer for the stream at `path` (which the whole-file fold must be able to read), and whether rule 7 applied. */
export function referenceLastLeg(path: string): { leg: ReferenceLeg; bounded: boolean; from: number } {
  const buf = readFileSync(path);
  const lines = linesOf(buf);
  const floor = buf.length - BOUND_BYTES;
  let finishMet = false;
  let startMet = false;
  let closing = '';
  let lowest = -1;
  let bounded = false;
  for (let k = lines.length - 1; k >= 0; k--) {
    const line = lines[k];
    if (line.needle < 0) continue;
    const bound = floor > 0 && finishMet && !startMet && closing !== 'paused';
    if (bound && line.needle < floor) {
      bounded = true;
      break;
    }
    lowest = line.start;
    const ev = line.ev;
    if (ev?.event === 'run_finished') {
      finishMet = true;
      if (!startMet) closing = typeof ev['outcome'] === 'string' ? ev['outcome'] : '';
    } else if (ev?.event === 'run_started') {
      startMet = true;
      if (finishMet) break; // a closed leg's start: the whole-file fold's answer from here on
    }
  }
  // No candidate line left while the bound applies: the walk stops there too.
  if (!bounded && lowest >= 0 && floor > 0 && finishMet && !startMet && closing !== 'paused') bounded = true;
  if (!bounded) return { leg: fold(lines, false), bounded, from: 0 };
  const after = lines.find((l) => l.start > floor);
  const from = Math.min(lowest, after === undefined ? buf.length : after.start);
  return { leg: fold(lines.filter((l) => l.start >= from), true), bounded, from };
}
