/**
 * The bench's building blocks, exercised for correctness only: the C floor
 * answers like the probe, every probe method reads a live holder as alive
 * and a released lock as gone, the churn judge counts exactly the impossible
 * answers, a small pollers matrix runs with real processes and gives no
 * wrong answer from probeLock, and the report keeps the "runs at scale"
 * section it does not own. No timing is asserted anywhere: performance
 * claims live in bench/RESULTS.md as ratios.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// The bench is plain ESM JavaScript over dist/ (npm test builds dist first).
// @ts-expect-error untyped JS module (bench/ is plain ESM JavaScript)
import { buildC, buildFloor, runFloor } from '../bench/lib/floor.js';
// @ts-expect-error untyped JS module (bench/ is plain ESM JavaScript)
import { smallRun } from '../bench/lib/runs.js';
// @ts-expect-error untyped JS module (bench/ is plain ESM JavaScript)
import { runCost } from '../bench/cost.js';
// @ts-expect-error untyped JS module (bench/ is plain ESM JavaScript)
import { FREE, HELD, judgeChurn, KINDS, runPollers, SETTINGS } from '../bench/pollers.js';
// @ts-expect-error untyped JS module (bench/ is plain ESM JavaScript)
import { extractRunsSection, RUNS_HEADING } from '../bench/lib/report.js';
// @ts-expect-error untyped JS module (bench/ is plain ESM JavaScript)
import { pollersSvg } from '../bench/lib/svg.js';
// @ts-expect-error untyped JS module (bench/ is plain ESM JavaScript)
import { killAll } from '../bench/lib/procs.js';
import { acquireLock } from '../src/index.js';
import { needs } from './helpers/prereq.js';
import { tree } from './helpers/tree.js';

const temps: string[] = [];
function temp(): string {
  const d = mkdtempSync(join(tmpdir(), 'rw-'));
  temps.push(d);
  return d;
}

afterAll(() => {
  killAll();
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

describe('the C floor', () => {
  it('compiles and answers granted on a free lock, contended on a held one, and fails on a missing file', (ctx) => {
    needs(ctx, 'cc');
    const { binary } = buildFloor();
    expect(existsSync(binary)).toBe(true);
    const lockPath = join(temp(), 'run', 'resume.lock');
    acquireLock(lockPath).release();
    const free = runFloor(binary, lockPath, 50);
    expect(free.last).toBe('granted');
    expect(free.iterations).toBe(50);
    expect(free.ns_per_iter).toBeGreaterThan(0);
    // A lock held through another open file description contends, as across processes.
    const held = acquireLock(lockPath);
    try {
      expect(runFloor(binary, lockPath, 50).last).toBe('contended');
    } finally {
      held.release();
    }
    expect(() => runFloor(binary, join(temp(), 'nope', 'resume.lock'), 10)).toThrow(/floor failed/);
  });
});

describe("the listing's floor (bench/list-floor.c)", () => {
  it('visits every run, counts the open legs, and changes nothing under the root', (ctx) => {
    needs(ctx, 'cc');
    const { binary } = buildC('list-floor');
    const root = temp();
    // smallRun: every tenth run (i % 10 === 0) has an open last leg.
    for (let i = 0; i < 25; i++) smallRun(root, i);
    const before = tree(root);
    const sync = JSON.parse(execFileSync(binary, [root, 'sync'], { encoding: 'utf8' })) as { runs: number; open_legs: number; seconds: number };
    expect(sync.runs).toBe(25);
    expect(sync.open_legs).toBe(3);
    expect(sync.seconds).toBeGreaterThan(0);
    const uring = JSON.parse(execFileSync(binary, [root, 'uring'], { encoding: 'utf8' })) as { runs?: number; unavailable?: string };
    // io_uring may be switched off (kernel.io_uring_disabled, a seccomp filter): then it says so.
    if (uring.unavailable === undefined) expect(uring.runs).toBe(25);
    else expect(uring.unavailable.length).toBeGreaterThan(0);
    expect(tree(root)).toEqual(before);
    expect(() => execFileSync(binary, [root, 'other'], { stdio: 'pipe' })).toThrow();
  });
});

describe('probe cost methods', () => {
  it('every method reads the live holder process as alive and the released lock as gone', async (ctx) => {
    needs(ctx, 'cc', "linux: the bench's composed probes judge the filesystem by linux's f_type magics");
    const { binary } = buildFloor();
    const cost = await runCost({ floorBin: binary, reps: 1, chunkMs: 1 });
    const ids = cost.rows.map((r: { id: string }) => r.id);
    expect(ids).toEqual(['floor', 'floor-same', 'probeLock', 'probeLockAt', 'composed-sh', 'composed-ex', 'proper-lockfile', 'fs-ext', 'kill', 'pidfile']);
    for (const row of cost.rows) {
      if (row.id === 'floor' || row.id === 'floor-same') {
        expect([row.free.answer, row.held.answer]).toEqual(['granted', 'contended']);
      } else {
        expect([row.id, row.free.answer, row.held.answer]).toEqual([row.id, 'free', 'held']);
      }
      // One timed chunk per repetition (the floor runs between every two methods).
      if (row.id !== 'floor') expect(row.free.raw).toHaveLength(1);
      expect(Number.isFinite(row.held.ratio)).toBe(true);
    }
  });
});

describe('judging churn probes against the leg', () => {
  // Leg spans: not held [0, 100], held [120, 200], not held [210, 300].
  const legs = Float64Array.from([0, 0, 100, 1, 120, 200, 0, 210, 300]);

  it('counts a free answer wholly inside a held span, and a held answer wholly inside a not-held span', () => {
    // Probe i ran inside [times[i-1], times[i]]; the first starts at 10.
    // [10,50] not held: HELD is wrong. [50,125] spans the acquire: not judged.
    // [125,130] held: FREE is wrong. [130,190] held: HELD is right.
    // [190,205] and [205,250] span the release: not judged. [250,260] not held: HELD is wrong.
    const times = Float64Array.from([50, 125, 130, 190, 205, 250, 260]);
    const answers = Uint8Array.from([HELD, FREE, FREE, HELD, FREE, HELD, HELD]);
    expect(judgeChurn(times, answers, 10, legs)).toEqual({ judged: 4, wrongFree: 1, wrongHeld: 2 });
  });

  it('does not judge a probe that overlaps an acquire or a release, whatever it answered', () => {
    const times = Float64Array.from([110, 205, 215, 260]);
    const answers = Uint8Array.from([FREE, FREE, HELD, FREE]);
    expect(judgeChurn(times, answers, 10, legs)).toEqual({ judged: 1, wrongFree: 0, wrongHeld: 0 });
  });
});

describe('a small pollers matrix with real processes', () => {
  it('runs every setting and kind, and probeLock answers only what is possible', async (ctx) => {
    needs(ctx, "linux: the bench's exclusive probe judges the filesystem by linux's f_type magics");
    // A poller or leg that gets no CPU before its window closes makes no probe at all; a
    // window of a second (not 150 ms) leaves a loaded machine room to schedule every one.
    const cells = await runPollers({ Ps: [2], windowMs: 1000, reps: 1 });
    expect(cells).toHaveLength(SETTINGS.length * KINDS.length);
    for (const c of cells) {
      expect(c.probes).toBeGreaterThan(0);
      expect(c.held + c.free + c.unknown).toBe(c.probes);
      if (c.setting === 'held') expect(c.held).toBe(c.probes);
      if (c.kind === 'shared') {
        expect(c.wrong).toBe(0);
        if (c.setting === 'free') expect(c.free).toBe(c.probes);
      }
      if (c.setting.startsWith('churn')) {
        expect(c.leg.attempts).toBeGreaterThan(0);
        expect(c.leg.refused).toBeLessThanOrEqual(c.leg.attempts);
      }
    }
    const svg = pollersSvg({ cells, settings: SETTINGS, kinds: KINDS, caption: 'smoke' });
    expect(svg.startsWith('<svg')).toBe(true);
    // One line per setting and kind in each of the two panels.
    expect(svg.match(/<path /g)).toHaveLength(2 * SETTINGS.length * KINDS.length);
  }, 600_000);
});

describe('the report', () => {
  it('carries over the "runs at scale" section it does not own, up to the next section', () => {
    const md = `# t\n\n## 3. Many pollers\n\nx\n\n${RUNS_HEADING}\n\ntheirs\n\n### sub\n\nmore\n\n## Method\n\nmine\n`;
    expect(extractRunsSection(md)).toBe(`${RUNS_HEADING}\n\ntheirs\n\n### sub\n\nmore`);
    expect(extractRunsSection('# t\n\n## other\n')).toBeUndefined();
  });
});
