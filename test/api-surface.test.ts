/**
 * The package root's promises that no generated report can check: importing
 * it has no side effects (the addon loads on the first call that needs the
 * kernel), every code an error class carries is in ERROR_CODES, and the
 * library guide's error table (docs/library.md, "Error codes") says when each
 * happens.
 *
 * Which names the package root exports, and that each is documented and
 * every type its signatures use is exported too, is checked by the generated
 * API reference and report (test/api-docs.test.ts), not by a list kept here.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as api from '../src/index.js';
import { ROOT } from './helpers/lock-procs.js';

const LIBRARY = readFileSync(join(ROOT, 'docs', 'library.md'), 'utf8');

function section(text: string, heading: string, next: RegExp): string {
  const start = text.indexOf(heading);
  expect(start, `docs/library.md has a "${heading}" section`).toBeGreaterThanOrEqual(0);
  const rest = text.slice(start + heading.length);
  const end = rest.search(next);
  return end < 0 ? rest : rest.slice(0, end);
}

describe('the package root', () => {
  it('importing it loads no native addon and keeps nothing alive; the first kernel call loads it (positive control)', () => {
    // Every dlopen is recorded; the import must make none, filesystemType must make one.
    const script = `
      const seen = [];
      const dlopen = process.dlopen;
      process.dlopen = function (...args) { seen.push(String(args[1])); return dlopen.apply(this, args); };
      const m = await import(${JSON.stringify(pathToFileURL(join(ROOT, 'dist', 'index.js')).href)});
      const onImport = seen.length;
      m.filesystemType('/');
      console.log(JSON.stringify({ onImport, afterCall: seen.length, last: seen.at(-1) }));
    `;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { onImport: number; afterCall: number; last: string };
    expect(out.onImport).toBe(0);
    expect(out.afterCall).toBe(1);
    expect(out.last).toMatch(/runwarden\.node$/);
  });
});

describe('the error family', () => {
  it('the error table of docs/library.md names every code in ERROR_CODES, each with when it happens', () => {
    const table = section(LIBRARY, '\n### Error codes\n', /\n#+ /);
    const rows = table.split('\n').filter((l) => l.startsWith('| `'));
    for (const code of api.ERROR_CODES) {
      const row = rows.find((r) => r.includes(`\`${code}\``));
      expect(row, `docs/library.md error table row for ${code}`).toBeDefined();
      const when = (row as string).split('|')[3] ?? '';
      expect(when.trim().length, `the "when" of ${code}`).toBeGreaterThan(10);
    }
  });

  it('every error class carries a code from ERROR_CODES', () => {
    const codes = new Set<string>(api.ERROR_CODES);
    const samples: api.RunwardenError[] = [
      new api.LockHeldError('m', { path: '/x' }),
      new api.LockFileError('m', 'ELOCKIO', '/x', undefined, { errno: 'EACCES', syscall: 'open' }),
      new api.LockLostError('m', '/x', 'lock-missing'),
      new api.AbortError('m'),
      new api.RunFileError('m', 'EREAD', '/x'),
      new api.StreamError('m', 'ELINETOOLONG', '/x'),
      new api.RunUnreadableError('r', 'm', 'error'),
      new api.RunIdError('m'),
      new api.WriteError('m', 'ECLOSED', '/x'),
      new api.UnsupportedPlatformError('m'),
      new api.AddonLoadError('m'),
    ];
    for (const e of samples) {
      expect(e).toBeInstanceOf(api.RunwardenError);
      expect(codes.has(e.code), `${e.name} ${e.code}`).toBe(true);
    }
    expect(new api.AbortError('m').name).toBe('AbortError');
  });
});
