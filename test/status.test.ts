/**
 * The derivation (CONTRACT §4.3) and runStatus against real lock holders: live
 * legs are real processes holding real flocks; dead ones are SIGKILLed.
 */
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { LastLeg } from '../src/contract/fold.js';
import { acquireLock, type HeldLock } from '../src/lock/acquire.js';
import { probeLock, type ProbeResult } from '../src/lock/probe.js';
import type { SnapshotRead } from '../src/read/snapshot.js';
import { deriveStatus } from '../src/status/derive.js';
import { listRuns, pickCurrentRun } from '../src/status/list.js';
import { runDetail } from '../src/status/detail.js';
import { runStatus } from '../src/status/inspect.js';
import { RunUnreadableError } from '../src/contract/errors.js';
import type { RunReport } from '../src/contract/types.js';
import { cleanup, deadPid, ev, makeRun, runId, snapshot, startHolder, tempDir } from './helpers/reading-fixtures.js';
import { needs } from './helpers/prereq.js';

afterEach(cleanup);
afterAll(cleanup);

const leg = (p: Partial<LastLeg>): LastLeg => ({ open: false, started: true, phase: '', lastOutcome: '', legOffset: 0, gates: [], ...p });
const ok = (all: boolean): SnapshotRead => ({
  kind: 'ok',
  snapshot: { run_id: 'r', graph: 'g', graphNodes: [{ id: 'a', depends_on: [] }], records: new Map(), nodes_total: 1, nodes_passed: all ? 1 : 0, all_passed: all, cost_usd: 0, cost_unknown: false, stray_ids: [] },
});
const missing: SnapshotRead = { kind: 'missing' };
const broken: SnapshotRead = { kind: 'error', error: 'state.json: incompatible snapshot schema 2 (this version reads schema 3)' };

describe('deriveStatus: CONTRACT §4.3, first match wins', () => {
  it.each([
    ['1 open + free ⇒ ABANDONED', leg({ open: true }), missing, 'free', 'ABANDONED'],
    ['1 wins over planning', leg({ open: true, phase: 'planning' }), ok(true), 'free', 'ABANDONED'],
    ['2 open + planning ⇒ PLANNING (held)', leg({ open: true, phase: 'planning' }), missing, 'held', 'PLANNING'],
    ['2 open + planning ⇒ PLANNING (unknown)', leg({ open: true, phase: 'planning' }), missing, 'unknown', 'PLANNING'],
    ['3 open + held ⇒ RUNNING', leg({ open: true }), ok(true), 'held', 'RUNNING'],
    ['3 open + unknown ⇒ RUNNING', leg({ open: true, lastOutcome: 'paused' }), missing, 'unknown', 'RUNNING'],
    ['3 open, not probed ⇒ RUNNING', leg({ open: true }), missing, null, 'RUNNING'],
    ['4 paused ⇒ PAUSED', leg({ lastOutcome: 'paused' }), ok(true), null, 'PAUSED'],
    ['5 all passed ⇒ PASS', leg({ lastOutcome: 'failed' }), ok(true), null, 'PASS'],
    ['5 not all passed ⇒ FAIL even if the leg passed', leg({ lastOutcome: 'passed' }), ok(false), null, 'FAIL'],
    ['6 no snapshot + passed (exec leg) ⇒ PASS', leg({ lastOutcome: 'passed' }), missing, null, 'PASS'],
    ['7 no snapshot + failed ⇒ FAIL', leg({ lastOutcome: 'failed' }), missing, null, 'FAIL'],
    ['7 no snapshot + closed without outcome ⇒ FAIL', leg({ lastOutcome: '' }), missing, null, 'FAIL'],
    ['no leg, no snapshot ⇒ no status yet', leg({ started: false, legOffset: -1 }), missing, null, null],
    ['no leg, snapshot all passed ⇒ PASS', leg({ started: false, legOffset: -1 }), ok(true), null, 'PASS'],
  ] as const)('%s', (_name, l, snap, liveness, expected) => {
    expect(deriveStatus({ leg: l, snapshot: snap }, liveness)).toEqual({ status: expected, unreadable: null });
  });

  it('an unreadable snapshot does not hide liveness (rows 1–4) and makes rows 5–7 unreadable', () => {
    expect(deriveStatus({ leg: leg({ open: true }), snapshot: broken }, 'free').status).toBe('ABANDONED');
    expect(deriveStatus({ leg: leg({ open: true }), snapshot: broken }, 'held').status).toBe('RUNNING');
    expect(deriveStatus({ leg: leg({ lastOutcome: 'paused' }), snapshot: broken }, null).status).toBe('PAUSED');
    expect(deriveStatus({ leg: leg({ lastOutcome: 'passed' }), snapshot: broken }, null)).toEqual({ status: null, unreadable: broken.error });
  });
});

