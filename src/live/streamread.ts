/**
 * How the live engine reads a run's stream (engine.ts): from where it last
 * read, a bounded step at a time, and the first read of a long stream by
 * the tail reader.
 *
 * Invariants, and why:
 * - Read only what changed. Each run keeps its fold (contract/fold.ts, the
 *   one home of the leg rules, applied through read/lines.ts exactly as the
 *   other readers apply it) and the byte offset it has read; an append is
 *   folded from that offset. A stream that shrank, was replaced (another
 *   inode) or rewritten (the bytes just before the offset differ) is read
 *   again from scratch. A partial last line is held back until its newline
 *   arrives.
 * - No stream's length holds the event loop. A step reads at least
 *   {@link LIVE_STEP_BYTES} and stops at the first read that reaches it; a run
 *   with bytes left takes its next step in a later turn (`stepping`), after
 *   the runs marked meanwhile. A stream longer than
 *   {@link LIVE_FIRST_READ_WHOLE_MAX} is first read by the tail reader the
 *   listing uses, in steps, so its first report is the listing's, and its
 *   fold is kept as if the stream had been read forward to there.
 * - The tail reader's counting is kept too: the restart point (the last
 *   run_started before the last run_finished) and the lines skipped from it,
 *   so the report built from the fold is the one the tail reader would give.
 * - Never throws for a bad stream: its error is kept on the run, which is
 *   then derived by the reference path (engine.ts), and a follower (`lines`)
 *   is told once that the stream can no longer be followed line by line.
 * - Reads only, through descriptors opened read-only (kernel/open.ts).
 */
import { StreamError } from '../contract/errors.js';
import type { StreamEvent } from '../contract/events.js';
import { StreamFold } from '../contract/fold.js';
import { closeQuietly } from '../kernel/open.js';
import { foldLines, LineSplitter } from '../read/lines.js';
import { openStream, readStreamBytes, shrank } from '../read/stream.js';
import { TailStepper } from '../read/tail.js';
import type { EngineCore } from './core.js';
import { eventsOf, FORGOTTEN, NO_BYTES, NO_LINES, NO_EVENTS, type RunState } from './runstate.js';
import { LIVE_FIRST_READ_WHOLE_MAX, LIVE_STEP_BYTES, type LiveLine } from './types.js';

const CHUNK = 64 * 1024;
const PRINT = 64; // bytes before the offset kept to recognise a rewritten stream

function pushEvent(r: RunState, e: { event: StreamEvent; offset: number }): void {
  if (r.newEvents === NO_EVENTS) r.newEvents = [];
  r.newEvents.push(e);
}
function pushLine(r: RunState, l: LiveLine): void {
  if (r.newLines === NO_LINES) r.newLines = [];
  r.newLines.push(l);
}

/** Reads the engine's runs' streams (see the module comment). */
export class StreamReader {
  /** Stream bytes read in the current turn (flush) or start() slice. */
  turnBytes = 0;
  /** Runs whose first read takes several steps, until they are first derived (start() waits for them). */
  readonly firstReads = new Set<RunState>();
  /**
   * Runs with stream bytes left to read (a step per turn, `LIVE_STEP_BYTES`),
   * in turn order. Taken after the runs marked since the last turn and the
   * backlog, so a death told by the kernel never waits behind a long read.
   */
  readonly stepping = new Set<RunState>();

  constructor(private readonly core: EngineCore) {}

  /** Forgets what was read of the run's stream: the next read starts at byte 0. */
  resetFold(r: RunState): void {
    this.endTail(r);
    r.tailFacts = undefined;
    r.fold = new StreamFold();
    r.offset = 0;
    r.print = NO_BYTES;
    r.lastStart = -1;
    r.skipsSinceLastStart = 0;
    r.restart = 0;
    r.skipsSinceRestart = 0;
    r.streamError = null;
    r.newer = false;
    r.newLines = NO_LINES;
    r.splitter = undefined;
  }

  /**
   * settledForget: a settled run keeps its report, its identities and its
   * watch, and nothing of its stream (the fold, the offset, the print, the
   * tail's facts); the engine reads the stream again from the start when the
   * run next changes, which gives the very fold the incremental read would
   * have (a fold is a function of the stream's bytes).
   */
  letGo(r: RunState): void {
    r.fold = FORGOTTEN;
    r.offset = 0;
    r.ident = undefined;
    r.print = NO_BYTES;
    r.tailFacts = undefined;
    r.lastStart = -1;
    r.skipsSinceLastStart = 0;
    r.restart = 0;
    r.skipsSinceRestart = 0;
    r.shed();
  }

  /** Closes a tail read under way, if any. */
  endTail(r: RunState): void {
    r.tail?.close();
    r.tail = undefined;
  }

