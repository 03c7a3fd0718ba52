/**
 * The public API's reference and report are generated, and kept honest here:
 * - TypeDoc (typedoc.json) builds the reference from the doc comments with
 *   every validation on and every warning an error: an export or member
 *   without a doc comment, a {@link} that does not resolve, a type a
 *   signature uses that is not exported. Its output must equal the committed
 *   docs/api/.
 * - API Extractor (api-extractor.json), in CI mode, compares the public
 *   declarations with the committed etc/runwarden.api.md, so a change to the
 *   public API fails the suite until the report is regenerated and the change
 *   is seen in review.
 * Both regenerate with one command: `npm run docs`.
 *
 * The report is made from dist/*.d.ts, which `npm test` builds first; the
 * reference is made from src/. Both tools run from node_modules, offline, and
 * write only under a temporary directory.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Extractor, ExtractorConfig, ExtractorLogLevel, type ExtractorMessage } from '@microsoft/api-extractor';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from './helpers/lock-procs.js';

const work = mkdtempSync(join(tmpdir(), 'rw-api-docs-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const TYPEDOC = join(ROOT, 'node_modules', 'typedoc', 'bin', 'typedoc');
/** A bound that only stops a hung tool: TypeDoc alone takes about a minute on a loaded two-core machine. */
const SLOW = 900_000;
const REGENERATE = 'run `npm run docs` and commit docs/api/ and etc/runwarden.api.md';

function typedoc(cwd: string, args: string[]): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, [TYPEDOC, ...args], { cwd, encoding: 'utf8', timeout: 600_000, maxBuffer: 64 << 20, env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } });
  expect(r.error).toBeUndefined();
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** Every file under `dir`, relative, with its text. */
function tree(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.set(relative(dir, p), readFileSync(p, 'utf8'));
    }
  };
  walk(dir);
  return out;
}

/** API Extractor in CI mode (no file under the checkout written), with `edit` applied to its configuration. */
function extract(edit: (cfg: ReturnType<typeof ExtractorConfig.loadFile>) => void = () => {}) {
  const file = join(ROOT, 'api-extractor.json');
  const cfg = ExtractorConfig.loadFile(file);
  const temp = mkdtempSync(join(work, 'report-'));
  cfg.apiReport = { ...cfg.apiReport, enabled: true, reportTempFolder: temp };
  edit(cfg);
  const config = ExtractorConfig.prepare({ configObject: cfg, configObjectFullPath: file, packageJsonFullPath: join(ROOT, 'package.json') });
  const messages: string[] = [];
  const result = Extractor.invoke(config, {
    localBuild: false,
    messageCallback: (m: ExtractorMessage) => {
      if (m.logLevel === ExtractorLogLevel.Warning || m.logLevel === ExtractorLogLevel.Error) messages.push(`${m.messageId}: ${m.text}`);
      m.handled = true;
    },
  });
  return { result, messages, temp };
}

describe('the API reference (TypeDoc)', () => {
  it('builds with every validation as an error, and equals the committed docs/api/', () => {
    const out = join(work, 'api');
    const r = typedoc(ROOT, ['--out', out]);
    expect(r.status, r.out).toBe(0);
    const fresh = tree(out);
    const committed = tree(join(ROOT, 'docs', 'api'));
    expect(fresh.size).toBeGreaterThan(50);
    const stale = [...new Set([...fresh.keys(), ...committed.keys()])].filter((f) => fresh.get(f) !== committed.get(f)).sort();
    expect(stale, `docs/api/ is out of date: ${REGENERATE}`).toEqual([]);
  }, SLOW);

  it('fails on a missing doc comment, a broken link and an unexported type (positive control, same configuration)', () => {
    const dir = join(work, 'fixture');
    mkdirSync(dir);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'fixture', version: '1.0.0', type: 'module' }));
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { strict: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', types: [], skipLibCheck: true }, files: ['index.ts'] }),
    );
    writeFileSync(
      join(dir, 'index.ts'),
      [
        '/** Makes a shape; see {@link Nowhere}. */',
        'export function shape(): Shape { return { side: 1 }; }',
        '/** Not exported, yet a signature above returns it. */',
        'interface Shape { /** Its side. */ side: number }',
        'export const bare = 1;',
        '',
      ].join('\n'),
    );
    writeFileSync(join(dir, 'typedoc.json'), JSON.stringify({ extends: [join(ROOT, 'typedoc.json')], entryPoints: ['index.ts'], tsconfig: 'tsconfig.json', out: 'out' }));
    const r = typedoc(dir, ['--options', 'typedoc.json']);
    expect(r.status).not.toBe(0);
    expect(r.out).toMatch(/bare \(Variable\).*does not have any documentation/);
    expect(r.out).toMatch(/Failed to resolve link to "Nowhere"/);
    expect(r.out).toMatch(/Shape, defined in .*, is referenced by shape but not included/);
  }, SLOW);
});

describe('the API report (API Extractor)', () => {
  it('etc/runwarden.api.md is the public API of the built declarations, with no warning', () => {
    const { result, messages } = extract();
    expect(messages).toEqual([]);
    expect(result.apiReportChanged, `the public API changed: ${REGENERATE}`).toBe(false);
    expect(result.succeeded).toBe(true);
  }, SLOW);

  it('an added export changes the report and fails CI mode (positive control)', () => {
    const dist = join(work, 'dist');
    cpSync(join(ROOT, 'dist'), dist, { recursive: true, filter: (p) => !p.endsWith('.js') });
    appendFileSync(join(dist, 'index.d.ts'), '\n/** A control export that is in no report. */\nexport declare const RW_REPORT_CONTROL: number;\n');
    const { result, temp } = extract((cfg) => {
      cfg.mainEntryPointFilePath = join(dist, 'index.d.ts');
    });
    expect(result.apiReportChanged).toBe(true);
    expect(result.succeeded).toBe(false);
    expect(readFileSync(join(temp, 'runwarden.api.md'), 'utf8')).toContain('RW_REPORT_CONTROL');
  }, SLOW);
});