const started = ev('run_started') + ev('node_started', { node_id: 'a' });

describe('runStatus with real processes', () => {
  it('a live holder ⇒ RUNNING (held); SIGKILL ⇒ ABANDONED (free) with the hint', async () => {
    const root = tempDir();
    const dir = makeRun(root, runId(), { state: snapshot({ a: 'PASS', b: '' }) });
    const h = await startHolder([{ dir, lines: started }]);
    expect(runStatus(dir)).toMatchObject({ status: 'RUNNING', liveness: 'held', reason: 'flock-held', has_snapshot: true, nodes_passed: 1, nodes_total: 2, hint: null });
    await h.kill();
    const r = runStatus(dir);
    expect(r).toMatchObject({ status: 'ABANDONED', liveness: 'free', reason: 'flock-free' });
    expect(r.hint).toContain('--retry-failed');
    expect(r.hint).toContain('may still be running');
  });

  it('a planning leg ⇒ PLANNING while held, ABANDONED once its holder dies; no snapshot ⇒ run the graph again', async () => {
    const root = tempDir();
    const dir = makeRun(root, runId(), {});
    const h = await startHolder([{ dir, lines: ev('run_started', { phase: 'planning' }) }]);
    expect(runStatus(dir)).toMatchObject({ status: 'PLANNING', liveness: 'held' });
    await h.kill();
    const r = runStatus(dir);
    expect(r).toMatchObject({ status: 'ABANDONED', has_snapshot: false });
    expect(r.hint).toMatch(/nothing to resume from: run the graph again/);
    expect(r.hint).not.toMatch(/oh-my-graph resume/);
  });

  it('every doubt is in flight: no lock file, an unmarked lock with a live pid', () => {
    const root = tempDir();
    expect(runStatus(makeRun(root, runId(), { events: started }))).toMatchObject({ status: 'RUNNING', liveness: 'unknown', reason: 'missing' });
    expect(runStatus(makeRun(root, runId(), { events: started, lock: `${process.pid}\n` }))).toMatchObject({ status: 'RUNNING', liveness: 'unknown', reason: 'legacy-pid-alive' });
    expect(runStatus(makeRun(root, runId(), { events: started, lock: 'oh-my-graph-lock 2\n1\n' }))).toMatchObject({ status: 'RUNNING', reason: 'future-marker' });
  });

  it('a pre-flock lock whose pid is gone ⇒ ABANDONED (legacy-pid-gone)', () => {
    const root = tempDir();
    const r = runStatus(makeRun(root, runId(), { events: started, lock: `${deadPid()}\n` }));
    expect(r).toMatchObject({ status: 'ABANDONED', liveness: 'free', reason: 'legacy-pid-gone' });
  });

  it('a closed leg is never probed', () => {
    const root = tempDir();
    const dir = makeRun(root, runId(), { events: started + ev('run_finished', { outcome: 'passed' }), state: snapshot({ a: 'PASS' }), lock: 'marked' });
    expect(runStatus(dir)).toMatchObject({ status: 'PASS', liveness: null, reason: null });
  });

  it('settled runs: PASS, FAIL, exec PASS without snapshot, PAUSED with its gate, set membership', () => {
    const root = tempDir();
    const fin = (o: string) => started + ev('run_finished', { outcome: o });
    expect(runStatus(makeRun(root, runId(), { events: fin('passed'), state: snapshot({ a: 'PASS' }) })).status).toBe('PASS');
    expect(runStatus(makeRun(root, runId(), { events: fin('failed'), state: snapshot({ a: 'FAIL' }) })).status).toBe('FAIL');
    expect(runStatus(makeRun(root, runId(), { events: fin('passed') })).status).toBe('PASS');
    expect(runStatus(makeRun(root, runId(), { events: fin('failed') })).status).toBe('FAIL');
    const stray = runStatus(makeRun(root, runId(), { events: fin('passed'), state: snapshot({ a: 'PASS', zz: 'PASS' }, { graph: ['a', 'b'] }) }));
    expect(stray).toMatchObject({ status: 'FAIL', nodes_passed: 1, nodes_total: 2 });
    expect(stray.warnings.join('\n')).toMatch(/ids not in graph\.nodes \(zz\)/);
    const paused = runStatus(makeRun(root, runId(), { events: started + ev('gate_paused', { node_id: 'review' }) + ev('run_finished', { outcome: 'paused' }) }));
    expect(paused.status).toBe('PAUSED');
    expect(paused.hint).toContain('--approve review');
    expect(paused.hint).toContain('--reject review');
    expect(paused.hint).toContain('--retry-failed');
    expect(paused.hint).toContain('runwarden watch');
  });

  it('no leg and no snapshot ⇒ no status yet (null)', () => {
    const root = tempDir();
    expect(runStatus(makeRun(root, runId(), { lock: 'marked' }))).toMatchObject({ status: null, liveness: null, hint: null });
  });

  it('an unreadable snapshot does not hide liveness', async () => {
    const root = tempDir();
    const bad = { ...snapshot({ a: 'PASS' }), schema: 2 };
    const dir = makeRun(root, runId(), { state: bad });
    const h = await startHolder([{ dir, lines: started }]);
    const live = runStatus(dir);
    expect(live).toMatchObject({ status: 'RUNNING', liveness: 'held', has_snapshot: false });
    expect(live.warnings.join('\n')).toMatch(/incompatible snapshot schema 2/);
    await h.kill();
    const dead = runStatus(dir);
    expect(dead.status).toBe('ABANDONED');
    expect(dead.warnings.join('\n')).toMatch(/incompatible snapshot schema 2/);
    // Settled, the status needs the snapshot: the run is reported unreadable with the reason.
    const settled = makeRun(root, runId(), { events: started + ev('run_finished', { outcome: 'passed' }), state: bad });
    expect(() => runStatus(settled)).toThrow(RunUnreadableError);
    expect(() => runStatus(settled)).toThrow(/incompatible snapshot schema 2/);
  });

  it('a snapshot that names another run is reported as a warning', () => {
    const root = tempDir();
    const r = runStatus(makeRun(root, 'mine', { events: started + ev('run_finished', { outcome: 'passed' }), state: snapshot({ a: 'PASS' }, { runId: 'theirs' }) }));
    expect(r.status).toBe('PASS');
    expect(r.warnings).toContain('state.json: records run_id "theirs", not this directory\'s name');
  });

  it('skipped stream lines are reported as a warning', () => {
    const root = tempDir();
    const r = runStatus(makeRun(root, runId(), { events: 'junk\n' + started + 'more junk\n' }));
    expect(r.warnings).toContain('events.jsonl: skipped 2 malformed lines');
  });
});