  /** Forgets a run no longer followed. */
  drop(r: RunState): void {
    this.endTail(r);
    this.firstReads.delete(r);
    this.stepping.delete(r);
  }

  /** The run's line splitter, made at its offset when there is none (see RunState.splitter). */
  private splitterOf(r: RunState): LineSplitter {
    if (r.splitter !== undefined) return r.splitter;
    const fold = r.fold;
    const emitEvents = this.core.emitEvents;
    const emitLines = this.core.emitLines;
    const folded = foldLines(fold, eventsOf(r), {
      onEvent: (event, offset) => {
        // The tail reader's restart point (read/tail.ts): the last run_started before the last run_finished.
        if (event.event === 'run_started') {
          r.lastStart = offset;
          r.skipsSinceLastStart = 0;
        } else if (event.event === 'run_finished') {
          r.restart = r.lastStart >= 0 ? r.lastStart : 0;
          if (r.lastStart >= 0) r.skipsSinceRestart = r.skipsSinceLastStart;
        }
        if (emitEvents) pushEvent(r, { event, offset });
        if (emitLines && r.told === undefined) pushLine(r, { kind: 'event', event, offset });
      },
      onSkip: (offset) => {
        r.skipsSinceLastStart++;
        r.skipsSinceRestart++;
        if (emitLines && r.told === undefined) pushLine(r, { kind: 'skipped', offset });
      },
    });
    // A follower keeps going past a newer-schema line (told once); every
    // other reader fails on it, so such a run is derived by the reference path.
    const sink: typeof folded = !emitLines
      ? folded
      : (buf, start, end, offset) => {
          try {
            folded(buf, start, end, offset);
          } catch (e) {
            // parseLine throws before anything is folded: skip the line as the follower does.
            if (!(e instanceof StreamError) || e.code !== 'ENEWERSCHEMA') throw e;
            fold.skip();
            if (!r.newer && r.told === undefined) pushLine(r, { kind: 'newer-schema', error: e, offset });
            r.newer = true;
          }
        };
    r.splitter = new LineSplitter(eventsOf(r), sink, r.offset);
    return r.splitter;
  }

  /** `lines`: tells, once, that the run's stream can no longer be followed line by line. */
  private streamFault(r: RunState, error: StreamError): void {
    if (!this.core.emitLines || r.told !== undefined) return;
    // Lines read before the fault in this pass were whole and in order: tell them first.
    if (r.newLines.length > 0) {
      const lines = r.newLines;
      r.newLines = NO_LINES;
      this.core.emit({ type: 'lines', runId: r.id, runDir: r.dir, lines, behind: false });
    }
    r.told = error;
    this.core.emit({ type: 'stream-error', runId: r.id, runDir: r.dir, error });
  }

