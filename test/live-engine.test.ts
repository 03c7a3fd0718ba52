/**
 * The live engine (src/live/engine.ts) against real processes and real
 * files: a kill -9 of a leg is noticed through the lock file's close-write
 * (counted, not timed), appends are read once from the offset already read,
 * a stream truncated, rewritten or replaced under it is re-read whole and
 * agrees with the reference reader, a watch limit the kernel enforces (or
 * the injection seam) falls back to polling and still reports the death,
 * and the engine writes nothing under the root.
 */
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, closeSync, mkdirSync, openSync, readFileSync, renameSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LiveEngine, runStatus, startLeg, type LiveChange, type RunReport } from '../src/index.js';
import { takeTurns } from '../src/live/engine.js';
import { needs } from './helpers/prereq.js';
import { fingerprint } from './helpers/tree.js';
import { cleanupTemp, killAll, ROOT, startHolder, tempDir, track, until, waitReady } from './helpers/lock-procs.js';
import { eventLine } from './helpers/events.js';
import { RELEASED } from './helpers/portable.js';

const LEG = join(ROOT, 'test', 'fixtures', 'leg.mjs');
const CHILD = join(ROOT, 'test', 'fixtures', 'live-engine.mjs');
const engines: LiveEngine[] = [];

afterEach(async () => {
  for (const e of engines.splice(0)) e.close();
  await killAll();
  cleanupTemp();
});

const line = (o: Record<string, unknown>) => eventLine(o, { ts: '2026-11-30T10:00:00Z' });

/**
 * Where there is no change notification (Windows: CONTRACT §5.8 rule 7) a settled run's change and a
 * new or vanished run are found by the safety pass's looks: these engines look every 50 ms there.
 */
const LOOKS = process.platform === 'win32' ? { safetyMs: 50 } : {};
/** The watch-limit tests: a limit on watches means nothing where there are none. */
const WATCHES = 'posix: change notification and its limit on watches (Windows has none: open legs are polled, CONTRACT §5.8 rule 7)';

/** An engine whose timers cannot find anything within a test: only notification (or polling, when asked) can. */
function engine(opts: ConstructorParameters<typeof LiveEngine>[0] = {}): { e: LiveEngine; changes: LiveChange[] } {
  const e = new LiveEngine({ safetyMs: 600_000, openRecheckMs: 600_000, ...opts });
  engines.push(e);
  const changes: LiveChange[] = [];
  e.subscribe((c) => changes.push(c));
  return { e, changes };
}

function statusOf(e: LiveEngine, dir: string): string | null | undefined {
  const r = e.get(dir);
  return r === undefined ? undefined : (r.report?.status ?? null);
}

