/**
 * A test skips only through the prerequisite helper (test/helpers/prereq.ts),
 * which names the reason and fails the test instead under CI=true: a skip
 * written anywhere else would let a test vanish on CI without a failure.
 * This reads every file under test/ and fails on any other way to skip or
 * conditionally run a test. The patterns are built from pieces so that this
 * file does not match itself, and each is shown to catch the forms it is for.
 */
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers/lock-procs.js';
import { sourceFiles } from './helpers/suite-files.js';

const SKIP = 'skip';
const RUN_IF = 'run' + 'If';
const TODO = 'to' + 'do';
/** The modifiers vitest chains before a block's mode (concurrent, sequential, …), which the patterns look past. */
const MODIFIERS = '(?:\\s*\\.\\s*(?:concurrent|sequential|shuffle|fails|only))*';
/** Ways vitest offers to skip, or run only when, outside the helper. */
const FORBIDDEN: { name: string; re: RegExp }[] = [
  // A block's own skip, its conditional forms, and the .each chains behind them, after any modifier.
  { name: 'a skipped or conditional block', re: new RegExp(`\\b(?:it|test|describe|suite|bench)${MODIFIERS}\\s*\\.\\s*(?:${SKIP}|${SKIP}If|${RUN_IF})\\b`) },
  // A test written down and never run: vitest counts it as a to-do, not a failure.
  { name: 'a test to be written', re: new RegExp(`\\b(?:it|test|describe|suite)${MODIFIERS}\\s*\\.\\s*${TODO}\\b`) },
  { name: `${SKIP}If / ${RUN_IF}`, re: new RegExp(`\\b(?:${SKIP}If|${RUN_IF})\\s*\\(`) },
  // The context's skip, named or destructured, with a reason or without.
  { name: 'a context skip', re: new RegExp(`(?:\\b(?:ctx|context|t|c)\\s*\\.\\s*${SKIP}\\s*\\(|[{,]\\s*${SKIP}\\s*[,}])`) },
  // vitest's skip through the task itself.
  { name: 'a task mode', re: new RegExp(`\\.mode\\s*=\\s*['"](?:${SKIP}|${TODO})['"]`) },
];

const HELPER = join('test', 'helpers', 'prereq.ts');

/** Every line of `text` that matches a forbidden pattern, as `line: pattern`. */
function offences(text: string): string[] {
  const found: string[] = [];
  text.split('\n').forEach((l, i) => {
    for (const f of FORBIDDEN) if (f.re.test(l)) found.push(`${i + 1}: ${f.name}: ${l.trim()}`);
  });
  return found;
}

describe('skips go through the prerequisite helper', () => {
  it('the patterns catch every form they are for (so the check below can fail)', () => {
    const forms = [
      `it.${SKIP}('x', () => {})`,
      `describe.${SKIP}If(cond)('x', () => {})`,
      `it.${SKIP}If(a === b).each([1])('x', () => {})`,
      `test.${RUN_IF}(ok)('x', () => {})`,
      `describe.${SKIP}('x', () => {})`,
      `if (no) ctx.${SKIP}('not here')`,
      `  context.${SKIP}()`,
      `it('x', ({ ${SKIP} }) => { ${SKIP}(); })`,
      `ctx.task.mode = '${SKIP}'`,
      `it.concurrent.${SKIP}('x', async () => {})`,
      `describe.sequential.${SKIP}If(!zig)('x', () => {})`,
      `test.concurrent.${RUN_IF}(ok)('x', () => {})`,
      `it.${TODO}('the darwin path')`,
      `it.concurrent.${TODO}('later')`,
      `ctx.task.mode = '${TODO}'`,
    ];
    for (const f of forms) expect(offences(f), f).not.toEqual([]);
    // What is allowed: the helper's call, and other objects' own skip methods (a fold counting a skipped line).
    for (const ok of ['needs(ctx, "strace");', `fold.${SKIP}();`, `fold.${SKIP}(3);`, `if (e === null) fold.${SKIP}();`]) expect(offences(ok), ok).toEqual([]);
  });

  it('no file under test/ but the helper skips a test', () => {
    const all = sourceFiles(join(ROOT, 'test'));
    expect(all.length).toBeGreaterThan(50); // the control: the suite was found
    const bad: string[] = [];
    for (const f of all) {
      const rel = relative(ROOT, f);
      if (rel === HELPER) continue;
      for (const o of offences(readFileSync(f, 'utf8'))) bad.push(`${rel}:${o}`);
    }
    expect(bad).toEqual([]);
  });
});

/**
 * Two quieter ways for a test to check less than its name says, found in the
 * syntax tree (TypeScript's parser, so strings, comments and nested functions
 * are told apart from the test's own code):
 * - a `return` in a test's own body (not in a function it defines): the
 *   checks after it vanish on some machines, and the test still passes;
 * - a list that turns empty when something is missing (`cond ? [...] : []`
 *   or `cond ? [] : [...]` whose condition asks about the machine: the
 *   platform, a tool, a prerequisite, zig, darwin): the checks looped over it
 *   vanish. Such a check is a test of its own that says what it needs
 *   through the prerequisite helper.
 */
