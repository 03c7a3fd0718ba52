/** Running the CLI, or a fixture script, as real Node processes: output collected, each tracked for killAll(). */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { CLI, track } from './lock-procs.js';

export interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface Running {
  proc: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  done: Promise<Ran>;
}

/** Starts `runwarden ...args` and tracks it for killAll(). */
export function start(args: string[], env: NodeJS.ProcessEnv = {}): Running {
  return startNode([CLI, ...args], env);
}

/** Runs the Node script `script` (a fixture) with `args` to completion. */
export function runScript(script: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Ran> {
  return startNode([script, ...args], env).done;
}

function startNode(argv: string[], env: NodeJS.ProcessEnv): Running {
  const proc = spawn(process.execPath, argv, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1', ...env },
  });
  track(proc);
  let out = '';
  let errText = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (errText += d.toString()));
  // Resolve on exit: a child the command left behind may keep the pipes open,
  // so 'close' is awaited only briefly for the last output. When that wait
  // ends first, one more turn of the event loop (setImmediate runs after its
  // poll phase) still reads whatever the process wrote before it exited, even
  // if a loaded machine kept this process off the CPU for the whole wait.
  const done = new Promise<Ran>((resolve) => {
    proc.on('exit', (code, signal) => {
      let settled = false;
      const finish = () => {
        if (settled) return;
        settled = true;
        resolve({ code, signal, stdout: out, stderr: errText });
      };
      proc.once('close', finish);
      setTimeout(() => setImmediate(finish), 300);
    });
  });
  return { proc, stdout: () => out, stderr: () => errText, done };
}

/** Runs `runwarden ...args` to completion. */
export function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Ran> {
  return start(args, env).done;
}

/** The events of a run's stream, without their timestamps. */
export function events(runDir: string): Record<string, unknown>[] {
  return readFileSync(join(runDir, 'events.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const { ts, ...rest } = JSON.parse(l) as Record<string, unknown>;
      expect(typeof ts).toBe('string');
      return rest;
    });
}
