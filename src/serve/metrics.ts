/**
 * `GET /metrics` and `runwarden metrics`: the live model's picture of one
 * host's runs root in the Prometheus text format, written by prom-client.
 *
 * Invariants:
 * - One derivation, no second opinion: every number comes from the model's
 *   reports list (the listRuns/inspectRun behind `runs --json`), so a
 *   dashboard, `runs --json` and a scrape cannot disagree about a status.
 * - A scrape costs what the model already knows: it reads the model's latest
 *   list when that is at most `maxAgeMs` old (a connected page keeps it
 *   fresh), else the model derives statuses once, with its own per-run
 *   bounds, and concurrent scrapes share that derivation. The only reads of
 *   our own are one lstat of `events.jsonl` per run in flight or abandoned.
 * - Bounded cardinality: per-run series (`runwarden_run_info`,
 *   `runwarden_run_last_event_timestamp_seconds`) exist only for runs in
 *   flight or abandoned; settled runs and runs with no status are counted in
 *   `runwarden_runs`, never given series of their own. Every other label
 *   takes values from a closed set (status words, liveness words).
 * - Names as every surface prints them: `run_id` and `graph` label values
 *   are the shown name with contract/names.ts printableText applied (ESC,
 *   CR, NUL, bidi controls as visible escapes), so the text never makes a
 *   terminal act; the run itself is stat'ed by its exact bytes.
 * - Doubt is absence, never zero: when the root cannot be listed,
 *   `runwarden_root_readable` is 0 and no `runwarden_runs` or per-run series
 *   are written, so a sum over hosts cannot read "no abandoned runs" from a
 *   host that could not look.
 * - No global state: each instance has its own prom-client Registry, and
 *   importing this module registers nothing.
 */
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { EVENTS_FILE } from '../contract/files.js';
import { printableText } from '../contract/names.js';
import { runFilePath } from '../kernel/dirfd.js';
import { loadAddon } from '../kernel/native.js';
import { IN_FLIGHT, STATUSES, type Liveness, type RunReport, type Status } from '../contract/types.js';
import type { ModelObserver, ReportsList } from './model.js';
import { METRICS_LOOP_SAMPLE_MS } from './limits.js';

/** The `status` label of runwarden_runs for a run with no status yet (as `runs --status none` spells it). */
export const NO_STATUS_LABEL = 'none';

/** Every value the `status` label of runwarden_runs takes: the status words (CONTRACT §4.3), then {@link NO_STATUS_LABEL}. */
export const STATUS_LABELS: readonly string[] = [...STATUSES, NO_STATUS_LABEL];

/** Every value the `liveness` label of runwarden_probes_total takes. */
export const LIVENESS_LABELS: readonly Liveness[] = ['held', 'free', 'unknown'];

/**
 * Probe durations are usually tens of microseconds (one open and one
 * flock(2) on a local file); the upper buckets are there to show a slow or
 * stalling filesystem.
 */
export const PROBE_BUCKETS: readonly number[] = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

/**
 * Default Node gauges that `promtool check metrics` rejects ("non-counter
 * metrics should not have _total suffix"). Each is the sum of a gauge that
 * stays (nodejs_active_handles{type}…), so nothing is lost by dropping them.
 */
const LINT_REJECTED_DEFAULTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** Where the numbers come from: the live model's reports list (see DashboardModel.currentReports). */
export type ReportsSource = () => Promise<ReportsList>;

/** Default sampling interval (ms) of the `nodejs_eventloop_lag_*` metrics; why 100, see serve/limits.ts. */
export { METRICS_LOOP_SAMPLE_MS };

export interface MetricsOptions {
  /** Register the default process and Node metrics too (default true). */
  processMetrics?: boolean;
  /**
   * Told when the source fails a scrape. The scrape is answered all the
   * same, without the runs' series and with `runwarden_root_readable` 0,
   * and counted in `runwarden_serve_failures_total`. Without it, the
   * failure is thrown to the caller.
   */
  onSourceError?: (e: unknown) => void;
  /** Sampling interval of the event-loop delay metrics, in ms (default {@link METRICS_LOOP_SAMPLE_MS}). */
  loopSampleMs?: number;
}

/** Whether a report gets per-run series: in flight or abandoned. */
export function isTracked(r: RunReport): boolean {
  return r.status !== null && (IN_FLIGHT.has(r.status) || r.status === 'ABANDONED');
}

/**
 * The modification time of the run's stream (seconds since the epoch), or
 * undefined when it cannot be read. The run is found by its exact bytes
 * (kernel/dirfd.ts runFilePath reads the shown id back, contract/names.ts),
 * as every other read finds it: `join(root, shownId)` stat'ed the run
 * literally named `\xff` for the run named by the byte 0xff, and nothing at
 * all for an id holding a backslash.
 */
function streamMtimeSeconds(root: string, runId: string): number | undefined {
  try {
    return lstatSync(runFilePath(join(root, runId), EVENTS_FILE)).mtimeMs / 1000;
  } catch {
    return undefined;
  }
}

/** One host's metrics: a registry, the observer the model reports probes and scans to, and the text. */
export class RunwardenMetrics {
  readonly registry = new Registry();
  /** Give this to the model (ModelOptions.observer). */
  readonly observer: ModelObserver;
  private readonly fill: (list: ReportsList) => void;
  /** The scrape under way: scrapes are rendered one at a time, each from one list. */
  private chain: Promise<unknown> = Promise.resolve();
  private readonly failures: Counter;
  private readonly onSourceError: ((e: unknown) => void) | undefined;