const MACHINE = /\bprocess\s*\.\s*(?:platform|arch|env)\b|\b(?:testedPlatform|onDarwinModel|lacking|onPath|strictPrereqs|runtimePath|findZig|libfaketime|existsSync)\s*\(|\.\s*(?:darwin|linux|musl|zig)\b/;

/** The test calls' callees: it, test and their modifiers (it.concurrent, test.each(…)). */
const TEST_CALL = /^(?:it|test)\b/;

function isFunction(n: ts.Node): n is ts.FunctionLikeDeclaration {
  return ts.isArrowFunction(n) || ts.isFunctionExpression(n) || ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n) || ts.isGetAccessor(n) || ts.isSetAccessor(n) || ts.isConstructorDeclaration(n);
}

/** Early returns and shrinking lists in `text`, as `line: what: code`. */
function hidden(text: string): string[] {
  const file = ts.createSourceFile('t.ts', text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: string[] = [];
  const at = (n: ts.Node, what: string): void => {
    const line = file.getLineAndCharacterOfPosition(n.getStart(file)).line + 1;
    found.push(`${line}: ${what}: ${n.getText(file).split('\n')[0].trim().slice(0, 100)}`);
  };
  /** Returns in `body` that belong to it, not to a function defined inside it; but the test's promise, returned last. */
  const returnsIn = (body: ts.Node): void => {
    const last = ts.isBlock(body) ? body.statements.at(-1) : undefined;
    const walk = (n: ts.Node): void => {
      if (ts.isReturnStatement(n) && !(n === last && n.expression !== undefined)) at(n, "a return in a test's body");
      if (!isFunction(n)) ts.forEachChild(n, walk);
    };
    ts.forEachChild(body, walk);
  };
  const visit = (n: ts.Node): void => {
    if (ts.isCallExpression(n) && TEST_CALL.test(n.expression.getText(file))) {
      for (const a of n.arguments) if ((ts.isArrowFunction(a) || ts.isFunctionExpression(a)) && a.body !== undefined) returnsIn(a.body);
    }
    if (ts.isConditionalExpression(n) && MACHINE.test(n.condition.getText(file))) {
      const empty = (e: ts.Expression): boolean => {
        const x = ts.isParenthesizedExpression(e) ? e.expression : e;
        return ts.isArrayLiteralExpression(x) && x.elements.length === 0;
      };
      if (empty(n.whenTrue) || empty(n.whenFalse)) at(n, 'a list that empties on a machine without something');
    }
    ts.forEachChild(n, visit);
  };
  visit(file);
  return found;
}

describe('a test neither leaves early nor shrinks what it checks', () => {
  it('the reader catches every form it is for, and leaves functions a test defines alone (so the check below can fail)', () => {
    const caught = [
      "it('x', async () => {\n  if (e.stats.backend === 'inotify') {\n    expect(1).toBe(1);\n    return;\n  }\n  expect(2).toBe(2);\n});",
      "test('y', () => { if (!has) return; check(); });",
      "it('q', () => { if (x) return done(); check(); return done(); });",
      "it.concurrent('z', async (ctx) => { for (const a of as) { if (a) return; } });",
      "it.each([1, 2])('w %i', (n) => { if (n > 1) return; expect(n).toBe(1); });",
      'for (const arch of p.darwin ? Object.keys(DARWIN_TARGETS) : []) expect(f.has(arch)).toBe(true);',
      "const checks = process.platform === 'linux' ? [a, b] : [];",
      "const xs = lacking('zig').length > 0 ? [] : ['darwin-x64'];",
      'for (const arch of (p.darwin ? p.arches : [])) check(arch);',
    ];
    for (const c of caught) expect(hidden(c), c).not.toEqual([]);
    const allowed = [
      "it('x', () => { const f = () => { return 1; }; expect(f()).toBe(1); });",
      "it('y', async () => { await new Promise<void>((r) => { if (x) return r(); r(); }); });",
      "it('z', () => { function g(): number { return 2; } expect(g()).toBe(2); });",
      "it('p', () => { const s = start(); return new Promise<void>((r) => s.on('end', r)); });",
      'function helper(): void { if (x) return; }',
      'const sizes = small ? [1, 7] : [];',
      "const v = flag === '--limit' ? ['1', '2'] : [];",
    ];
    for (const ok of allowed) expect(hidden(ok), ok).toEqual([]);
  });

  it('no file under test/ has a test that returns early or a list that empties where something is missing', () => {
    const all = sourceFiles(join(ROOT, 'test')).filter((f) => /\.[cm]?ts$/.test(f));
    expect(all.length).toBeGreaterThan(50);
    const bad: string[] = [];
    for (const f of all) {
      const rel = relative(ROOT, f);
      if (rel === HELPER || rel === join('test', 'skip-policy.test.ts')) continue;
      for (const o of hidden(readFileSync(f, 'utf8'))) bad.push(`${rel}:${o}`);
    }
    expect(bad).toEqual([]);
  });
});
