/**
 * Ends every run with ONE plain line about missing prerequisites (see
 * test/helpers/prereq.ts): which tests were skipped, or failed under
 * CI/RUNWARDEN_TEST_STRICT, for lack of what, and the Debian packages that
 * would bring it. The facts travel in each test's meta, which vitest
 * serialises back from its worker processes with the result, so nothing is
 * shared through files and nothing depends on which worker ran what.
 */
import { basename } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';
import type { PrereqRecord } from './prereq.js';

interface Entry {
  file: string;
  test: string;
  record: PrereqRecord;
  state: string;
}

export function summaryLine(entries: Entry[]): string {
  const skipped = entries.filter((e) => e.state === 'skipped');
  const failed = entries.filter((e) => e.state !== 'skipped');
  if (entries.length === 0) return 'runwarden: no test skipped for a missing prerequisite';
  // Every test is named; tests of one file that lack the same things share one reason.
  const list = (es: Entry[]) => {
    const groups = new Map<string, { file: string; reason: string; tests: string[] }>();
    for (const e of es) {
      const reason = e.record.missing.join('; ');
      const key = `${e.file}\0${reason}`;
      const g = groups.get(key) ?? { file: e.file, reason, tests: [] };
      g.tests.push(`"${e.test}"`);
      groups.set(key, g);
    }
    return [...groups.values()].map((g) => `${g.file} ${g.tests.join(', ')} (${g.reason})`).join(', ');
  };
  const parts: string[] = [];
  if (skipped.length > 0) parts.push(`skipped ${count(skipped.length)} for missing prerequisites: ${list(skipped)}`);
  if (failed.length > 0) parts.push(`FAILED ${count(failed.length)} for missing prerequisites (strict: CI or RUNWARDEN_TEST_STRICT is set): ${list(failed)}`);
  const pkgs = [...new Set(entries.flatMap((e) => e.record.packages))].sort();
  const install = pkgs.length > 0 ? `; to run them: apt-get install ${pkgs.join(' ')}` : '';
  const root = entries.some((e) => e.record.missing.some((m) => /root|CAP_SYS_ADMIN/.test(m))) ? `${install === '' ? '; to run them:' : ','} run as root` : '';
  return `runwarden: ${parts.join('; ')}${install}${root}`;
}

function count(n: number): string {
  return n === 1 ? '1 test' : `${n} tests`;
}

export default class PrereqReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const entries: Entry[] = [];
    for (const mod of testModules) {
      const file = basename(mod.moduleId).replace(/\.test\.ts$/, '');
      for (const test of mod.children.allTests()) {
        const record = test.meta().prereq;
        if (record === undefined) continue;
        entries.push({ file, test: test.name, record, state: test.result().state });
      }
    }
    process.stdout.write(`${summaryLine(entries)}\n`);
  }
}
