/**
 * A wall clock stepped back (by a person, or by NTP) must not change what
 * `watch` and `exec` decide: every interval and deadline runs on the
 * monotonic clock (src/kernel/clock.ts).
 *
 * The step is real for the process under test: Debian's libfaketime is
 * preloaded into it and re-reads its offset from a file on every call
 * (FAKETIME_NO_CACHE), so rewriting the file steps that process's
 * CLOCK_REALTIME mid-run, while FAKETIME_DONT_FAKE_MONOTONIC leaves
 * CLOCK_MONOTONIC alone, as an NTP step does. A witness Node process under
 * the same environment samples both clocks, so each test also proves that
 * the wall clock it meant to step really moved for Node and the monotonic
 * one did not (libfaketime stepping nothing would make these tests pass
 * for nothing).
 *
 * No timing is asserted: the only bound is a generous one (60 s) that tells
 * "exits" from "spins or waits for ever" — without the monotonic clock the
 * watch waits an hour and the exec spins an hour.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { start, type Ran, type Running } from './helpers/exec-procs.js';
import { cleanupTemp, CLI, killAll, startHolder, tempDir, track, until } from './helpers/lock-procs.js';
import { libfaketime, needs } from './helpers/prereq.js';

afterEach(async () => {
  await killAll();
  cleanupTemp();
});

const HOUR = 3_600_000;
/** "Exits at all", not "exits fast": only a process that never ends fails it. */
const BOUND_MS = 60_000;

/** A wall clock a test can step, for the processes started with `env`. */
class SteppedClock {
  private readonly file: string;
  constructor(dir: string) {
    this.file = join(dir, 'faketime-offset');
    this.set('+0');
  }
  /** Steps every process under `env` to real time plus `offset` (libfaketime syntax, e.g. "-1h"). */
  set(offset: string): void {
    // Renamed into place, so libfaketime never reads a half-written offset.
    writeFileSync(`${this.file}.tmp`, `${offset}\n`);
    renameSync(`${this.file}.tmp`, this.file);
  }
  get env(): NodeJS.ProcessEnv {
    const lib = libfaketime() as string;
    const pre = process.env['LD_PRELOAD'];
    return {
      LD_PRELOAD: pre ? `${lib}:${pre}` : lib,
      FAKETIME: undefined, // would take precedence over the file
      FAKETIME_TIMESTAMP_FILE: this.file,
      FAKETIME_NO_CACHE: '1',
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
      NO_FAKE_STAT: '1', // an NTP step leaves file times alone
    };
  }
}

interface Sample {
  wall: number;
  mono: number;
}

/** A Node process under `env` printing Date.now() and performance.now() every 20 ms. */
function witness(env: NodeJS.ProcessEnv): { samples: Sample[]; proc: ChildProcess } {
  const script = 'setInterval(() => process.stdout.write(Date.now() + " " + performance.now() + "\\n"), 20)';
  const proc = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  track(proc);
  const samples: Sample[] = [];
  let buf = '';
  proc.stdout?.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const [wall, mono] = buf.slice(0, nl).split(' ').map(Number) as [number, number];
      buf = buf.slice(nl + 1);
      samples.push({ wall, mono });
    }
  });
  return { samples, proc };
}

/**
 * `runwarden ...args` under strace(1), recording its flock(2) calls with
 * real-clock timestamps in `out`; only the traced command gets the clock's
 * preload (strace -E), so the timestamps are not stepped.
 */