describe('read, probe, confirm', () => {
  // The leg is this test process itself: a real exclusive flock taken through
  // acquireLock, so the race can be placed exactly between runStatus's first
  // read and its probe (the probe seam runs there), with every answer from the kernel.
  it('a leg that ends between the read and the probe is never ABANDONED', () => {
    const root = tempDir();
    const dir = makeRun(root, runId(), { state: snapshot({ a: 'PASS' }) });
    const lock = acquireLock(join(dir, 'resume.lock'));
    appendFileSync(join(dir, 'events.jsonl'), started);
    expect(runStatus(dir)).toMatchObject({ status: 'RUNNING', liveness: 'held' });
    const answers: ProbeResult[] = [];
    const r = runStatus(dir, {
      probe: (lockPath) => {
        appendFileSync(join(dir, 'events.jsonl'), ev('run_finished', { outcome: 'passed' }));
        lock.release();
        const a = probeLock(lockPath);
        answers.push(a);
        return a;
      },
    });
    expect(answers.map((a) => a.liveness)).toEqual(['free']); // the kernel really said free
    expect(r).toMatchObject({ status: 'PASS', liveness: null, reason: null });
  });

  it('a new leg that starts between the read and the probe is probed again', () => {
    const root = tempDir();
    const dir = makeRun(root, runId(), {});
    const leg1 = acquireLock(join(dir, 'resume.lock'));
    appendFileSync(join(dir, 'events.jsonl'), started);
    let leg2: HeldLock | undefined;
    const answers: ProbeResult[] = [];
    const r = runStatus(dir, {
      probe: (lockPath) => {
        if (leg2 === undefined) {
          appendFileSync(join(dir, 'events.jsonl'), ev('run_finished', { outcome: 'failed' }));
          leg1.release();
          const a = probeLock(lockPath); // free: between the legs
          leg2 = acquireLock(lockPath);
          appendFileSync(join(dir, 'events.jsonl'), ev('run_started') + ev('node_started', { node_id: 'b' }));
          answers.push(a);
          return a;
        }
        const a = probeLock(lockPath);
        answers.push(a);
        return a;
      },
    });
    leg2?.release();
    // The confirm read found a different open leg, so it derived again and probed its live holder.
    expect(answers.map((a) => a.liveness)).toEqual(['free', 'held']);
    expect(r).toMatchObject({ status: 'RUNNING', liveness: 'held' });
  });

  it('a free probe on the same open leg is confirmed ABANDONED', (ctx) => {
    needs(ctx, "posix: a hand-written marked file with no lock held is free where flock is the lock (on Windows it is unlabeled-lock: test/windows.test.ts)");
    const root = tempDir();
    const dir = makeRun(root, runId(), { events: started, lock: 'marked' });
    let calls = 0;
    const r = runStatus(dir, {
      probe: (p) => {
        calls++;
        return probeLock(p);
      },
    });
    expect(calls).toBe(1);
    expect(r).toMatchObject({ status: 'ABANDONED', liveness: 'free' });
  });
});

