/**
 * docs/CONTRACT.md is the contract the code cites, so it is checked like code:
 * - every "(runwarden addition N)" mark is in §6.1's list and every item of the
 *   list is marked where its links say it stands; the numbers run 1..N;
 * - every § the source tree, README.md and docs/ cite is a heading, and a cited
 *   step, rule or row exists in that section;
 * - every relative link of CONTRACT.md and docs/implementation.md resolves,
 *   file and #anchor (GitHub's anchors);
 * - the contract states rules, not measurements (they live in
 *   docs/implementation.md and bench/RESULTS.md); the durations it may name
 *   are parameters, each allowed below with its reason;
 * - every file name, event name, status word, probe reason, error code and
 *   reason string the code exports is written in the contract;
 * - §5.2's list names every command with exactly the options its --help shows.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, LOCK_FILE, LOCK_MARKER, PROBE_REASONS, STATUSES } from '../src/index.js';
import { NODE_EVENTS } from '../src/contract/events.js';
import { EVENTS_FILE, PGID_FILE, STATE_FILE } from '../src/contract/files.js';
import {
  ADDITION_MARK,
  additionMarks,
  brokenLink,
  citations,
  headings,
  numberedItems,
  ownLines,
  relativeLinks,
  REPO,
  section,
  sourceFiles,
  tableRows,
  withoutFences,
} from './helpers/contract-doc.js';

const CONTRACT = join(REPO, 'docs', 'CONTRACT.md');
const IMPLEMENTATION = join(REPO, 'docs', 'implementation.md');
const md = readFileSync(CONTRACT, 'utf8');

describe('runwarden additions', () => {
  const list = section(md, '6.1');
  // Items with their continuation lines (an item may wrap).
  const items: { n: number; text: string }[] = [];
  for (const l of list.lines) {
    const m = /^(\d+)\.\s+(.*)$/.exec(l);
    if (m) items.push({ n: Number(m[1]), text: m[2] });
    else if (/^\s+\S/.test(l) && items.length > 0) (items[items.length - 1] as { text: string }).text += ` ${l.trim()}`;
  }
  const outside = md.split('\n').filter((_, i) => i + 1 < list.heading.line || i + 1 >= list.first + list.lines.length);
  const marks = additionMarks(outside);

  it('§6.1 numbers them 1..N, one item each, and the marks in the text are exactly those numbers', () => {
    expect(items.length, '§6.1 has a numbered list').toBeGreaterThan(40);
    expect(items.map((i) => i.n)).toEqual(items.map((_, k) => k + 1));
    const marked = [...new Set(marks.map((m) => m.n))].sort((a, b) => a - b);
    expect(marked, 'every mark in the text is listed in §6.1, and every listed addition is marked').toEqual(items.map((i) => i.n));
    const firstSeen = [...new Set(marks.map((m) => m.n))];
    expect(firstSeen, 'numbered in the order they first appear').toEqual(items.map((i) => i.n));
  });

  it('each item links to the sections where it is marked, and to no other', () => {
    const byAnchor = new Map(headings(md).map((h) => [h.slug, h]));
    for (const item of items) {
      const anchors = relativeLinks(item.text).flatMap((l) => (l.path === '' && l.anchor !== undefined ? [l.anchor] : []));
      expect(anchors.length, `§6.1 item ${item.n} links to where it stands`).toBeGreaterThan(0);
      const linked = anchors.map((a) => {
        const h = byAnchor.get(a);
        expect(h?.number, `§6.1 item ${item.n}: #${a} is a numbered heading`).toBeDefined();
        return h?.number as string;
      });
      // The sections whose own text (down to the next heading) holds this mark.
      const standing = headings(md)
        .filter((h) => h.number !== undefined && h.number !== '6.1')
        .filter((h) => additionMarks(ownLines(md, h.number as string)).some((m) => m.n === item.n))
        .map((h) => h.number as string);
      expect(linked.sort(), `§6.1 item ${item.n} links exactly the sections that mark it`).toEqual(standing.sort());
    }
  });

  it('no old-style "(runwarden)" mark is left', () => {
    const text = withoutFences(md);
    expect(text.match(/\(runwarden\)/g) ?? []).toEqual([]);
    expect(text.match(/\*\*\(runwarden\*\*/g) ?? []).toEqual([]);
    expect([...text.matchAll(ADDITION_MARK)].length).toBe(marks.length + additionMarks(list.lines).length);
  });
});

