/**
 * `runwarden serve`: the live local dashboard (CONTRACT §5.2, §5.3).
 *
 * Binds 127.0.0.1 unless told otherwise, prints its address (the real port
 * when `--port 0` asked for any free one), and runs until interrupted. It
 * only reads: the server answers GET and HEAD, and every page is derived from
 * the same runStatus/listRuns the other commands print.
 */
import { statSync } from 'node:fs';
import type { Command } from 'commander';
import { METRICS_LOOP_SAMPLE_MS, safetyMsFromEnv } from '../../serve/limits.js';
import type { RunwardenMetrics } from '../../serve/metrics.js';
import type { ReportsList } from '../../serve/model.js';
import { Exit, UserError, err, out } from '../io.js';
import { printable } from '../term.js';
import { rootFrom } from '../target.js';

/** How often open pages are re-derived, and how old a list a scrape may reuse (ms). */
const LIVE_INTERVAL_MS = 1000;

/** The port used when --port is not given. */
export const DEFAULT_PORT = 7341;
/** The address serve binds without `--host`: loopback, so the runs are not exposed to the network. */
const DEFAULT_HOST = '127.0.0.1';

function parsePort(value: string): number {
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65535) {
    throw new UserError(`--port must be a whole number from 0 to 65535 (0 picks a free port), got "${value}"`);
  }
  return Number(value);
}

function parseLoopSample(value: string): number {
  if (!/^\d{1,5}$/.test(value) || Number(value) < 1 || Number(value) > 60000) {
    throw new UserError(`--loop-sample-ms must be a whole number of milliseconds from 1 to 60000, got "${value}"`);
  }
  return Number(value);
}

/**
 * `RUNWARDEN_TEST_SERVE_FAULTS` (`starts=N,threads=M`): the reader's first N
 * starts fail and its first M threads crash (ModelOptions.failStarts,
 * OffThreadOptions.failThreads), for the tests of how serve survives them;
 * nothing when unset.
 */
function testFaults(value: string | undefined): { failStarts?: number; failThreads?: number } {
  if (value === undefined || value === '') return {};
  const got: { failStarts?: number; failThreads?: number } = {};
  for (const part of value.split(',')) {
    const m = /^(starts|threads)=(\d{1,3})$/.exec(part.trim());
    if (m === null) throw new UserError(`RUNWARDEN_TEST_SERVE_FAULTS must be starts=N,threads=M, got "${value}"`);
    if (m[1] === 'starts') got.failStarts = Number(m[2]);
    else got.failThreads = Number(m[2]);
  }
  return got;
}

/** A root that exists must be a directory; a missing one is served empty (runs may appear). */
function checkRoot(root: string): void {
  let st;
  try {
    st = statSync(root);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return;
    throw new UserError(`cannot read runs root "${root}": ${code ?? String(e)}`);
  }
  if (!st.isDirectory()) throw new UserError(`runs root "${root}" is not a directory`);
}

