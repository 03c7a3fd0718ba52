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
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers/lock-procs.js';
import { sourceFiles } from './helpers/suite-files.js';

const SKIP = 'skip';
const RUN_IF = 'run' + 'If';
/** Ways vitest offers to skip, or run only when, outside the helper. */
const FORBIDDEN: { name: string; re: RegExp }[] = [
  // A block's own skip, its conditional forms, and the .each chains behind them.
  { name: 'a skipped or conditional block', re: new RegExp(`\\b(?:it|test|describe|suite|bench)\\s*\\.\\s*(?:${SKIP}|${SKIP}If|${RUN_IF})\\b`) },
  { name: `${SKIP}If / ${RUN_IF}`, re: new RegExp(`\\b(?:${SKIP}If|${RUN_IF})\\s*\\(`) },
  // The context's skip, named or destructured, with a reason or without.
  { name: 'a context skip', re: new RegExp(`(?:\\b(?:ctx|context|t|c)\\s*\\.\\s*${SKIP}\\s*\\(|[{,]\\s*${SKIP}\\s*[,}])`) },
  // vitest's skip through the task itself.
  { name: 'a task mode', re: new RegExp(`\\.mode\\s*=\\s*['"]${SKIP}['"]`) },
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
