/**
 * The documentation a newcomer reads, held to what it promises:
 * - README.md is the front door: under 250 lines.
 * - No line of README.md or of the hand-written pages in docs/ (the contract
 *   included; docs/api/ is generated) is longer than 200 characters outside
 *   code blocks.
 * - Every relative link and image in README.md and docs/*.md resolves: the
 *   file exists, and a #fragment names a heading (GitHub's slugs) or an
 *   explicit anchor of the file it points at (helpers/markdown.ts).
 * - No comment or page narrates how it came to be (the patterns below).
 * - Every ```ts example of docs/library.md and README.md type-checks against
 *   the package's published types (dist/*.d.ts through its exports map, as a
 *   consumer's `import from 'runwarden'` sees them), and runs, in document
 *   order, against a temporary runs root, printing exactly its "It prints"
 *   block. An example marked `<!-- docs-test: leg RUN ... -->` runs while a
 *   real `runwarden exec` leg of RUN is in flight in another process.
 * No timing is asserted; the bounds below only stop a hung process.
 */
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Exit } from '../src/cli/io.js';
import { probeLock } from '../src/index.js';
import { identityBuffer, identityStride, readIdentities, takeIfChanged } from '../src/kernel/identity.js';
import { DESCRIPTOR_RESERVE } from '../src/kernel/limits.js';
import { DIR_DESCRIPTOR_BUDGET, EXIT_WATCH_BUDGET, FILE_DESCRIPTOR_BUDGET } from '../src/kernel/notify.js';
import { LIVE_OPEN_RECHECK_MS, LIVE_POLL_MS, LIVE_RUNS_PER_TURN, LIVE_SAFETY_MS, LIVE_SAFETY_SETTLED_PER_PASS } from '../src/live/types.js';
import { HEADERS_TIMEOUT_MS, KEEP_ALIVE_MS, MAX_CONNECTIONS, REQUEST_TIMEOUT_MS } from '../src/serve/limits.js';
import { CLI, ROOT } from './helpers/lock-procs.js';
import { anchors, brokenLink, githubSlug, images, markLines, relativeLinks, withoutFences as withoutFencesText } from './helpers/markdown.js';

const MAX_README_LINES = 250;
const MAX_LINE = 200;
/** The runs root the examples of README.md and docs/library.md share, under the system temp directory. */
const SCRATCH_ROOT = 'runwarden-examples';
/** README's lines a reader sees before scrolling. */
const FIRST_SCREEN = 30;

/** README.md and every docs/*.md (not docs/api/), as repository-relative paths. */
function pages(): string[] {
  const docs = readdirSync(join(ROOT, 'docs')).filter((n) => n.endsWith('.md') && statSync(join(ROOT, 'docs', n)).isFile());
  return ['README.md', ...docs.map((n) => `docs/${n}`)];
}

