/**
 * `runwarden demo`: builds a runs root holding one run in each state, by
 * really taking, holding, releasing and killing locks — never by writing an
 * answer down — and prints the `runs` table for it.
 *
 * How each state comes to be:
 * - RUNNING and PLANNING: a detached holder process takes both runs' locks
 *   (through this package's own acquireLock), writes their first events, and
 *   keeps the locks until it is stopped or its lifetime (at most 10 minutes)
 *   ends. Its pid and the command that stops it are printed.
 * - ABANDONED (with and without a snapshot): a holder takes the locks, writes
 *   an open leg, and is SIGKILLed; the kernel frees its flocks.
 * - PAUSED, PASS, FAIL, and a FAIL whose snapshot is corrupt: legs run in this
 *   process, lock first, events, snapshot, release (the writer's ordering).
 * - A pre-flock lock: a lock file in the old one-pid-line format naming a
 *   process that has exited, beside an open leg (reads ABANDONED via the pid).
 * Every leg takes its lock before its first event and releases it after its
 * last, so the demo obeys the same invariant it demonstrates.
 */
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { processPresence } from '../../kernel/presence.js';
import { acquireLock } from '../../lock/acquire.js';
import { LOCK_FILE } from '../../contract/marker.js';
import { listRuns } from '../../status/list.js';
import type { Status } from '../../contract/types.js';
import { Exit, out, UserError } from '../io.js';
import { quietOnClosedPipe, useColor } from '../term.js';
import { renderRuns } from './runs.js';

/** The longest a demo holder keeps its locks: it exits by itself after this. */
export const MAX_HOLD_SECONDS = 600;

/** The holder: takes locks, writes each run's opening events and snapshot, says "ready", then holds. */
const HOLDER = `
const { acquireLock } = await import(process.env.RW_INDEX);
const fs = await import('node:fs');
const plan = JSON.parse(process.env.RW_PLAN);
const held = [];
for (const p of plan) {
  held.push(acquireLock(p.dir + '/resume.lock', { retryMs: 0 }));
  fs.appendFileSync(p.dir + '/events.jsonl', p.lines, { mode: 0o600 });
  if (p.state) {
    fs.writeFileSync(p.dir + '/state.json.tmp', p.state, { mode: 0o600 });
    fs.renameSync(p.dir + '/state.json.tmp', p.dir + '/state.json');
  }
}
const stop = () => { for (const h of held) h.release(); process.exit(0); };
for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(s, stop);
setTimeout(stop, Number(process.env.RW_HOLD_MS));
process.stdout.write('ready\\n');
`;

interface Planned {
  dir: string;
  lines: string;
  state?: string;
}

/** Starts a holder for `plan` and resolves once every lock is held and every event written. */
function startHolder(plan: Planned[], holdMs: number, detached: boolean): Promise<{ pid: number; kill: () => Promise<void> }> {
  const index = new URL('../../index.js', import.meta.url).href;
  const child = spawn(process.execPath, ['--input-type=module', '-e', HOLDER], {
    env: { ...process.env, RW_INDEX: index, RW_PLAN: JSON.stringify(plan), RW_HOLD_MS: String(holdMs) },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached,
  });
  return new Promise((res, rej) => {
    let outText = '';
    let errText = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      rej(new Error('a demo lock holder did not get ready within 15 s'));
    }, 15_000);
    child.stderr.on('data', (d: Buffer) => (errText += d.toString()));
    child.once('exit', (code, sig) => {
      clearTimeout(timer);
      rej(new Error(`a demo lock holder exited before it was ready (${code ?? sig}): ${errText.trim()}`));
    });
    child.stdout.on('data', (d: Buffer) => {
      outText += d.toString();
      if (!outText.includes('ready\n')) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      child.stdout.destroy();
      child.stderr.destroy();
      const pid = child.pid as number;
      res({
        pid,
        kill: () =>
          new Promise<void>((done) => {
            if (child.exitCode !== null || child.signalCode !== null) return done();
            child.once('exit', () => done());
            child.kill('SIGKILL');
          }),
      });
      if (detached) child.unref();
    });
  });
}

