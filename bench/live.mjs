#!/usr/bin/env node
/**
 * Live surfaces: how long a leg's death takes
 * to reach whoever is watching.
 *
 *   A. `runwarden watch`: death-to-exit latency over N kill -9s (target p99
 *      < 100 ms). Each round: a run with an open leg whose lock is held by a
 *      real process, `runwarden watch` started on it and caught up (its
 *      replay printed), then SIGKILL to the holder; the time is from the
 *      kill(2) to the watch process's exit as its parent sees it (waitpid),
 *      so node's own exit is included.
 *   B. the live engine (LiveEngine, in this process) over a root of S
 *      settled runs: death-to-report latency over N kill -9s, with the
 *      kernel's notification and with polling only (pollMs 100, what the
 *      engine falls back to past the watch limit); and the engine's CPU over
 *      an idle window with nothing changing.
 *
 * A holder is `sh -c 'exec 3<>resume.lock; flock -x 3; exec sleep 600'`:
 * the lock file opened read-write and flocked as CONTRACT §4.1 has a leg do
 * (the marker written beforehand by acquireLock), cheap enough to start
 * hundreds of. Needs flock(1) (util-linux).
 *
 * With `--holder flock-x` a holder is instead
 * `flock -x resume.lock sh -c 'exec sleep 600'` in a process group of its
 * own: util-linux opens the lock file READ-ONLY, so its death closes no
 * writable descriptor and inotify's close-write never fires; only the
 * engine's watch of the holder's process (a pidfd) announces it. Each round
 * kills the whole group (flock(1) and its sleep, which shares the lock).
 * The serve cell also scrapes `/metrics` once the page showed the death
 * (then every 25 ms until it counts one more ABANDONED run): how many
 * scrapes that took, and the time from the kill to that scrape's answer.
 *
 * usage: node bench/live.mjs [--quick] [--watch-only] [--no-write] [--write FILE]
 *                            [--holder rw|flock-x] [--settled N] [--kills N]
 *   --holder      rw (default, as above) or flock-x (a read-only holder; its own section)
 *   --settled N   settled runs beside the live ones (default 1000, quick 200)
 *   --kills N     kills per cell (default 50, quick 10)
 *   --quick       10 kills per cell, 200 settled runs, 3 s idle window
 *   --watch-only  only part A (watch death-to-exit); prints its numbers, writes nothing
 *   --write   replace the "## live" section of FILE (default bench/RESULTS.md)
 *   --json F  also write each cell's latencies (ms: n, p50, p99, max, every kill) to F
 *             (bench/check.mjs reads it)
 * The section is printed on stdout; progress on stderr.
 */
import { spawn, spawnSync } from 'node:child_process';
import { get } from 'node:http';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { acquireLock, LiveEngine } from '../dist/index.js';
import { serveUrl } from './lib/procs.js';
import { onFrames } from './lib/sse.js';
import { percentile } from './lib/stats.js';
import { writeSection } from './lib/sections.js';

const benchDir = dirname(fileURLToPath(import.meta.url));
const repo = dirname(benchDir);
const CLI = join(repo, 'bin', 'runwarden.js');
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const noWrite = args.includes('--no-write');
const wi = args.indexOf('--write');
const outFile = wi >= 0 ? args[wi + 1] : join(benchDir, 'RESULTS.md');
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const HOLDER_MODE = opt('--holder') ?? 'rw';
if (HOLDER_MODE !== 'rw' && HOLDER_MODE !== 'flock-x') throw new Error(`--holder: rw or flock-x, not ${HOLDER_MODE}`);
const KILLS = Number(opt('--kills') ?? (quick ? 10 : 50));
const SETTLED = Number(opt('--settled') ?? (quick ? 200 : 1000));
const IDLE_MS = quick ? 3000 : 10_000;
const watchOnly = args.includes('--watch-only');
const JSON_TO = opt('--json');
/** Each cell's figures, as --json writes them. */
const writeJson = (cells) => {
  if (JSON_TO !== undefined) writeFileSync(JSON_TO, JSON.stringify({ holder: HOLDER_MODE, settled: SETTLED, kills: KILLS, quick, watchOnly, ...cells }) + '\n');
};

