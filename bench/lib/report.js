/**
 * Renders bench/RESULTS.md from the measured data. Everything in it is
 * computed from this run's numbers; the only fixed prose is the method and
 * the definitions, which describe what the code measures.
 */
import { BEGIN, END, resultsBlock } from './headlines.js';
import { fmtNs, fmtRate, fmtRatio, thousands } from './stats.js';

export const RUNS_HEADING = '## runs at scale';

const TARGET = 1.3;

const DOES = {
  floor: 'statfs dir; open, fstat, pread 128, flock SH\\|NB, (LOCK_UN), close: the 7 (6 held) calls the budget is stated in (CONTRACT §5.4)',
  'floor-same': 'open dir O_PATH (no-follow), statx lock (no-follow), fstatfs dir on the first call only, openat2 RESOLVE_NO_XDEV, pread 128, flock SH\\|NB, close, close dir',
  probeLock: 'the same 7 syscalls as the line above, in one native call',
  probeLockAt: 'statx, openat2, pread 128, flock SH\\|NB, close: 5 syscalls, in one native call',
  'composed-sh': 'statfs, open, pread, flock, (unlock), close: one JS↔native crossing each',
  'composed-ex': 'as above with LOCK_EX\\|NB',
  'proper-lockfile': 'realpath + stat of `<path>.lock`, mtime vs now',
  'fs-ext': 'open, flock SH\\|NB, LOCK_UN, close (no statfs, no read); contention is thrown',
  kill: 'kill(pid, 0); a gone pid is thrown (ESRCH)',
  pidfile: 'open, fstat, read, close, kill(pid, 0)',
};