describe('sections', () => {
  const numbered = new Map(headings(md).flatMap((h) => (h.number === undefined ? [] : [[h.number, h] as const])));

  it('are numbered in order, and §1.2 comes before §1.3', () => {
    const order = headings(md).flatMap((h) => (h.number === undefined ? [] : [h.number]));
    const key = (n: string) => n.split('.').map(Number);
    const sorted = [...order].sort((a, b) => {
      const [x, y] = [key(a), key(b)];
      for (let i = 0; i < Math.max(x.length, y.length); i++) if ((x[i] ?? -1) !== (y[i] ?? -1)) return (x[i] ?? -1) - (y[i] ?? -1);
      return 0;
    });
    expect(order).toEqual(sorted);
    expect(new Set(order).size).toBe(order.length);
  });

  it('every § cited in src/, test/, bench/, README.md and docs/ is a heading, and a cited step, rule or row exists there', () => {
    const cited = citations(sourceFiles(['src', 'test', 'bench', 'README.md', 'docs']));
    expect(cited.length, 'the scan finds the citations').toBeGreaterThan(200);
    const missing: string[] = [];
    for (const c of cited) {
      const where = `${c.file}:${c.line} §${c.section}${c.kind === undefined ? '' : ` ${c.kind} ${c.items.join('-')}`}`;
      if (!numbered.has(c.section)) {
        missing.push(`${where}: no such section`);
        continue;
      }
      if (c.kind === undefined) continue;
      const lines = section(md, c.section).lines;
      const have = c.kind === 'row' ? tableRows(lines) : numberedItems(lines);
      for (const n of c.items) if (!have.includes(n)) missing.push(`${where}: the section has no ${c.kind} ${n}`);
    }
    expect(missing).toEqual([]);
  });
});

describe('links', () => {
  for (const file of [CONTRACT, IMPLEMENTATION]) {
    it(`every relative link of ${file.slice(REPO.length + 1)} resolves, file and anchor`, () => {
      const text = readFileSync(file, 'utf8');
      const links = relativeLinks(text);
      expect(links.length, 'the scan finds the links').toBeGreaterThan(3);
      expect(links.flatMap((l) => {
        const why = brokenLink(file, l);
        return why === undefined ? [] : [`line ${l.line}: ${why}`];
      })).toEqual([]);
    });
  }

  it('the anchor rule is GitHub\'s: a link to a made-up anchor is caught', () => {
    expect(brokenLink(CONTRACT, { text: 'x', target: '#41-acquire-and-release-a-leg', path: '', anchor: '41-acquire-and-release-a-leg', line: 1 })).toBeUndefined();
    expect(brokenLink(CONTRACT, { text: 'x', target: '#4.1-acquire', path: '', anchor: '4.1-acquire', line: 1 })).toMatch(/no heading/);
    expect(brokenLink(CONTRACT, { text: 'x', target: 'nowhere.md', path: 'nowhere.md', anchor: undefined, line: 1 })).toMatch(/no file/);
  });
});

/**
 * Durations the contract may name: each is a parameter of a rule (a default,
 * a bound, a message's fixed text), not an observation. The phrase is matched
 * whole, so the same number written as a result elsewhere is still caught.
 */
const PARAMETERS: { phrase: string; why: string }[] = [
  { phrase: '`retryMs`, default 100 ms', why: 'acquire\'s retry window, an option with a default (§4.1 step 3)' },
  { phrase: 'looking at the table again every 100 ms', why: 'how often acquire re-reads /proc/locks (§4.1 step 3)' },
  { phrase: '(at most 30 s)', why: 'the upper bound of the extended window: 300 times the 100 ms default' },
  { phrase: 'holding at every look for 5 s', why: 'when a reader counts as stuck (READER_STUCK_MS)' },
  { phrase: 'has held a shared lock on it for 5 s', why: 'the refusal message itself, a literal' },
  { phrase: 'may answer for 250 ms', why: 'how long one /proc census may be reused (§4.4)' },
  { phrase: 'a re-check every 250 ms', why: 'the holder\'s fallback for a missed notification (§4.5 rule 3)' },
  { phrase: 'request headers within 10 s', why: 'a server timeout (src/serve/limits.ts)' },
  { phrase: 'whole request within 20 s', why: 'a server timeout (src/serve/limits.ts)' },
  { phrase: 'connection closes after 5 s', why: 'the keep-alive timeout (src/serve/limits.ts)' },
  { phrase: 'at most about 11 s', why: 'the bound those two timeouts put on a slot, derived, not measured' },
  { phrase: '`openRecheckMs` (default 5 s; 1 s for `watch`)', why: 'an option and its defaults (§5.5)' },
  { phrase: 'at most 1,000 runs every 50 ms', why: 'the darwin settled sweep\'s tick and its size (src/live/sweep.ts, §5.6 rule 4)' },
  { phrase: 'settled runs are each looked at within 0.5 s', why: 'derived from that tick and size for 10,000 runs, not measured' },
  { phrase: 'each run about once every 0.5 s', why: 'the darwin settled sweep\'s rotation, no shorter (src/live/sweep.ts SWEEP_ROTATION_MS, §5.6 rule 4)' },
  { phrase: '`pollMs` (default 100 ms)', why: 'the live engine\'s poll of open legs without a watch, an option with a default (src/live/types.ts LIVE_POLL_MS, §5.8 rule 7)' },
];

