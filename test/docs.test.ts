/**
 * The documentation a newcomer reads (issue 24 items 1-2), held to what it
 * promises:
 * - README.md is the front door: under 250 lines.
 * - No line of README.md or of the hand-written pages in docs/ is longer than
 *   200 characters outside code blocks (docs/api/ is generated; CONTRACT.md
 *   and implementation.md are not these pages).
 * - Every relative link and image in README.md and docs/*.md resolves: the
 *   file exists, and a #fragment names a heading (GitHub's slugs) or an
 *   explicit anchor of the file it points at.
 * - Every ```ts example of docs/library.md and README.md type-checks against
 *   the package's published types (dist/*.d.ts through its exports map, as a
 *   consumer's `import from 'runwarden'` sees them), and runs, in document
 *   order, against a temporary runs root, printing exactly its "It prints"
 *   block. An example marked `<!-- docs-test: leg RUN ... -->` runs while a
 *   real `runwarden exec` leg of RUN is in flight in another process.
 * No timing is asserted; the bounds below only stop a hung process.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { probeLock } from '../src/index.js';
import { CLI, ROOT } from './helpers/lock-procs.js';

const MAX_README_LINES = 250;
const MAX_LINE = 200;

/**
 * Pages whose links are checked but whose prose is not this test's to
 * measure: the contract has its own rules, and implementation.md is written
 * on another branch.
 */
const NOT_MEASURED = new Set(['docs/CONTRACT.md', 'docs/implementation.md']);

/** README.md and every docs/*.md (not docs/api/), as repository-relative paths. */
function pages(): string[] {
  const docs = readdirSync(join(ROOT, 'docs')).filter((n) => n.endsWith('.md') && statSync(join(ROOT, 'docs', n)).isFile());
  return ['README.md', ...docs.map((n) => `docs/${n}`)];
}

interface Line {
  n: number;
  text: string;
  code: boolean;
}