describe('README and docs/', () => {
  it(`README.md is under ${MAX_README_LINES} lines`, () => {
    const n = readFileSync(join(ROOT, 'README.md'), 'utf8').replace(/\n$/, '').split('\n').length;
    expect(n).toBeLessThan(MAX_README_LINES);
  });

  it("README's first screen gives the npm user's two commands and the contributor's, with what compiling needs", () => {
    const first = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').slice(0, FIRST_SCREEN).join('\n');
    const blocks = [...first.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1].split('\n').filter(Boolean).map((l) => l.replace(/\s+#.*$/, '')));
    expect(blocks).toEqual([
      ['npm install runwarden', 'npx runwarden demo'],
      ['npm ci && npx runwarden demo', 'npm ci && npm test'],
    ]);
    for (const need of ['`python3`', '`make`', 'C++ compiler', 'Xcode']) expect(first, need).toContain(need);
  });

  it(`no line is longer than ${MAX_LINE} characters outside code blocks`, () => {
    const long: string[] = [];
    const measured = pages();
    expect(measured).toEqual(expect.arrayContaining(['README.md', 'docs/cli.md', 'docs/library.md', 'docs/CONTRACT.md', 'docs/implementation.md']));
    for (const p of measured) {
      for (const l of markLines(readFileSync(join(ROOT, p), 'utf8'))) {
        if (!l.code && [...l.text].length > MAX_LINE) long.push(`${p}:${l.n} (${[...l.text].length})`);
      }
    }
    expect(long).toEqual([]);
  });

  it('the line rule sees long lines and skips code blocks (positive control)', () => {
    const text = ['short', 'x'.repeat(201), '```', 'y'.repeat(500), '```', 'z'.repeat(200)].join('\n');
    expect(markLines(text).filter((l) => !l.code && l.text.length > MAX_LINE).map((l) => l.n)).toEqual([2]);
  });

  it('every relative link and image resolves, file and #anchor', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const p of pages()) {
      for (const link of relativeLinks(readFileSync(join(ROOT, p), 'utf8'))) {
        checked++;
        const why = brokenLink(join(ROOT, p), link);
        if (why !== undefined) broken.push(`${p}:${link.line}: ${why}`);
      }
    }
    expect(checked).toBeGreaterThan(50);
    expect(broken).toEqual([]);
  });

  it('the link rule: GitHub slugs, numbered repeats, explicit anchors (positive control)', () => {
    expect(githubSlug("The contract's words")).toBe('the-contracts-words');
    expect(githubSlug('`exec` and `watch`: a leg every reader can judge')).toBe('exec-and-watch-a-leg-every-reader-can-judge');
    expect(githubSlug('Many hosts: Prometheus')).toBe('many-hosts-prometheus');
    const a = anchors('# A\n## A\n```\n## B\n```\n<a id="c"></a>x\n');
    expect([...a].sort()).toEqual(['a', 'a-1', 'c']);
    const sample = 'see [x](a.md#b) and `[y](z.md)`\n```\n[q](r.md)\n```\n![i](p.png) [u](https://example.org) ![w](https://example.org/w.png "t")';
    expect(relativeLinks(sample).map((l) => l.target)).toEqual(['a.md#b', 'p.png']);
    expect(images(sample).map((i) => i.target)).toEqual(['p.png', 'https://example.org/w.png']);
    const page = join(ROOT, 'docs', 'cli.md');
    expect(brokenLink(page, { text: 'x', target: 'nowhere.md', path: 'nowhere.md', anchor: undefined, line: 1 })).toMatch(/no file/);
    expect(brokenLink(page, { text: 'x', target: '#no-such-heading', path: '', anchor: 'no-such-heading', line: 1 })).toMatch(/no heading or explicit anchor/);
    expect(brokenLink(page, { text: 'x', target: '../../x.md', path: '../../x.md', anchor: undefined, line: 1 })).toMatch(/outside the repository/);
  });
});

describe('docs/cli.md against the CLI itself', () => {
  const help = (args: string[]): string => {
    const r = spawnSync(process.execPath, [CLI, ...args, '--help'], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, NO_COLOR: '1' } });
    expect(r.status, r.stderr).toBe(0);
    return r.stdout;
  };
  const commands = [...help([]).split('\nCommands:\n')[1].matchAll(/^ {2}([a-z]+) /gm)].map((m) => m[1]).filter((c) => c !== 'help');

  it('has a section for every command, naming every option its --help lists; README\'s table names every command', () => {
    expect(commands).toEqual(['runs', 'status', 'probe', 'watch', 'exec', 'serve', 'metrics', 'demo']);
    const cli = readFileSync(join(ROOT, 'docs', 'cli.md'), 'utf8');
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const missing: string[] = [];
    for (const c of commands) {
      const at = cli.indexOf(`\n## ${c}\n`);
      if (at < 0) {
        missing.push(`## ${c}`);
        continue;
      }
      const rest = cli.slice(at + 1);
      const section = rest.slice(0, rest.slice(3).search(/\n## /) + 3);
      for (const m of help([c]).matchAll(/^ {2}(?:-[a-zA-Z], )?(--[a-z-]+)/gm)) {
        const opt = m[1];
        if (opt === '--help') continue;
        if (!section.includes(opt)) missing.push(`${c} ${opt}`);
      }
      if (!readme.includes(`| \`runwarden ${c}`)) missing.push(`README: runwarden ${c}`);
    }
    expect(missing).toEqual([]);
  });
});

