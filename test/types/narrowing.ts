/**
 * Type-level tests of the public API, checked by `npm run typecheck`
 * (tsconfig.test.json compiles every file under test/; this one is never
 * run). Each `@ts-expect-error` line must be an error: if a result stopped
 * being a discriminated union, or a narrowing stopped narrowing, the line
 * would compile and tsc would fail with "Unused '@ts-expect-error' directive".
 */
import {
  acquireLock,
  acquireLockAsync,
  followRun,
  LockFileError,
  probeLock,
  runStatus,
  startLeg,
  type Derivation,
  type FollowItem,
  type FreeReason,
  type HeldLock,
  type HeldReason,
  type Leg,
  type LegEvent,
  type ProbeResult,
  type RunReport,
  type SnapshotRead,
  type UnknownReason,
} from '../../src/index.js';

/** Compiles only when A and B are the same type. */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function same<A, B>(_proof: Equal<A, B>): void {}

export function probeNarrowing(p: ProbeResult): void {
  if (p.liveness === 'held') {
    same<typeof p.reason, HeldReason>(true);
    // @ts-expect-error a held answer never has a free reason
    const r: FreeReason = p.reason;
    void r;
  } else if (p.liveness === 'free') {
    same<typeof p.reason, FreeReason>(true);
    // @ts-expect-error 'missing' is an unknown reason, never a free one
    if (p.reason === 'missing') return;
  } else {
    same<typeof p.reason, UnknownReason>(true);
    // @ts-expect-error 'flock-held' is never the reason of an unknown answer
    if (p.reason === 'flock-held') return;
  }
  // And the other way round: the reason narrows the liveness.
  if (p.reason === 'flock-free' || p.reason === 'legacy-pid-gone') same<typeof p.liveness, 'free'>(true);
}

export function reportNarrowing(r: RunReport): void {
  if (r.status === 'ABANDONED') {
    same<typeof r.liveness, 'free'>(true);
    same<typeof r.reason, FreeReason>(true);
  }
  if (r.liveness === null) {
    same<typeof r.status, 'PAUSED' | 'PASS' | 'FAIL' | null>(true);
    // @ts-expect-error a run whose lock was not probed cannot be RUNNING
    if (r.status === 'RUNNING') return;
  }
  if (r.liveness === 'held') {
    same<typeof r.reason, HeldReason>(true);
    same<typeof r.status, 'PLANNING' | 'RUNNING'>(true);
    // @ts-expect-error a held run is never ABANDONED
    if (r.status === 'ABANDONED') return;
  }
  if (r.status === 'PASS') {
    same<typeof r.liveness, null>(true);
    // @ts-expect-error a settled run has no probe reason to read
    const reason: string = r.reason;
    void reason;
  }
}

export function otherUnions(s: SnapshotRead, d: Derivation, item: FollowItem): void {
  if (s.kind === 'ok') void s.snapshot.graph;
  // @ts-expect-error only an `ok` read has a snapshot
  void s.snapshot;
  if (d.unreadable !== null) same<typeof d.status, null>(true);
  if (item.kind === 'status') {
    same<typeof item.report.status, 'ABANDONED' | 'PLANNING' | 'RUNNING' | 'PAUSED' | 'PASS' | 'FAIL' | null>(true);
    same<typeof item.final, boolean>(true);
    if (item.report.liveness === 'free') same<typeof item.report.status, 'ABANDONED'>(true);
  }
  // @ts-expect-error only an event item has an event
  void item.event;
}

export function legEvents(leg: Leg): void {
  leg.append({ event: 'node_started', node_id: 'build' });
  leg.append({ event: 'node_passed', node_id: 'build', cost_usd: 0.01, tokens: 12 });
  // @ts-expect-error a node event needs a node_id
  leg.append({ event: 'node_started' });
  // @ts-expect-error run_started is written by startLeg, not append
  leg.append({ event: 'run_started', node_id: 'x' });
  // @ts-expect-error a passed node's verdict is PASS
  leg.append({ event: 'node_passed', node_id: 'x', verdict: 'FAIL' });
  // @ts-expect-error outcomes are passed, failed, paused
  leg.finish('ok');
  const e: LegEvent = { event: 'gate_paused', node_id: 'review' };
  void e;
}

export async function disposables(dir: string): Promise<void> {
  {
    using lock = acquireLock(`${dir}/resume.lock`);
    same<typeof lock, HeldLock>(true);
    void lock.held;
  }
  {
    await using lock = await acquireLockAsync(`${dir}/resume.lock`, { timeoutMs: 1000, signal: AbortSignal.timeout(5000) });
    void lock.held;
  }
  {
    using leg = startLeg(dir);
    leg.finish('passed');
  }
  for await (const item of followRun(dir, { until: 'leg-end' })) if (item.kind === 'event') void item.event.event;
  const e = new LockFileError('m', 'ELOCKIO', dir);
  same<typeof e.code, 'ENOTREGULAR' | 'ELOCKREPLACED' | 'ELOCKIO'>(true);
  void e.code;
  void probeLock;
  void runStatus;
}
