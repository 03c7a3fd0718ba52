/**
 * A property over names and surfaces: random roots mixing names that need
 * care (bytes that are not UTF-8, a literal backslash and a literal `\x41`,
 * controls, a bidi override, NFC and NFD twins, case twins, a newline) with
 * ordinary ones, in every kind of state (passed, failed, paused, running
 * with a real flock holder, planning, abandoned, no status yet, unreadable),
 * created, renamed, exchanged (`renameat2` RENAME_EXCHANGE), finished and
 * killed while a real `runwarden serve` runs. After the last change:
 * - serve's `/api/runs`, `/api/dashboard` and `/metrics` answer 200 and agree
 *   with a fresh `runs --json` within 3 s (the safety pass comes every 30 s:
 *   agreement is the kernel's notices at work, not the pass);
 * - `runwarden metrics` and `status <id> --json` for each printed id agree too;
 * - every surface names each run directory by exactly one id, and the
 *   dashboard's sections are in descending byte order of the names.
 *
 * The references are the test's own: the directories' names as bytes read
 * from the kernel (readdir), the ids decoded by the contract's escaping rule
 * (§1.1 rule 6) written here, and the statuses of the fresh `runs --json`.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeEvents, eventObject } from './helpers/events.js';
import { CLI, cleanupTemp, killAll, tempDir, track, waitExit, waitReady } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';
import { parseExposition, samplesOf } from './helpers/prom-text.js';
import { mulberry32 } from './helpers/random.js';
import { getJson, raw } from './helpers/serve-client.js';
import { startServeCli, type ServeProcess } from './helpers/serve-cli.js';
import { RELEASED } from './helpers/portable.js';

const execFileP = promisify(execFile);

afterAll(async () => {
  await killAll();
  cleanupTemp();
});

/** Names that need care, as bytes, and ordinary ones. */
const NAMES: Buffer[] = [
  Buffer.of(0xff),
  Buffer.of(0x61, 0xff),
  Buffer.of(0xc3),
  Buffer.from('back\\slash'),
  Buffer.from('lit\\x41'),
  Buffer.from('tab\there'),
  Buffer.from('esc\x1b[31mred'),
  Buffer.from('bidi\u202eevil'),
  Buffer.from('caf\u00e9'),
  Buffer.from('cafe\u0301'),
  Buffer.from('Case'),
  Buffer.from('case'),
  Buffer.from('nl\nx'),
  Buffer.from('pass-1'),
  Buffer.from('20261201-080000.000000001-1'),
  Buffer.from('20261201-090000.000000001-2'),
  Buffer.from('zz-last'),
];

type Kind = 'pass' | 'fail' | 'paused' | 'running' | 'planning' | 'abandoned' | 'none' | 'unreadable';
const KINDS: Kind[] = ['pass', 'fail', 'paused', 'running', 'planning', 'abandoned', 'none', 'unreadable'];

/** §1.1 rule 6 read back, from the contract's words: `\\` a backslash, `\xHH` that byte, anything else its UTF-8. */
function idBytes(id: string): Buffer {
  const parts: Buffer[] = [];
  let plain = '';
  for (let i = 0; i < id.length; i++) {
    if (id[i] === '\\' && id[i + 1] === '\\') {
      plain += '\\';
      i++;
    } else if (id[i] === '\\' && id[i + 1] === 'x' && /^[0-9a-f]{2}$/i.test(id.slice(i + 2, i + 4))) {
      parts.push(Buffer.from(plain, 'utf8'), Buffer.of(parseInt(id.slice(i + 2, i + 4), 16)));
      plain = '';
      i += 3;
    } else plain += id[i];
  }
  parts.push(Buffer.from(plain, 'utf8'));
  return Buffer.concat(parts);
}

const hex = (b: Buffer): string => b.toString('hex');

class Root {
  readonly root = tempDir('rw-prop-');
  readonly holders = new Map<string, ChildProcess>(); // name hex -> holder

  path(name: Buffer, file?: string): Buffer {
    return Buffer.concat([Buffer.from(this.root + '/'), name, Buffer.from(file === undefined ? '' : '/' + file)]);
  }

  names(): Buffer[] {
    return readdirSync(this.root, { encoding: 'buffer' });
  }