function table(header, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

function costSection(cost, audit) {
  const out = [];
  const pl = cost.rows.find((r) => r.id === 'probeLock');
  out.push(
    `Per-probe time on the same two files (\`free\`: a marked lock nobody holds; \`held\`: a live holder process holds runwarden's flock and proper-lockfile's lock on it), median of ${cost.reps} interleaved repetitions. A repetition times every method once per file, for about ${cost.chunkMs} ms each, in a rotated order, with a run of the C floor between every two methods; "× floor" is the median over repetitions of the method's time divided by the mean of **the two floor runs right beside it**, so each method is compared with the floor as the machine was at that moment. The quartiles of that ratio are in brackets.`,
  );
  out.push('');
  const rows = cost.rows.map((r) => [
    r.label,
    fmtNs(r.free.ns),
    `**${fmtRatio(r.free.ratio)}** [${r.free.ratioQuartiles.map((v) => v.toFixed(2)).join('–')}]`,
    fmtNs(r.held.ns),
    `**${fmtRatio(r.held.ratio)}** [${r.held.ratioQuartiles.map((v) => v.toFixed(2)).join('–')}]`,
    `${r.free.answer} / ${r.held.answer}`,
    DOES[r.id] ?? '',
  ]);
  out.push(table(['method', 'free', '× floor', 'held', '× floor', 'answer (free / held)', 'what one call does'], rows));
  out.push('');
  const at = cost.rows.find((r) => r.id === 'probeLockAt');
  const met = [pl, at].every((r) => r === undefined || (r.free.ratio <= TARGET && r.held.ratio <= TARGET));
  out.push(
    `Target (CONTRACT §5.4): \`probeLock\` and \`probeLockAt\` ≤ ${TARGET}× the reference floor. Measured: \`probeLock\` ${fmtRatio(pl.free.ratio)} free, ${fmtRatio(pl.held.ratio)} held${at ? `; \`probeLockAt\` ${fmtRatio(at.free.ratio)} free, ${fmtRatio(at.held.ratio)} held` : ''} — **${met ? 'met' : 'not met'}**. Where the time goes, and the fix, measured before and after: [PROFILE.md](PROFILE.md).`,
  );
  out.push('');
  out.push(
    'Peers that come out cheaper than the floor do less than the probe does: `fs-ext` skips the filesystem gate and the marker read, and `kill(pid, 0)` reads no file at all; what they then get wrong is in the next section. Answers are liveness words: `held` = the holder is alive, `free` = it is gone.',
  );
  if (audit) {
    out.push('');
    out.push('Syscalls per call, counted with `strace -f -c` (a process making 2,000 calls minus one making none, divided by 2,000):');
    out.push('');
    const fmt = (o) =>
      Object.entries(o)
        .sort()
        .map(([k, v]) => `${k} ${v}`)
        .join(', ');
    out.push(
      table(
        ['file', '`probeLock`', 'floor (reference)', "floor (probe's sequence)"],
        ['free', 'held'].map((f) => [f, fmt(audit[f].probeLock), fmt(audit[f].floor), audit[f].same ? fmt(audit[f].same) : '—']),
      ),
    );
  }
  out.push('');
  out.push('<details><summary>raw ns per call, every repetition</summary>');
  out.push('');
  for (const r of cost.rows) {
    for (const f of ['free', 'held']) {
      out.push(`- ${r.id} ${f} (${thousands(r[f].iterations)} calls per repetition): ${r[f].raw.map((v) => Math.round(v)).join(' ')}`);
    }
  }
  out.push('');
  out.push('</details>');
  return out.join('\n');
}

function ms(v) {
  if (v === undefined) return undefined;
  return v < 100 ? `${v.toFixed(1)} ms` : `${thousands(v)} ms`;
}

function peersSection(peers, observers) {
  const { kill, stop, recycled } = peers.scenarios;
  const s = (v) => (v / 1000).toFixed(1);
  const killRow = observers.map((o) => {
    const g = kill.firstGone[o.id];
    return g === undefined ? `still alive after ${s(kill.windowMs)} s — WRONG` : `gone after ${ms(g)}${g > 1000 ? ' (its stale window)' : ''}`;
  });
  const stopRow = observers.map((o) => {
    const g = stop.firstGone[o.id];
    return g === undefined ? `alive throughout the ${s(peers.stopMs)} s stop — correct` : `reported **dead** after ${ms(g)} while alive — WRONG`;
  });
  const secondRow = observers.map((o) => {
    const v = stop.secondLocker[o.id];
    if (v === 'refused') return 'refused — correct';
    if (v === 'granted') return 'granted: **two owners** — WRONG';
    return v === 'n/a' ? 'n/a (takes no lock)' : v;
  });
  const recRow = observers.map((o) => {
    const g = recycled.firstGone[o.id];
    if (g === undefined) return `fooled: alive for all ${s(recycled.windowMs)} s — WRONG`;
    return o.id === 'proper-lockfile' ? `reads no pid; gone after ${ms(g)} (stale window)` : `gone after ${ms(g)} — not fooled`;
  });
  const out = [];
  out.push(
    `Real processes. A holder process takes runwarden's lock (flock) and proper-lockfile's lock on the same path; the bench then polls every observer about once a millisecond, yielding to its event loop between rounds (so a dead holder is reaped at once, as a parent would). proper-lockfile's \`stale\` is shortened from its 10 s default to **${thousands(peers.staleMs)} ms** (its minimum) to keep the bench quick; that scales its delays, not its behaviour. The three scenarios run side by side, each on its own run directory and holder. Times are from the signal to the first poll that said gone, so they include the kernel tearing the killed process down (on a busy machine, also waiting for a core to do it).`,
  );
  out.push('');
  out.push(
    table(
      ['scenario', ...observers.map((o) => o.label)],
      [
        ['holder killed with SIGKILL', ...killRow],
        [`holder SIGSTOPped for ${s(peers.stopMs)} s (> stale window)`, ...stopRow],
        ['… a second locker tries during the stop', ...secondRow],
        ['holder killed; its pid now names a live, unrelated process', ...recRow],
      ],
    ),
  );
  out.push('');
  const comp = stop.holderCompromised.length;
  out.push(
    `Before each scenario every observer answered alive (${['kill', 'stop', 'recycled'].map((k) => `${k}: ${JSON.stringify(peers.scenarios[k].before)}`).join('; ')}). ` +
      (comp
        ? `After SIGCONT, the stopped holder's own proper-lockfile reported its lock compromised (\`${stop.holderCompromised[0]}\`): it learns it lost the lock only after the second owner already had it.`
        : 'After SIGCONT the stopped holder raised no compromise.'),
  );
  out.push('');
  out.push('<details><summary>raw answer counts per observer</summary>');
  out.push('');
  for (const [k, v] of Object.entries(peers.scenarios)) out.push(`- ${k}: ${JSON.stringify(v.answers)}; first gone (ms): ${JSON.stringify(v.firstGone)}`);
  out.push('');
  out.push('</details>');
  return out.join('\n');
}