describe('listRuns and the current run', () => {
  it('newest first by byte order; a file or symlink entry is a named skip; other rows survive', () => {
    const root = tempDir();
    makeRun(root, 'a-old', { events: started + ev('run_finished', { outcome: 'passed' }) });
    makeRun(root, 'b-new', { events: started + ev('run_finished', { outcome: 'failed' }) });
    makeRun(root, 'z-bad', { events: ev('run_started', { schema: 4 }) });
    const list = listRuns(root);
    expect(list.runs.map((r) => r.run_id)).toEqual(['b-new', 'a-old']);
    expect(list.skipped).toEqual([{ run_id: 'z-bad', error: expect.stringMatching(/newer version/), kind: 'unreadable-stream' }]);
  });

  it('a missing root is an empty list', () => {
    expect(listRuns(join(tempDir(), 'nothing-here'))).toMatchObject({ missing: true, runs: [], skipped: [] });
  });

  it('pickCurrentRun: newest in flight, never abandoned, else newest', () => {
    const r = (run_id: string, status: RunReport['status']) => ({ run_id, status }) as RunReport;
    expect(pickCurrentRun([r('3', 'ABANDONED'), r('2', 'PASS'), r('1', 'RUNNING')])?.run_id).toBe('1');
    expect(pickCurrentRun([r('3', 'ABANDONED'), r('2', 'PLANNING')])?.run_id).toBe('2');
    expect(pickCurrentRun([r('3', 'ABANDONED'), r('2', 'PASS')])?.run_id).toBe('3');
    expect(pickCurrentRun([])).toBeUndefined();
  });

  it('runDetail agrees with runStatus and marks an abandoned run\'s running nodes abandoned', async () => {
    const root = tempDir();
    const dir = makeRun(root, runId(), { state: snapshot({ a: '' }, { graph: ['a', 'b'] }) });
    const h = await startHolder([{ dir, lines: ev('run_started') + ev('node_started', { node_id: 'x' }) + ev('run_finished', { outcome: 'failed' }) + started }]);
    const live = runDetail(dir);
    expect(live.report).toEqual(runStatus(dir));
    expect(live.nodes).toEqual([
      { id: 'a', state: 'running', depends_on: [] },
      { id: 'b', state: 'pending', depends_on: [] },
      { id: 'x', state: 'abandoned', depends_on: [] }, // its leg ended without it
    ]);
    expect(live.legs.map((l) => l.state)).toEqual(['closed', 'open']);
    await h.kill();
    const dead = runDetail(dir);
    expect(dead.report).toEqual(runStatus(dir));
    expect(dead.report.status).toBe('ABANDONED');
    expect(dead.nodes.find((n) => n.id === 'a')?.state).toBe('abandoned');
    expect(dead.legs.map((l) => l.state)).toEqual(['closed', 'abandoned']);
    expect(dead.events.length).toBe(5);
  });
});