describe('exit statuses and defaults: README, docs/cli.md and --help agree with the code', () => {
  const help = (args: string[]): string => {
    const r = spawnSync(process.execPath, [CLI, ...args, '--help'], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, NO_COLOR: '1' } });
    expect(r.status, r.stderr).toBe(0);
    return r.stdout;
  };
  /** The numbers of an "Exit status: 0 ok, 1 …" sentence, wrapped or not. */
  const sentence = (text: string): number[] => {
    const at = text.replace(/\s+/g, ' ').match(/Exit status: ([^.]*)\./)?.[1] ?? '';
    return [...at.matchAll(/(?:^|, )(\d+) /g)].map((m) => Number(m[1]));
  };

  it('top-level --help, README and the exit-status table of docs/cli.md name every exit code of the CLI', () => {
    const code = Object.values(Exit).sort((a, b) => a - b);
    const cli = readFileSync(join(ROOT, 'docs', 'cli.md'), 'utf8');
    const table = cli.slice(cli.indexOf('**Exit status**'));
    const rows = [...table.slice(0, table.indexOf('\n\n', table.indexOf('|'))).matchAll(/^\| (\d+) \|/gm)].map((m) => Number(m[1]));
    expect(rows).toEqual(code);
    expect(sentence(readFileSync(join(ROOT, 'README.md'), 'utf8'))).toEqual(code);
    expect(sentence(help([]))).toEqual(code);
    // The reader (positive control): a sentence that leaves 130 out is read without it.
    expect(sentence('Exit status: 0 ok, 1 unexpected error,\n2 usage error, 75 run locked (exec).')).toEqual([0, 1, 2, 75]);
  });

  it('no option in any --help states its default twice', () => {
    const twice: string[] = [];
    for (const c of ['runs', 'status', 'probe', 'watch', 'exec', 'serve', 'metrics', 'demo']) {
      // An option's entry: from its flags to the next line that starts with flags.
      for (const entry of help([c]).split('\nOptions:\n')[1].split(/\n(?= {2}-)/)) {
        if ((entry.match(/\(default\b/g) ?? []).length > 1) twice.push(`${c}: ${entry.replace(/\s+/g, ' ').trim()}`);
      }
    }
    expect(twice).toEqual([]);
  });
});

/** A page's text with fenced code dropped and every run of whitespace made one space, so a phrase wrapped over lines is one. */
const flat = (text: string): string =>
  markLines(text)
    .filter((l) => !l.code)
    .map((l) => l.text)
    .join(' ')
    .replace(/\s+/g, ' ');

/** A figure as the docs write it ("1,024", "10 000", "5") as a number. */
const figure = (s: string): number => Number(s.replace(/[, ]/g, ''));

/**
 * Every phrase by which README.md, docs/*.md or a --help states one of the
 * code's budgets, with the constant it must equal (in the unit the phrase
 * uses). The one place a test reads constants from src/: to hold the docs to
 * the code. Each phrase must be found at least once, so a rewording that
 * escapes it fails here too.
 */
