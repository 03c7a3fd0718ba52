/**
 * The fold of the stream (CONTRACT §2.3–§2.5): the one place that knows
 * what each event does to a run's legs and nodes. The forward reader, the
 * reader from the end, the follower behind `watch`, run detail and the
 * dashboard all apply events through {@link StreamFold.apply}; nothing else
 * in runwarden interprets `run_started`, `run_finished` or a node event.
 *
 * The rules, in one list:
 * - `run_started` opens a leg (it sets `open`, `started`, `phase`, the leg's
 *   byte offset and its `command`), except that an untagged start right
 *   after an open `planning` start is the same leg of an auto run (it is not
 *   counted again, and its history entry is updated, not added). Nodes still
 *   running from an earlier leg become `abandoned`: that leg ended without
 *   them.
 * - `run_finished` closes the open leg and records its outcome; a lone or
 *   duplicate finish changes nothing.
 * - node events set the node's state; `gate_approved` / `gate_rejected` end
 *   a pause without being a state of their own.
 * - every other event type is ignored.
 *
 * Pure: no I/O. State grows with the number of distinct nodes (and, when
 * asked for, legs), never with the stream's length.
 */
import type { LegFacts, NodeState, StreamFacts } from './types.js';
import { commandOf, type StreamEvent } from './events.js';

/**
 * The last-leg facts that the whole stream and its tail agree on: {@link
 * LegFacts} without the leg count (which only a whole-file read can know),
 * with `gates` always set.
 */
export type LastLeg = Omit<LegFacts, 'legs' | 'gates'> & {
  /** The gates paused in the last leg and not resolved since, oldest first (see {@link LegFacts.gates}). */
  gates: string[];
};

/**
 * One leg as the fold saw it. `state` is `closed` (a `run_finished` closed
 * it), `open` (the last leg, no end yet), or `abandoned` (a later leg began
 * before it reported an end).
 */
export interface LegRecord {
  /** Byte offset of the `run_started` that opened it (the planning start, for an auto run). */
  offset: number;
  /** The `phase` of its `run_started` (`""` or `planning`). */
  phase: string;
  /** The `outcome` of the `run_finished` that closed it; null while open or when it never closed. */
  outcome: string | null;
  /** The `ts` of its `run_started`, null if it had none. */
  started_ts: string | null;
  /** The `ts` of its `run_finished`, null while open or never closed. */
  finished_ts: string | null;
  /** The argv a `runwarden exec` leg recorded, else null. */
  command: string[] | null;
  /** `closed`, `open` or `abandoned`, as the interface comment says. */
  state: 'open' | 'closed' | 'abandoned';
}

/** Options for `StreamFold`, the one fold of a stream (internal). */
export interface FoldOptions {
  /** Keep a {@link LegRecord} per leg in `StreamFold.history` (default false). */
  history?: boolean;
}

function stringOr(v: unknown, dflt: string): string {
  return typeof v === 'string' ? v : dflt;
}

/** The fold's state: the last leg, node states, paused gates and (optionally) every leg. */
export class StreamFold {
  open = false;
  started = false;
  phase = '';
  lastOutcome = '';
  legOffset = -1;
  legs = 0;
  command: string[] | undefined = undefined;
  skippedLines = 0;
  /** Node id → state, in first-seen order. */
  readonly nodes = new Map<string, NodeState>();
  /** Every leg, oldest first, when the fold was asked to keep them; else undefined. */
  readonly history: LegRecord[] | undefined;
  /** Node id → its latest node event, for the paused-gate list. */
  private readonly latest = new Map<string, { event: string; offset: number }>();

  constructor(options: FoldOptions = {}) {
    this.history = options.history === true ? [] : undefined;
  }

  /** Folds one event that starts at byte `offset` of the stream. */
  apply(ev: StreamEvent, offset: number): void {
    switch (ev.event) {
      case 'run_started':
        this.start(ev, offset);
        return;
      case 'run_finished':
        if (!this.open) return; // a lone or duplicate finish changes nothing
        this.open = false;
        this.lastOutcome = stringOr(ev.outcome, '');
        this.closeRecord(ev);
        return;
      case 'node_started':
      case 'node_retried':
        this.node(ev, offset, 'running');
        return;
      case 'node_passed':
        this.node(ev, offset, 'passed');
        return;
      case 'node_failed':
        this.node(ev, offset, 'failed');
        return;
      case 'gate_paused':
        this.node(ev, offset, 'gate-paused');
        return;
      case 'gate_approved':
      case 'gate_rejected':
        // Not a node state of its own; it does end the pause.
        this.latest.set(ev.node_id as string, { event: ev.event, offset });
        return;
      default:
        return; // unknown event types are ignored
    }
  }

