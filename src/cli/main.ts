/**
 * The runwarden command line: a thin layer over the library. Each command
 * lives in its own module and registers itself here.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { loadAddon } from '../kernel/native.js';
import { Exit, reportFailure } from './io.js';
import { registerDemo } from './commands/demo.js';
import { registerExec } from './commands/exec.js';
import { registerMetrics } from './commands/metrics.js';
import { registerProbe } from './commands/probe.js';
import { registerRuns } from './commands/runs.js';
import { registerServe } from './commands/serve.js';
import { registerStatus } from './commands/status.js';
import { registerWatch } from './commands/watch.js';

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** Builds the program; exported so tests can inspect it without running it. */
export function buildProgram(): Command {
  const program = new Command();
  program
    .name('runwarden')
    .description(
      'Tell a run that is thinking from a run whose process is dead.\n\n' +
        "Liveness comes from the kernel: a leg holds an exclusive flock(2) on its run's resume.lock, " +
        'and readers probe it with a shared, non-blocking lock and never write.\n\n' +
        'Runs root: --root DIR, else $OMG_HOME/runs, else ~/.oh-my-graph/runs.\n' +
        'Exit status: 0 ok, 1 unexpected error, 2 usage error, 3 run abandoned (watch), 75 run locked (exec), 130 interrupted.',
    )
    .version(version(), '-V, --version')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  // A broken install reads as one, on every command: the addon is loaded (and its file checked,
  // kernel/native.ts) before any action, so its AddonLoadError is the answer (exit 1), never a
  // root that "cannot be read", a `runwarden_root_readable 0` or a server answering 500.
  program.hook('preAction', () => {
    loadAddon();
  });
  registerRuns(program);
  registerStatus(program);
  registerProbe(program);
  registerWatch(program);
  registerExec(program);
  registerServe(program);
  registerMetrics(program);
  registerDemo(program);
  for (const cmd of program.commands) cmd.exitOverride().showHelpAfterError('(run with --help for usage)');
  return program;
}

/** Runs the CLI and exits with its status. */
export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  let code: number;
  try {
    await program.parseAsync(argv);
    code = typeof process.exitCode === 'number' ? process.exitCode : Exit.Ok;
  } catch (e) {
    if (e instanceof CommanderError) {
      code = e.exitCode === 0 ? Exit.Ok : Exit.Usage;
    } else {
      code = reportFailure(e);
    }
  }
  process.exitCode = code;
}
