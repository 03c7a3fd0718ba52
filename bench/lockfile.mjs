#!/usr/bin/env node
/**
 * runwarden/lockfile against genuine proper-lockfile 4.1.2, in one run
 * (docs/lockfile.md, "Figures"):
 *
 * 1. round trip: `await lock(f)` then `await release()`, N times, in this
 *    process; R interleaved repetitions, one ratio (runwarden / proper-lockfile)
 *    per repetition;
 * 2. kill -9 to takeover: a holder process is killed; a contender process
 *    trying every millisecond reports when it holds the lock; proper-lockfile
 *    at `stale` 2000, its minimum (its default is 10000);
 * 3. a blocked event loop: a holder (default options) blocks its loop for B s
 *    while a contender of the same kind tries every 100 ms; counted: the
 *    contender's successes while the holder still held (double holders) and
 *    the holder's onCompromised calls;
 * 4. mutual exclusion under load: P processes × N lock/release each on one
 *    file (test/fixtures/lockfile-stress.cjs, retrying every 5–10 ms: 64
 *    processes polling every millisecond on 2 cores starve the holder), every
 *    holding logged; counted: overlaps, and lock/release pairs per second.
 *
 *   node bench/lockfile.mjs [--quick] [--json FILE] [--only roundtrip,kill,blocked,stress]
 *
 * Full: R 7 × 2000 round trips, 10 kills each, B 30 s, 64 × 1000. --quick:
 * R 3 × 500, 3 kills, B 12 s, 8 × 100 (not comparable with the headlines).
 * The files live in a fresh directory of the OS temporary directory.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const repo = dirname(dirname(fileURLToPath(import.meta.url)));
const PROC = join(repo, 'test', 'fixtures', 'lockfile-proc.cjs');
const STRESS = join(repo, 'test', 'fixtures', 'lockfile-stress.cjs');
const require = createRequire(join(repo, 'package.json'));
const IMPLS = { rw: require('runwarden/lockfile'), plf: require('proper-lockfile') };
const NAMES = { rw: 'runwarden/lockfile', plf: 'proper-lockfile' };

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const jsonAt = args.indexOf('--json');
const jsonOut = jsonAt >= 0 ? args[jsonAt + 1] : undefined;
const onlyAt = args.indexOf('--only');
const only = onlyAt >= 0 ? new Set(args[onlyAt + 1].split(',')) : undefined;
const P = quick
  ? { reps: 3, trips: 500, kills: 3, blockS: 12, procs: 8, each: 100, retryMs: 5 }
  : { reps: 7, trips: 2000, kills: 10, blockS: 30, procs: 64, each: 1000, retryMs: 5 };

const work = mkdtempSync(join(tmpdir(), 'rw-bench-lockfile-'));
const children = new Set();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});
const log = (m) => process.stderr.write(`[lockfile] ${m}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const epochNow = () => performance.timeOrigin + performance.now();
let seq = 0;
function freshFile() {
  const f = join(work, `f${seq++}`);
  writeFileSync(f, '');
  return f;
}

/** A child with its stdout as lines; `line(re)` waits for the first matching one. */
function child(argv) {
  const c = spawn(process.execPath, argv, { cwd: repo, stdio: ['pipe', 'pipe', 'inherit'] });
  children.add(c);
  const lines = [];
  const waiters = [];
  c.once('exit', () => {
    children.delete(c);
    for (const w of waiters.splice(0)) w();
  });
  createInterface({ input: c.stdout }).on('line', (l) => {
    lines.push(l);
    for (const w of waiters.splice(0)) w();
  });
  return {
    c,
    lines,
    async line(re) {
      for (;;) {
        const found = lines.find((l) => re.test(l));
        if (found !== undefined) return found;
        if (c.exitCode !== null || c.signalCode !== null) throw new Error(`child exited before ${re}: ${lines.join(' | ')}`);
        await new Promise((r) => waiters.push(r));
      }
    },
    send: (cmd) => c.stdin.write(`${cmd}\n`),
    exited: () => (c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise((r) => c.once('exit', r))),
  };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const quartiles = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.max(0, Math.round(p * (s.length - 1))))];
  return [q(0.25), q(0.75)];
};