function pollersSection(cells, settings, kinds, { windowMs, reps, svgLink, holdMs, idleMs }) {
  const out = [];
  out.push(
    `P poller processes (child processes, each a tight loop of one probe kind) on one run's lock. Each cell is ${reps} windows of ${thousands(windowMs)} ms, interleaved with the other cells of the same P; in a window all pollers start at one agreed CLOCK_MONOTONIC instant. probes/s is the median window's total over all pollers; latencies are pooled over the windows; counts are summed. With more pollers than cores (nproc above) the pollers time-share the cores, so latency includes waiting for a core. Latency is the time between successive clock reads around each probe (it includes one ~0.1 µs clock read). The churn leg holds the lock ~${holdMs} ms, then idles ~${idleMs} ms, in a loop.`,
  );
  out.push('');
  out.push(`![probes per second and p99 latency against P](${svgLink})`);
  out.push('');
  for (const s of settings) {
    const churn = s.id.startsWith('churn');
    out.push(`### ${s.label}`);
    out.push('');
    const header = ['P', 'probe', 'probes/s', 'p50', 'p99', 'p99.9', 'wrong', 'unknown'];
    if (churn) header.push('judged', 'leg attempts', 'refused (false busy)', 'acquire p99');
    const rows = [];
    for (const P of [...new Set(cells.map((c) => c.P))].sort((a, b) => a - b)) {
      for (const k of kinds) {
        const c = cells.find((x) => x.P === P && x.setting === s.id && x.kind === k.id);
        if (!c) continue;
        const unk = c.unknown ? `${thousands(c.unknown)}${Object.keys(c.unknownReasons ?? {}).length ? ` (${Object.entries(c.unknownReasons).map(([r, n]) => `${r} ${thousands(n)}`).join(', ')})` : ''}` : '0';
        const row = [
          String(P),
          k.id,
          thousands(c.probesPerSec),
          fmtNs(c.p50),
          fmtNs(c.p99),
          fmtNs(c.p999),
          c.wrong ? `**${thousands(c.wrong)}** (${fmtRate(c.wrong, c.judged)})` : '0',
          unk,
        ];
        if (churn) {
          row.push(fmtRate(c.judged, c.probes));
          row.push(thousands(c.leg.attempts));
          row.push(`${thousands(c.leg.refused)} (${fmtRate(c.leg.refused, c.leg.attempts)})`);
          row.push(fmtNs(c.leg.acquireP99));
        }
        rows.push(row);
      }
    }
    out.push(table(header, rows));
    out.push('');
  }
  out.push(pollerFindings(cells));
  out.push('');
  out.push('<details><summary>raw cells (JSON)</summary>');
  out.push('');
  out.push('```json');
  for (const c of cells) out.push(JSON.stringify(c, (k, v) => (typeof v === 'number' && !Number.isInteger(v) ? Math.round(v * 10) / 10 : v)));
  out.push('```');
  out.push('');
  out.push('</details>');
  return out.join('\n');
}

