#!/usr/bin/env node
/**
 * runwarden's benchmarks, one command: `npm run bench` (full) or
 * `npm run bench -- --quick` (under two minutes on a 2-core machine).
 *
 * 1. probe cost against the C syscall floor and the peers (bench/cost.js);
 * 2. peer correctness with real killed, stopped and recycled holders (bench/peers.js);
 * 3. many pollers, shared vs exclusive probes (bench/pollers.js), plotted as an SVG;
 * 4. `runs` at scale, by bench/runs-scale.mjs when it exists.
 *
 * A full run writes bench/RESULTS.md and bench/pollers.svg (both committed);
 * a quick run writes bench/out/RESULTS-quick.md and bench/out/pollers-quick.svg,
 * so trying the bench never overwrites the committed figures. Raw data of
 * either goes to bench/out/results[-quick].json.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const benchDir = dirname(fileURLToPath(import.meta.url));
const root = dirname(benchDir);

const HELP = `usage: npm run bench [-- --quick | --check [options]]

  (no option)  full run: P = 1 … 64, 3 × 600 ms windows per cell, 31 cost repetitions;
               writes bench/RESULTS.md and bench/pollers.svg
  --quick      fewer repetitions, P = 1, 4, 16, short windows (< 2 minutes);
               writes bench/out/RESULTS-quick.md and bench/out/pollers-quick.svg
  --check      re-derive every headline of bench/headlines.json by its own
               command (tens of minutes at the headlines' scale; --only <id>
               picks one) and say which stored values are stale; exit 1 if any is.
               \`npm run bench -- --check --help\` lists its options
  --help       this text

Needs: linux, the native addon built (npm ci does it), a C compiler (cc),
and optionally strace (to count the probe's syscalls).`;

const args = process.argv.slice(2);
if (args.includes('--check')) {
  // The headline check is its own script (bench/check.mjs); every other option goes to it.
  const r = spawnSync(process.execPath, [join(benchDir, 'check.mjs'), ...args.filter((a) => a !== '--check')], { stdio: 'inherit' });
  process.exit(r.status ?? 3);
}
if (args.includes('--help') || args.includes('-h')) {
  console.log(HELP);
  process.exit(0);
}
const unknown = args.filter((a) => a !== '--quick');
if (unknown.length) {
  console.error(`bench: unknown option ${unknown[0]}\n\n${HELP}`);
  process.exit(2);
}
const quick = args.includes('--quick');
if (process.platform !== 'linux') {
  console.error(`bench: linux only (the floor uses linux statfs, and the figures are linux's); this is ${process.platform}`);
  process.exit(1);
}

const t0 = Date.now();
const log = (msg) => console.error(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s] ${msg}`);

function newestMtime(dir) {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/** The addon must be built (npm ci does it); dist/ is rebuilt when missing or older than src/. */
function ensureBuilt() {
  if (!existsSync(join(root, 'build', 'Release', 'runwarden.node'))) {
    console.error('bench: the native addon is not built (build/Release/runwarden.node). Run `npm ci` (or `node scripts/install.mjs`) first.');
    process.exit(1);
  }
  const distIndex = join(root, 'dist', 'index.js');
  if (!existsSync(distIndex) || statSync(distIndex).mtimeMs < newestMtime(join(root, 'src'))) {
    log('building dist/ (tsc -p .)');
    try {
      execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', root], { stdio: 'inherit' });
    } catch {
      console.error('bench: `tsc -p .` failed; fix the build first.');
      process.exit(1);
    }
  }
}