async function roundTrip() {
  log(`round trip: ${P.reps} interleaved repetitions × ${P.trips} lock + release, in this process`);
  const perTrip = { rw: [], plf: [] };
  const file = freshFile();
  for (const impl of ['rw', 'plf']) {
    // Warm-up: the addon, the heartbeat thread, the JIT.
    for (let i = 0; i < 50; i++) await (await IMPLS[impl].lock(file))();
  }
  for (let r = 0; r < P.reps; r++) {
    for (const impl of r % 2 ? ['plf', 'rw'] : ['rw', 'plf']) {
      const api = IMPLS[impl];
      const t = performance.now();
      for (let i = 0; i < P.trips; i++) await (await api.lock(file))();
      perTrip[impl].push(((performance.now() - t) / P.trips) * 1000);
    }
  }
  const ratios = perTrip.rw.map((x, i) => x / perTrip.plf[i]);
  return { trips: P.trips, usPerTrip: perTrip, ratios };
}

const CONTENDER = `
const lf = require(process.argv[1] === 'plf' ? 'proper-lockfile' : 'runwarden/lockfile');
const file = process.argv[2];
const stale = Number(process.argv[3]);
process.stdout.write('ready\\n');
const tryOnce = () => {
  try {
    lf.lockSync(file, { stale });
    process.stdout.write('held ' + (performance.timeOrigin + performance.now()).toFixed(3) + '\\n');
    process.exit(0);
  } catch (e) {
    if (e.code !== 'ELOCKED') { process.stdout.write('error ' + e.code + '\\n'); process.exit(1); }
    setTimeout(tryOnce, 1);
  }
};
tryOnce();`;

async function killTakeover() {
  log(`kill -9 to takeover: ${P.kills} kills each; proper-lockfile at stale 2000 (its minimum)`);
  const out = { rw: [], plf: [] };
  for (let k = 0; k < P.kills; k++) {
    for (const impl of ['rw', 'plf']) {
      const file = freshFile();
      const holder = child([PROC, impl, file, JSON.stringify({ stale: 2000 })]);
      await holder.line(/^held/);
      const contender = child(['-e', CONTENDER, impl, file, '2000']);
      await contender.line(/^ready/);
      await sleep(50);
      const killedAt = epochNow();
      holder.c.kill('SIGKILL');
      const held = await contender.line(/^(held|error)/);
      if (!held.startsWith('held')) throw new Error(`${impl} contender: ${held}`);
      out[impl].push(Number(held.split(' ')[1]) - killedAt);
      await holder.exited();
      await contender.exited();
    }
  }
  return { kills: P.kills, plfStale: 2000, ms: out };
}

const TRIER = `
const lf = require(process.argv[1] === 'plf' ? 'proper-lockfile' : 'runwarden/lockfile');
const file = process.argv[2];
let tries = 0, taken = 0;
const t = setInterval(() => {
  tries++;
  try {
    const release = lf.lockSync(file, { onCompromised: () => {} });
    taken++;
    process.stdout.write('taken\\n');
    release();
  } catch (e) {
    if (e.code !== 'ELOCKED') process.stdout.write('error ' + e.code + '\\n');
  }
}, 100);
process.stdin.on('data', () => { clearInterval(t); process.stdout.write('tries ' + tries + ' ' + taken + '\\n'); process.exit(0); });`;

async function blocked() {
  log(`blocked event loop: holders blocked ${P.blockS} s, a contender of each kind every 100 ms, both kinds at once`);
  const one = async (impl) => {
    const file = freshFile();
    const holder = child([PROC, impl, file, '{}']);
    await holder.line(/^held/);
    const trier = child(['-e', TRIER, impl, file]);
    holder.send(`block ${P.blockS * 1000}`);
    await holder.line(/^unblocked/);
    // While the holder was blocked, and up to this line, it held the lock: whatever the trier took meanwhile was a second holder.
    trier.send('stop');
    const [, tries, taken] = (await trier.line(/^tries /)).split(' ').map(Number);
    await sleep(1500);
    const compromised = holder.lines.filter((l) => l.startsWith('compromised')).length;
    holder.c.kill('SIGKILL');
    await holder.exited();
    return { tries, doubleHolders: taken, compromised };
  };
  const [rw, plf] = await Promise.all([one('rw'), one('plf')]);
  return { blockS: P.blockS, rw, plf };
}

