/**
 * Fixtures for the reading tests: temp roots, event lines, run directories,
 * and real lock-holder processes (which take the lock through the built
 * library, exactly as a leg does, and are always killed in cleanup).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { HOLDER, waitReady } from './lock-procs.js';
import { removeTree } from './remove-tree.js';
import { eventLine } from './events.js';
import { RELEASED } from './portable.js';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = join(REPO, 'bin', 'runwarden.js');
export const DIST_INDEX = pathToFileURL(join(REPO, 'dist', 'index.js')).href;

const made: string[] = [];
const children = new Set<ChildProcess>();

/** A fresh temp directory, removed by {@link cleanup}. */
export function tempDir(prefix = 'rw-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  made.push(d);
  return d;
}

/** Kills every holder still alive and removes every temp directory (unreadable parts included). */
export async function cleanup(): Promise<void> {
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null) {
      c.kill('SIGKILL');
      await new Promise((r) => c.once('exit', r));
    }
  }
  children.clear();
  for (const d of made.splice(0)) removeTree(d);
}

let seq = 0;
/** A run id in the reference shape; later calls sort newer. */
export function runId(n = ++seq): string {
  return `20260806-1000${String(n % 100).padStart(2, '0')}.${String(n).padStart(9, '0')}-1`;
}

/** One events.jsonl line (with "\n"). */
export function ev(event: string, fields: Record<string, unknown> = {}, id = 'r'): string {
  return eventLine({ event, ...fields }, { runId: id, ts: '2026-08-06T10:00:00Z' });
}

/** A state.json object with the given node verdicts (all listed in the graph unless `graph` is given). */
export function snapshot(verdicts: Record<string, string>, opts: { graph?: string[]; name?: string; cost?: number; runId?: string } = {}): object {
  const ids = opts.graph ?? Object.keys(verdicts);
  const nodes: Record<string, unknown> = {};
  for (const [id, verdict] of Object.entries(verdicts)) nodes[id] = { verdict, cost_usd: opts.cost ?? 0.25 };
  return { schema: 3, ...(opts.runId !== undefined ? { run_id: opts.runId } : {}), graph: { name: opts.name ?? 'g', nodes: ids.map((id) => ({ id })) }, nodes };
}

export interface RunSpec {
  events?: string | string[];
  state?: object | string;
  /** 'marked' writes the lock file a released leg leaves on this system (test/helpers/portable.ts); a string is written as is. */
  lock?: string;
  pgid?: string;
}

/**
 * The suite's one run builder: creates `<root>/<id>` (mode 0700) with the
 * given files (mode 0600, as a leg makes them; an existing file is
 * replaced); returns its path. The dashboard fixtures (serve-fixtures.ts)
 * write through it too.
 */
export function makeRun(root: string, id: string, spec: RunSpec): string {
  const dir = join(root, id);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const put = (name: string, text: string): void => writeFileSync(join(dir, name), text, { mode: 0o600 });
  if (spec.events !== undefined) put('events.jsonl', Array.isArray(spec.events) ? spec.events.join('') : spec.events);
  if (spec.state !== undefined) put('state.json', typeof spec.state === 'string' ? spec.state : JSON.stringify(spec.state));
  if (spec.lock !== undefined) put('resume.lock', spec.lock === 'marked' ? RELEASED : spec.lock);
  if (spec.pgid !== undefined) put('exec.pgid', spec.pgid);
  return dir;
}

/** A real process holding run locks: the suite's one holder (test/fixtures/holder.mjs, --dirs). */
export interface Holder {
  child: ChildProcess;
  pid: number;
  /** SIGKILLs it and waits until the kernel has reaped it (its flocks are then free). */
  kill(): Promise<void>;
}

/**
 * Starts a process that takes the lock of each directory, appends `lines`
 * to its events.jsonl (lock first, then events: the writer's invariant), and
 * holds until killed (by the test, or by {@link cleanup}).
 */
export async function startHolder(dirs: { dir: string; lines?: string }[]): Promise<Holder> {
  const child = spawn(process.execPath, [HOLDER, '--dirs', JSON.stringify(dirs)], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(child);
  await waitReady(child);
  return {
    child,
    pid: child.pid!,
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await gone;
    },
  };
}

/** The pid of a process that has exited and been reaped. */
export function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

/** Runs the CLI synchronously; returns status, stdout and stderr. */
export function cli(args: string[], env: Record<string, string | undefined> = {}, timeoutMs = 60_000): { status: number | null; stdout: string; stderr: string } {
  const merged: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...process.env, NO_COLOR: '1', ...env })) if (v !== undefined) merged[k] = v;
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: 'utf8',
    env: merged,
    timeout: timeoutMs,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