/** The level-2 headings of `markdown`, in order, as written. */
function level2Headings(markdown) {
  return markdown.split('\n').filter((l) => /^##\s/.test(l)).map((l) => l.trim());
}

/** The section of `markdown` under the level-2 heading `heading` (compared lower-case), heading included; undefined when absent. */
function sectionOf(markdown, heading) {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => l.trim().toLowerCase() === heading);
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

async function runsAtScale(resultsPath, extractRunsSection, RUNS_HEADING) {
  const script = join(benchDir, 'runs-scale.mjs');
  if (!existsSync(script)) {
    log('runs at scale: bench/runs-scale.mjs not yet available');
    return `${RUNS_HEADING}\n\nNot yet available: \`bench/runs-scale.mjs\` does not exist in this checkout.`;
  }
  log(`runs at scale: node bench/runs-scale.mjs${quick ? ' --quick' : ''}`);
  const child = spawn(process.execPath, [script, ...(quick ? ['--quick'] : [])], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.on('data', (d) => {
    stdout += d;
    process.stderr.write(d);
  });
  const code = await new Promise((r) => child.on('close', r));
  // The script may write its section into RESULTS.md itself, or print it.
  const fromFile = existsSync(resultsPath) ? extractRunsSection(readFileSync(resultsPath, 'utf8')) : undefined;
  const fromStdout = extractRunsSection(stdout);
  const section = fromFile ?? fromStdout;
  if (code !== 0) {
    return `${RUNS_HEADING}\n\n\`node bench/runs-scale.mjs${quick ? ' --quick' : ''}\` failed (exit ${code}) in this run.${section ? `\n\nLast recorded section:\n\n${section.split('\n').slice(1).join('\n')}` : ''}`;
  }
  return section ?? `${RUNS_HEADING}\n\n\`bench/runs-scale.mjs\` ran (exit 0) but produced no "${RUNS_HEADING}" section; its output is on the console.`;
}

/**
 * Writes this run's measurements into the headline entries it measures (the
 * probe ratios with their quartiles, the peers' and pollers' facts), each
 * with its date, commit and command; a checkout with uncommitted changes to
 * what is measured says so in the command, so a number never names code it
 * did not run.
 */
function recordHeadlines(doc, { cost, facts, date, commit, command }) {
  const hash = /^[0-9a-f]{7,40}/.exec(commit)?.[0] ?? 'unknown';
  const measured = { date, commit: hash, command: commit === hash ? command : `${command} (uncommitted changes to src/ or native/)` };
  const round2 = (v) => Math.round(v * 100) / 100;
  const set = (id, patch) => {
    const h = doc.headlines.find((x) => x.id === id);
    if (h !== undefined) Object.assign(h, patch, { measured });
  };
  for (const [base, rowId] of [['probe', 'probeLock'], ['composed', 'composed-sh'], ['proper-lockfile', 'proper-lockfile']]) {
    const row = cost.rows.find((r) => r.id === rowId);
    for (const f of ['free', 'held']) {
      set(`${base}-${f}`, { value: round2(row[f].ratio), spread: row[f].ratioQuartiles.map(round2), spread_of: `quartiles of ${cost.reps} interleaved repetitions` });
    }
  }
  // The budget is judged here, where the figure is made, so a page never shows a missed budget as a bare "budget".
  for (const id of ['probe-free', 'probe-held']) {
    const v = doc.headlines.find((x) => x.id === id)?.value;
    set(id, { note: `budget 1.3×: ${typeof v === 'number' && v <= 1.3 ? 'met' : 'missed in this run'}` });
  }
  for (const [id, value] of Object.entries(facts)) set(id, { value });
}

async function main() {
  ensureBuilt();
  // Imported only after the build check: these load dist/.
  const { buildFloor } = await import('./lib/floor.js');
  const { runCost, syscallAudit } = await import('./cost.js');
  const { runPeers, OBSERVERS } = await import('./peers.js');
  const { runPollers, SETTINGS, KINDS } = await import('./pollers.js');
  const { pollersSvg } = await import('./lib/svg.js');
  const { renderResults, extractRunsSection, headlineFacts, RUNS_HEADING } = await import('./lib/report.js');
  const { loadHeadlines, saveHeadlines, writeDocs } = await import('./lib/headlines.js');
  const { machineInfo } = await import('./lib/machine.js');

  const cfg = quick
    ? { reps: 7, chunkMs: 8, Ps: [1, 4, 16], windowMs: 150, windowReps: 2, staleMs: 2000, stopMs: 3000 }
    : { reps: 31, chunkMs: 15, Ps: [1, 2, 4, 8, 16, 32, 64], windowMs: 600, windowReps: 3, staleMs: 2000, stopMs: 4000 };
  const outDir = join(benchDir, 'out');
  mkdirSync(outDir, { recursive: true });
  const resultsPath = quick ? join(outDir, 'RESULTS-quick.md') : join(benchDir, 'RESULTS.md');
  const svgPath = quick ? join(outDir, 'pollers-quick.svg') : join(benchDir, 'pollers.svg');
  const startedAt = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const info = machineInfo(root);
  const loadStart = loadavg()[0];
  log(`${quick ? 'quick' : 'full'} run on ${info.cpuModel} (nproc ${info.nproc}), node ${info.node}`);

  const floor = buildFloor();
  log(`floor: ${relative(root, floor.binary)} built with ${floor.compiler}`);

  log('syscall audit (strace)');
  const audit = await syscallAudit({ floorBin: floor.binary, log });
  if (!audit) log('  strace not installed; skipped');

  log(`probe cost: ${cfg.reps} interleaved repetitions`);
  const cost = await runCost({ floorBin: floor.binary, reps: cfg.reps, chunkMs: cfg.chunkMs, log: quick ? undefined : log });
  for (const r of cost.rows) log(`  ${r.id.padEnd(16)} free ${Math.round(r.free.ns)} ns (${r.free.ratio.toFixed(2)}×)  held ${Math.round(r.held.ns)} ns (${r.held.ratio.toFixed(2)}×)`);

  log(`peer correctness (proper-lockfile stale ${cfg.staleMs} ms, stop ${cfg.stopMs} ms)`);
  const peers = await runPeers({ staleMs: cfg.staleMs, stopMs: cfg.stopMs, log });

  log(`many pollers: P = ${cfg.Ps.join(', ')}, ${cfg.windowReps} × ${cfg.windowMs} ms windows per cell`);
  const pollerOpts = { windowMs: cfg.windowMs, reps: cfg.windowReps, holdMs: 1, idleMs: 1 };
  const cells = await runPollers({ Ps: cfg.Ps, ...pollerOpts, log });

  const caption = `${info.cpuModel}, nproc ${info.nproc}, ${info.kernel}, node ${info.node} — ${startedAt} — ${cfg.windowReps} × ${cfg.windowMs} ms per point`;
  writeFileSync(svgPath, pollersSvg({ cells, settings: SETTINGS, kinds: KINDS, caption }));
  log(`plot: ${relative(root, svgPath)}`);

  const runsSection = await runsAtScale(resultsPath, extractRunsSection, RUNS_HEADING);

  // The headlines this run measured, with its date and commit: saved to bench/headlines.json by a
  // full run (then docs/benchmarks.md's and RESULTS.md's headline blocks are regenerated), kept in memory by a quick one.
  const headlines = loadHeadlines();
  recordHeadlines(headlines, { cost, facts: headlineFacts({ peers, cells }), date: startedAt.slice(0, 10), commit: info.commit, command: quick ? 'npm run bench -- --quick' : 'npm run bench' });

  const durationS = (Date.now() - t0) / 1000;
  const md = renderResults({
    info,
    load: [loadStart, loadavg()[0]],
    command: quick ? 'npm run bench -- --quick' : 'npm run bench',
    mode: quick ? 'quick' : 'full',
    startedAt,
    durationS,
    floorCompiler: floor.compiler,
    cost,
    audit,
    peers,
    observers: OBSERVERS,
    cells,
    settings: SETTINGS,
    kinds: KINDS,
    pollerOpts,
    runsSection,
    svgLink: relative(dirname(resultsPath), svgPath),
    headlines,
  });
  // Every other level-2 section of the previous file is kept as it was: other benches write them
  // (bounds.mjs, replaced-lock.mjs, serve-scale.mjs, scale.mjs, live.mjs, probe-budget.mjs,
  // list-floor.mjs, table-scale.mjs) or they were recorded by hand. A list of names to keep lost
  // every section whose heading it did not spell exactly.
  const previous = existsSync(resultsPath) ? readFileSync(resultsPath, 'utf8') : '';
  const written = new Set(level2Headings(md).map((h) => h.toLowerCase()));
  const kept = level2Headings(previous)
    .filter((h) => !written.has(h.toLowerCase()))
    .map((h) => sectionOf(previous, h.toLowerCase()))
    .filter((x) => x !== undefined);
  writeFileSync(resultsPath, kept.length > 0 ? `${md.trimEnd()}\n\n${kept.join('\n\n')}\n` : md);
  writeFileSync(join(outDir, quick ? 'results-quick.json' : 'results.json'), JSON.stringify({ info, startedAt, cfg, cost, audit, peers, cells }, null, 1));
  log(`wrote ${relative(root, resultsPath)} (${durationS.toFixed(0)} s)`);
  if (!quick) {
    saveHeadlines(headlines);
    const changed = writeDocs(headlines);
    log(`recorded bench/headlines.json; regenerated the headline blocks of ${changed.map((p) => relative(root, p)).join(', ') || 'no file (unchanged)'}`);
  }
}

main().catch((err) => {
  console.error(`bench: ${err?.stack ?? err}`);
  process.exit(1);
});
