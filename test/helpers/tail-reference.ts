/**
 * What CONTRACT §2.5 says the tail reader answers, computed the plain way:
 * every line of the file parsed forward, then the rules applied to that
 * list. The reader under test finds the same answer by a byte search over
 * windows of the file; this finds it from whole lines, so the two share only
 * the contract's parse and the one fold.
 *
 * - Rule 2: the whole-file fold's last leg (without the leg count).
 * - Rule 7: when the walk from the end meets a `run_finished` (the earliest
 *   such before any `run_started` not `paused`) and no `run_started` before
 *   its next candidate lies below size − CLOSED_LEG_BYTES, the leg is taken as
 *   opened before the lines from the first one starting past that bound (or
 *   from the earliest candidate line met, when that one crosses the bound).
 */
import { readFileSync } from 'node:fs';
import { parseLine, type StreamEvent } from '../../src/contract/events.js';
import { StreamFold, type LastLeg } from '../../src/contract/fold.js';
import { CLOSED_LEG_BYTES } from '../../src/read/tail.js';

const NEEDLES = ['n_st', 'n_fi', 'te_pa', '\\u'].map((s) => Buffer.from(s, 'latin1'));

interface Line {
  start: number;
  end: number;
  ev: StreamEvent | null;
  /** The greatest offset in the line where a needle starts, or -1 (not a candidate). */
  needle: number;
}

function linesOf(buf: Buffer, path: string): Line[] {
  const out: Line[] = [];
  let s = 0;
  while (s < buf.length) {
    let e = buf.indexOf(0x0a, s);
    if (e < 0) e = buf.length;
    let needle = -1;
    const line = buf.subarray(s, e);
    for (const n of NEEDLES) {
      const i = line.lastIndexOf(n);
      if (i >= 0) needle = Math.max(needle, s + i);
    }
    out.push({ start: s, end: e, ev: parseLine(buf, s, e, path, s), needle });
    s = e + 1;
  }
  return out;
}

/** The reference answer for the stream at `path` (which must be readable by the whole-file fold), and whether rule 7 applied. */
export function referenceLastLeg(path: string): { leg: LastLeg; bounded: boolean; from: number } {
  const buf = readFileSync(path);
  const lines = linesOf(buf, path);
  const size = buf.length;
  const floor = size - CLOSED_LEG_BYTES;
  let finishAfter = false;
  let sawStart = false;
  let closing = '';
  let lowest = size;
  let bounded = false;
  for (let k = lines.length - 1; k >= 0; k--) {
    const line = lines[k] as Line;
    if (line.needle < 0) continue;
    if (floor > 0 && finishAfter && !sawStart && closing !== 'paused' && line.needle < floor) {
      bounded = true;
      break;
    }
    lowest = line.start;
    const ev = line.ev;
    if (ev?.event === 'run_finished') {
      finishAfter = true;
      if (!sawStart) closing = typeof ev.outcome === 'string' ? ev.outcome : '';
    } else if (ev?.event === 'run_started') {
      sawStart = true;
      if (finishAfter) break;
    }
    if (line.start === 0) break; // the walk ends at the file's first line
  }
  // No candidate left above the bound while it applies: the walk stops there too (not at the file's first line).
  if (!bounded && lowest > 0 && floor > 0 && finishAfter && !sawStart && closing !== 'paused') bounded = true;
  const fold = new StreamFold();
  let from = 0;
  if (bounded) {
    const nl = buf.indexOf(0x0a, floor);
    from = Math.min(lowest, nl < 0 ? size : nl + 1);
    fold.openedBefore();
  }
  for (const line of lines) {
    if (line.start < from) continue;
    if (line.ev === null) fold.skip();
    else fold.apply(line.ev, line.start);
  }
  return { leg: fold.lastLeg(), bounded, from };
}
