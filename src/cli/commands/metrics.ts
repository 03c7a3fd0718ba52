/**
 * `runwarden metrics`: the text `serve` answers GET /metrics with, printed
 * once, for hosts that run node_exporter's textfile collector from cron
 * instead of a long-running server.
 *
 * Invariants: the same model and the same RunwardenMetrics as `serve`, so
 * the two print the same families from the same derivation; one pass over
 * the root; writes only to stdout. A root that cannot be listed is a fact to
 * report (`runwarden_root_readable 0`), not a failure: the text is printed
 * and the exit is 0, so a `… > tmp && mv tmp runwarden.prom` cron line still
 * hands that fact to Prometheus. A text that could not be written whole (a
 * full disk) is a failure: exit 1 (cli/io.ts writeStdoutSync), so that same
 * cron line never installs half a file.
 */
import type { Command } from 'commander';
import type { RunwardenMetrics } from '../../serve/metrics.js';
import type { DashboardModel, ReportsList } from '../../serve/model.js';
import { err, writeStdoutSync } from '../io.js';
import { rootFrom } from '../target.js';
import { printable, quietOnClosedPipe } from '../term.js';

export function registerMetrics(program: Command): void {
  program
    .command('metrics')
    .summary('print Prometheus metrics for the runs root once (for a textfile collector)')
    .description(
      'Print, once, the Prometheus text that `runwarden serve` answers GET /metrics with: runs per status ' +
        '(runwarden_runs{status}, zeros included), one runwarden_run_info{run_id,graph,status} series per run ' +
        'in flight or abandoned (settled runs get none), when each such run last appended an event, lock ' +
        'probe counts and durations, whether the root could be listed, scan errors, and the default process ' +
        'metrics. Every status comes from the same derivation as `runs --json`.\n\n' +
        "For hosts without a long-running `serve`: run it from cron into node_exporter's textfile directory, " +
        'writing a temporary file and renaming it, so the collector never reads half a file: ' +
        '`runwarden metrics --no-process-metrics > F.$$ && mv F.$$ F`, where F is DIR/runwarden.prom. ' +
        '--no-process-metrics leaves out process_* and nodejs_*: node_exporter has process metrics of its own ' +
        '(the names would clash), and those of a command that has already exited describe nothing.\n\n' +
        'A root that cannot be listed is reported, not fatal: runwarden_root_readable is 0, no run series are ' +
        'printed, a note goes to stderr, and the exit status is 0. A text that cannot be written whole (ENOSPC, EIO) ' +
        'exits 1 with one line on stderr, so `&& mv` never installs half a file. Reads only; writes nothing but stdout. ' +
        'See docs/prometheus.md, "Many hosts: Prometheus", for the scrape config and the alert rules in deploy/prometheus/.',
    )
    .option('--root <dir>', 'runs root (default: $OMG_HOME/runs, else ~/.oh-my-graph/runs)')
    .option('--no-process-metrics', 'leave out the default process_* and nodejs_* metrics (for a textfile collector)')
    .action(async (opts: { root?: string; processMetrics: boolean }) => {
      quietOnClosedPipe();
      const root = rootFrom(opts.root);
      // Loaded here, not at the top, so that the other commands start without prom-client.
      const [{ RunwardenMetrics }, { DashboardModel }] = await Promise.all([import('../../serve/metrics.js'), import('../../serve/model.js')]);
      // maxAge 0: this process has no earlier derivation to reuse.
      const metrics: RunwardenMetrics = new RunwardenMetrics(
        async (): Promise<ReportsList> => {
          const list = await model.currentReports(0);
          if (list.error !== undefined) err(`runwarden: note: ${printable(list.error)}; printing runwarden_root_readable 0`);
          else if (list.missing) err(`runwarden: note: ${printable(list.root)} does not exist; no runs`);
          return list;
        },
        { processMetrics: opts.processMetrics },
      );
      const model: DashboardModel = new DashboardModel(root, { observer: metrics.observer });
      writeStdoutSync(await metrics.text());
    });
}