/** Signs of a measurement: percentiles, microseconds, load, ratios written ×, and words that report results. */
const MEASUREMENT = [/\bp\d{2}\b/i, /µs/, /\bload average\b/i, /×/, /\bmeasur/i, /\bbenchmark/i, /RESULTS\.md/, /PROFILE\.md/, /\bmedian\b/i, /\/s\b/, /\bthroughput\b/i];
const DURATION = /\b\d[\d,.]*\s*(ms|s|min|seconds?|minutes?|hours?)\b/g;

describe('the contract holds rules, not measurements', () => {
  const flat = withoutFences(md).replace(/\s+/g, ' ');

  it('names no measurement, and every duration it names is an allowed parameter', () => {
    let rest = flat;
    for (const p of PARAMETERS) {
      expect(rest.includes(p.phrase), `the allowed phrase is still in the contract: ${p.phrase}`).toBe(true);
      rest = rest.split(p.phrase).join(' ');
    }
    for (const re of MEASUREMENT) expect(rest.match(re)?.[0], `CONTRACT.md reads like a measurement: ${re}`).toBeUndefined();
    const durations = [...rest.matchAll(DURATION)].map((m) => rest.slice(Math.max(0, (m.index ?? 0) - 40), (m.index ?? 0) + m[0].length));
    expect(durations, 'a duration that is not an allowed parameter (add it to PARAMETERS with its reason, or move it to implementation.md)').toEqual([]);
  });

  it('the check would catch one', () => {
    const sample = 'a probe took p99 24 ms at load average 30, 2× the floor';
    expect(MEASUREMENT.some((re) => re.test(sample))).toBe(true);
    expect([...sample.matchAll(DURATION)].length).toBe(1);
  });
});

describe('every name the code exports is in the contract', () => {
  const code = new Set([...withoutFences(md).matchAll(/`([^`\n]+)`/g)].map((m) => m[1]));
  const plain = withoutFences(md);
  const unionOf = (file: string, type: string): string[] => {
    const text = readFileSync(join(REPO, file), 'utf8');
    const body = new RegExp(`export type ${type} =([^;]+);`).exec(text)?.[1] ?? '';
    return [...body.matchAll(/'([^']+)'/g)].map((m) => m[1]);
  };

  it('files, the marker, event names, statuses, node states, probe reasons and error codes, in code font', () => {
    // Event names: every `run_…`, `node_…` and `gate_…` literal the stream's modules know.
    const events = new Set<string>(NODE_EVENTS);
    for (const f of ['src/contract/events.ts', 'src/contract/fold.ts']) {
      for (const m of readFileSync(join(REPO, f), 'utf8').matchAll(/'((?:run|node|gate)_[a-z]+)'/g)) events.add(m[1]);
    }
    expect(events.has('run_started') && events.has('run_finished'), 'the scan finds the leg events').toBe(true);
    const names: Record<string, readonly string[]> = {
      files: [EVENTS_FILE, STATE_FILE, LOCK_FILE, PGID_FILE],
      marker: [LOCK_MARKER],
      events: [...events],
      statuses: STATUSES,
      nodeStates: unionOf('src/contract/types.ts', 'NodeState'),
      liveness: unionOf('src/contract/types.ts', 'Liveness'),
      probeReasons: PROBE_REASONS,
      errorCodes: ERROR_CODES,
      lockLost: unionOf('src/contract/errors.ts', 'LockLostReason'),
      skipKinds: unionOf('src/contract/errors.ts', 'SkipKind'),
    };
    for (const [what, list] of Object.entries(names)) {
      expect(list.length, `${what}: the scan found them`).toBeGreaterThan(0);
      expect(list.filter((n) => !code.has(n)), `${what} missing from CONTRACT.md`).toEqual([]);
    }
    expect(plain).toContain(LOCK_MARKER);
  });
});

describe('§5.2 lists every command with the options its --help shows', () => {
  const cli = join(REPO, 'bin', 'runwarden.js');
  const help = (args: string[]): string => {
    const r = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    return r.stdout;
  };
  const optionsOf = (text: string): string[] => {
    const opts = text.slice(text.indexOf('\nOptions:'));
    return [...new Set([...opts.matchAll(/^\s+(?:-\w, )?(--[a-z][a-z-]*)/gm)].map((m) => m[1]))].filter((o) => o !== '--help').sort();
  };

  it('the same commands, and per command the same options', () => {
    expect(existsSync(join(REPO, 'dist', 'index.js')), 'dist/ is built (npm run build)').toBe(true);
    const top = help(['--help']);
    const commands = [...top.slice(top.indexOf('\nCommands:')).matchAll(/^ {2}([a-z]+)\b/gm)].map((m) => m[1]).filter((c) => c !== 'help');
    expect(commands.length).toBeGreaterThan(5);
    const rows = new Map<string, string[]>();
    for (const l of section(md, '5.2').lines) {
      // One item a command: "- `runs [--root DIR] …`: what it does".
      const m = /^\s*-\s+`([a-z]+)([^`]*)`:(?:\s|$)/.exec(l);
      if (m) rows.set(m[1], [...new Set([...m[2].matchAll(/--[a-z][a-z-]*/g)].map((x) => x[0]))].sort());
    }
    expect([...rows.keys()].sort()).toEqual([...commands].sort());
    for (const c of commands) expect(rows.get(c), `runwarden ${c}`).toEqual(optionsOf(help([c, '--help'])));
  });
});