export function registerServe(program: Command): void {
  program
    .command('serve')
    .summary('live local web dashboard of all runs')
    .description(
      'Serve a live dashboard of every run under the root: cards grouped as in flight, abandoned and ' +
        'settled, each with its state, node strip, cost and times, and for an abandoned run its recovery ' +
        'hint. A page per run shows its node map, leg history and last events. The page updates itself ' +
        '(server-sent events, told by the kernel what changed), so a run whose process dies turns abandoned ' +
        'without a reload.\n\n' +
        'Read-only: only GET and HEAD are answered, run ids are accepted only as names directly under the ' +
        'root, and nothing is written anywhere. JSON: GET /api/runs (the `runs --json` document) and ' +
        'GET /api/runs/<id> (the report plus node states, legs and last events). ' +
        'Prometheus: GET /metrics (runs per status, runs in flight or abandoned by id, probe counts and ' +
        'durations, whether the root is readable; see `runwarden metrics --help`, and docs/prometheus.md "Many hosts: Prometheus").\n\n' +
        'Bounded: runs are read on a worker thread, so a huge run never stalls the page; a run page lists ' +
        'its latest 200 legs and first 1,000 nodes; at most 128 connections are open at once (the next is ' +
        'answered 503), and a client has 10 s to send its request headers.\n\n' +
        'Runs until interrupted (Ctrl-C).',
    )
    .option('--root <dir>', 'runs root (default: $OMG_HOME/runs, else ~/.oh-my-graph/runs)')
    .option('--port <n>', `port to listen on; 0 picks a free one (default ${DEFAULT_PORT})`)
    // The default is applied in the action, not given to commander, which would print it a second time.
    .option('--host <addr>', `address to bind (default ${DEFAULT_HOST}; anything else exposes your runs to the network)`)
    .option(
      '--loop-sample-ms <ms>',
      `how often /metrics' nodejs_eventloop_lag_* sample the event loop (default ${METRICS_LOOP_SAMPLE_MS}; ` +
        'a stall shorter than this may show shortened; 10, prom-client\'s default, costs about 1 % of a core)',
    )
    .action(async (opts: { root?: string; port?: string; host?: string; loopSampleMs?: string }) => {
      const root = rootFrom(opts.root);
      checkRoot(root);
      const port = opts.port === undefined ? DEFAULT_PORT : parsePort(opts.port);
      const loopSampleMs = opts.loopSampleMs === undefined ? METRICS_LOOP_SAMPLE_MS : parseLoopSample(opts.loopSampleMs);
      const host = opts.host ?? DEFAULT_HOST;
      try {
        safetyMsFromEnv();
      } catch (e) {
        throw new UserError((e as Error).message);
      }
      if (host.trim() === '') throw new UserError('--host must not be empty');
      // Loaded here, not at the top: every other command starts without the server, the worker
      // and prom-client, whose load is a noticeable part of a short command's start-up.
      const [{ RunwardenMetrics }, { OffThreadModel }, { isLoopbackHost, startServer }] = await Promise.all([
        import('../../serve/metrics.js'),
        import('../../serve/offthread.js'),
        import('../../serve/server.js'),
      ]);
      // Reads run on a worker thread, so one expensive run never stalls the server (serve/offthread.ts);
      // live: the kernel says what changed there, so an idle page reads nothing and a death reaches it in
      // milliseconds; a scrape reuses the model's list when it is no older than one live interval.
      const faults = testFaults(process.env['RUNWARDEN_TEST_SERVE_FAULTS']);
      // A scrape whose reader failed still answers (without the runs' series), says why and is counted.
      const onSourceError = (e: unknown): void => err(`runwarden serve: GET /metrics: ${e instanceof Error ? e.message : String(e)}`);
      const metrics: RunwardenMetrics = new RunwardenMetrics((): Promise<ReportsList> => model.currentReports(LIVE_INTERVAL_MS), { loopSampleMs, onSourceError });
      const model = new OffThreadModel(root, { observer: metrics.observer, live: true, ...faults });
      let server;
      try {
        server = await startServer({
          root,
          host,
          port,
          sources: {
            runsJson: (select) => model.runsDocument(select),
            dashboard: () => model.dashboard(),
            run: (id, dir) => model.page(id, dir),
            metrics: async () => ({ contentType: metrics.contentType, body: await metrics.text() }),
            subscribe: (cb) => model.subscribe(cb),
            version: () => model.version,
          },
          intervalMs: LIVE_INTERVAL_MS,
          onFailure: () => metrics.failed(),
        });
      } catch (e) {
        await model.close();
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'EADDRINUSE') throw new UserError(`port ${port} on ${host} is in use; pick another with --port, or --port 0 for any free port`);
        if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') throw new UserError(`cannot bind ${host}: not an address of this machine`);
        if (code === 'EACCES') throw new UserError(`not allowed to listen on port ${port} (ports below 1024 need privileges)`);
        throw e;
      }
      // Listen for the stop signals before printing the address: whoever
      // reads the address may stop us at once.
      const stopped = new Promise<NodeJS.Signals>((resolve) => {
        const stop = (s: NodeJS.Signals): void => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          resolve(s);
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
      });
      out(`runwarden serve: ${server.url}`);
      out(`  root: ${printable(root)} (read-only)`);
      out('  Ctrl-C to stop');
      if (!isLoopbackHost(host)) err(`runwarden: warning: listening on ${host}; anyone who can reach it can read every run under ${printable(root)}`);
      const signal = await stopped;
      await server.close();
      await model.close();
      process.exitCode = signal === 'SIGINT' ? Exit.Interrupted : Exit.Ok;
    });
}