  /**
   * `source` is called once per scrape, never before the first one, so it
   * may close over a model built after this (which needs {@link observer}).
   */
  constructor(
    private readonly source: ReportsSource,
    options: MetricsOptions = {},
  ) {
    // The addon first, as the CLI does: a broken install throws AddonLoadError here instead of
    // scraping as `runwarden_root_readable 0`, which would be a false fact about the root.
    loadAddon();
    this.onSourceError = options.onSourceError;
    const registers = [this.registry];
    const runs = new Gauge({ name: 'runwarden_runs', help: 'Runs under the root per status word (none: no status yet). Absent while the root cannot be listed.', labelNames: ['status'], registers });
    const info = new Gauge({
      name: 'runwarden_run_info',
      help: 'Always 1, one series per run in flight (PLANNING, RUNNING) or ABANDONED; settled runs have none.',
      labelNames: ['run_id', 'graph', 'status'],
      registers,
    });
    const lastEvent = new Gauge({
      name: 'runwarden_run_last_event_timestamp_seconds',
      help: "When the last event was appended to the run's events.jsonl (its modification time), for runs in flight or abandoned.",
      labelNames: ['run_id'],
      registers,
    });
    const probeSeconds = new Histogram({ name: 'runwarden_probe_duration_seconds', help: 'Time one lock probe took (open and flock(2)), as measured on a monotonic clock.', buckets: [...PROBE_BUCKETS], registers });
    const probes = new Counter({ name: 'runwarden_probes_total', help: 'Lock probes made, by what the kernel answered (held, free, unknown).', labelNames: ['liveness'], registers });
    const readable = new Gauge({ name: 'runwarden_root_readable', help: "1 when the runs root could be listed (or does not exist yet: no runs), 0 when listing it failed or serve's reader failed (runwarden_serve_failures_total).", registers });
    const scanErrors = new Counter({
      name: 'runwarden_scan_errors_total',
      help: 'Errors met while deriving the root: 1 per derivation that could not list the root, else 1 per run directory that could not be read.',
      registers,
    });
    const unwatched = new Gauge({
      name: 'runwarden_runs_unwatched',
      help: "Runs the live view holds no change watch for (past the notifier's budget: inotify's max_user_watches, kqueue's descriptor budget), polled instead. Absent for a one-shot derivation.",
      registers,
    });
    const holdersUnwatched = new Gauge({
      name: 'runwarden_holders_unwatched',
      help: "Held runs whose holder the live view does not watch for its exit (past the budget of exit watches, which follows RLIMIT_NOFILE; or a holder it cannot see), re-probed every 5 s instead. Absent for a one-shot derivation.",
      registers,
    });
    const failures = new Counter({
      name: 'runwarden_serve_failures_total',
      help: "Requests serve could not answer because its reader failed (answered 500, or for /metrics without the runs' series), each also said in one line on stderr.",
      registers,
    });
    failures.inc(0);
    this.failures = failures;
    for (const l of LIVENESS_LABELS) probes.inc({ liveness: l }, 0);
    scanErrors.inc(0);

    this.observer = {
      probed: (seconds, liveness) => {
        probeSeconds.observe(seconds);
        probes.inc({ liveness });
      },
      scanned: (errors) => scanErrors.inc(errors),
    };

    // prom-client renders a registry's metrics concurrently, so a collect
    // hook per gauge could mix two lists; text() fills them all from one list first.
    this.fill = (list) => {
      runs.reset();
      info.reset();
      lastEvent.reset();
      unwatched.reset();
      if (list.unwatched !== undefined) unwatched.set(list.unwatched);
      holdersUnwatched.reset();
      if (list.holdersUnwatched !== undefined) holdersUnwatched.set(list.holdersUnwatched);
      readable.set(list.error === undefined ? 1 : 0);
      if (list.error !== undefined) return;
      const counts = new Map<string, number>(STATUS_LABELS.map((s) => [s, 0]));
      for (const r of list.runs) {
        const label = r.status ?? NO_STATUS_LABEL;
        counts.set(label, (counts.get(label) ?? 0) + 1);
        if (!isTracked(r)) continue;
        // Label values by the one printing rule (names.ts printableText): prom-client escapes `\`, `"` and
        // newline as the format asks; every other control character is already a visible escape.
        const runId = printableText(r.run_id);
        info.set({ run_id: runId, graph: printableText(r.graph ?? ''), status: r.status as Status }, 1);
        const t = streamMtimeSeconds(list.root, r.run_id);
        if (t !== undefined) lastEvent.set({ run_id: runId }, t);
      }
      for (const [status, n] of counts) runs.set({ status }, n);
    };

    if (options.processMetrics ?? true) {
      collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: options.loopSampleMs ?? METRICS_LOOP_SAMPLE_MS });
      for (const name of LINT_REJECTED_DEFAULTS) this.registry.removeSingleMetric(name);
    }
  }

  /** The Content-Type of {@link text}. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Counts a request that could not be answered for a failure of the reader (`runwarden_serve_failures_total`). */
  failed(): void {
    this.failures.inc();
  }

  /** The exposition text, derived now (see the module comment for what that costs). */
  text(): Promise<string> {
    const next = this.chain.then(async () => {
      let list: ReportsList;
      try {
        list = await this.source();
      } catch (e) {
        if (this.onSourceError === undefined) throw e;
        this.onSourceError(e);
        this.failed();
        // Doubt is absence: no runs' series from a scrape that could not read them.
        list = { root: '', missing: false, runs: [], skipped: [], error: e instanceof Error ? e.message : String(e) };
      }
      this.fill(list);
      return this.registry.metrics();
    });
    this.chain = next.catch(() => undefined);
    return next;
  }
}