/** A pid that named a process which has exited (for the pre-flock lock). */
function goneProcessPid(): number {
  for (let i = 0; i < 20; i++) {
    const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const pid = Number(r.stdout);
    if (Number.isInteger(pid) && pid > 0 && processPresence(pid) === 'gone') return pid;
  }
  throw new Error('could not find a pid that is gone for the pre-flock demo run');
}

/** A reference-shaped run id (`YYYYMMDD-HHMMSS.nnnnnnnnn-1`, UTC) for a moment `at`. */
function runIdAt(at: Date, seq: number): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  const date = `${at.getUTCFullYear()}${p(at.getUTCMonth() + 1)}${p(at.getUTCDate())}`;
  const time = `${p(at.getUTCHours())}${p(at.getUTCMinutes())}${p(at.getUTCSeconds())}`;
  return `${date}-${time}.${p(at.getUTCMilliseconds() * 1_000_000 + seq, 9)}-1`;
}

/** Builds the events of one run. */
class DemoStream {
  lines = '';
  private t: number;
  constructor(
    private readonly runId: string,
    start: Date,
  ) {
    this.t = start.getTime();
  }
  add(event: string, fields: Record<string, unknown> = {}, afterSeconds = 7): this {
    this.t += afterSeconds * 1000;
    const ts = new Date(this.t).toISOString().replace(/\.\d{3}Z$/, 'Z');
    this.lines += JSON.stringify({ schema: 3, ts, run_id: this.runId, event, ...fields }) + '\n';
    return this;
  }
  pass(node: string, cost: number): this {
    return this.add('node_started', { node_id: node, session_id: `s-${node}` }).add('node_passed', { node_id: node, verdict: 'PASS', cost_usd: cost }, 40);
  }
}

function snapshotJson(runId: string, name: string, graph: string[], verdicts: Record<string, [string, number]>): string {
  const nodes: Record<string, unknown> = {};
  for (const [id, [verdict, cost]] of Object.entries(verdicts)) nodes[id] = { verdict, cost_usd: cost };
  const g = { name, nodes: graph.map((id, i) => (i === 0 ? { id } : { id, depends_on: [graph[i - 1]] })) };
  return JSON.stringify({ schema: 3, run_id: runId, graph: g, nodes }, null, 2) + '\n';
}

/** A leg run in this process: lock, events, snapshot (atomically), release. */
function settledLeg(p: Planned): void {
  const lock = acquireLock(join(p.dir, LOCK_FILE), { retryMs: 0 });
  try {
    appendFileSync(join(p.dir, 'events.jsonl'), p.lines, { mode: 0o600 });
    if (p.state !== undefined) {
      writeFileSync(join(p.dir, 'state.json.tmp'), p.state, { mode: 0o600 });
      renameSync(join(p.dir, 'state.json.tmp'), join(p.dir, 'state.json'));
    }
  } finally {
    lock.release();
  }
}

/** The demo root: `--root` (must be missing or empty) or a fresh temp directory. */
function demoRoot(option: string | undefined): string {
  if (option === undefined) return mkdtempSync(join(tmpdir(), 'runwarden-demo-'));
  if (option === '') throw new UserError('--root must not be empty');
  const root = resolve(option);
  let st;
  try {
    st = statSync(root);
  } catch {
    mkdirSync(root, { recursive: true, mode: 0o700 });
    return root;
  }
  if (!st.isDirectory()) throw new UserError(`${root} exists and is not a directory`);
  if (readdirSync(root).length > 0) throw new UserError(`${root} is not empty; demo writes only into a new or empty directory`);
  return root;
}

/** What `buildDemo` made. */
export interface DemoResult {
  root: string;
  /** The detached holder of the RUNNING and PLANNING runs. */
  holderPid: number;
  /** run id → the status it was built to read (null for the skipped corrupt-snapshot run). */
  expected: Map<string, Status | null>;
}