function startTraced(out: string, args: string[], env: NodeJS.ProcessEnv): Running {
  const { LD_PRELOAD: preload, ...rest } = env;
  const proc = spawn('strace', ['-f', '-ttt', '-e', 'trace=flock', '-o', out, '-E', `LD_PRELOAD=${preload ?? ''}`, process.execPath, CLI, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1', ...rest },
  });
  track(proc);
  let stdout = '';
  let stderr = '';
  proc.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<Ran>((resolve) => proc.once('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { proc, stdout: () => stdout, stderr: () => stderr, done };
}

/** The run's result, or a failure naming what it printed if it has not ended within BOUND_MS. */
async function within(r: Running, what: string): Promise<Ran> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((res) => (timer = setTimeout(() => res('late'), BOUND_MS)));
  const got = await Promise.race([r.done, late]);
  clearTimeout(timer);
  if (got === 'late') {
    r.proc.kill('SIGKILL');
    throw new Error(`${what} had not ended ${BOUND_MS / 1000} s later (stdout: ${JSON.stringify(r.stdout())}, stderr: ${JSON.stringify(r.stderr())})`);
  }
  return got;
}

/** Asserts the samples hold a backward step of the wall clock of at least `backMs`, with the monotonic clock going on forward. */
function expectStepBack(samples: Sample[], backMs: number): void {
  for (let i = 1; i < samples.length; i++) {
    expect(samples[i].mono).toBeGreaterThanOrEqual(samples[i - 1].mono);
  }
  const first = samples[0];
  const last = samples[samples.length - 1];
  expect(last.mono - first.mono).toBeGreaterThan(0);
  expect(last.mono - first.mono).toBeLessThan(BOUND_MS * 10); // it did not jump with the wall clock
  expect(last.wall - first.wall).toBeLessThan(-backMs + (last.mono - first.mono));
}

describe('a wall clock stepped back', () => {
  it('libfaketime steps Date.now() for Node and leaves performance.now() alone', async (ctx) => {
    needs(ctx, 'faketime');
    const clock = new SteppedClock(tempDir('rw-clock-'));
    const w = witness(clock.env);
    await until(() => w.samples.length >= 3);
    const real = Date.now();
    expect(Math.abs(w.samples[0].wall - real)).toBeLessThan(HOUR / 2); // +0: the real time
    clock.set('-1h');
    await until(() => w.samples[w.samples.length - 1].wall < Date.now() - HOUR / 2);
    await until(() => w.samples.length >= 10);
    expectStepBack(w.samples, HOUR / 2);
  });

  it('watch still reports a SIGKILLed leg when the wall clock is stepped back an hour mid-watch', async (ctx) => {
    needs(ctx, 'faketime');
    const r = tempDir('rw-clock-');
    const clock = new SteppedClock(r);
    const dir = join(r, 'dies');
    const leg = start(['exec', '--root', r, 'dies', '--', 'sleep', '600']);
    await until(() => existsSync(join(dir, 'exec.pgid')));
    const w = start(['watch', '--root', r, 'dies'], clock.env);
    const seen = witness(clock.env);
    await until(() => w.stdout().includes('node command started') && seen.samples.length >= 2);
    // Step back after watch read its last line, so its idle time would run negative on the wall clock.
    clock.set('-1h');
    await until(() => seen.samples[seen.samples.length - 1].wall < Date.now() - HOUR / 2);
    leg.proc.kill('SIGKILL');
    const res = await within(w, 'watch');
    expect(res.code).toBe(3);
    expect(res.stdout).toContain('run dies is ABANDONED');
    expect(res.stderr).toContain('a leg started and never reported an end');
    expectStepBack(seen.samples, HOUR / 2);
  });

  it('exec on a held run still refuses (75) when the wall clock steps back inside its lock-retry window', async (ctx) => {
    needs(ctx, 'faketime', 'strace');
    const r = tempDir('rw-clock-');
    const clock = new SteppedClock(r);
    const dir = join(r, 'held');
    await startHolder(join(dir, 'resume.lock'));
    // The retry window is 100 ms and cannot be aimed at from outside, so the
    // clock steps back another hour every 20 ms for as long as exec runs, and
    // strace(1) records (on the real clock: only the exec is given the
    // preload) when its first and its last refused flock(2) were: the window.
    // Positive control: a step whose rename began after the first refusal and
    // ended before the last fell inside the window. A loaded machine may
    // leave a window without a step, so the scenario is tried up to 8 times;
    // every try must refuse, and one must have met a step.
    let met = 0;
    const witnessed = witness(clock.env);
    for (let attempt = 0; attempt < 8 && met === 0; attempt++) {
      const steps: { before: number; after: number }[] = [];
      let hours = 0;
      const stepper = setInterval(() => {
        const before = Date.now();
        clock.set(`-${++hours}h`);
        steps.push({ before, after: Date.now() });
      }, 20);
      const trace = join(r, `strace.${attempt}`);
      try {
        const ex = startTraced(trace, ['exec', '--root', r, 'held', '--', 'true'], clock.env);
        const res = await within(ex, 'exec');
        expect(res.code, res.stderr).toBe(75);
        expect(res.stderr).toMatch(/in flight/);
      } finally {
        clearInterval(stepper);
      }
      const refusals = readFileSync(trace, 'utf8')
        .split('\n')
        .filter((l) => /flock\(\d+, LOCK_EX\|LOCK_NB\) = -1 EAGAIN/.test(l))
        .map((l) => Number(/^(?:\d+ +)?(\d+\.\d+) /.exec(l)?.[1]) * 1000);
      expect(refusals.length, 'strace saw the refused attempts').toBeGreaterThan(1);
      const [first, last] = [refusals[0], refusals[refusals.length - 1]];
      if (steps.some((st) => st.before > first && st.after < last)) met++;
    }
    expect(met, 'a step of the wall clock fell inside the retry window').toBe(1);
    // The witness, under the same clock, saw it stepped back (by 3 h now, whatever the last try reached).
    clock.set('-3h');
    await until(() => witnessed.samples.length >= 2);
    await until(() => witnessed.samples[witnessed.samples.length - 1].wall < witnessed.samples[0].wall - HOUR);
    expectStepBack(witnessed.samples, HOUR);
  });
});