const root = mkdtempSync(join(tmpdir(), 'rw-bench-live-'));
const children = new Set();
const cleanup = () => {
  for (const c of children) {
    try {
      if (c.spawnargs[0] === 'flock') process.kill(-c.pid, 'SIGKILL');
      else c.kill('SIGKILL');
    } catch {
      /* gone */
    }
  }
  rmSync(root, { recursive: true, force: true });
};
process.on('SIGINT', () => {
  cleanup();
  process.exit(130);
});
const log = (s) => process.stderr.write(s + '\n');
const line = (o) => JSON.stringify({ schema: 3, ts: new Date().toISOString(), run_id: 'r', ...o }) + '\n';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * A run with an open leg: stream written, lock marked (acquire + release),
 * then held by a shell (rw) or by flock(1) and its child (flock-x; killed as
 * a group: see kill()).
 */
async function liveRun(dir) {
  mkdirSync(dir, { recursive: true });
  // The lock is marked and held before the stream says a leg is open, so no reader ever sees the gap.
  acquireLock(join(dir, 'resume.lock')).release();
  const p =
    HOLDER_MODE === 'flock-x'
      ? spawn('flock', ['-x', 'resume.lock', 'sh', '-c', 'echo READY && exec sleep 600'], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'], detached: true })
      : spawn('sh', ['-c', 'exec 3<>resume.lock && flock -x 3 && echo READY && exec sleep 600'], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(p);
  p.on('exit', () => children.delete(p));
  await new Promise((resolve, reject) => {
    p.stdout.once('data', resolve);
    p.once('exit', () => reject(new Error('holder exited early')));
  });
  writeFileSync(join(dir, 'events.jsonl'), line({ event: 'run_started' }) + line({ event: 'node_started', node_id: 'work' }));
  return p;
}

/** SIGKILL to a holder: the process (rw), or its whole group (flock-x: flock(1) and the child sharing its lock). */
function kill(p) {
  if (HOLDER_MODE === 'flock-x') process.kill(-p.pid, 'SIGKILL');
  else p.kill('SIGKILL');
}

function settledRun(dir) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'events.jsonl'), line({ event: 'run_started' }) + line({ event: 'node_started', node_id: 'a' }) + line({ event: 'node_passed', node_id: 'a' }) + line({ event: 'run_finished', outcome: 'passed' }));
  writeFileSync(join(dir, 'resume.lock'), '');
}

function summary(xs) {
  return { n: xs.length, p50: percentile(xs, 50), p99: percentile(xs, 99), max: Math.max(...xs) };
}
const ms = (v) => (Number.isFinite(v) ? `${v.toFixed(1)} ms` : 'n/a');

