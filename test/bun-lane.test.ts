/**
 * The Bun lane (`npm run test:bun`, scripts/test-bun.mjs) leaves nothing out
 * silently: every test file is run under Bun or named among the files left
 * out, never both; every test left out by name exists in a file the lane
 * runs; and every reason says what was seen under Bun, not that nobody
 * looked ("not tried", "not yet explained").
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUN_FILES, LEFT_OUT_FILES, LEFT_OUT_TESTS } from '../scripts/test-bun.mjs';
import { ROOT } from './helpers/lock-procs.js';

const files = readdirSync(join(ROOT, 'test')).filter((f) => f.endsWith('.test.ts'));
/** A lane glob (`test/x*.test.ts`) as a test of a file name. */
const globRe = (g: string): RegExp => new RegExp(`^${g.replace(/^test\//, '').replace(/[.]/g, '\\.').replace(/\*/g, '.*')}$`);
const inLane = (f: string): boolean => BUN_FILES.some((g) => globRe(g).test(f));
const leftOut = new Set(LEFT_OUT_FILES.flatMap((g) => g.files.map((n) => `${n}.test.ts`)));

describe('the Bun lane names everything it leaves out, with what was seen', () => {
  it('every test file is run under Bun or left out by name, never both', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(files.filter((f) => !inLane(f) && !leftOut.has(f)), 'in neither list').toEqual([]);
    expect(files.filter((f) => inLane(f) && leftOut.has(f)), 'in both').toEqual([]);
    expect([...leftOut].filter((f) => !files.includes(f)), 'left out but no such file').toEqual([]);
    for (const g of BUN_FILES) expect(files.some((f) => globRe(g).test(f)), g).toBe(true);
  });

  it('every test left out by name is a test of a file the lane runs', () => {
    const laneText = files.filter(inLane).map((f) => readFileSync(join(ROOT, 'test', f), 'utf8')).join('\n');
    const titles = [...laneText.matchAll(/\bit\(\s*(['"`])((?:\\.|(?!\1).)*)\1/g)].map((m) => m[2].replace(/\\(.)/g, '$1'));
    expect(titles.length).toBeGreaterThan(300);
    for (const name of Object.keys(LEFT_OUT_TESTS)) expect(titles.some((t) => new RegExp(name).test(t)), name).toBe(true);
  });

  it('every reason says what was seen, not that it was not looked at', () => {
    const reasons = [...LEFT_OUT_FILES.map((g) => g.why), ...Object.values(LEFT_OUT_TESTS)];
    expect(reasons.filter((r) => r.length < 40 || /\bnot (?:yet )?(?:tried|explained|looked)\b|\byet\b/i.test(r))).toEqual([]);
  });
});
