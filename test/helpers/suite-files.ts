/**
 * The suite's own source files, for the tests that hold the suite to a rule
 * by reading it (skip-policy: no skip outside the prerequisite helper;
 * harness: one copy of each harness). One walker, so both read the same set.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Every JavaScript or TypeScript file under `dir`, depth first, as paths joined onto `dir`. */
export function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sourceFiles(p));
    else if (/\.(?:[cm]?[jt]s|tsx)$/.test(e.name)) out.push(p);
  }
  return out;
}