  async make(name: Buffer, kind: Kind): Promise<void> {
    const dir = this.path(name);
    mkdirSync(dir);
    if (kind === 'none') return;
    if (kind === 'unreadable') {
      mkdirSync(this.path(name, 'events.jsonl')); // a stream that is a directory cannot be read
      return;
    }
    const graph = { schema: 3, graph: { name: 'g', nodes: [{ id: 'a' }] }, nodes: {} as Record<string, unknown> };
    const ev = [eventObject({ event: 'run_started', ...(kind === 'planning' ? { phase: 'planning' } : {}) })];
    if (kind === 'pass' || kind === 'fail') {
      ev.push(eventObject({ event: 'node_started', node_id: 'a' }), eventObject({ event: kind === 'pass' ? 'node_passed' : 'node_failed', node_id: 'a', verdict: kind === 'pass' ? 'PASS' : 'FAIL' }));
      ev.push(eventObject({ event: 'run_finished', outcome: kind === 'pass' ? 'passed' : 'failed' }));
      graph.nodes['a'] = { verdict: kind === 'pass' ? 'PASS' : 'FAIL' };
    } else if (kind === 'paused') {
      ev.push(eventObject({ event: 'gate_paused', node_id: 'a' }), eventObject({ event: 'run_finished', outcome: 'paused' }));
    }
    writeFileSync(this.path(name, 'state.json'), JSON.stringify(graph));
    writeFileSync(this.path(name, 'resume.lock'), RELEASED);
    // A leg takes its lock before it writes its first event (CONTRACT §4.1).
    if (kind === 'running' || kind === 'planning') await this.hold(name);
    writeFileSync(this.path(name, 'events.jsonl'), encodeEvents(ev));
  }

