/**
 * `runwarden serve` as a real child process: started with --port 0, its
 * address read from the first line it prints. Tracked for killAll().
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { CLI, track } from './lock-procs.js';

export interface ServeProcess {
  proc: ChildProcess;
  url: string;
  port: number;
  stderr: () => string;
}

/** `wrapper`: a command that execs the rest of its arguments in its own process (e.g. `prlimit --nofile=256:256`), so the child's pid is serve's. */
export function startServeCli(root: string, extra: string[] = [], timeoutMs = 60_000, wrapper: string[] = []): Promise<ServeProcess> {
  const argv = [process.execPath, CLI, 'serve', '--root', root, '--port', '0', ...extra];
  const [cmd, ...args] = [...wrapper, ...argv] as [string, ...string[]];
  const proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  track(proc);
  let out = '';
  let err = '';
  proc.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve printed no address in ${timeoutMs} ms; stderr: ${err}`)), timeoutMs);
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^runwarden serve: (http:\/\/[^\s]+:(\d+)\/)$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ proc, url: m[1], port: Number(m[2]), stderr: () => err });
      }
    });
    proc.on('exit', (code, sig) => {
      clearTimeout(timer);
      reject(new Error(`serve exited (code ${code}, signal ${sig}); stderr: ${err}`));
    });
  });
}
