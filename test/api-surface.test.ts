/**
 * The public API's contract with its users, checked mechanically:
 * - every type that appears in an exported signature can be imported from
 *   the package root (read from the emitted declarations, dist/*.d.ts, where
 *   every inferred type is written out);
 * - the README's Library section names every export;
 * - the README's error table names every code in ERROR_CODES.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import * as api from '../src/index.js';
import { ROOT } from './helpers/lock-procs.js';

const DIST = join(ROOT, 'dist');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

function section(text: string, heading: string, next: RegExp): string {
  const start = text.indexOf(heading);
  expect(start, `README has a "${heading}" section`).toBeGreaterThanOrEqual(0);
  const rest = text.slice(start + heading.length);
  const end = rest.search(next);
  return end < 0 ? rest : rest.slice(0, end);
}

/** The root's exports, each as the symbol it finally names, from dist/index.d.ts. */
function publicApi(): { checker: ts.TypeChecker; exported: Map<ts.Symbol, string> } {
  const program = ts.createProgram([join(DIST, 'index.d.ts')], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    types: ['node'],
    skipLibCheck: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const index = program.getSourceFile(join(DIST, 'index.d.ts'));
  if (index === undefined) throw new Error('dist/index.d.ts is missing: run npm run build');
  const moduleSymbol = checker.getSymbolAtLocation(index) as ts.Symbol;
  const exported = new Map<ts.Symbol, string>();
  for (const s of checker.getExportsOfModule(moduleSymbol)) {
    const target = s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s;
    exported.set(target, s.getName());
  }
  return { checker, exported };
}

const NAMED = ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias | ts.SymbolFlags.Class | ts.SymbolFlags.Enum;

/**
 * Every named type of ours (declared under dist/) that the declarations of
 * `roots` mention, directly or through other types of ours, with a place
 * that mentions it.
 */
function mentionedTypes(checker: ts.TypeChecker, roots: Iterable<ts.Symbol>): Map<ts.Symbol, string> {
  const found = new Map<ts.Symbol, string>();
  const seen = new Set<ts.Symbol>();
  const queue = [...roots];
  const ours = (d: ts.Declaration) => d.getSourceFile().fileName.startsWith(DIST);
  while (queue.length > 0) {
    const sym = queue.pop() as ts.Symbol;
    if (seen.has(sym)) continue;
    seen.add(sym);
    for (const decl of sym.getDeclarations() ?? []) {
      if (!ours(decl)) continue;
      const visit = (node: ts.Node): void => {
        let name: ts.Node | undefined;
        if (ts.isTypeReferenceNode(node)) name = node.typeName;
        else if (ts.isExpressionWithTypeArguments(node)) name = node.expression;
        else if (ts.isTypeQueryNode(node)) name = node.exprName;
        if (name !== undefined) {
          let target = checker.getSymbolAtLocation(name);
          if (target !== undefined && target.flags & ts.SymbolFlags.Alias) target = checker.getAliasedSymbol(target);
          if (target !== undefined && !(target.flags & ts.SymbolFlags.TypeParameter) && (target.getDeclarations() ?? []).some(ours)) {
            if (target.flags & NAMED && !found.has(target)) found.set(target, `${sym.getName()} (${decl.getSourceFile().fileName.slice(DIST.length + 1)})`);
            queue.push(target);
          }
        }
        ts.forEachChild(node, visit);
      };
      visit(decl);
    }
  }
  return found;
}

describe('the public API', () => {
  it('exports every type its exported signatures use', () => {
    const { checker, exported } = publicApi();
    expect(exported.size).toBeGreaterThan(50);
    const missing: string[] = [];
    for (const [sym, where] of mentionedTypes(checker, exported.keys())) {
      if (!exported.has(sym)) missing.push(`${sym.getName()}, used by ${where}`);
    }
    expect(missing).toEqual([]);
  });

  it('the README Library section documents every export', () => {
    const { exported } = publicApi();
    const library = section(README, '\n## Library\n', /\n## /);
    const undocumented = [...exported.values()].filter((name) => !library.includes(`\`${name}`) && !new RegExp(`[\`(, ]${name}\\b`).test(library));
    expect(undocumented).toEqual([]);
  });

  it('the README error table names every code in ERROR_CODES, each with when it happens', () => {
    const table = section(README, '\n### Errors\n', /\n#+ /);
    const rows = table.split('\n').filter((l) => l.startsWith('| `'));
    for (const code of api.ERROR_CODES) {
      const row = rows.find((r) => r.includes(`\`${code}\``));
      expect(row, `README error table row for ${code}`).toBeDefined();
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