  /** Holds the run's lock with flock(1); the name reaches it as bytes through a shell escape. */
  async hold(name: Buffer): Promise<void> {
    const escaped = [...name].map((b) => `\\x${b.toString(16).padStart(2, '0')}`).join('');
    const proc = spawn('bash', ['-c', `exec flock -x -n $'${escaped}'/resume.lock -c 'echo READY; exec sleep 600'`], { cwd: this.root, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    track(-(proc.pid as number));
    track(proc);
    await waitReady(proc);
    this.holders.set(hex(name), proc);
  }

  /** Kills the run's holder, if it has one, and waits for it to be gone. */
  async kill(name: Buffer): Promise<void> {
    const p = this.holders.get(hex(name));
    if (p === undefined) return;
    this.holders.delete(hex(name));
    process.kill(-(p.pid as number), 'SIGKILL');
    await waitExit(p);
  }

  rename(from: Buffer, to: Buffer): void {
    renameSync(this.path(from), this.path(to));
    const p = this.holders.get(hex(from));
    if (p !== undefined) {
      this.holders.delete(hex(from));
      this.holders.set(hex(to), p);
    }
  }

  exchange(a: Buffer, b: Buffer): void {
    execFileSync('python3', ['-c', 'import ctypes,sys\nl=ctypes.CDLL(None,use_errno=True)\nif l.renameat2(-100,bytes.fromhex(sys.argv[1]),-100,bytes.fromhex(sys.argv[2]),2)!=0: sys.exit(ctypes.get_errno())', hex(this.path(a)), hex(this.path(b))]);
    const pa = this.holders.get(hex(a));
    const pb = this.holders.get(hex(b));
    this.holders.delete(hex(a));
    this.holders.delete(hex(b));
    if (pa !== undefined) this.holders.set(hex(b), pa);
    if (pb !== undefined) this.holders.set(hex(a), pb);
  }

  /** Closes an open leg (its holder, if any, is gone first: a leg ends, then releases). */
  async finish(name: Buffer): Promise<void> {
    await this.kill(name);
    appendFileSync(this.path(name, 'events.jsonl'), encodeEvents([eventObject({ event: 'run_finished', outcome: 'failed' })]));
  }
}

interface Reference {
  /** run id -> status word (null: none yet) for every run reported; skipped ids with null too. */
  runs: Map<string, string | null>;
  skipped: Set<string>;
}

async function runsJson(root: string): Promise<Reference & { doc: { runs: { run_id: string; status: string | null }[]; skipped: { run_id: string }[] } }> {
  const { stdout } = await execFileP(process.execPath, [CLI, 'runs', '--root', root, '--json'], { maxBuffer: 16 * 1024 * 1024 });
  const doc = JSON.parse(stdout) as { runs: { run_id: string; status: string | null }[]; skipped: { run_id: string; kind?: string }[] };
  return { doc, runs: new Map(doc.runs.map((r) => [r.run_id, r.status])), skipped: new Set(doc.skipped.map((s) => s.run_id)) };
}

/** §1.1 rule 7, from the contract: C0 and DEL as \xHH, C1 and the bidi controls as \u{HHHH}. */
function printed(s: string): string {
  return s.replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, (c) => {
    const n = c.charCodeAt(0);
    return n < 0x80 ? `\\x${n.toString(16).padStart(2, '0')}` : `\\u{${n.toString(16).padStart(4, '0')}}`;
  });
}

const STATUSES = ['PLANNING', 'RUNNING', 'ABANDONED', 'PAUSED', 'PASS', 'FAIL'];

/** What one metrics text says: runs per status label, and the run_info ids (printed) with their status. */
function metricsView(text: string): { counts: Record<string, number>; info: Map<string, string> } {
  const e = parseExposition(text);
  const counts: Record<string, number> = {};
  for (const s of samplesOf(e, 'runwarden_runs')) counts[s.labels['status']] = s.value;
  const info = new Map(samplesOf(e, 'runwarden_run_info').map((s) => [s.labels['run_id'], s.labels['status']]));
  return { counts, info };
}

function expectedMetrics(ref: Reference): { counts: Record<string, number>; info: Map<string, string> } {
  const counts: Record<string, number> = Object.fromEntries([...STATUSES, 'none'].map((s) => [s, 0]));
  const info = new Map<string, string>();
  for (const [id, st] of ref.runs) {
    counts[st ?? 'none'] = (counts[st ?? 'none'] ?? 0) + 1;
    if (st === 'PLANNING' || st === 'RUNNING' || st === 'ABANDONED') info.set(printed(id), st);
  }
  return { counts, info };
}

type Got = { status: number; body: any };

/** Why serve's answers (one poll) disagree with the reference and the directories on disk (empty: they agree). */
function judge(api: Got, dash: Got, m: { status: number; body: string }, ref: Reference, dirs: Buffer[]): string[] {
  const bad: string[] = [];
  const onDisk = dirs.map(hex).sort();
  if (api.status !== 200) return [`/api/runs answered ${api.status}`];
  const apiRuns = new Map<string, string | null>(api.body.runs.map((r: { run_id: string; status: string | null }) => [r.run_id, r.status]));
  if (JSON.stringify([...apiRuns]) !== JSON.stringify([...ref.runs])) bad.push(`/api/runs: ${JSON.stringify([...apiRuns])} vs ${JSON.stringify([...ref.runs])}`);
  if (dash.status !== 200) return [...bad, `/api/dashboard answered ${dash.status}`];
  const cards = dash.body.runs as { run_id: string; section: string; report: { status: string | null } | null }[];
  const cardIds = cards.map((c) => c.run_id);
  if (new Set(cardIds).size !== cardIds.length) bad.push(`a card shown twice: ${JSON.stringify(cardIds)}`);
  if (JSON.stringify(cardIds.map((id) => hex(idBytes(id))).sort()) !== JSON.stringify(onDisk)) bad.push(`cards ${JSON.stringify(cardIds)} are not the directories on disk`);
  if (JSON.stringify(dash.body.order) !== JSON.stringify(cardIds)) bad.push('order differs from the cards');
  for (const c of cards) {
    const want = ref.runs.has(c.run_id) ? ref.runs.get(c.run_id) : undefined;
    if (ref.skipped.has(c.run_id)) {
      if (c.report !== null) bad.push(`${c.run_id}: a card with a report for a run runs --json skips`);
    } else if (want === undefined || (c.report?.status ?? null) !== want) bad.push(`${c.run_id}: card ${c.report?.status} vs ${want}`);
  }
  const sections = new Map<string, Buffer[]>();
  for (const c of cards) sections.set(c.section, [...(sections.get(c.section) ?? []), idBytes(c.run_id)]);
  for (const [name, ids] of sections) {
    for (let i = 1; i < ids.length; i++) if (Buffer.compare(ids[i - 1], ids[i]) <= 0) bad.push(`section ${name} is not in descending byte order`);
  }
  if (m.status !== 200) return [...bad, `/metrics answered ${m.status}`];
  const got = metricsView(m.body);
  const want = expectedMetrics(ref);
  if (JSON.stringify(got.counts) !== JSON.stringify(want.counts)) bad.push(`/metrics counts ${JSON.stringify(got.counts)} vs ${JSON.stringify(want.counts)}`);
  if (JSON.stringify([...got.info].sort()) !== JSON.stringify([...want.info].sort())) bad.push(`/metrics run_info ${JSON.stringify([...got.info])} vs ${JSON.stringify([...want.info])}`);
  return bad;
}

/**
 * How long after `t0` serve first agreed with the reference made once the root stopped changing: serve's
 * surfaces are polled from `t0` on while the reference is made (its own cost is not serve's), and the first
 * poll that agrees is the answer; serve must then keep agreeing. Answers the last disagreements too.
 */
async function untilAgreed(serve: ServeProcess, r: Root, t0: number, limitMs: number): Promise<{ ms: number; bad: string[]; ref: Reference }> {
  const dirs = r.names();
  let ref: Reference | undefined;
  const made = runsJson(r.root).then((x) => (ref = x));
  const polls: { t: number; agree: (ref: Reference) => Promise<string[]> }[] = [];
  let bad: string[] = ['no poll yet'];
  for (;;) {
    const t = Date.now();
    // One poll's answers, kept to be judged once the reference is there.
    const [api, dash, metrics] = await Promise.all([getJson(serve.port, '/api/runs'), getJson(serve.port, '/api/dashboard'), raw(serve.port, 'GET', '/metrics')]);
    polls.push({ t, agree: (reference) => Promise.resolve(judge(api, dash, metrics, reference, dirs)) });
    if (ref !== undefined) {
      for (const p of polls.splice(0)) {
        bad = await p.agree(ref);
        if (bad.length === 0) {
          // Agreed at p.t: it must still agree now.
          const now = judge(api, dash, metrics, ref, dirs);
          return { ms: p.t - t0, bad: now, ref };
        }
      }
      if (Date.now() - t0 > limitMs) return { ms: Date.now() - t0, bad, ref };
    }
    await Promise.race([made, new Promise((res) => setTimeout(res, 25))]);
  }
}

describe('every surface over random roots of odd names, changed while serve runs', () => {
  // More seeds for a longer search: PROP_SEEDS=1,2,3 (each seed takes a few seconds).
  for (const seed of (process.env['PROP_SEEDS'] ?? '11,29,47').split(',').map(Number)) {
    it(`seed ${seed}: serve agrees with a fresh runs --json within 3 s of the last change, and the CLI surfaces too`, async (ctx) => {
      needs(ctx, 'linux: renameat2(RENAME_EXCHANGE) and inotify');
      const rand = mulberry32(seed);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
      const r = new Root();
      const pool = [...NAMES];
      const take = (): Buffer => pool.splice(Math.floor(rand() * pool.length), 1)[0];
      for (let i = 0; i < 9; i++) await r.make(take(), KINDS[i % KINDS.length]);
      const serve = await startServeCli(r.root);
      try {
        const first = await untilAgreed(serve, r, Date.now(), 60_000);
        expect(first.bad).toEqual([]);
        // Changes while serve runs, then the 3 s bound from the last one.
        let lastChange = Date.now();
        for (let step = 0; step < 8; step++) {
          const names = r.names();
          const op = pick(['create', 'rename', 'exchange', 'finish', 'kill', 'remove'] as const);
          if (op === 'create' && pool.length > 0) await r.make(take(), pick(KINDS));
          else if (op === 'rename' && pool.length > 0) {
            const from = pick(names);
            const to = take();
            r.rename(from, to);
            pool.push(from);
          } else if (op === 'exchange' && names.length >= 2) {
            const a = pick(names);
            const b = pick(names.filter((n) => !n.equals(a)));
            r.exchange(a, b);
          } else if (op === 'finish') {
            const open = names.filter((n) => r.holders.has(hex(n)));
            if (open.length > 0) await r.finish(pick(open));
          } else if (op === 'kill') {
            const held = names.filter((n) => r.holders.has(hex(n)));
            if (held.length > 0) await r.kill(pick(held));
          } else if (op === 'remove' && names.length > 3) {
            const gone = pick(names.filter((n) => !r.holders.has(hex(n))));
            rmSync(r.path(gone), { recursive: true });
            pool.push(gone);
          }
          lastChange = Date.now();
        }
        const after = await untilAgreed(serve, r, lastChange, 40_000);
        expect(after.bad).toEqual([]);
        expect(after.ms, `serve agreed within 3 s of the last change (${after.bad.join('; ')})`).toBeLessThan(3000);
        // The CLI's own surfaces against the same reference.
        const { stdout } = await execFileP(process.execPath, [CLI, 'metrics', '--root', r.root]);
        const got = metricsView(stdout);
        const want = expectedMetrics(after.ref);
        expect(got.counts).toEqual(want.counts);
        expect([...got.info].sort()).toEqual([...want.info].sort());
        for (const [id, status] of after.ref.runs) {
          const s = await execFileP(process.execPath, [CLI, 'status', id, '--root', r.root, '--json']);
          expect(JSON.parse(s.stdout).status, `status ${JSON.stringify(id)}`).toBe(status);
        }
        expect(serve.stderr()).not.toMatch(/TypeError|reader thread/);
      } finally {
        serve.proc.kill('SIGKILL');
        for (const n of r.names()) await r.kill(n);
      }
    });
  }
});