  /**
   * Reads what was appended since the last read, or the whole stream again
   * when it shrank, was replaced or was rewritten. Never throws: a stream
   * error is kept, and the run is then derived by the reference path.
   */
  catchUp(r: RunState): void {
    r.behind = false;
    if (r.tail !== undefined) {
      this.stepTail(r);
      return;
    }
    const stats = this.core.stats;
    const emitLines = this.core.emitLines;
    let file;
    try {
      file = openStream(eventsOf(r));
    } catch (e) {
      r.streamError = e;
      if (e instanceof StreamError) this.streamFault(r, e);
      return;
    }
    if (file === undefined) {
      if (r.ident !== undefined) {
        this.streamFault(r, new StreamError('events.jsonl was removed while it was followed', 'EREAD', eventsOf(r)));
        r.ident = undefined;
        this.resetFold(r);
        stats.rereads++;
      }
      return;
    }
    const { fd, size } = file;
    let handed = false; // the descriptor went to a tail stepper, which closes it
    try {
      const ident = `${file.stats.dev}:${file.stats.ino}`;
      let reread: string | undefined = r.ident !== undefined && r.ident !== ident ? 'replaced' : undefined;
      if (reread === undefined && size < r.offset) reread = 'shrank';
      if (reread === undefined && r.print.length > 0) {
        const here = Buffer.allocUnsafe(r.print.length);
        const n = readStreamBytes(fd, here, r.print.length, r.offset - r.print.length, eventsOf(r));
        if (n !== r.print.length || !here.equals(r.print)) reread = 'rewritten in place';
      }
      if (reread !== undefined) {
        const what = reread === 'shrank' ? 'shrank while it was followed (it should only ever grow)' : `was ${reread} while it was followed`;
        this.streamFault(r, new StreamError(`events.jsonl ${what}`, 'EREAD', eventsOf(r)));
        this.resetFold(r);
        stats.rereads++;
      } else if (r.streamError !== null) {
        return; // the same stream, still unreadable
      }
      r.ident = ident;
      if (size <= r.offset) return;
      // A follower that has not taken the last lines: read nothing more yet.
      const paced = emitLines && r.told === undefined;
      if (paced && r.held) {
        r.behind = true;
        return;
      }
      if (!emitLines && r.offset === 0 && size > LIVE_FIRST_READ_WHOLE_MAX) {
        // A long stream's first read is the tail reader's, in steps (LIVE_FIRST_READ_WHOLE_MAX).
        r.tail = new TailStepper(file, eventsOf(r));
        handed = true;
        stats.tailReads++;
        this.firstReads.add(r);
        this.stepTail(r);
        return;
      }
      const chunk = Buffer.allocUnsafe(CHUNK);
      let pos = r.offset;
      let step = 0;
      while (pos < size) {
        if (paced && r.newLines.length > 0) {
          r.behind = true; // one chunk with lines at a time
          break;
        }
        if (!paced && step >= LIVE_STEP_BYTES) {
          r.behind = true; // the rest in later turns
          this.later(r);
          break;
        }
        const n = readStreamBytes(fd, chunk, Math.min(CHUNK, size - pos), pos, eventsOf(r));
        if (n === 0) break;
        step += n;
        this.counted(n);
        r.tailFacts = undefined;
        this.splitterOf(r).push(chunk.subarray(0, n), pos);
        pos += n;
        r.offset = pos;
        const keep = Math.min(PRINT, pos);
        // The bytes just before the offset, to recognise a stream rewritten in place.
        r.print = n >= keep ? Buffer.from(chunk.subarray(n - keep, n)) : Buffer.concat([r.print, chunk.subarray(0, n)]).subarray(-keep);
      }
      if (paced && r.newLines.length > 0) r.held = true;
      if (step > 0) this.stepDone(step);
    } catch (e) {
      if (e instanceof StreamError) {
        r.streamError = e;
        r.behind = false;
        this.streamFault(r, e);
      } else throw e;
    } finally {
      if (!handed) closeQuietly(fd);
      if (r.splitter !== undefined && r.splitter.undelivered === r.offset) r.splitter = undefined;
    }
  }

  /** Counts stream bytes read (by the run's current step). */
  private counted(n: number): void {
    this.core.stats.bytesRead += n;
    this.turnBytes += n;
  }

  /** Records a step that read `bytes` stream bytes. */
  private stepDone(bytes: number): void {
    const stats = this.core.stats;
    stats.readSteps++;
    if (bytes > stats.maxStepBytes) stats.maxStepBytes = bytes;
  }

  /** The run has stream bytes left to read: a step in a later turn. */
  private later(r: RunState): void {
    r.dirtyStream = true;
    this.stepping.add(r);
    this.core.queueFlush();
  }

  /**
   * One step of a first read by the tail reader. Once it is done, the run
   * holds the tail's fold at the size the read began with, as if it had
   * read the stream forward to there (the fold is exact for the last leg
   * and the paused gates, the only facts a report takes from it), and the
   * next step reads what was appended since by the incremental rule, which
   * also checks that the file is still the one the tail read.
   */
  private stepTail(r: RunState): void {
    const t = r.tail as TailStepper;
    let done;
    let print = NO_BYTES;
    let step = 0;
    try {
      done = t.step(LIVE_STEP_BYTES);
      if (done !== undefined && t.size > 0) {
        // The bytes just before the offset, to recognise a stream rewritten in place (as the forward read keeps them).
        const keep = Math.min(PRINT, t.size);
        const buf = Buffer.allocUnsafe(keep);
        if (readStreamBytes(t.fd, buf, keep, t.size - keep, eventsOf(r)) !== keep) throw shrank(eventsOf(r));
        step += keep;
        print = buf;
      }
    } catch (e) {
      this.endTail(r);
      if (!(e instanceof StreamError)) throw e;
      r.streamError = e;
      return;
    } finally {
      step += t.takeBytesRead();
      this.counted(step);
      this.stepDone(step);
    }
    r.behind = true; // not derived until the read is over and what was appended since is read
    this.later(r);
    if (done === undefined) return;
    this.endTail(r);
    const { facts, fold, skipsAfterStart } = done;
    r.tailFacts = facts;
    r.fold = fold;
    r.offset = facts.size;
    r.print = print;
    r.splitter = undefined;
    // The tail's own counting of skipped lines: from where its dense region begins (read/tail.ts).
    r.restart = facts.from;
    r.skipsSinceRestart = facts.skippedLines;
    r.lastStart = fold.started ? fold.legOffset : -1;
    r.skipsSinceLastStart = fold.started && fold.legOffset >= facts.from ? skipsAfterStart : facts.skippedLines;
  }
}