  /**
   * Starts the fold inside a leg whose `run_started` lies before the lines it
   * will be given: the tail reader's read of a closed last leg that began
   * more than its bound before the end (CONTRACT §2.5 rule 7). That start's
   * offset, phase and command are not known, so `legOffset` stays -1,
   * `phase` "" and `command` undefined; the `run_finished` that follows
   * closes the leg as any other does.
   */
  openedBefore(): void {
    this.open = true;
    this.started = true;
  }

  /** Counts `count` skipped lines (default one). */
  skip(count = 1): void {
    this.skippedLines += count;
  }

  private start(ev: StreamEvent, offset: number): void {
    const phase = stringOr(ev.phase, '');
    // An auto run writes a planning start, then an untagged start, in the
    // same leg: the second start does not count as a new leg.
    const sameLeg = this.open && this.phase === 'planning' && phase !== 'planning';
    const command = commandOf(ev);
    this.open = true;
    this.started = true;
    this.phase = phase;
    this.legOffset = offset;
    this.command = command;
    if (!sameLeg) this.legs++;
    // The earlier leg ended without these nodes: they will never finish.
    for (const [id, state] of this.nodes) if (state === 'running') this.nodes.set(id, 'abandoned');
    if (this.history === undefined) return;
    const last = this.history[this.history.length - 1];
    if (sameLeg && last !== undefined) {
      last.phase = phase;
      last.command = command ?? last.command;
      return;
    }
    if (last !== undefined && last.state === 'open') last.state = 'abandoned';
    const ts = typeof ev.ts === 'string' ? ev.ts : null;
    this.history.push({ offset, phase, outcome: null, started_ts: ts, finished_ts: null, command: command ?? null, state: 'open' });
  }

  private closeRecord(ev: StreamEvent): void {
    const last = this.history?.[this.history.length - 1];
    if (last === undefined || last.state !== 'open') return;
    last.state = 'closed';
    last.outcome = this.lastOutcome;
    last.finished_ts = typeof ev.ts === 'string' ? ev.ts : null;
  }

  private node(ev: StreamEvent, offset: number, state: NodeState): void {
    const id = ev.node_id as string;
    this.nodes.set(id, state);
    this.latest.set(id, { event: ev.event, offset });
  }

  /** Gates whose latest event is a `gate_paused` inside the last leg, oldest first. */
  gates(): string[] {
    const out: { id: string; offset: number }[] = [];
    for (const [id, e] of this.latest) {
      if (e.event === 'gate_paused' && e.offset > this.legOffset) out.push({ id, offset: e.offset });
    }
    return out.sort((a, b) => a.offset - b.offset).map((g) => g.id);
  }

  /** The last leg so far, without the leg count. */
  lastLeg(): LastLeg {
    const leg: LastLeg = {
      open: this.open,
      started: this.started,
      phase: this.phase,
      lastOutcome: this.lastOutcome,
      legOffset: this.legOffset,
      gates: this.gates(),
    };
    if (this.command !== undefined) leg.command = this.command;
    return leg;
  }

  /** The last leg so far, with the leg count. */
  leg(): LegFacts {
    const { command, ...rest } = this.lastLeg();
    const leg: LegFacts = { ...rest, legs: this.legs };
    if (command !== undefined) leg.command = command;
    return leg;
  }

  /** Everything folded so far. */
  facts(): StreamFacts {
    return { leg: this.leg(), nodes: new Map(this.nodes), skippedLines: this.skippedLines };
  }

  /**
   * Marks what an ABANDONED verdict implies for the fold's picture (CONTRACT
   * §2.4): nodes still running and an open last leg will never report an
   * end. Called by run detail once the derivation says ABANDONED; the fold
   * itself cannot know (only the lock can).
   */
  markAbandoned(): void {
    for (const [id, s] of this.nodes) if (s === 'running') this.nodes.set(id, 'abandoned');
    const last = this.history?.[this.history.length - 1];
    if (last !== undefined && last.state === 'open') last.state = 'abandoned';
  }
}