/**
 * The messages the contract quotes are the ones the code prints: each quoted
 * message must match a string the named source file builds, with the code's
 * `${…}` standing for the contract's placeholders (`<path>`, `N`, `S`, ...).
 */
describe('quoted messages are the code\'s', () => {
  const MESSAGES: { starts: string; file: string }[] = [
    { starts: 'a leg of this run is in flight', file: 'src/lock/acquire.ts' },
    { starts: 'no leg holds the lock "<path>", but pid P', file: 'src/lock/acquire.ts' },
    { starts: 'no leg holds the lock "<path>", but readers\'', file: 'src/lock/acquire.ts' },
    { starts: 'no leg holds the lock "<path>", but a reader\'s', file: 'src/lock/acquire.ts' },
    { starts: 'run <id> is ABANDONED: a leg started', file: 'src/status/hints.ts' },
    { starts: 'It never wrote a snapshot', file: 'src/status/hints.ts' },
    { starts: 'Warning: a child process the dead leg started', file: 'src/status/hints.ts' },
    { starts: 'runwarden: cannot write output:', file: 'src/cli/io.ts' },
    { starts: 'runwarden: disk full: could not write', file: 'src/cli/commands/exec.ts' },
  ];
  // Code spans, and the lines of fenced blocks, of the contract.
  const quoted = [...md.matchAll(/(?<!`)`([^`]+)`(?!`)/g)].map((m) => m[1].replace(/\s+/g, ' '));
  const fenced = md.split('\n').map((l) => l.trim());
  /** The strings a source file builds: its quoted and template literals, with `a` + `b` joined. */
  const literals = (file: string): RegExp[] => {
    const src = readFileSync(join(REPO, file), 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/.*$/gm, '')
      .replace(/([`'])\s*\+\s*\n\s*([`'])/g, '');
    return [...src.matchAll(/`((?:[^`\\]|\\.)*)`|'((?:[^'\\\n]|\\.)*)'/g)].map((m) => {
      const s = (m[1] ?? m[2] ?? '').replace(/\\n$/, '').replace(/\\(.)/g, '$1');
      const parts = s.split(/\$\{(?:[^{}]|\{[^}]*\})*\}/);
      return new RegExp(`^${parts.map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*?')}$`);
    });
  };

  for (const { starts, file } of MESSAGES) {
    it(`"${starts} …" is what ${file} says`, () => {
      const text = [...quoted, ...fenced].find((q) => q.startsWith(starts));
      expect(text, `CONTRACT.md quotes a message starting "${starts}"`).toBeDefined();
      expect(literals(file).some((re) => re.test(text as string)), `${file} builds "${text}"`).toBe(true);
    });
  }

  it('a message the code does not build is caught', () => {
    expect(literals('src/lock/acquire.ts').some((re) => re.test('a leg of this run is in flight; please delete the file'))).toBe(false);
  });
});