// --- A. watch death-to-exit -------------------------------------------------
async function benchWatch() {
  const wroot = join(root, 'watch');
  mkdirSync(wroot);
  const lat = [];
  const saidLat = [];
  const codes = new Map();
  for (let i = 0; i < KILLS; i++) {
    const id = `20261201-000000-w${String(i).padStart(3, '0')}`;
    const holder = await liveRun(join(wroot, id));
    const w = spawn(process.execPath, [CLI, 'watch', '--root', wroot, id], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(w);
    let out = '';
    await new Promise((resolve, reject) => {
      w.stdout.on('data', (d) => {
        out += d;
        if (out.includes('node work started')) resolve();
      });
      w.once('exit', (c) => reject(new Error(`watch exited early (${c}): ${out}`)));
    });
    await sleep(50); // let it settle into waiting
    const exited = new Promise((resolve) => w.once('exit', (code) => resolve([performance.now(), code])));
    let said = NaN;
    w.stdout.on('data', () => {
      if (Number.isNaN(said) && out.includes('is ABANDONED')) said = performance.now();
    });
    const t0 = performance.now();
    kill(holder);
    const [t1, code] = await exited;
    children.delete(w);
    lat.push(t1 - t0);
    saidLat.push(said - t0);
    codes.set(code, (codes.get(code) ?? 0) + 1);
    if (i % 10 === 9) log(`watch: ${i + 1}/${KILLS}`);
  }
  return { ...summary(lat), said: summary(saidLat), codes: Object.fromEntries(codes), all: lat, allSaid: saidLat };
}

// --- B. engine death-to-report ---------------------------------------------
async function benchEngine(notify) {
  const eroot = join(root, notify ? 'engine-notify' : 'engine-poll');
  mkdirSync(eroot);
  for (let i = 0; i < SETTLED; i++) settledRun(join(eroot, `20261130-000000-s${String(i).padStart(5, '0')}`));
  const engine = new LiveEngine({ root: eroot, notify });
  const waiters = new Map();
  engine.subscribe((c) => {
    if (c.type !== 'run') return;
    const w = waiters.get(c.runId);
    if (w && c.report?.status === w.status) {
      waiters.delete(c.runId);
      w.resolve(performance.now());
    }
  });
  const wait = (id, status) => new Promise((resolve) => waiters.set(id, { status, resolve }));
  const t0start = performance.now();
  await engine.start();
  const startMs = performance.now() - t0start;
  const lat = [];
  for (let i = 0; i < KILLS; i++) {
    const id = `20261201-000000-e${String(i).padStart(3, '0')}`;
    const running = wait(id, 'RUNNING');
    const holder = await liveRun(join(eroot, id));
    // Without notification the root is listed again only at the safety re-check: say where the run is.
    if (!notify) engine.track(join(eroot, id));
    await running;
    await sleep(20);
    const dead = wait(id, 'ABANDONED');
    const t0 = performance.now();
    kill(holder);
    lat.push((await dead) - t0);
  }
  // Idle: nothing changes; what does the engine cost?
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  await sleep(IDLE_MS);
  const c1 = process.cpuUsage(c0);
  const idleShare = (c1.user + c1.system) / 1000 / (performance.now() - w0);
  const stats = { ...engine.stats };
  engine.close();
  return { ...summary(lat), startMs, idleShare, stats, all: lat };
}

// --- C. serve death-to-page ------------------------------------------------
/** CPU seconds (user + system) of a process, from /proc. */
function cpuOf(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[11]) + Number(rest[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

async function benchServe() {
  const sroot = join(root, 'serve');
  mkdirSync(sroot);
  for (let i = 0; i < SETTLED; i++) settledRun(join(sroot, `20261130-000000-s${String(i).padStart(5, '0')}`));
  const srv = spawn(process.execPath, [CLI, 'serve', '--root', sroot, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(srv);
  const url = await serveUrl(srv);
  const states = new Map();
  const waiters = [];
  let beats = 0;
  const req = get(new URL('/api/events', url), { headers: { Accept: 'text/event-stream' } }, (res) =>
    onFrames(res, (ev, doc) => {
      if (ev === 'beat') beats++;
      if (doc === undefined || (ev !== 'snapshot' && ev !== 'patch')) return;
      for (const c of ev === 'snapshot' ? doc.runs : doc.upsert) states.set(c.run_id, c.state);
      const now = performance.now();
      for (const w of [...waiters]) if (states.get(w.id) === w.state) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(now);
      }
    }),
  );
  const wait = (id, state) => new Promise((resolve) => (states.get(id) === state ? resolve(performance.now()) : waiters.push({ id, state, resolve })));
  // Start-up first: at 10,000 runs the server derives the whole root for seconds after its first page,
  // and a death during that is a start-up figure, not this row's. Wait for a 1 s slice under 10 % of a core (at most 120 s).
  const settleStart = performance.now();
  for (let i = 0; i < 120; i++) {
    const c0 = cpuOf(srv.pid);
    await sleep(1000);
    if (cpuOf(srv.pid) - c0 < 0.1) break;
  }
  const settleMs = performance.now() - settleStart;
  const lat = [];
  const metricsLat = [];
  const afterPage = [];
  for (let i = 0; i < KILLS; i++) {
    const id = `20261201-000000-p${String(i).padStart(3, '0')}`;
    const holder = await liveRun(join(sroot, id));
    await wait(id, 'running');
    await sleep(20);
    const before = await abandonedInMetrics(url);
    const dead = wait(id, 'abandoned');
    const t0 = performance.now();
    kill(holder);
    lat.push((await dead) - t0);
    // /metrics scraped once the page showed it (not during: a scrape of a large root costs the server
    // a derivation, which would slow the page being timed); how many scrapes until it counts the run.
    let scrapes = 0;
    for (;;) {
      scrapes++;
      if ((await abandonedInMetrics(url)) > before) break;
      await sleep(25);
    }
    metricsLat.push(performance.now() - t0);
    afterPage.push(scrapes);
  }
  await sleep(2000);
  const c0 = cpuOf(srv.pid);
  const w0 = performance.now();
  const b0 = beats;
  await sleep(IDLE_MS);
  const idleShare = (cpuOf(srv.pid) - c0) / ((performance.now() - w0) / 1000);
  const idleBeats = beats - b0;
  req.destroy();
  srv.kill('SIGTERM');
  return { ...summary(lat), idleShare, idleBeats, settleMs, all: lat, metrics: summary(metricsLat), allMetrics: metricsLat, maxScrapesAfterPage: Math.max(...afterPage) };
}

/** The value of runwarden_runs{status="ABANDONED"} in one scrape of /metrics (0 when absent). */
function abandonedInMetrics(url) {
  return new Promise((resolve, reject) => {
    get(new URL('/metrics', url), (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => {
        const m = /^runwarden_runs\{status="ABANDONED"\} (\d+)/m.exec(body);
        resolve(m ? Number(m[1]) : 0);
      });
    }).on('error', reject);
  });
}

const started = new Date();
const load0 = loadavg()[0];
log(`root ${root}; ${KILLS} kills per cell, ${SETTLED} settled runs`);
let watch, notified, polled, page;
if (watchOnly) {
  try {
    watch = await benchWatch();
  } finally {
    cleanup();
  }
  const load1w = loadavg()[0];
  process.stdout.write(
    `watch death-to-exit over ${watch.n} kills: p50 ${ms(watch.p50)}, p99 ${ms(watch.p99)}, max ${ms(watch.max)}; ` +
      `to the ABANDONED line: p50 ${ms(watch.said.p50)}, p99 ${ms(watch.said.p99)}; exit codes ${JSON.stringify(watch.codes)}; ` +
      `load ${load0.toFixed(2)} -> ${load1w.toFixed(2)}\n` +
      `raw (exit): ${watch.all.map((x) => x.toFixed(1)).join(' ')}\n`,
  );
  writeJson({ watch });
  process.exit(0);
}
try {
  page = await benchServe();
  log(`serve: p50 ${ms(page.p50)} p99 ${ms(page.p99)}, idle ${(page.idleShare * 100).toFixed(2)} %`);
  watch = await benchWatch();
  log(`watch: p50 ${ms(watch.p50)} p99 ${ms(watch.p99)}`);
  notified = await benchEngine(true);
  log(`engine (inotify): p50 ${ms(notified.p50)} p99 ${ms(notified.p99)}`);
  polled = await benchEngine(false);
  log(`engine (polling): p50 ${ms(polled.p50)} p99 ${ms(polled.p99)}`);
} finally {
  cleanup();
}
const load1 = loadavg()[0];

// The commit measured (with "+changes" when the work tree differs from it), for the section's first line.
const git = (...a) => spawnSync('git', a, { cwd: repo, encoding: 'utf8' });
const head = git('rev-parse', '--short', 'HEAD');
const commit = head.status === 0 ? head.stdout.trim() + (git('diff', '--quiet', 'HEAD', '--', 'src', 'native').status === 0 ? '' : '+changes') : 'unknown';

const pct = (x) => `${(x * 100).toFixed(2)} %`;
const HEADING = HOLDER_MODE === 'flock-x' ? '## live: a flock -x holder\'s death reaches the watcher' : '## live: a death reaches the watcher';
const invocation = ['node bench/live.mjs', ...args.filter((a) => a !== '--no-write')].join(' ');
const holderText =
  HOLDER_MODE === 'flock-x'
    ? 'A holder is `flock -x resume.lock sh -c \'exec sleep 600\'` in a process group of its own: util-linux opens the lock file read-only, so its death closes no writable descriptor and inotify\'s close-write never fires; the engine watches the holder\'s process (a pidfd, from /proc/locks; when flock(1) is gone and its child still holds, the process with the file open) and probes again when it exits. Each round kills the whole group with SIGKILL (`kill -9 -<pgid>`). Times are from the kill(2) call.'
    : 'A holder is a shell that opened `resume.lock` read-write and took its flock (as CONTRACT §4.1 has a leg do), then became `sleep`; each round kills it with SIGKILL. Times are from the kill(2) call.';
const metricsRow =
  page.metrics === undefined
    ? ''
    : `| \`runwarden serve\`: death to \`/metrics\` counting one more ABANDONED run (first scraped once the page showed it, then every 25 ms) | ${page.metrics.n} | ${ms(page.metrics.p50)} | ${ms(page.metrics.p99)} | ${ms(page.metrics.max)} | scrapes needed: at most ${page.maxScrapesAfterPage} (1 = the first scrape after the page counted it) |\n`;
const section = `${HEADING}

Written by \`${invocation}\` on ${started.toISOString().replace(/\.\d+Z$/, 'Z')} at commit ${commit}; ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), load average ${load0.toFixed(2)} at start, ${load1.toFixed(2)} at end; node ${process.version}. Every number below is from that one run.

${holderText}

| what | kills | p50 | p99 | max | notes |
| --- | --- | --- | --- | --- | --- |
| \`runwarden watch\`: death to exit (process reaped) | ${watch.n} | **${ms(watch.p50)}** | **${ms(watch.p99)}** | ${ms(watch.max)} | exit codes ${JSON.stringify(watch.codes)} (3 = ABANDONED); target p99 < 100 ms |
| \`runwarden watch\`: death to its line "run … is ABANDONED" on stdout | ${watch.said.n} | ${ms(watch.said.p50)} | ${ms(watch.said.p99)} | ${ms(watch.said.max)} | the rest of the row above is node's own exit |
| \`runwarden serve\`: death to the card's \`abandoned\` in the page's event stream (SSE patch) | ${page.n} | **${ms(page.p50)}** | **${ms(page.p99)}** | ${ms(page.max)} | ${SETTLED} settled runs beside, one page open; the first kill once the server's start-up work was done (${(page.settleMs / 1000).toFixed(1)} s after its first page) |
${metricsRow}| \`LiveEngine\`, inotify: death to ABANDONED report | ${notified.n} | **${ms(notified.p50)}** | **${ms(notified.p99)}** | ${ms(notified.max)} | ${SETTLED} settled runs beside; ${notified.stats.lockWakeups} lock close-write wake-ups, ${notified.stats.exitWakeups} holder-exit wake-ups, ${notified.stats.polledProbes} polled probes |
| \`LiveEngine\`, polling only (notify: false, pollMs 100) | ${polled.n} | ${ms(polled.p50)} | ${ms(polled.p99)} | ${ms(polled.max)} | the fallback past the watch limit; ${polled.stats.polledProbes} polled probes |

The serve rows are measured from the kill to the SSE patch a page receives (a node client reading the event stream), not to a browser's DOM; \`node bench/serve-scale.mjs\` measures the browser.

Idle cost of \`runwarden serve\` with one page open, ${SETTLED} settled runs plus the dead ones, nothing changing, ${IDLE_MS / 1000} s window (from /proc/<pid>/stat): **${pct(page.idleShare)} of a core**, ${page.idleBeats} beats sent (one a second; no derivation while nothing changes).

Idle cost of the engine over ${SETTLED} settled runs (plus the dead ones left by the rounds), nothing changing, ${IDLE_MS / 1000} s window: **${pct(notified.idleShare)} of a core** with inotify, ${pct(polled.idleShare)} polling (open legs only; there were none left alive). First derivation of the whole root: ${notified.startMs.toFixed(0)} ms (inotify), ${polled.startMs.toFixed(0)} ms (polling). Stream bytes read by the inotify engine over the whole run: ${notified.stats.bytesRead.toLocaleString('en-US')}; whole re-reads: ${notified.stats.rereads}.

${HOLDER_MODE === 'flock-x' ? 'Without a watch on the holder\'s exit such a death waits for a re-probe: in a separate run at 10,000 runs it reached `watch` in 0.70 s (median of 5; its 1 s re-probe) and the page in 5.1 s (the engine\'s 5 s re-probe of open legs).\n\n' : ''}<details><summary>raw latencies (ms)</summary>

- watch (exit): ${watch.all.map((x) => x.toFixed(1)).join(' ')}
- watch (line): ${watch.allSaid.map((x) => x.toFixed(1)).join(' ')}
- serve (page): ${page.all.map((x) => x.toFixed(1)).join(' ')}
- serve (/metrics): ${page.allMetrics.map((x) => x.toFixed(1)).join(' ')}
- engine inotify: ${notified.all.map((x) => x.toFixed(1)).join(' ')}
- engine polling: ${polled.all.map((x) => x.toFixed(1)).join(' ')}

</details>
`;
process.stdout.write(section);
writeJson({ watch, page, notified, polled });
if (!noWrite) {
  writeSection(outFile, HEADING, section, { before: '## Method' });
  log(`wrote ${outFile}`);
}