/** Builds every demo run under `root`; the live holder keeps its locks for `holdSeconds`. */
export async function buildDemo(root: string, holdSeconds: number): Promise<DemoResult> {
  // Wall clock on purpose: the demo's run ids and event timestamps are dates people read.
  const now = Date.now();
  const ids: string[] = [];
  const at = (i: number) => new Date(now - (9 - i) * 11 * 60_000);
  for (let i = 0; i < 9; i++) ids.push(runIdAt(at(i), i + 1));
  const dir = (i: number) => join(root, ids[i] as string);
  const expected = new Map<string, Status | null>();

  // 0: PASS — every graph node passed.
  {
    const f = new DemoStream(ids[0]!, at(0)).add('run_started').pass('fetch', 0.0412).pass('build', 0.3121).pass('publish', 0.0198).add('run_finished', { outcome: 'passed' });
    settledLeg({ dir: dir(0), lines: f.lines, state: snapshotJson(ids[0]!, 'docs-site', ['fetch', 'build', 'publish'], { fetch: ['PASS', 0.0412], build: ['PASS', 0.3121], publish: ['PASS', 0.0198] }) });
    expected.set(ids[0]!, 'PASS');
  }
  // 1: FAIL — a node failed.
  {
    const f = new DemoStream(ids[1]!, at(1)).add('run_started').pass('prepare', 0.0931).add('node_started', { node_id: 'eval' }).add('node_failed', { node_id: 'eval', verdict: 'FAIL', detail: 'accuracy 0.61 < 0.70', cost_usd: 1.2044 }, 300);
    f.add('run_finished', { outcome: 'failed', detail: 'eval failed' });
    settledLeg({ dir: dir(1), lines: f.lines, state: snapshotJson(ids[1]!, 'nightly-eval', ['prepare', 'eval', 'report'], { prepare: ['PASS', 0.0931], eval: ['FAIL', 1.2044] }) });
    expected.set(ids[1]!, 'FAIL');
  }
  // 2: a settled run whose snapshot is corrupt: skipped by name, with the reason.
  {
    const f = new DemoStream(ids[2]!, at(2)).add('run_started').pass('lint', 0.011).add('run_finished', { outcome: 'passed' });
    settledLeg({ dir: dir(2), lines: f.lines, state: '{"schema": 3, "graph": {"name": "lint-only", "nodes": [{"id": "lint"' });
    expected.set(ids[2]!, null);
  }
  // 3: PAUSED at a gate.
  {
    const f = new DemoStream(ids[3]!, at(3)).add('run_started').pass('draft', 0.2203).add('gate_paused', { node_id: 'review' }).add('run_finished', { outcome: 'paused', detail: 'waiting at gate review' });
    settledLeg({ dir: dir(3), lines: f.lines, state: snapshotJson(ids[3]!, 'release-notes', ['draft', 'review', 'publish'], { draft: ['PASS', 0.2203], review: ['', 0] }) });
    expected.set(ids[3]!, 'PAUSED');
  }
  // 4: a pre-flock lock (one pid line, no flock) whose pid is gone, beside an open leg.
  {
    mkdirSync(dir(4), { mode: 0o700 });
    writeFileSync(join(dir(4), LOCK_FILE), `${goneProcessPid()}\n`, { mode: 0o600 });
    const f = new DemoStream(ids[4]!, at(4)).add('run_started').pass('collect', 0.0507).add('node_started', { node_id: 'summarise' });
    writeFileSync(join(dir(4), 'events.jsonl'), f.lines, { mode: 0o600 });
    writeFileSync(join(dir(4), 'state.json'), snapshotJson(ids[4]!, 'weekly-digest', ['collect', 'summarise'], { collect: ['PASS', 0.0507] }), { mode: 0o600 });
    expected.set(ids[4]!, 'ABANDONED');
  }
  // 5 and 6: ABANDONED — legs whose holder is SIGKILLed mid-run, with and without a snapshot.
  {
    const withSnap = new DemoStream(ids[5]!, at(5)).add('run_started').pass('scaffold', 0.1822).add('node_started', { node_id: 'implement' });
    const noSnap = new DemoStream(ids[6]!, at(6)).add('run_started').add('node_started', { node_id: 'plan' });
    const victim = await startHolder(
      [
        { dir: dir(5), lines: withSnap.lines, state: snapshotJson(ids[5]!, 'feature-x', ['scaffold', 'implement', 'test'], { scaffold: ['PASS', 0.1822] }) },
        { dir: dir(6), lines: noSnap.lines },
      ],
      30_000,
      false,
    );
    await victim.kill();
    expected.set(ids[5]!, 'ABANDONED');
    expected.set(ids[6]!, 'ABANDONED');
  }
  // 7 and 8: PLANNING and RUNNING — held by a detached process that outlives this command.
  const planning = new DemoStream(ids[7]!, at(7)).add('run_started', { phase: 'planning' });
  const running = new DemoStream(ids[8]!, at(8)).add('run_started').pass('checkout', 0.0123).pass('compile', 0.0877).add('node_started', { node_id: 'test' });
  const holder = await startHolder(
    [
      { dir: dir(7), lines: planning.lines },
      { dir: dir(8), lines: running.lines, state: snapshotJson(ids[8]!, 'ci-pipeline', ['checkout', 'compile', 'test', 'package'], { checkout: ['PASS', 0.0123], compile: ['PASS', 0.0877] }) },
    ],
    holdSeconds * 1000,
    true,
  );
  expected.set(ids[7]!, 'PLANNING');
  expected.set(ids[8]!, 'RUNNING');
  return { root, holderPid: holder.pid, expected };
}

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .summary('create a runs root with one run in each state and list it')
    .description(
      'Create a runs root holding one run in each state and print the `runs` table for it: ' +
        'RUNNING and PLANNING (held by a detached process this command starts), ABANDONED with and ' +
        'without a snapshot (their holder is SIGKILLed), ABANDONED through a pre-flock lock whose pid ' +
        'is gone, PAUSED at a gate, PASS, FAIL, and a run with a corrupt snapshot (skipped, by name). ' +
        'Every state comes from real locks, not from written answers.\n\n' +
        'The root is --root DIR (created if missing; must be empty) or a fresh directory under the ' +
        'system temp directory. The holder exits by itself after --hold-seconds (default and maximum ' +
        `${MAX_HOLD_SECONDS}); its pid and the command that stops it are printed.`,
    )
    .option('--root <dir>', 'where to create the demo runs (new or empty directory)')
    .option('--hold-seconds <n>', `how long the live holder keeps its locks (1-${MAX_HOLD_SECONDS})`, String(MAX_HOLD_SECONDS))
    .action(async (opts: { root?: string; holdSeconds: string }) => {
      quietOnClosedPipe();
      const hold = Number(opts.holdSeconds);
      if (!Number.isInteger(hold) || hold < 1 || hold > MAX_HOLD_SECONDS) {
        throw new UserError(`--hold-seconds must be an integer from 1 to ${MAX_HOLD_SECONDS}, got "${opts.holdSeconds}"`);
      }
      const root = demoRoot(opts.root);
      const demo = await buildDemo(root, hold);
      const list = listRuns(root);
      const color = useColor();
      out(`Created ${demo.expected.size} demo runs under ${root}`);
      out('');
      for (const line of renderRuns(list, { color, showSkipped: true })) out(line);
      out('');
      const minutes = hold >= 60 ? `${Math.round(hold / 60)} minute${hold >= 120 ? 's' : ''}` : `${hold} seconds`;
      out(`The RUNNING and PLANNING runs are held by pid ${demo.holderPid}, which exits by itself within ${minutes}.`);
      out(`  stop it now:      kill ${demo.holderPid}`);
      out(`  then look again:  npx runwarden runs --root ${root}   (both turn ABANDONED: their legs never reported an end)`);
      out(`  remove the demo:  kill ${demo.holderPid}; rm -rf ${root}`);
      // The demo checks itself: every run must read as the state it was built in.
      const got = new Map<string, Status | null>(list.runs.map((r) => [r.run_id, r.status]));
      for (const s of list.skipped) got.set(s.run_id, null);
      const wrong = [...demo.expected].filter(([id, want]) => got.get(id) !== want || (want === null && !list.skipped.some((s) => s.run_id === id)));
      if (wrong.length > 0) {
        for (const [id, want] of wrong) process.stderr.write(`runwarden: demo run ${id} reads ${String(got.get(id))}, expected ${String(want ?? 'skipped')}\n`);
        process.exitCode = Exit.Error;
      }
    });
}