/** The file's lines, each marked whether it lies in a fenced code block (the fences included). */
function lines(text: string): Line[] {
  let fence: string | null = null;
  return text.split('\n').map((t, i) => {
    const m = /^\s*(`{3,}|~{3,})/.exec(t);
    if (fence === null && m) {
      fence = (m[1])[0];
      return { n: i + 1, text: t, code: true };
    }
    if (fence !== null) {
      if (m && (m[1])[0] === fence) fence = null;
      return { n: i + 1, text: t, code: true };
    }
    return { n: i + 1, text: t, code: false };
  });
}

/** GitHub's heading slug: lower case, punctuation dropped (letters, digits, `-`, `_` and spaces kept), spaces to `-`. */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link's or image's text
    .replace(/<[^>]+>/g, '') // inline HTML
    .replace(/`/g, '');
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-');
}

/** Every fragment a link may name in `text`: heading slugs (repeats numbered -1, -2 as GitHub does) and explicit ids. */
function anchors(text: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  for (const l of lines(text)) {
    if (l.code) continue;
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(l.text);
    if (h) {
      const base = slug(h[1]);
      const k = seen.get(base) ?? 0;
      seen.set(base, k + 1);
      out.add(k === 0 ? base : `${base}-${k}`);
    }
    for (const m of l.text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) out.add(m[1]);
  }
  return out;
}

/** The targets of the markdown links and images of `text`, outside code blocks and code spans. */
function links(text: string): { line: number; target: string }[] {
  const out: { line: number; target: string }[] = [];
  for (const l of lines(text)) {
    if (l.code) continue;
    const prose = l.text.replace(/`[^`]*`/g, '``');
    for (const m of prose.matchAll(/!?\[(?:[^\]]|\][^(])*?\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) out.push({ line: l.n, target: m[1] });
  }
  return out;
}

describe('README and docs/', () => {
  it(`README.md is under ${MAX_README_LINES} lines`, () => {
    const n = readFileSync(join(ROOT, 'README.md'), 'utf8').replace(/\n$/, '').split('\n').length;
    expect(n).toBeLessThan(MAX_README_LINES);
  });

  it(`no line is longer than ${MAX_LINE} characters outside code blocks`, () => {
    const long: string[] = [];
    const measured = pages().filter((p) => !NOT_MEASURED.has(p));
    expect(measured).toEqual(expect.arrayContaining(['README.md', 'docs/cli.md', 'docs/library.md']));
    for (const p of measured) {
      for (const l of lines(readFileSync(join(ROOT, p), 'utf8'))) {
        if (!l.code && [...l.text].length > MAX_LINE) long.push(`${p}:${l.n} (${[...l.text].length})`);
      }
    }
    expect(long).toEqual([]);
  });

  it('the line rule sees long lines and skips code blocks (positive control)', () => {
    const text = ['short', 'x'.repeat(201), '```', 'y'.repeat(500), '```', 'z'.repeat(200)].join('\n');
    expect(lines(text).filter((l) => !l.code && l.text.length > MAX_LINE).map((l) => l.n)).toEqual([2]);
  });

  it('every relative link and image resolves, file and #anchor', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const p of pages()) {
      const text = readFileSync(join(ROOT, p), 'utf8');
      for (const { line, target } of links(text)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // a URL: not this repository's to check
        const [path, fragment] = target.split('#', 2) as [string, string | undefined];
        const file = path === '' ? p : relative(ROOT, join(ROOT, dirname(p), decodeURIComponent(path)));
        checked++;
        if (file.startsWith('..') || !existsSync(join(ROOT, file))) {
          broken.push(`${p}:${line}: ${target} (no ${file})`);
          continue;
        }
        if (fragment !== undefined && fragment !== '') {
          if (!file.endsWith('.md')) {
            broken.push(`${p}:${line}: ${target} (a fragment of a file that is not markdown)`);
            continue;
          }
          if (!anchors(readFileSync(join(ROOT, file), 'utf8')).has(fragment)) broken.push(`${p}:${line}: ${target} (no #${fragment} in ${file})`);
        }
      }
    }
    expect(checked).toBeGreaterThan(50);
    expect(broken).toEqual([]);
  });

  it('the link rule: GitHub slugs, numbered repeats, explicit anchors (positive control)', () => {
    expect(slug("The contract's words")).toBe('the-contracts-words');
    expect(slug('`exec` and `watch`: a leg every reader can judge')).toBe('exec-and-watch-a-leg-every-reader-can-judge');
    expect(slug('Many hosts: Prometheus')).toBe('many-hosts-prometheus');
    const a = anchors('# A\n## A\n```\n## B\n```\n<a id="c"></a>x\n');
    expect([...a].sort()).toEqual(['a', 'a-1', 'c']);
    expect(links('see [x](a.md#b) and `[y](z.md)`\n```\n[q](r.md)\n```\n![i](p.png)').map((l) => l.target)).toEqual(['a.md#b', 'p.png']);
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
  const all = lines(readFileSync(join(ROOT, file), 'utf8'));
  const out: Example[] = [];
  for (let i = 0; i < all.length; i++) {
    if ((all[i]).text !== '```ts') continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < all.length && (all[i]).text !== '```'; i++) body.push((all[i]).text);
    // The marker: the last non-empty prose line before the block's paragraph, if it is one.
    let leg: Example['leg'];
    for (let j = start - 1; j >= 0 && j >= start - 4; j--) {
      const m = /^<!-- docs-test: leg (\S+)(?: until "([^"]+)")? -->$/.exec((all[j]).text);
      if (m) leg = { run: m[1], until: m[2] };
    }
    // "It prints…:" then a fenced block.
    let prints: string | undefined;
    let j = i + 1;
    while (j < all.length && (all[j]).text.trim() === '') j++;
    if (j < all.length && /^It prints\b.*:$/.test((all[j]).text)) {
      j++;
      while (j < all.length && (all[j]).text.trim() === '') j++;
      if ((all[j]).text === '```') {
        const outLines: string[] = [];
        for (j++; j < all.length && (all[j]).text !== '```'; j++) outLines.push((all[j]).text);
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

/** Runs compiled example `js` with OMG_HOME=`home`; releases `leg` when its output shows `until` (or when it ends). */
function runExample(js: string, home: string, leg: { go: () => void } | undefined, until: string | undefined): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [js], { cwd: dirname(js), env: { ...process.env, OMG_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] });
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
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          target: 'ES2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          lib: ['ES2022', 'ESNext.Disposable'],
          types: ['node'],
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
  }, 600_000);

  it('run in document order against a temp runs root and print what the page says they print', async () => {
    expect(existsSync(join(project, 'out')), 'compiled by the test above').toBe(true);
    const homes = new Map<string, string>();
    for (const [i, e] of found.entries()) {
      // One runs root per page: the library's examples build on each other's runs, as the page says.
      let home = homes.get(e.file);
      if (home === undefined) {
        home = mkdtempSync(join(work, 'home-'));
        mkdirSync(join(home, 'runs'));
        homes.set(e.file, home);
      }
      const js = join(project, 'out', `${String(i).padStart(2, '0')}-${e.file.replace(/\W+/g, '_')}.js`);
      const leg = e.leg ? await startLeg(join(home, 'runs'), e.leg.run) : undefined;
      const r = await runExample(js, home, leg, e.leg?.until);
      if (leg) {
        leg.go();
        expect(await leg.done, `${e.at}: the exec leg ends with its command's status`).toBe(0);
      }
      expect(r.status, `${e.at} exits 0; stderr: ${r.stderr}`).toBe(0);
      expect(norm(r.stdout), `${e.at} prints its "It prints" block`).toBe(norm(e.prints as string));
    }
  }, 900_000);
});
