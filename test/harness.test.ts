/**
 * One of each test harness, in test/helpers/: the event-line encoder
 * (events.ts), the seeded random generator (random.ts), the "wrote nothing"
 * tree fingerprint (tree.ts) and the Markdown link reader (markdown.ts). A
 * second copy drifts from the first (a different key order, a line that is
 * not the contract's shape, an unseeded stream no failure can reproduce), so
 * this reads every file under test/ outside test/helpers/ and fails on code
 * that does one of these jobs itself. Each pattern is shown to catch the
 * forms it is for, and to pass the forms the suite uses legitimately.
 *
 * Literal lines are data, not encoders: a hostile line written byte for byte
 * (a `\u` escape in a key, a truncated object, a wrong type) stays a string
 * literal, because no encoder makes it. What is caught is code that turns
 * values into an event line.
 */
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers/lock-procs.js';
import { sourceFiles } from './helpers/suite-files.js';

interface Rule {
  name: string;
  /** Matched against the whole file (so a call spread over lines is seen); `g` for every match. */
  re: RegExp;
  /** A match on a line that also matches this is allowed. */
  unless?: RegExp;
}

const RULES: Rule[] = [
  // Event lines (helpers/events.ts: eventLine, eventJson, encodeEvents, eventJsonOfBytes).
  { name: 'an event object encoded by hand (use eventLine/eventJson)', re: /JSON\.stringify\(\s*\{[^}]*?\bevent\s*[:,}]/g },
  { name: "a helper's event object encoded by hand (use encodeEvents)", re: /JSON\.stringify\(\s*(?:ev|event\w*|line)\s*\(/g },
  {
    name: "a JSON-lines encoder (JSON.stringify(x) + '\\n'; use encodeEvents)",
    // One backslash, or two where the encoder is written inside a template that a child process runs.
    re: /JSON\.stringify\([^\n]*\)\s*\+\s*(['"`])\\{1,2}n\1/g,
    // A child process's report to its parent is a message on stdout, and a pretty-printed document is one
    // document (a CLI's --json output): neither is an events.jsonl line.
    unless: /\bstdout\.write\(|,\s*null,\s*\d+\)/,
  },
  { name: 'an event line built in a template (use eventJson)', re: /`[^`]*"event"\s*:[^`]*\$\{[^`]*`|`[^`]*\$\{[^`]*"event"\s*:[^`]*`/g },
  // A literal that opens an event object and stops inside a string value, for code to fill and close.
  { name: "an event line's head left open for a value (use eventJson/eventJsonOfBytes)", re: /'\{[^'\n]*"event"[^'\n]*:"'/g },
  // The seeded generator (helpers/random.ts: mulberry32).
  { name: 'a generator of its own (Math.imul, an LCG or hash multiplier)', re: /Math\.imul\(|\b(?:1103515245|1664525|1013904223|6364136223846793005|0x5deece66d|0x6d2b79f5|2654435761|0x9e3779b9|0x41c64e6d)\b/gi },
  { name: 'a xorshift step', re: /\^=\s*\w+\s*(?:<<|>>>?)\s*\d+/g },
  // An unseeded draw cannot be reproduced from a failure; a unique name (Math.random().toString(36)) is not data.
  { name: 'Math.random as test data (use mulberry32(seed))', re: /Math\.random\(\)(?!\.toString\(36\))/g },
  // The tree fingerprint (helpers/tree.ts) and the link reader (helpers/markdown.ts).
  { name: 'a content hash of its own (use fingerprint)', re: /createHash\(/g },
  { name: "a tree listing by find(1) (use fingerprint)", re: /['"]-printf['"]/g },
  { name: 'a Markdown link parser of its own (use relativeLinks/images)', re: /\\\]\\\(/g },
];

/** This file holds the examples below on purpose; the helpers are where the one copy lives. */
const EXEMPT = [join('test', 'harness.test.ts')];
const HELPERS = join('test', 'helpers') + '/';

/** Every match of a rule in `text`, as `line: rule: text of the line`. */
function offences(text: string): string[] {
  const lines = text.split('\n');
  const lineOf = (at: number): number => text.slice(0, at).split('\n').length;
  const found: string[] = [];
  for (const r of RULES) {
    for (const m of text.matchAll(r.re)) {
      const n = lineOf(m.index);
      const l = lines[n - 1];
      if (r.unless?.test(l)) continue;
      found.push(`${n}: ${r.name}: ${l.trim()}`);
    }
  }
  return found;
}

describe('one of each test harness, in test/helpers/', () => {
  it('the patterns catch the forms they are for (so the check below can fail)', () => {
    const caught = [
      // Event encoders found in the suite before they went through helpers/events.ts.
      `const line = (o) => JSON.stringify({ schema: 3, ts: 'T', run_id: 'r', ...o }) + '\\n';`,
      `const ev = (id, event, extra = {}) =>\n  JSON.stringify({ schema: 3, ts: 'T', run_id: id, event, ...extra }) + '\\n';`,
      `JSON.stringify({\n  schema: 3,\n  event: 'node_failed',\n})`,
      `appendFileSync(p, JSON.stringify(ev(id, 'node_passed')) + '\\n');`,
      `[a, b].map((e) => JSON.stringify(e) + '\\n').join('')`,
      // The same encoder inside a child's script, where the newline is written \\n.
      "const line = (o) => JSON.stringify({ schema: 3, ts: 'T', run_id: 'r', ...o }) + '\\\\n';",
      "  [x, y].map((o) => JSON.stringify(o) + \"\\\\n\")",
      'const at = `{"schema":3,"event":"node_passed","extra":${nest(64)}}`;',
      'const block = `{"ts":"${t}","event":"tick"}\\n`;',
      `const huge = '{"schema":3,"event":"x","pad":"' + 'z'.repeat(9) + '"}';`,
      `const head = '{"schema":3,"event":"x","pad":"';`,
      // Generators.
      'const next = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff);',
      't = Math.imul(t ^ (t >>> 15), t | 1);',
      'x ^= x << 13;',
      'const pick = xs[Math.floor(Math.random() * xs.length)];',
      // Fingerprints and link parsers.
      "createHash('sha256').update(readFileSync(p))",
      "spawnSync('find', [root, '-printf', '%p %s %T@\\\\n'])",
      'for (const m of readme.matchAll(/!\\[[^\\]]*\\]\\(([^)]+)\\)/g)) {}',
    ];
    for (const c of caught) expect(offences(c), c).not.toEqual([]);
    // What the suite does legitimately: the helpers' calls, hostile literals, child reports, unique names.
    const allowed = [
      `const line = (o) => eventLine(o, { ts: '2026-12-02T10:00:00Z' });`,
      `writeEvents(dir, [ev(id, 'run_started'), '{"schema":3,"ev\\\\u0065nt":"node_passed"}']);`,
      `const finish = '{"schema":3,"\\\\u0065vent":"run_finished","outcome":"paused"}\\n';`,
      `writeFileSync(p, '{"schema":3,"run_id":"run-l","event":"run_fini');`,
      `process.stdout.write(JSON.stringify({ type: 'stats', stats: engine.stats }) + '\\n');`,
      "const out = (v) => process.stdout.write(JSON.stringify(v) + '\\\\n');",
      "const tag = Math.random().toString(36).slice(2);",
      'expect(JSON.stringify(a)).toBe(JSON.stringify(b));',
      "expect(one.stdout).toBe(JSON.stringify(runsDocument(listRuns(root)), null, 2) + '\\n');",
      "writeFileSync(p, JSON.stringify({ schema: 3, graph: { name: 'g', nodes: [] }, nodes: {} }));",
    ];
    for (const ok of allowed) expect(offences(ok), ok).toEqual([]);
  });

  it('no test file outside test/helpers/ encodes event lines, draws random data, fingerprints a tree or parses links itself', () => {
    const all = sourceFiles(join(ROOT, 'test'));
    expect(all.length).toBeGreaterThan(50); // the control: the suite was found
    const bad: string[] = [];
    for (const f of all) {
      const rel = relative(ROOT, f);
      if (rel.startsWith(HELPERS) || EXEMPT.includes(rel)) continue;
      for (const o of offences(readFileSync(f, 'utf8'))) bad.push(`${rel}:${o}`);
    }
    expect(bad).toEqual([]);
  });
});