async function stress() {
  const res = {};
  for (const impl of ['rw', 'plf']) {
    log(`mutual exclusion: ${P.procs} ${NAMES[impl]} processes × ${P.each} lock/release on one file`);
    const file = freshFile();
    const logFile = `${file}.log`;
    writeFileSync(logFile, '');
    const procs = [];
    for (let i = 0; i < P.procs; i++) procs.push(child([STRESS, impl, file, logFile, String(P.each), String(P.retryMs)]));
    const done = await Promise.all(procs.map((p) => p.line(/^(done|error) /)));
    const bad = done.filter((l) => !l.startsWith('done'));
    if (bad.length > 0) throw new Error(`${impl}: ${bad[0]}`);
    const starts = done.map((l) => Number(l.split(' ')[4]));
    const ends = done.map((l) => Number(l.split(' ')[5]));
    const wallMs = Math.max(...ends) - Math.min(...starts);
    const lines = readFileSync(logFile, 'utf8').trim().split('\n');
    let holder;
    let overlaps = 0;
    for (const l of lines) {
      const [kind, pid] = l.split(' ');
      if (kind === 'A') {
        if (holder !== undefined) overlaps++;
        holder = pid;
      } else if (pid === holder) holder = undefined;
    }
    res[impl] = { pairs: lines.length / 2, overlaps, wallMs, perSecond: (lines.length / 2 / wallMs) * 1000 };
    rmSync(logFile);
  }
  return { procs: P.procs, each: P.each, ...res };
}

const f1 = (x) => x.toFixed(1);
const say = (line) => process.stdout.write(`${line}\n`);
const result = { quick, date: new Date().toISOString(), node: process.version };
process.on('SIGINT', () => process.exit(130));
process.on('SIGTERM', () => process.exit(143));
if (!only || only.has('roundtrip')) {
  const r = (result.roundtrip = await roundTrip());
  say(`round trip (${r.trips} × ${r.ratios.length} reps): runwarden ${f1(median(r.usPerTrip.rw))} µs, proper-lockfile ${f1(median(r.usPerTrip.plf))} µs; ratio median ${median(r.ratios).toFixed(2)} (quartiles ${quartiles(r.ratios).map((x) => x.toFixed(2)).join('–')})`);
}
if (!only || only.has('kill')) {
  const k = (result.kill = await killTakeover());
  say(`kill -9 to takeover (${k.kills} kills): runwarden p50 ${f1(median(k.ms.rw))} ms, max ${f1(Math.max(...k.ms.rw))} ms; proper-lockfile (stale ${k.plfStale}) p50 ${Math.round(median(k.ms.plf))} ms`);
}
if (!only || only.has('blocked')) {
  const b = (result.blocked = await blocked());
  say(`blocked loop ${b.blockS} s: runwarden ${b.rw.compromised} compromised, ${b.rw.doubleHolders} double holders of ${b.rw.tries} tries; proper-lockfile ${b.plf.compromised} compromised, ${b.plf.doubleHolders} double holders of ${b.plf.tries} tries`);
}
if (!only || only.has('stress')) {
  const st = (result.stress = await stress());
  say(`${st.procs} processes × ${st.each}: runwarden ${st.rw.overlaps} overlaps, ${Math.round(st.rw.perSecond)} pairs/s; proper-lockfile ${st.plf.overlaps} overlaps, ${Math.round(st.plf.perSecond)} pairs/s (ratio ${(st.rw.perSecond / st.plf.perSecond).toFixed(2)})`);
}
if (jsonOut) writeFileSync(jsonOut, JSON.stringify(result, null, 2));
process.exit(0);