/** Plain statements computed from the cells: how false busy, flicker and unknowns move with P. */
function pollerFindings(cells) {
  const Ps = [...new Set(cells.map((c) => c.P))].sort((a, b) => a - b);
  const get = (setting, kind, P) => cells.find((c) => c.setting === setting && c.kind === kind && c.P === P);
  const rate = (c) => (c && c.leg && c.leg.attempts ? `${((100 * c.leg.refused) / c.leg.attempts).toFixed(1)} %` : 'n/a');
  const series = (setting, kind, f) => Ps.map((P) => `${P}: ${f(get(setting, kind, P))}`).join(', ');
  const flick = (c) => (c ? `${((100 * c.wrong) / c.probes).toFixed(1)} %` : 'n/a');
  const unk = (c) => (c ? `${((100 * c.unknown) / c.probes).toFixed(2)} %` : 'n/a');
  const refusedD = (kind) => Ps.filter((P) => (get('churn-default', kind, P)?.leg.refused ?? 0) > 0);
  const lines = [];
  lines.push('### What the pollers tables show');
  lines.push('');
  lines.push(
    `- **False busy grows with P once pollers outnumber cores**, for both probe kinds. Raw rate (\`retryMs: 0\`) by P — shared: ${series('churn-0', 'shared', rate)}; exclusive: ${series('churn-0', 'exclusive', rate)}. A poller that loses its core between its \`LOCK_SH\` and the \`close\` that drops it keeps the shared lock while it waits to run again, so with P tight-loop pollers on fewer cores the chance that *some* waiting poller holds it at the leg's instant rises with P (roughly 1 − (1 − f)^(P−1) for a per-poller holding fraction f). The shared lock removes reader-vs-reader conflicts, not this. The design's retry window is what absorbs it: with the default window the leg was refused ${refusedD('shared').length ? `at P = ${refusedD('shared').join(', ')} (shared)` : 'at no P (shared)'} and ${refusedD('exclusive').length ? `at P = ${refusedD('exclusive').join(', ')} (exclusive)` : 'at no P (exclusive)'}; see the "refused" column for counts. Tight loops are a stress test: a dashboard polling once a second holds the lock for well under a millionth of the time.`,
  );
  lines.push(
    `- **Reader flicker is the exclusive probe's alone**: share of its answers on a free lock that said "held", by P: ${series('free', 'exclusive', flick)}. The shared probe's count is 0 at every P in every setting.`,
  );
  const churnShared = cells.filter((c) => c.setting.startsWith('churn') && c.kind === 'shared');
  if (churnShared.every((c) => c.unknown === 0)) {
    lines.push(
      '- **No unknowns in churn**: not one shared-probe answer was `unknown` while the leg started and stopped, because `acquireLock` writes the marker before truncating the file to its length, so the first line is a marker at every instant. (Before that order, 10–30 % of these answers were `empty-file`; [PROFILE.md](PROFILE.md), section 5.)',
    );
  } else {
    const reasons = {};
    for (const c of churnShared) for (const [k, v] of Object.entries(c.unknownReasons ?? {})) reasons[k] = (reasons[k] ?? 0) + v;
    lines.push(
      `- **Unknown, never wrong, in churn**: share of shared-probe answers that were \`unknown\`, by P (churn, \`retryMs: 0\`): ${series('churn-0', 'shared', unk)}; reasons over both churn settings: ${JSON.stringify(reasons)}. Unknown is the safe answer (the run reads as in flight).`,
    );
  }
  return lines.join('\n');
}

const DEFINITIONS = `### Definitions (what the pollers tables count)

- **wrong** — an answer that cannot be true:
  - *held* setting: \`free\` (a live holder holds the exclusive flock the whole window).
  - *free* setting: \`held\` (no leg exists; for the exclusive probe this is one reader seeing another reader's lock — **reader flicker**).
  - *churn* settings: the leg records, on the shared monotonic clock, the spans it knows for certain: **held** from the moment \`acquireLock\` returned until it called \`release()\`, and **not held** from the moment \`release()\` returned (or the window began) until it next called \`acquireLock\` successfully (refused attempts in between never take the lock). Probe *i* ran inside [t(i−1), t(i)]. A probe lying **wholly inside** a held span that answered \`free\`, or wholly inside a not-held span that answered \`held\`, is wrong. A probe overlapping an \`acquireLock\` or \`release()\` call is not judged: the lock is in transit and either answer is legitimate. "judged" is the share of probes that lay wholly inside a certain span, so the count is not vacuous.
- **unknown** — the safe answer ("in flight, as before"), never wrong; the tables give its reasons.
- **refused (false busy)** — the churn leg's \`acquireLock\` attempts refused with \`ELOCKHELD\`. No other leg exists, so every refusal is a poller's probe lock met at that instant. With \`retryMs: 0\` this is the raw rate; with the default retry window (100 ms of non-blocking retries, 2 ms apart) it is what a starting leg would actually see. "acquire p99" is the 99th percentile of the time one \`acquireLock\` call took.`;