const BUDGETS: Array<{ name: string; value: number; phrases: RegExp[] }> = [
  {
    name: 'DIR_DESCRIPTOR_BUDGET (darwin directory watches)',
    value: DIR_DESCRIPTOR_BUDGET,
    phrases: [/([\d,]+) run directories/g, /directory watches (?:are )?(?:budgeted at|at most) ([\d,]+)/g, /at most ([\d,]+) directory watches/g, /([\d,]+) directories, [\d,]+ followed files/g],
  },
  { name: 'FILE_DESCRIPTOR_BUDGET (darwin followed files)', value: FILE_DESCRIPTOR_BUDGET, phrases: [/followed files at most ([\d,]+)/g, /([\d,]+) followed files/g] },
  {
    name: 'EXIT_WATCH_BUDGET (holder exit watches)',
    value: EXIT_WATCH_BUDGET,
    phrases: [/(?<!that is )\b([\d,]+) exit watches/g, /`holderWatches` \(default ([\d,]+)/g, /default ([\d,]+); on linux, where each is a descriptor/g],
  },
  { name: 'DESCRIPTOR_RESERVE (kept out of the watches\' share)', value: DESCRIPTOR_RESERVE, phrases: [/after ([\d,]+) descriptors kept/g, /− ([\d,]+)\) \/ 2⌋/g] },
  { name: 'MAX_CONNECTIONS (serve)', value: MAX_CONNECTIONS, phrases: [/at most ([\d,]+) connections/g, /serve's ([\d,]+) connections/g] },
  {
    name: 'LIVE_OPEN_RECHECK_MS (the re-probe of open legs, s)',
    value: LIVE_OPEN_RECHECK_MS / 1000,
    phrases: [/the ([\d,]+) s re-probe/g, /re-probed every ([\d,]+) s/g, /`openRecheckMs`, ([\d,]+) s/g],
  },
  { name: 'LIVE_OPEN_RECHECK_MS (ms)', value: LIVE_OPEN_RECHECK_MS, phrases: [/`LIVE_OPEN_RECHECK_MS` = ([\d ]+)/g] },
  { name: 'LIVE_SAFETY_MS (the safety pass, s)', value: LIVE_SAFETY_MS / 1000, phrases: [/the ([\d,]+) s safety/g, /\*\*The safety net\*\* \(every ([\d,]+) s\)/g] },
  { name: 'LIVE_SAFETY_MS (ms)', value: LIVE_SAFETY_MS, phrases: [/`LIVE_SAFETY_MS` = ([\d ]+)/g] },
  { name: 'LIVE_SAFETY_SETTLED_PER_PASS', value: LIVE_SAFETY_SETTLED_PER_PASS, phrases: [/([\d,]+) per pass/g, /`LIVE_SAFETY_SETTLED_PER_PASS` = ([\d ]+)/g] },
  { name: 'LIVE_RUNS_PER_TURN', value: LIVE_RUNS_PER_TURN, phrases: [/`LIVE_RUNS_PER_TURN` = ([\d ]+)/g] },
  { name: 'LIVE_POLL_MS', value: LIVE_POLL_MS, phrases: [/`LIVE_POLL_MS` = ([\d ]+)/g] },
  { name: 'HEADERS_TIMEOUT_MS (s)', value: HEADERS_TIMEOUT_MS / 1000, phrases: [/([\d,]+) s to send its request headers/g] },
  { name: 'REQUEST_TIMEOUT_MS (s)', value: REQUEST_TIMEOUT_MS / 1000, phrases: [/([\d,]+) s for the whole request/g] },
  { name: 'KEEP_ALIVE_MS (s)', value: KEEP_ALIVE_MS / 1000, phrases: [/keep-alive connection closes after ([\d,]+) s/g] },
];

/** Each statement of a budget in `texts` (name -> flattened text): what it says, where, and whether it agrees with the code. */
function budgetStatements(texts: Map<string, string>): Array<{ budget: string; where: string; says: number; ok: boolean }> {
  const out: Array<{ budget: string; where: string; says: number; ok: boolean }> = [];
  for (const b of BUDGETS) {
    for (const re of b.phrases) {
      for (const [where, text] of texts) {
        for (const m of text.matchAll(re)) out.push({ budget: b.name, where: `${where}: …${m[0]}…`, says: figure(m[1]), ok: figure(m[1]) === b.value });
      }
    }
  }
  return out;
}

describe('the docs agree with the code, the record and what ran', () => {
  const texts = new Map(pages().map((p) => [p, flat(readFileSync(join(ROOT, p), 'utf8'))]));
  const help = (args: string[]): string => spawnSync(process.execPath, [CLI, ...args, '--help'], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, NO_COLOR: '1' } }).stdout;
  for (const c of ['serve', 'metrics']) texts.set(`${c} --help`, help([c]).replace(/\s+/g, ' '));

  it("every budget the docs and --help state is the code's constant, and every phrase that states one is found", () => {
    const said = budgetStatements(texts);
    expect(said.filter((s) => !s.ok).map((s) => `${s.where} says ${s.says}`)).toEqual([]);
    expect(BUDGETS.filter((b) => !said.some((s) => s.budget === b.name)).map((b) => b.name), 'phrases found nowhere').toEqual([]);
    // Positive control: the darwin budget given as 256, or the share read as "less 192" twice over, is caught.
    const wrong = budgetStatements(new Map([['x', 'on darwin, where each kqueue watch holds a descriptor, 256 run directories; ⌊(soft limit − 92) / 2⌋']]));
    expect(wrong.filter((s) => !s.ok).map((s) => s.says)).toEqual([256, 92]);
  });

  it('the exit-watch share is written one way, ⌊(soft − 192) / 2⌋, never "half of the soft limit less 192"', () => {
    const ambiguous = [...texts].filter(([, t]) => /half of the soft[^.;]{0,40}less \d/.test(t)).map(([p]) => p);
    expect(ambiguous).toEqual([]);
  });

  it("a file's identity is device, inode, size and mtime wherever a page lists it, and the code compares exactly those", () => {
    const lists = [...texts].flatMap(([p, t]) => [...t.matchAll(/identit(?:y|ies) \((device[^);]*)[);]/g)].map((m) => `${p}: ${m[1]}`));
    expect(lists.length).toBeGreaterThanOrEqual(3);
    expect(lists.filter((l) => !l.endsWith(': device, inode, size, mtime'))).toEqual([]);
    // The code: a change of mode (ctime alone) keeps the identity; a new mtime or size does not.
    const dir = mkdtempSync(join(work, 'identity-'));
    writeFileSync(join(dir, 'f'), 'x');
    const kept = identityBuffer(1);
    const fresh = identityBuffer(1);
    const changed = (): boolean => {
      readIdentities([dir], ['f'], fresh);
      return takeIfChanged(fresh, 0, kept);
    };
    expect(changed(), 'first read').toBe(true);
    chmodSync(join(dir, 'f'), 0o600);
    expect(changed(), 'ctime alone').toBe(false);
    utimesSync(join(dir, 'f'), 1_000_000, 1_000_000);
    expect(changed(), 'mtime').toBe(true);
    appendFileSync(join(dir, 'f'), 'y');
    utimesSync(join(dir, 'f'), 1_000_000, 1_000_000);
    expect(changed(), 'size').toBe(true);
    expect(identityStride()).toBeGreaterThanOrEqual(4);
  });

  it('no page calls darwin code written but untested or compiled only: it runs in the XNU model (docs/internals.md)', () => {
    expect([...texts].filter(([, t]) => /written and (?:untested|compiled only)/.test(t)).map(([p]) => p)).toEqual([]);
  });

  it('each headline has one set of figures: a paragraph naming its command states no figure the record does not hold', () => {
    const doc = JSON.parse(readFileSync(join(ROOT, 'bench', 'headlines.json'), 'utf8')) as { headlines: Array<{ value: unknown; note?: string; what: string; spread?: unknown; measured: { command: string } }> };
    /** Figures with a unit (×, ms, s, MB): the numbers the docs could restate differently. */
    const figures = (text: string): number[] => [...text.matchAll(/(\d[\d,]*(?:\.\d+)?) ?(?:×|ms|s|MB)(?![\w])/g)].map((m) => figure(m[1]));
    const byCommand = new Map<string, Set<number>>();
    for (const h of doc.headlines) {
      const held = byCommand.get(h.measured.command) ?? new Set<number>();
      for (const n of [...figures(`${String(h.value)} ${h.note ?? ''} ${h.what}`), ...(typeof h.value === 'number' ? [h.value] : [])]) held.add(n);
      byCommand.set(h.measured.command, held);
    }
    const stray: string[] = [];
    for (const p of pages()) {
      // Outside the generated block, paragraph by paragraph (a list belongs to the paragraph before it).
      const text = readFileSync(join(ROOT, p), 'utf8').replace(/<!-- headlines:[\s\S]*?<!-- \/headlines -->/, '');
      for (const para of withoutFencesText(text).split(/\n\s*\n(?!\s*- )/)) {
        for (const [command, held] of byCommand) {
          if (!para.includes(`\`${command}\``)) continue;
          for (const n of figures(para)) if (!held.has(n)) stray.push(`${p}: ${n} beside \`${command}\``);
        }
      }
    }
    expect(stray).toEqual([]);
    // Positive control: a second set of dashboard figures beside its command is caught.
    const control = '`node bench/serve-scale.mjs --targets`: the first page **3.87 s**, **1.56×** a `runs --json`';
    expect(figures(control).filter((n) => !(byCommand.get('node bench/serve-scale.mjs --targets') as Set<number>).has(n))).toEqual([3.87, 1.56]);
  });

  it('docs/changes.md is a changelog for users: [0.1.0] - Unreleased, only Added (nothing was released before it), grouped, nothing internal', () => {
    const text = readFileSync(join(ROOT, 'docs', 'changes.md'), 'utf8');
    const versions = [...text.matchAll(/^## \[(.+?)\] - (.+)$/gm)].map((m) => `${m[1]} - ${m[2]}`);
    expect(versions).toEqual(['0.1.0 - Unreleased']);
    expect([...text.matchAll(/^### (.+)$/gm)].map((m) => m[1])).toEqual(['Added']);
    expect([...text.matchAll(/^#### (.+)$/gm)].map((m) => m[1])).toEqual(['The command line', 'The dashboard', 'Metrics', 'The library', 'Platforms']);
    expect(text).not.toMatch(/\*\*Breaking\*\*|\bno longer\b|\binstead of\b/i);
    // Internal: the suite, the benchmarks, the sources and the tools that check them are not what a user gets.
    expect(withoutFencesText(text).split('\n').filter((l) => /\btest\/|\.test\.ts|\bbench\/|\bsrc\/|\bESLint\b|\btypescript-eslint\b|\bAVX|\bVBMI\b/.test(l))).toEqual([]);
  });
});

describe('docs/internals.md', () => {
  const text = readFileSync(join(ROOT, 'docs', 'internals.md'), 'utf8');

  it('its layout block names every folder of src/ and every module directly in each, under that folder', () => {
    // The block: the code block after "## Layout". Each entry runs from a line that starts in column 0 to the next.
    const after = text.slice(text.indexOf('\n## Layout\n'));
    const block = /\n```\n([\s\S]*?)\n```/.exec(after)?.[1] ?? '';
    const entries = new Map<string, string>();
    let key = '';
    for (const l of block.split('\n')) {
      if (/^\S/.test(l)) key = l.split(/\s+/)[0];
      entries.set(key, `${entries.get(key) ?? ''}\n${l}`);
    }
    const missing: string[] = [];
    const src = join(ROOT, 'src');
    for (const dir of readdirSync(src).filter((n) => statSync(join(src, n)).isDirectory())) {
      const entry = entries.get(`src/${dir}/`);
      if (entry === undefined) {
        missing.push(`src/${dir}/`);
        continue;
      }
      for (const f of readdirSync(join(src, dir)).filter((n) => n.endsWith('.ts'))) {
        if (!new RegExp(`(^|[\\s(,/+])${f.replace(/\./g, '\\.')}\\b`).test(entry)) missing.push(`src/${dir}/${f}`);
      }
    }
    expect(entries.size).toBeGreaterThan(10);
    expect(missing).toEqual([]);
  });

  it('names every file of native/', () => {
    const missing = readdirSync(join(ROOT, 'native')).filter((f) => !text.includes(`native/${f}`) && !text.includes(`(\`${f}\`)`));
    expect(missing).toEqual([]);
  });
});

interface Example {
  /** Where it is: file and line of its opening fence. */
  at: string;
  file: string;
  code: string;
  /** The "It prints" block after it, when there is one. */
  prints: string | undefined;
  /** A real leg of this run held by `runwarden exec` while the example runs. */
  leg: { run: string; until: string | undefined } | undefined;
}

/** The ```ts blocks of a page, each with the "It prints" block and the docs-test marker that belong to it. */
function examples(file: string): Example[] {
  const all = markLines(readFileSync(join(ROOT, file), 'utf8'));
  const out: Example[] = [];
  for (let i = 0; i < all.length; i++) {
    if (all[i].text !== '```ts') continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < all.length && all[i].text !== '```'; i++) body.push(all[i].text);
    // The marker: the last non-empty prose line before the block's paragraph, if it is one.
    let leg: Example['leg'];
    for (let j = start - 1; j >= 0 && j >= start - 4; j--) {
      const m = /^<!-- docs-test: leg (\S+)(?: until "([^"]+)")? -->$/.exec(all[j].text);
      if (m) leg = { run: m[1], until: m[2] };
    }
    // "It prints…:" then a fenced block.
    let prints: string | undefined;
    let j = i + 1;
    while (j < all.length && all[j].text.trim() === '') j++;
    if (j < all.length && /^It prints\b.*:$/.test(all[j].text)) {
      j++;
      while (j < all.length && all[j].text.trim() === '') j++;
      if (all[j].text === '```') {
        const outLines: string[] = [];
        for (j++; j < all.length && all[j].text !== '```'; j++) outLines.push(all[j].text);
        prints = outLines.join('\n');
      }
    }
    out.push({ at: `${file}:${start + 1}`, file, code: body.join('\n') + '\n', prints, leg });
  }
  return out;
}

const work = mkdtempSync(join(tmpdir(), 'rw-docs-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Lines with trailing blanks cut (console.log of an empty last argument leaves one). */
const norm = (s: string): string =>
  s
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n')
    .replace(/\n+$/, '');

/** Starts `runwarden exec` of a leg of `run` whose command waits for a go file; resolves once the command runs. */
async function startLeg(root: string, run: string): Promise<{ go: () => void; done: Promise<number | null> }> {
  const flags = mkdtempSync(join(work, 'flags-'));
  const ready = join(flags, 'ready');
  const go = join(flags, 'go');
  const child = spawn(
    process.execPath,
    [CLI, 'exec', '--root', root, '--name', run, run, '--', 'sh', '-c', 'touch "$0"; while [ ! -e "$1" ]; do sleep 0.02; done', ready, go],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let exited = false;
  void done.then(() => (exited = true));
  // The command runs only after exec appended run_started and node_started and holds the lock.
  const deadline = Date.now() + 120_000;
  while (!existsSync(ready)) {
    if (exited || Date.now() > deadline) throw new Error(`the leg of ${run} did not start: ${stderr}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  expect(probeLock(join(root, run, 'resume.lock')).liveness, `the leg of ${run} holds its lock`).toBe('held');
  return { go: () => writeFileSync(go, ''), done };
}

/**
 * Runs compiled example `js` with its temp directory `tmp` (where the examples' scratch root goes), an empty
 * `home` as HOME and no OMG_HOME, so an example that wrote into the default runs root would write under `home`;
 * releases `leg` when its output shows `until` (or when it ends).
 */
function runExample(js: string, tmp: string, home: string, leg: { go: () => void } | undefined, until: string | undefined): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const { OMG_HOME: _unset, ...env } = process.env;
    const child = spawn(process.execPath, [js], { cwd: dirname(js), env: { ...env, TMPDIR: tmp, HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let released = false;
    const timer = setTimeout(() => child.kill('SIGKILL'), 180_000);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (leg && until !== undefined && !released && stdout.includes(until)) {
        released = true;
        leg.go();
      }
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('exit', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

describe('the examples', () => {
  const pagesWithExamples = ['docs/library.md', 'README.md'];
  const found = pagesWithExamples.flatMap(examples);
  const project = join(work, 'examples');

  it('are found: every page that promises them has them, each with what it prints', () => {
    expect(examples('docs/library.md').length).toBeGreaterThanOrEqual(6);
    expect(examples('README.md').length).toBe(1);
    for (const e of found) expect(e.prints, `${e.at}: an "It prints:" block`).toBeDefined();
    expect(found.filter((e) => e.leg !== undefined).map((e) => e.leg?.run)).toEqual(['train', 'busy']);
  });

  it('type-check against the published types (a deliberate type error is caught: positive control)', () => {
    mkdirSync(join(project, 'node_modules'), { recursive: true });
    // The package as a consumer resolves it: through its package.json exports to dist/.
    symlinkSync(ROOT, join(project, 'node_modules', 'runwarden'), 'dir');
    writeFileSync(join(project, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    // The settings docs/library.md tells a consumer to use, and only where the examples' files are found here.
    const lines = markLines(readFileSync(join(ROOT, 'docs', 'library.md'), 'utf8'));
    const at = lines.findIndex((l) => l.text === '<!-- docs-test: tsconfig -->');
    expect(at, 'docs/library.md states the tsconfig a consumer needs').toBeGreaterThan(0);
    const end = lines.findIndex((l, i) => i > at + 1 && l.text === '```');
    const stated = JSON.parse(lines.slice(at + 2, end).map((l) => l.text).join('\n')) as { compilerOptions: Record<string, unknown> };
    expect(Object.keys(stated.compilerOptions).sort()).toEqual(['lib', 'module', 'strict', 'target', 'types']);
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          ...stated.compilerOptions,
          typeRoots: [join(ROOT, 'node_modules', '@types')],
          outDir: 'out',
          rootDir: '.',
          skipLibCheck: true,
        },
        include: ['*.ts'],
      }),
    );
    found.forEach((e, i) => writeFileSync(join(project, `${String(i).padStart(2, '0')}-${e.file.replace(/\W+/g, '_')}.ts`), `// ${e.at}\n${e.code}`));
    writeFileSync(join(project, 'control.ts'), "import { probeLock } from 'runwarden';\nexport const n: number = probeLock('/nonexistent').liveness;\n");
    const r = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], { cwd: project, encoding: 'utf8', timeout: 600_000 });
    const errors = r.stdout.split('\n').filter((l) => /error TS\d+/.test(l));
    expect(errors.filter((l) => !l.startsWith('control.ts')), 'examples type-check').toEqual([]);
    expect(errors.filter((l) => l.startsWith('control.ts')).length, 'the control is refused').toBe(1);
    expect(errors.join('\n')).toMatch(/control\.ts\(2,\d+\): error TS2322: Type '[^']+' is not assignable to type 'number'/);
    // The stated `types` matter: without Node's types the same examples do not compile (no node: modules).
    writeFileSync(join(project, 'tsconfig.notypes.json'), JSON.stringify({ extends: './tsconfig.json', compilerOptions: { types: [] } }));
    const bare = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.notypes.json', '--noEmit'], { cwd: project, encoding: 'utf8', timeout: 600_000 });
    expect(bare.stdout).toMatch(/error TS2307: Cannot find module 'node:\w+'/);
  }, 600_000);

  it('run in document order in their scratch root, never the user\'s, and print what the page says they print', async () => {
    expect(existsSync(join(project, 'out')), 'compiled by the test above').toBe(true);
    const tmps = new Map<string, string>();
    const home = mkdtempSync(join(work, 'home-'));
    for (const [i, e] of found.entries()) {
      // One temp directory per page: the library's examples build on each other's runs, as the page says.
      let tmp = tmps.get(e.file);
      if (tmp === undefined) {
        tmp = mkdtempSync(join(work, 'tmp-'));
        tmps.set(e.file, tmp);
      }
      const js = join(project, 'out', `${String(i).padStart(2, '0')}-${e.file.replace(/\W+/g, '_')}.js`);
      const leg = e.leg ? await startLeg(join(tmp, SCRATCH_ROOT), e.leg.run) : undefined;
      const r = await runExample(js, tmp, home, leg, e.leg?.until);
      if (leg) {
        leg.go();
        expect(await leg.done, `${e.at}: the exec leg ends with its command's status`).toBe(0);
      }
      expect(r.status, `${e.at} exits 0; stderr: ${r.stderr}`).toBe(0);
      expect(norm(r.stdout), `${e.at} prints its "It prints" block`).toBe(norm(e.prints as string));
      expect(readdirSync(home), `${e.at} wrote nothing under HOME (the default runs root is ~/.oh-my-graph/runs)`).toEqual([]);
    }
    for (const [file, tmp] of tmps) expect(readdirSync(tmp), `${file}: its examples' runs are in the scratch root`).toEqual([SCRATCH_ROOT]);
  }, 900_000);
});

/**
 * Comments and docs say what is and why, never how they came to be: history
 * lives in git and docs/changes.md, measurements in bench/RESULTS.md and
 * docs/benchmarks.md. Each pattern is a way of telling history that has no
 * present-tense reading ("the lock was replaced" and "before the first event"
 * stay legal; "(was 5.1 s)", "before issue 23" and "the previous code" do not).
 */
const NARRATION: readonly RegExp[] = [
  /\bissues? \d+/i, // "issue 23", "issues 10, 11"
  /\bbefore (?:issue|this (?:release|change|version)|the change)\b/i,
  /\bpreviously\b/i,
  /\(was (?![=!])/i, // "(was 0.70 s …)", not the code `(was === null)`
  /\bwas [~≈]?\d/, // "was ~9 MB", "was 269–360 MB"
  /\bthe previous (?:code|version|implementation|release)\b/i,
  /\b(?:earlier|older) versions\b/i,
  /\bas (?:it )?always (?:was|did)\b/i,
  /\bas before\b/i,
  /\bused to be\b/i,
  /\bnow the default\b/i,
  /\bat this commit\b/i, // "at this commit vs ddf9143"
  /\bthe rejected (?:design|approach)\b/i,
];

/** Where narration is looked for: src/, native/, README.md and docs/ but changes.md (the history) and docs/api/ (generated from src/). */
function narrationFiles(): string[] {
  const out: string[] = [];
  const walk = (rel: string): void => {
    for (const e of readdirSync(join(ROOT, rel), { withFileTypes: true })) {
      const p = `${rel}/${e.name}`;
      if (e.isDirectory()) walk(p);
      else if (/\.(ts|js|mjs|cc|h|md)$/.test(e.name)) out.push(p);
    }
  };
  walk('src');
  walk('native');
  out.push('README.md', ...pages().filter((p) => p !== 'README.md'));
  return out.filter((p) => p !== 'docs/changes.md');
}

/** The lines of `text` that narrate, as `line: text`. */
function narration(text: string): string[] {
  return text.split('\n').flatMap((l, i) => (NARRATION.some((re) => re.test(l)) ? [`${i + 1}: ${l.trim().slice(0, 120)}`] : []));
}

describe('comments and docs say what is, not how it came to be', () => {
  it('no line of src/, native/, README.md or docs/ (changes.md aside) narrates its history', () => {
    const files = narrationFiles();
    expect(files).toEqual(expect.arrayContaining(['src/status/list.ts', 'native/platform.h', 'docs/CONTRACT.md', 'docs/benchmarks.md']));
    const found = files.flatMap((f) => narration(readFileSync(join(ROOT, f), 'utf8')).map((hit) => `${f}:${hit}`));
    expect(found).toEqual([]);
  });

  it('the patterns catch narration and leave present-tense facts alone (positive control)', () => {
    const told = [
      'a bound introduced in issue 23',
      'Changed since then (issues 10, 11, 13):',
      'within 1 scrape (was 0.70 s and 5.1 s before holder exits were watched)',
      'peak RSS was 156–173 MB with 8',
      'before issue 23 it listed the root twice',
      'previously the engine re-read the file',
      'the previous code served it',
      'earlier versions pointed it at CommonJS copies',
      'it stays an error (exit 1), as it always was',
      'the leg writes as before',
      'two threads, now the default for such a root',
      'serve start-up at this commit vs ddf9143',
      'an exclusive-lock probe (the rejected design) read a free lock as held',
    ];
    const facts = [
      'the lock file was replaced while the leg held it',
      'the lock is taken before the first event is written',
      'the leg no longer owns its run',
      "it does not model require(esm) yet (arethetypeswrong's open issue #252)",
      'how many times the lock was retaken',
      'the run happening now',
    ];
    expect(told.filter((t) => narration(t).length === 0)).toEqual([]);
    expect(facts.flatMap((t) => narration(t))).toEqual([]);
  });
});
