/**
 * followRun, the follower behind `watch`, as a library call, on the live
 * engine: it replays and follows real legs, yields each status change, ends
 * at the last leg's finish or with a final ABANDONED status when the leg's
 * process is killed -9, honours its AbortSignal (closing the engine's kernel
 * watches), and closes the stream when the loop is left early.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AbortError, followRun, startLeg, StreamError, type FollowItem } from '../src/index.js';
import { sharedDirWatcher } from '../src/kernel/notify.js';
import { FOLLOW_STATS } from '../src/live/follow.js';
import { cleanupTemp, killAll, ROOT, startHolder, tempDir, track, until, waitReady } from './helpers/lock-procs.js';
import { encodeEvents, eventLine } from './helpers/events.js';
import { needs } from './helpers/prereq.js';
import { systemFacts } from '../src/kernel/system.js';

afterEach(async () => {
  await killAll();
  cleanupTemp();
});

const LEG = join(ROOT, 'test', 'fixtures', 'leg.mjs');
const APPENDER = join(ROOT, 'test', 'fixtures', 'leg-append.mjs');
const line = (o: Record<string, unknown>) => eventLine(o, { ts: '2026-11-30T10:00:00Z' });

function names(items: FollowItem[]): string[] {
  return items.map((i) =>
    i.kind === 'event'
      ? `${i.event.event}${i.event.node_id ? ':' + i.event.node_id : ''}`
      : i.kind === 'status'
        ? `${i.final ? 'final' : 'status'}:${i.report.status}/${i.report.liveness}`
        : i.kind,
  );
}

/** Kernel watches held by this process's inotify descriptors (from /proc/self/fdinfo). */
function inotifyWatches(): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) !== 'anon_inode:inotify') continue;
      n += readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8').split('\n').filter((l) => l.startsWith('inotify wd:')).length;
    } catch {
      /* closed meanwhile */
    }
  }
  return n;
}

/** Descriptors of this process open on `path` (by device and inode, through /dev/fd, which linux and darwin both have). */
function openOn(path: string): number {
  const want = statSync(path);
  let n = 0;
  for (const fd of readdirSync('/dev/fd')) {
    try {
      const st = statSync(`/dev/fd/${fd}`);
      if (st.dev === want.dev && st.ino === want.ino) n++;
    } catch {
      /* closed meanwhile */
    }
  }
  return n;
}

/**
 * The kernel watches this process holds of the run directory `dir`: where each watch is a
 * descriptor (kqueue, darwin), those open on `dir`; elsewhere (inotify) every watch of the
 * process, which only `dir`'s follow adds to or takes from here.
 */
function dirWatches(dir: string): number {
  return systemFacts().watchHoldsDescriptor ? openOn(dir) : inotifyWatches();
}