const METHOD = `## Method

- **Floor**: \`bench/floor.c\`, compiled by the bench with \`cc -O2\` into \`bench/out/\`, times itself with CLOCK_MONOTONIC around the loop only, and runs as its own process between the Node measurements of every repetition. The **reference** loop, which every "× floor" divides by, is fixed: the 7 calls the probe was first measured against (statfs of the run directory checked against the known-local list, open O_RDONLY|O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC, fstat, pread 128 at 0, flock LOCK_SH|LOCK_NB, LOCK_UN when granted, close), so a call added to the probe shows as a higher ratio, never as a higher floor. Its \`same\` loop does the probe's own sequence (CONTRACT §4.2) and is shown as a row beside it: the ratio of \`probeLock\` to that row is the price of asking from Node alone.
- **Ratios, not times**: this is a shared 2-core VM whose speed drifts by tens of percent from one second to the next, so every claim is a ratio measured inside one repetition, and the figure reported is the median over repetitions; absolute times are shown only for orientation.
- **Peers**: \`proper-lockfile\` (\`checkSync\`, default options except \`stale\`), \`fs-ext\` (\`flockSync\` on a fresh descriptor), and \`process.kill(pid, 0)\`; the exclusive probe is implemented only in \`bench/lib/probes.js\`, from \`node:fs\` and the addon's \`flock\`.
- **Pollers**: \`bench/workers/poller.js\` (one process per poller), \`bench/workers/leg.js\` (the churn leg), \`bench/workers/holder.js\` (the live holder). Every process the bench starts is killed when it ends.
- **Headline check**: \`npm run bench -- --check\` (\`bench/check.mjs\`) re-derives every headline of \`bench/headlines.json\` by its own command at its own scale (tens of minutes: the 100,000-run roots, 5 GB of streams, Chromium; \`--only <id>\` picks one, \`--quick\` a reduced form printed as not comparable). A stored ratio is **stale** when it lies outside the min–max of that run's own repetitions, rounded to two decimals and widened by the tolerance the entry states; a fact (an absolute target: a p99, a memory size, an outcome) when its claim fails the target and tolerance its judge states; exit status 0 all fresh, 1 some stale, 2 usage error or a headline without a check, 3 could not measure.
- Quick mode (\`npm run bench -- --quick\`) uses fewer repetitions, fewer P values and shorter windows, and writes to \`bench/out/\` instead of this file.`;

/**
 * The headline facts of a full run (bench/headlines.json entries that are not
 * ratios), as markdown statements; bench/run.js records them with the run's
 * date and commit, the ratios with their quartiles.
 */