async function startLegProc(dir: string) {
  const proc = spawn(process.execPath, [LEG, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  track(proc);
  await waitReady(proc);
  return proc;
}

/** The report fields every surface must agree on. */
function core(r: RunReport | null | undefined) {
  if (r == null) return r;
  return { status: r.status, liveness: r.liveness, reason: r.reason, warnings: r.warnings, hint: r.hint, nodes_total: r.nodes_total };
}

describe('LiveEngine', () => {
  it('notices a kill -9 of the holder through the lock file\'s close-write, agrees with runStatus, and writes nothing under the root', async (ctx) => {
    needs(ctx, 'linux: inotify');
    const root = tempDir('rw-live-');
    {
      using leg = startLeg(join(root, '20261130-100000-settled'));
      leg.finish('passed');
    }
    const liveDir = join(root, '20261130-110000-live');
    // A holder of the lock alone (the stream is written here), so that the
    // lock file's close is the only thing the kernel can announce at its death.
    mkdirSync(liveDir);
    writeFileSync(join(liveDir, 'events.jsonl'), line({ event: 'run_started' }) + line({ event: 'node_started', node_id: 'work' }));
    const { proc } = await startHolder(join(liveDir, 'resume.lock'));
    const before = fingerprint(root);
    const { e, changes } = engine({ root });
    await e.start();
    await until(() => statusOf(e, liveDir) === 'RUNNING');
    expect(statusOf(e, join(root, '20261130-100000-settled'))).toBe('PASS');
    const probesBefore = e.stats.probes;
    proc.kill('SIGKILL');
    await until(() => statusOf(e, liveDir) === 'ABANDONED');
    // The death was announced by the kernel, not found by a timer.
    expect(e.stats.lockWakeups).toBeGreaterThanOrEqual(1);
    expect(e.stats.polledProbes).toBe(0);
    expect(e.stats.probes).toBeGreaterThan(probesBefore);
    expect(e.stats.backend).toBe('inotify');
    expect(core(e.get(liveDir)?.report)).toEqual(core(runStatus(liveDir)));
    const abandoned = changes.filter((c) => c.type === 'run' && c.runId === '20261130-110000-live' && c.report?.status === 'ABANDONED');
    expect(abandoned).toHaveLength(1);
    e.close();
    expect(fingerprint(root)).toEqual(before);
  });

  it('reads each appended byte once, follows appends as events, and a settled run is not probed again', async () => {
    const root = tempDir('rw-live-');
    const dir = join(root, '20261130-120000-appends');
    const leg = startLeg(dir);
    const { e, changes } = engine({ root, events: true });
    await e.start();
    await until(() => statusOf(e, dir) === 'RUNNING');
    for (let i = 0; i < 20; i++) leg.append({ event: 'node_started', node_id: `n${i}` });
    const seen = () => changes.flatMap((c) => (c.type === 'events' ? c.events.map((x) => String(x.event['node_id'] ?? x.event.event)) : []));
    await until(() => seen().length === 21);
    expect(seen()).toEqual(['run_started', ...Array.from({ length: 20 }, (_, i) => `n${i}`)]);
    leg.finish('passed');
    leg.release();
    await until(() => statusOf(e, dir) === 'PASS');
    const size = statSync(join(dir, 'events.jsonl')).size;
    expect(e.stats.bytesRead).toBe(size);
    expect(e.stats.rereads).toBe(0);
    const probes = e.stats.probes;
    // A settled run costs nothing until one of its files changes.
    await new Promise((r) => setTimeout(r, 300));
    expect(e.stats.probes).toBe(probes);
  });

  it('a stream truncated and rewritten in place, shrunk, or replaced is re-read whole, not misfolded', async () => {
    const root = tempDir('rw-live-');
    const dir = join(root, '20261130-130000-rewritten');
    mkdirSync(dir);
    const events = join(dir, 'events.jsonl');
    writeFileSync(events, line({ event: 'run_started' }) + line({ event: 'run_finished', outcome: 'passed' }));
    const { e } = engine({ root, ...LOOKS });
    await e.start();
    await until(() => statusOf(e, dir) === 'PASS');
    // Rewritten in place (same inode, truncated by the open), longer than before:
    // read from the old offset, this would be half a line, skipped, and PASS kept.
    writeFileSync(events, line({ event: 'run_started', phase: 'planning' }) + line({ event: 'node_started', node_id: 'alpha' }) + line({ event: 'run_finished', outcome: 'failed' }));
    await until(() => statusOf(e, dir) === 'FAIL');
    expect(e.stats.rereads).toBeGreaterThanOrEqual(1);
    expect(core(e.get(dir)?.report)).toEqual(core(runStatus(dir)));
    expect(e.get(dir)?.report?.warnings).toEqual([]);
    // Shrunk: a paused leg, shorter than what was read.
    const rereads = e.stats.rereads;
    writeFileSync(events, line({ event: 'run_started' }) + line({ event: 'run_finished', outcome: 'paused' }));
    await until(() => statusOf(e, dir) === 'PAUSED');
    expect(e.stats.rereads).toBeGreaterThan(rereads);
    // Replaced by another file (a new inode), as a sync or restore would.
    writeFileSync(join(root, 'tmp-events'), line({ event: 'run_started' }) + line({ event: 'run_finished', outcome: 'passed' }));
    renameSync(join(root, 'tmp-events'), events);
    await until(() => statusOf(e, dir) === 'PASS');
    expect(core(e.get(dir)?.report)).toEqual(core(runStatus(dir)));
    // An append after all that is folded from the new offset.
    appendFileSync(events, line({ event: 'run_started' }));
    writeFileSync(join(dir, 'resume.lock'), ''); // an empty lock: the probe answers unknown, the leg reads as in flight
    await until(() => statusOf(e, dir) === 'RUNNING');
    expect(core(e.get(dir)?.report)).toEqual(core(runStatus(dir)));
  });

  it('runs appearing in and vanishing from the root are followed', async () => {
    const root = tempDir('rw-live-');
    const { e, changes } = engine({ root, ...LOOKS });
    await e.start();
    expect(e.runs()).toEqual([]);
    const dir = join(root, '20261130-140000-new');
    {
      using leg = startLeg(dir);
      leg.finish('failed');
    }
    await until(() => statusOf(e, dir) === 'FAIL');
    const { rmSync } = await import('node:fs');
    rmSync(dir, { recursive: true });
    await until(() => changes.some((c) => c.type === 'removed' && c.runId === '20261130-140000-new'));
    expect(e.get(dir)).toBeUndefined();
  });

  it('past the watch limit (injection seam) it says so once, polls the open legs, and still reports the death', async (ctx) => {
    needs(ctx, WATCHES);
    const root = tempDir('rw-live-');
    const dirs = ['20261130-150000-a', '20261130-150001-b'].map((n) => join(root, n));
    const procs = [];
    for (const d of dirs) procs.push(await startLegProc(d));
    // One watch: the root's. Neither run gets one. No holder-exit watches either
    // (holderWatches 0): a pidfd would announce the death before any poll, and
    // this test is about the poll.
    const { e, changes } = engine({ root, maxWatches: 1, pollMs: 20, holderWatches: 0 });
    await e.start();
    await until(() => dirs.every((d) => statusOf(e, d) === 'RUNNING'));
    expect(e.stats.unwatched).toBe(2);
    const notices = changes.filter((c) => c.type === 'notice');
    expect(notices).toHaveLength(1);
    expect((notices[0] as { message: string }).message).toContain('ENOSPC');
    procs[1].kill('SIGKILL');
    await until(() => statusOf(e, dirs[1]) === 'ABANDONED');
    expect(statusOf(e, dirs[0])).toBe('RUNNING');
    expect(e.stats.polledProbes).toBeGreaterThan(0);
    expect(e.stats.lockWakeups).toBe(0);
    expect(e.stats.exitWakeups).toBe(0);
    expect(changes.filter((c) => c.type === 'notice')).toHaveLength(1);
  });

  it('past the watch limit, an append to a polled run is announced (announceFiles) although its report does not change', async () => {
    const root = tempDir('rw-live-');
    const dir = join(root, '20261130-150500-polled');
    const proc = await startLegProc(dir);
    const { e, changes } = engine({ root, maxWatches: 1, pollMs: 20, holderWatches: 0, announceFiles: true });
    await e.start();
    await until(() => statusOf(e, dir) === 'RUNNING');
    expect(e.stats.unwatched).toBe(1);
    const before = e.get(dir)?.report;
    const told = (): number => changes.filter((c) => c.type === 'run' && c.runDir === dir).length;
    const n = told();
    appendFileSync(join(dir, 'events.jsonl'), line({ event: 'node_started', node_id: 'polled-node' }));
    await until(() => told() > n);
    expect(e.get(dir)?.report?.status).toBe('RUNNING');
    expect(core(e.get(dir)?.report)).toEqual(core(before));
    proc.kill('SIGKILL');
  });

  it('past the watch limit, the newest runs are the watched ones (the oldest are left to polling)', async (ctx) => {
    needs(ctx, WATCHES);
    const root = tempDir('rw-live-');
    const ids = ['20261130-150600-old', '20261130-150601-mid', '20261130-150602-new'];
    for (const id of ids) {
      mkdirSync(join(root, id));
      writeFileSync(join(root, id, 'events.jsonl'), line({ event: 'run_started' }) + line({ event: 'run_finished', outcome: 'passed' }));
    }
    // Two watches: the root's and one run's.
    const { e } = engine({ root, maxWatches: 2 });
    await e.start();
    expect(e.stats.unwatched).toBe(2);
    const [oldest, , newest] = ids.map((id) => join(root, id)) as [string, string, string];
    expect(statusOf(e, oldest)).toBe('PASS');
    expect(e.get(oldest)?.report?.nodes_total).toBeNull(); // no snapshot
    // A new snapshot, written as the reference writes it (temp file and rename, §3.1): a directory watch
    // tells it on every system, and nothing else looks before the safety pass. The oldest changes first;
    // by the time the newest's change is seen, a watched oldest would have been too.
    for (const dir of [oldest, newest]) {
      writeFileSync(join(dir, 'state.json.tmp'), JSON.stringify({ schema: 3, graph: { name: 'g', nodes: [{ id: 'a' }, { id: 'b' }] }, nodes: {} }));
      renameSync(join(dir, 'state.json.tmp'), join(dir, 'state.json'));
    }
    await until(() => e.get(newest)?.report?.nodes_total === 2);
    expect(e.get(oldest)?.report?.nodes_total).toBeNull(); // no snapshot
  });

  it('past the watch limit the kernel enforces (a user namespace with max_inotify_watches lowered) it falls back and still reports the death', async (ctx) => {
    needs(ctx, 'userns');
    const root = tempDir('rw-live-');
    const dirs = ['20261130-160000-a', '20261130-160001-b', '20261130-160002-c'].map((n) => join(root, n));
    const procs = [];
    for (const d of dirs) procs.push(await startLegProc(d));
    // Two watches allowed in the namespace: the root's and one run's; the kernel refuses the third.
    const child = spawn('unshare', ['-Ur', 'sh', '-c', 'echo 2 > /proc/sys/user/max_inotify_watches && exec "$0" "$@"', process.execPath, CHILD, root, '20'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    track(child);
    const lines: Record<string, unknown>[] = [];
    let buf = '';
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const l = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (l.startsWith('{')) lines.push(JSON.parse(l) as Record<string, unknown>);
      }
    });
    await waitReady(child);
    const status = (id: string) => [...lines].reverse().find((l) => l['type'] === 'run' && l['runId'] === id)?.['status'];
    await until(() => dirs.every((d) => status(d.slice(root.length + 1)) === 'RUNNING'));
    const notices = lines.filter((l) => l['type'] === 'notice');
    expect(notices).toHaveLength(1);
    expect(String(notices[0]['message'])).toContain('ENOSPC');
    for (const p of procs) p.kill('SIGKILL');
    await until(() => dirs.every((d) => status(d.slice(root.length + 1)) === 'ABANDONED'));
    child.stdin.write('\n');
    await until(() => lines.some((l) => l['type'] === 'stats'));
    const stats = lines.find((l) => l['type'] === 'stats')!['stats'] as Record<string, number>;
    expect(stats['unwatched']).toBe(2);
    expect(stats['polledProbes']).toBeGreaterThan(0);
    expect(stats['lockWakeups']).toBe(1); // the one watched run was told
    child.stdin.end();
  });

  it('the safety re-check compares every open run on each pass and settled, watched runs in turns', async (ctx) => {
    needs(ctx, WATCHES);
    const root = tempDir('rw-live-');
    const settled = Array.from({ length: 7 }, (_, i) => join(root, `20261130-16000${i}-settled`));
    for (const d of settled) {
      mkdirSync(d);
      writeFileSync(join(d, 'events.jsonl'), line({ event: 'run_started' }) + line({ event: 'run_finished', outcome: 'passed' }));
    }
    const open = join(root, '20261130-170000-open');
    await startLegProc(open);
    const { e } = engine({ root, safetyMs: 25, safetySettledPerPass: 3 });
    await e.start();
    await until(() => statusOf(e, open) === 'RUNNING' && settled.every((d) => statusOf(e, d) === 'PASS'));
    const passes0 = e.stats.safetyPasses;
    const compared0 = e.stats.safetyCompared;
    await until(() => e.stats.safetyPasses >= passes0 + 9);
    const passes = e.stats.safetyPasses - passes0;
    // Each pass: the one open run, and the settled ones among a turn of 3 of
    // the 8 runs, the turns following each other around them. Over P passes
    // the turns cover 3P consecutive places, the open run's ⌊3P/8⌋ or ⌈3P/8⌉
    // times; a turn that wrapped short (or took every run) would not fit.
    const compared = e.stats.safetyCompared - compared0;
    expect(compared).toBeGreaterThanOrEqual(passes + 3 * passes - Math.ceil((3 * passes) / 8));
    expect(compared).toBeLessThanOrEqual(passes + 3 * passes - Math.floor((3 * passes) / 8));
    expect(statusOf(e, open)).toBe('RUNNING');
  });

  it('takes turns so that every settled run is compared once in each ceil(total / budget) passes', () => {
    for (const [total, budget] of [[7, 3], [100_000, 10_000], [5, 5], [4, 10], [10, 1], [0, 3]] as const) {
      const seen = new Map<number, number>();
      let cursor = 0;
      const turns = Math.ceil(total / budget) || 1;
      for (let t = 0; t < turns * 2; t++) {
        const { ranges, next } = takeTurns(total, cursor, budget);
        let taken = 0;
        for (const [from, to] of ranges) {
          expect(from).toBeGreaterThanOrEqual(0);
          expect(to).toBeLessThanOrEqual(total);
          for (let k = from; k < to; k++) seen.set(k, (seen.get(k) ?? 0) + 1);
          taken += to - from;
        }
        expect(taken).toBe(Math.min(total, budget));
        cursor = next;
      }
      // Over two full rotations, each run was taken twice, or at least twice when the budget does not divide the total.
      for (let k = 0; k < total; k++) expect(seen.get(k) ?? 0).toBeGreaterThanOrEqual(2);
    }
  });

  it("an overflow of the kernel's event queue is noticed: every run is looked at again, a turn at a time", async (ctx) => {
    needs(ctx, "linux: inotify's event queue and its max_queued_events (kqueue has no queue to overflow)");
    const root = tempDir('rw-live-');
    const runs = Array.from({ length: 48 }, (_, i) => join(root, `20261130-19${String(i).padStart(4, '0')}-settled`));
    for (const d of runs) {
      mkdirSync(d);
      writeFileSync(join(d, 'events.jsonl'), line({ event: 'run_started' }) + line({ event: 'run_finished', outcome: 'passed' }));
      writeFileSync(join(d, 'resume.lock'), RELEASED);
    }
    // The queue is overflowed at the machine's own limit, not a lowered one: fs.inotify.max_queued_events
    // is one machine-wide value (not per user namespace, unlike /proc/sys/user/max_inotify_*: an
    // unprivileged `unshare -Ur` may not write it), and lowering it would hit every other test's
    // notifier running beside this one.
    const limit = Number(readFileSync('/proc/sys/fs/inotify/max_queued_events', 'utf8'));
    expect(limit, 'a limit this test can fill in a moment').toBeLessThanOrEqual(1 << 20);
    const { e } = engine({ root, runsPerTurn: 8 });
    await e.start();
    await until(() => runs.every((d) => statusOf(e, d) === 'PASS'));
    let turn = 0;
    let ticking = true;
    const tick = (): void => {
      turn++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const turnOf = new Map<string, number>();
    e.subscribe((c) => {
      if (c.type === 'run' && c.report?.status === 'ABANDONED' && !turnOf.has(c.runDir)) turnOf.set(c.runDir, turn);
    });
    // While this thread holds the event loop (the notifier is read on it): first more events than the
    // queue holds (a write to an open scratch file in each run in turn, so no two in a row are alike and the
    // kernel merges none), then a new leg in every run, whose events the kernel then drops, queueing
    // an overflow instead. The safety re-check is 10 min away (engine()), so only the overflow's look
    // at every run can find these legs.
    const scratch = runs.map((d) => openSync(join(d, 'scratch'), 'a'));
    for (let i = 0; i < limit + 1000; i++) writeSync(scratch[i % scratch.length], 'x'); // an IN_MODIFY each
    for (const fd of scratch) closeSync(fd);
    for (const d of runs) appendFileSync(join(d, 'events.jsonl'), line({ event: 'run_started' }));
    const before = fingerprint(root);
    await until(() => runs.every((d) => statusOf(e, d) === 'ABANDONED'));
    ticking = false;
    expect(e.stats.overflows).toBeGreaterThan(0);
    // 48 runs at 8 per turn: not all in one turn (the old flush took every marked run at once).
    expect(new Set(turnOf.values()).size).toBeGreaterThanOrEqual(6);
    for (const d of runs) expect(core(e.get(d)?.report)).toEqual(core(runStatus(d)));
    expect(fingerprint(root)).toEqual(before);
  });

  it('finds, in turns, a change the notifier never announces (a stream appended to beneath a FUSE mount)', async (ctx) => {
    needs(ctx, 'root', 'mount', 'fuse', 'bindfs');
    const base = tempDir('rw-live-fuse-');
    const src = join(base, 'src');
    const mnt = join(base, 'mnt');
    mkdirSync(src);
    mkdirSync(mnt);
    const ids = Array.from({ length: 6 }, (_, i) => `20261130-18000${i}-settled`);
    for (const id of ids) {
      mkdirSync(join(src, id));
      writeFileSync(join(src, id, 'events.jsonl'), line({ event: 'run_started' }) + line({ event: 'run_finished', outcome: 'passed' }));
    }
    const mounted = spawnSync('bindfs', [src, mnt], { encoding: 'utf8', timeout: 60_000 });
    if (mounted.status !== 0) throw new Error(`bindfs ${src} ${mnt} failed: ${mounted.stderr}`);
    try {
      // First without the safety re-check: the change below is never told.
      const quiet = engine({ root: mnt });
      await quiet.e.start();
      await until(() => ids.every((id) => statusOf(quiet.e, join(mnt, id)) === 'PASS'));
      const { e } = engine({ root: mnt, safetyMs: 25, safetySettledPerPass: 2 });
      await e.start();
      await until(() => ids.every((id) => statusOf(e, join(mnt, id)) === 'PASS'));
      // The pass count when the change is told (the listener runs as the run is derived).
      let passesAtFail: number | undefined;
      e.subscribe((c) => {
        if (c.type === 'run' && c.runId === ids[4] && c.report?.status === 'FAIL') passesAtFail ??= e.stats.safetyPasses;
      });
      const passes0 = e.stats.safetyPasses;
      // Written to the directory beneath the mount: FUSE tells no inotify watch on the mount of it.
      appendFileSync(join(src, ids[4], 'events.jsonl'), line({ event: 'run_started' }) + line({ event: 'run_finished', outcome: 'failed' }));
      await until(() => passesAtFail !== undefined);
      // Found by a pass that compared 2 of the 6: at most 3 passes after the write, plus the one under way
      // at the write, plus one that may begin between the comparing slice and the derivation.
      expect(passesAtFail! - passes0).toBeLessThanOrEqual(5);
      expect(passesAtFail! - passes0).toBeGreaterThanOrEqual(1);
      expect(statusOf(e, join(mnt, ids[4]))).toBe('FAIL');
      await new Promise((r) => setTimeout(r, 200));
      expect(statusOf(quiet.e, join(mnt, ids[4])), 'the notifier alone never saw it').toBe('PASS');
      quiet.e.close();
      e.close();
    } finally {
      for (const x of engines.splice(0)) x.close();
      spawnSync('fusermount', ['-u', mnt]);
      spawnSync('umount', [mnt]);
    }
  });
});
