/** The test files `npm run test:bun` runs under Bun (globs under test/). */
export const BUN_FILES: string[];
/** The test files it leaves out, by name without `.test.ts`, each group with the reason observed under Bun. */
export const LEFT_OUT_FILES: Array<{ files: string[]; why: string }>;
/** The single tests it leaves out: a regular expression of their names, and the reason observed under Bun. */
export const LEFT_OUT_TESTS: Record<string, string>;