export function headlineFacts({ peers, cells }) {
  const sharedCells = cells.filter((c) => c.kind === 'shared');
  const exCells = cells.filter((c) => c.kind === 'exclusive');
  const sum = (cs, f) => cs.reduce((a, c) => a + f(c), 0);
  const range = (cs) => {
    const rates = cs.map((c) => (100 * c.leg.refused) / c.leg.attempts);
    return `${Math.min(...rates).toFixed(1)}–${Math.max(...rates).toFixed(1)} %`;
  };
  const flickerFree = exCells.filter((c) => c.setting === 'free' && c.P > 1);
  const maxFlicker = flickerFree.length ? Math.max(...flickerFree.map((c) => (100 * c.wrong) / c.probes)) : 0;
  const churn0 = (k) => cells.filter((c) => c.setting === 'churn-0' && c.kind === k);
  const churnD = (k) => cells.filter((c) => c.setting === 'churn-default' && c.kind === k);
  const { kill, stop, recycled } = peers.scenarios;
  const Ps = `P = ${[...new Set(cells.map((c) => c.P))].sort((a, b) => a - b).join(', ')}: `;
  const millions = (n) => (n >= 1e6 ? `${(n / 1e6).toFixed(1)} million` : thousands(n));
  return {
    'peers-kill': `runwarden ${ms(kill.firstGone.runwarden) ?? 'never'}; proper-lockfile ${ms(kill.firstGone['proper-lockfile']) ?? 'never'} (its stale window, shortened to ${(peers.staleMs / 1000).toFixed(0)} s for the bench)`,
    'peers-stop': `runwarden: ${stop.firstGone.runwarden === undefined ? 'alive throughout' : '**said dead (WRONG)**'}; proper-lockfile: ${stop.firstGone['proper-lockfile'] === undefined ? 'alive throughout' : `dead after ${ms(stop.firstGone['proper-lockfile'])}${stop.secondLocker['proper-lockfile'] === 'granted' ? ', and it granted the lock to a second owner' : ''}`}`,
    'peers-recycled': `runwarden: ${recycled.firstGone.runwarden === undefined ? 'never said gone (WRONG)' : `gone after ${ms(recycled.firstGone.runwarden)}`}; a pid check: ${recycled.firstGone.pid === undefined ? 'fooled throughout' : 'not fooled'}`,
    pollers: `${Ps}shared probe: **${thousands(sum(sharedCells, (c) => c.wrong))} wrong answers in ${millions(sum(sharedCells, (c) => c.probes))} probes**; an exclusive-lock probe (the design runwarden does not use) read a free lock as held in up to ${maxFlicker.toFixed(0)} % of its answers`,
    'false-busy': `${Ps}with \`retryMs: 0\` a starting leg was refused by a reader in ${range(churn0('shared'))} of attempts (shared probes; ${range(churn0('exclusive'))} exclusive); with the default retry window ${thousands(sum(churnD('shared'), (c) => c.leg.refused))} of ${thousands(sum(churnD('shared'), (c) => c.leg.attempts))} (shared) and ${thousands(sum(churnD('exclusive'), (c) => c.leg.refused))} of ${thousands(sum(churnD('exclusive'), (c) => c.leg.attempts))} (exclusive)`,
  };
}

/** The full RESULTS.md text. `runsSection` is the "## runs at scale" section, heading included. */
export function renderResults({ info, load, command, mode, startedAt, durationS, floorCompiler, cost, audit, peers, observers, cells, settings, kinds, pollerOpts, runsSection, svgLink, headlines }) {

  return `# runwarden benchmarks

Written by \`bench/run.js\`. The Headlines are every headline of \`bench/headlines.json\`, each with the date, commit and command of the run that measured it (\`npm run bench -- --check\` re-derives each by its own command); every other number in the sections it writes comes from the one run described here. The section "${RUNS_HEADING.slice(3)}" is written by \`bench/runs-scale.mjs\` and carried over as it is.

| | |
| --- | --- |
| command | \`${command}\` (${mode} mode, ${durationS.toFixed(0)} s) |
| date | ${startedAt} |
| CPU | ${info.cpuModel} |
| nproc | ${info.nproc} |
| load average (1 min) | ${load[0].toFixed(2)} at start, ${load[1].toFixed(2)} at end |
| kernel | ${info.kernel} |
| node | ${info.node} |
| floor compiler | ${floorCompiler} |
| files under test | ${info.tmpdir} (${info.fs}) |
| runwarden | commit ${info.commit} |
| peers | proper-lockfile ${info.peers['proper-lockfile']}, fs-ext ${info.peers['fs-ext']} (native addon built here) |

## Headlines

${BEGIN}
${resultsBlock(headlines)}
${END}

## 1. Probe cost

${costSection(cost, audit)}

## 2. Peer correctness

${peersSection(peers, observers)}

## 3. Many pollers

${pollersSection(cells, settings, kinds, { ...pollerOpts, svgLink })}

${DEFINITIONS}

${runsSection.trim()}

${METHOD}
`;
}

/** Extracts the "## runs at scale" section (heading through the next level-1/2 heading) from markdown, or undefined. */
export function extractRunsSection(markdown) {
  if (!markdown) return undefined;
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => l.trim().toLowerCase() === RUNS_HEADING);
  if (start < 0) return undefined;
  let end = lines.length;
  for (let i = start + 1; i < lines.length; i++) {
    if (/^#{1,2}\s/.test(lines[i])) {
      end = i;
      break;
    }
  }
  return lines.slice(start, end).join('\n').trimEnd();
}