describe('followRun', () => {
  it('replays and follows a live library leg to its finish, then ends (until leg-end)', async () => {
    const dir = join(tempDir('rw-follow-'), 'live');
    const leg = startLeg(dir);
    leg.append({ event: 'node_started', node_id: 'a' });
    const seen: FollowItem[] = [];
    const following = (async () => {
      for await (const item of followRun(dir, { pollMs: 5 })) seen.push(item);
    })();
    await until(() => seen.length === 3);
    leg.append({ event: 'node_passed', node_id: 'a' });
    leg.append({ event: 'node_started', node_id: 'b' });
    leg.finish('passed');
    await following;
    expect(names(seen)).toEqual(['run_started', 'node_started:a', 'status:RUNNING/held', 'node_passed:a', 'node_started:b', 'run_finished', 'final:PASS/null']);
    const offsets = seen.flatMap((i) => (i.kind === 'event' ? [i.offset] : []));
    expect(offsets[0]).toBe(0);
    expect([...offsets].sort((x, y) => x - y)).toEqual(offsets);
  });

  it('a settled run: replays everything and ends', async () => {
    const dir = join(tempDir('rw-follow-'), 'done');
    {
      using leg = startLeg(dir);
      leg.append({ event: 'node_started', node_id: 'a' });
      leg.append({ event: 'node_failed', node_id: 'a', detail: 'no' });
      leg.finish('failed');
    }
    const seen: FollowItem[] = [];
    for await (const item of followRun(dir)) seen.push(item);
    expect(names(seen)).toEqual(['run_started', 'node_started:a', 'node_failed:a', 'run_finished', 'final:FAIL/null']);
  });

  it('ends with a final ABANDONED status when the leg\'s process is killed -9', async () => {
    const dir = join(tempDir('rw-follow-'), 'dies');
    const proc = spawn(process.execPath, [LEG, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    track(proc);
    await waitReady(proc);
    const seen: FollowItem[] = [];
    const following = (async () => {
      for await (const item of followRun(dir, { pollMs: 5, recheckMs: 20 })) seen.push(item);
    })();
    await until(() => seen.length === 3);
    proc.kill('SIGKILL');
    await following;
    expect(names(seen)).toEqual(['run_started', 'node_started:work', 'status:RUNNING/held', 'final:ABANDONED/free']);
    const last = seen[seen.length - 1] as Extract<FollowItem, { kind: 'status' }>;
    expect(last.report.status).toBe('ABANDONED');
    expect(last.report.hint).toContain('never reported an end');
  });

  it('a real leg that appends and is killed -9: every event as appended, then the status change to ABANDONED, last; an abort ends a second follower and releases its watch', async () => {
    const dir = join(tempDir('rw-follow-'), 'appends');
    const proc = spawn(process.execPath, [APPENDER, dir], { stdio: ['pipe', 'pipe', 'pipe'] });
    track(proc);
    await waitReady(proc);
    let answers = '';
    proc.stdout.on('data', (d: Buffer) => (answers += d.toString()));
    const base = dirWatches(dir);
    // Where the kernel tells changes, re-check intervals longer than the test: only the kernel's word can end it
    // in time. Where it tells none (Windows: CONTRACT §5.8 rule 7), the open leg's poll is the only word there is.
    const notified = sharedDirWatcher() !== undefined;
    const cadence = notified ? { recheckMs: 600_000, pollMs: 600_000 } : { recheckMs: 600_000, pollMs: 20 };
    const seen: FollowItem[] = [];
    const following = (async () => {
      for await (const item of followRun(dir, cadence)) seen.push(item);
    })();
    // A second follower of the same run, aborted mid-follow.
    const ac = new AbortController();
    const other: FollowItem[] = [];
    const aborted = (async () => {
      for await (const item of followRun(dir, { signal: ac.signal, until: 'forever' })) other.push(item);
    })().then(() => undefined, (x: unknown) => x);
    await until(() => seen.length === 2 && other.length === 2);
    expect(names(seen)).toEqual(['run_started', 'status:RUNNING/held']);
    // Two followers, one process-wide notifier: one kernel watch on the run directory.
    if (notified) expect(dirWatches(dir)).toBe(base + 1);
    for (const node of ['a', 'b']) {
      proc.stdin.write(`${node}\n`);
      await until(() => answers.includes(`ok ${node}`));
      await until(() => seen.some((i) => i.kind === 'event' && i.event.event === 'node_passed' && i.event.node_id === node));
      await until(() => other.some((i) => i.kind === 'event' && i.event.event === 'node_passed' && i.event.node_id === node));
    }
    ac.abort();
    const e = await aborted;
    expect(e).toBeInstanceOf(AbortError);
    expect(names(other.filter((i) => i.kind === 'event'))).toEqual(['run_started', 'node_started:a', 'node_passed:a', 'node_started:b', 'node_passed:b']);
    if (notified) expect(dirWatches(dir)).toBe(base + 1); // still the first follower's
    proc.kill('SIGKILL');
    await following;
    expect(names(seen)).toEqual(['run_started', 'status:RUNNING/held', 'node_started:a', 'node_passed:a', 'node_started:b', 'node_passed:b', 'final:ABANDONED/free']);
    const last = seen[seen.length - 1] as Extract<FollowItem, { kind: 'status' }>;
    expect(last.report.hint).toContain('never reported an end');
    // Both followers gone: no watch of this run is left.
    if (notified) expect(dirWatches(dir)).toBe(base);
  });

  it('is told of the death: with a re-check interval longer than the test, a kill -9 still ends it, through the lock file\'s close-write', async (ctx) => {
    needs(ctx, 'linux: the lock file\'s inotify close-write');
    const dir = join(tempDir('rw-follow-'), 'told');
    mkdirSync(dir);
    writeFileSync(join(dir, 'events.jsonl'), line({ event: 'run_started' }) + line({ event: 'node_started', node_id: 'work' }));
    const holder = await startHolder(join(dir, 'resume.lock'));
    const seen: FollowItem[] = [];
    const before = FOLLOW_STATS.lockWakeups;
    const following = (async () => {
      // Neither the poll nor the idle re-check could find the death within the test's bounds.
      for await (const item of followRun(dir, { pollMs: 600_000, recheckMs: 600_000 })) seen.push(item);
    })();
    await until(() => seen.length === 3);
    holder.proc.kill('SIGKILL');
    await following;
    expect(names(seen)).toEqual(['run_started', 'node_started:work', 'status:RUNNING/held', 'final:ABANDONED/free']);
    expect(FOLLOW_STATS.lockWakeups).toBeGreaterThan(before);
  });

  it('reports skipped and newer-schema lines, once for the newer schema, and keeps going', async () => {
    const dir = join(tempDir('rw-follow-'), 'odd');
    await startHolder(join(dir, 'resume.lock'));
    writeFileSync(join(dir, 'events.jsonl'), line({ event: 'run_started' }) + encodeEvents(['garbage', { schema: 4, event: 'x' }, { schema: 4, event: 'y' }]));
    const seen: FollowItem[] = [];
    const following = (async () => {
      for await (const item of followRun(dir, { pollMs: 5 })) seen.push(item);
    })();
    await until(() => seen.length === 3);
    appendFileSync(join(dir, 'events.jsonl'), line({ event: 'run_finished', outcome: 'passed' }));
    await following;
    expect(names(seen)).toEqual(['run_started', 'skipped', 'newer-schema', 'run_finished']);
    const skipped = seen[1] as Extract<FollowItem, { kind: 'skipped' }>;
    expect(skipped.offset).toBe(line({ event: 'run_started' }).length);
  });

  it('until forever follows past a leg\'s finish into the next leg; an abort ends it with ABORT_ERR', async () => {
    const dir = join(tempDir('rw-follow-'), 'legs');
    {
      using leg = startLeg(dir);
      leg.finish('passed');
    }
    const ac = new AbortController();
    const seen: FollowItem[] = [];
    const following = (async () => {
      for await (const item of followRun(dir, { until: 'forever', signal: ac.signal, pollMs: 5 })) seen.push(item);
    })();
    await until(() => seen.length === 3);
    expect(names(seen)).toEqual(['run_started', 'run_finished', 'status:PASS/null']); // not final: it goes on
    const watching = dirWatches(dir);
    {
      using leg = startLeg(dir);
      leg.append({ event: 'node_started', node_id: 'second' });
      leg.finish('passed');
    }
    await until(() => seen.filter((i) => i.kind === 'event').length === 5);
    ac.abort();
    const e = await following.then(() => undefined, (x: unknown) => x);
    expect(e).toBeInstanceOf(AbortError);
    expect((e as AbortError).code).toBe('ABORT_ERR');
    const events = names(seen.filter((i) => i.kind === 'event'));
    expect(events).toEqual(['run_started', 'run_finished', 'run_started', 'node_started:second', 'run_finished']);
    // Whatever statuses it passed through on the way, it never said a final one.
    expect(seen.some((i) => i.kind === 'status' && i.final)).toBe(false);
    expect(openOn(join(dir, 'events.jsonl'))).toBe(0);
    // The abort closed the engine's kernel watch on the run directory.
    if (sharedDirWatcher() !== undefined) {
      expect(watching).toBeGreaterThan(0);
      expect(dirWatches(dir)).toBe(watching - 1);
    }
  });

  it('leaving the loop early stops the follower and closes the stream; a slow consumer still gets every line in order', async () => {
    const dir = join(tempDir('rw-follow-'), 'long');
    mkdirSync(dir);
    await startHolder(join(dir, 'resume.lock'));
    let text = line({ event: 'run_started' });
    for (let i = 0; i < 3000; i++) text += line({ event: 'node_started', node_id: `n${i}` });
    writeFileSync(join(dir, 'events.jsonl'), text);
    const events = join(dir, 'events.jsonl');
    expect(text.length).toBeGreaterThan(3 * 64 * 1024);
    let n = 0;
    let readAt10 = 0;
    const before = FOLLOW_STATS.bytesRead;
    const watching = dirWatches(dir);
    for await (const item of followRun(dir, { pollMs: 5 })) {
      expect(item.kind).toBe('event');
      if (item.kind === 'event' && n > 0) expect(item.event.node_id).toBe(`n${n - 1}`);
      n++;
      if (n === 10) readAt10 = FOLLOW_STATS.bytesRead - before;
      if (n % 500 === 0) await new Promise((r) => setTimeout(r, 1)); // a consumer slower than the reader
      if (n === 3001) break;
    }
    expect(n).toBe(3001);
    // Paced: ten lines taken, one 64 KiB chunk read, not the whole stream.
    expect(readAt10).toBeGreaterThan(0);
    expect(readAt10).toBeLessThanOrEqual(64 * 1024);
    expect(openOn(events)).toBe(0);
    expect(dirWatches(dir)).toBe(watching);
  });

  it('a stream that becomes unreadable ends the follow with its StreamError', async () => {
    const dir = join(tempDir('rw-follow-'), 'shrinks');
    mkdirSync(dir);
    await startHolder(join(dir, 'resume.lock'));
    writeFileSync(join(dir, 'events.jsonl'), line({ event: 'run_started' }) + line({ event: 'node_started', node_id: 'a' }));
    const seen: FollowItem[] = [];
    const following = (async () => {
      for await (const item of followRun(dir, { pollMs: 5 })) seen.push(item);
    })();
    await until(() => seen.length === 3);
    writeFileSync(join(dir, 'events.jsonl'), ''); // truncated in place: it may only ever grow
    const e = await following.then(() => undefined, (x: unknown) => x);
    expect(e).toBeInstanceOf(StreamError);
    expect((e as StreamError).code).toBe('EREAD');
    expect((e as StreamError).message).toContain('shrank');
  });

  it('a stream replaced by another file ends the follow with a StreamError that says so', async () => {
    const dir = join(tempDir('rw-follow-'), 'replaced');
    mkdirSync(dir);
    await startHolder(join(dir, 'resume.lock'));
    writeFileSync(join(dir, 'events.jsonl'), line({ event: 'run_started' }));
    const seen: FollowItem[] = [];
    const following = (async () => {
      for await (const item of followRun(dir, { pollMs: 5 })) seen.push(item);
    })();
    await until(() => seen.length === 2);
    writeFileSync(join(dir, 'other'), line({ event: 'run_started' }) + line({ event: 'node_started', node_id: 'x' }));
    renameSync(join(dir, 'other'), join(dir, 'events.jsonl'));
    const e = await following.then(() => undefined, (x: unknown) => x);
    expect(e).toBeInstanceOf(StreamError);
    expect((e as StreamError).message).toContain('replaced');
  });

  it('a line over the 1 MiB cap ends the follow with ELINETOOLONG, after every whole line before it', async () => {
    const dir = join(tempDir('rw-follow-'), 'long-line');
    mkdirSync(dir);
    await startHolder(join(dir, 'resume.lock'));
    writeFileSync(join(dir, 'events.jsonl'), line({ event: 'run_started' }) + line({ event: 'node_started', node_id: 'a' }) + 'x'.repeat(1024 * 1024 + 10) + '\n');
    const seen: FollowItem[] = [];
    const e = await (async () => {
      for await (const item of followRun(dir, { pollMs: 5 })) seen.push(item);
    })().then(() => undefined, (x: unknown) => x);
    expect(e).toBeInstanceOf(StreamError);
    expect((e as StreamError).code).toBe('ELINETOOLONG');
    expect(names(seen.filter((i) => i.kind === 'event'))).toEqual(['run_started', 'node_started:a']);
  });

  it('rejects bad options before reading anything', async () => {
    const dir = tempDir('rw-follow-');
    await expect(followRun(dir, { until: 'never' as never }).next()).rejects.toBeInstanceOf(TypeError);
    await expect(followRun(dir, { pollMs: 0 }).next()).rejects.toBeInstanceOf(RangeError);
    await expect(followRun(dir, { signal: AbortSignal.abort() }).next()).rejects.toBeInstanceOf(AbortError);
  });
});
