// @ts-check
/**
 * ESLint over the TypeScript sources, the tests, the benchmarks and the
 * scripts (`npm run lint`, part of `npm test`), with typescript-eslint's
 * type-checked rules, so that a promise left floating, a promise handed where
 * its result is ignored, an unused name or import, and a type imported as a
 * value are errors rather than review notes.
 *
 * Types: src/ is read through tsconfig.json (the settings it is compiled
 * with, noUncheckedIndexedAccess among them), everything else through
 * tsconfig.lint.json (the tests' settings, plus the plain JavaScript).
 */
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/** The rules that judge `any`: they say nothing useful where nothing is typed. */
const UNSAFE_ANY = {
  '@typescript-eslint/no-unsafe-argument': 'off',
  '@typescript-eslint/no-unsafe-assignment': 'off',
  '@typescript-eslint/no-unsafe-call': 'off',
  '@typescript-eslint/no-unsafe-member-access': 'off',
  '@typescript-eslint/no-unsafe-return': 'off',
  '@typescript-eslint/no-unsafe-unary-minus': 'off',
};

export default defineConfig(
  {
    ignores: [
      'dist/**',
      'build/**',
      'prebuilds/**',
      'node_modules/**',
      'etc/**',
      'docs/**',
      'bench/out/**',
      'test-results/**',
      // Browser scripts: checked by tsconfig.public.json (`npm run typecheck`).
      'src/serve/public/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: { ...globals.node },
      parserOptions: { project: './tsconfig.lint.json', tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      // A callback set up before the value it reads is assigned (a notifier's handler) keeps its `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // An empty catch is a best-effort step (a cleanup, a kill of what may be gone) whose failure changes nothing.
      'no-empty': ['error', { allowEmptyCatch: true }],
      // A caught error is rethrown as it came (its type is `unknown`).
      '@typescript-eslint/only-throw-error': ['error', { allowThrowingUnknown: true }],
      // Control characters are this package's subject (names, terminal output): its patterns spell them on purpose.
      'no-control-regex': 'off',
      // An async function without an await is how a function here promises a Promise-returning API;
      // the promise rules above catch the hazards (a promise dropped or handed where none is awaited).
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // The package's sources, with the settings they are compiled with.
    files: ['src/**/*.ts'],
    languageOptions: { parserOptions: { project: './tsconfig.json' } },
  },
  {
    // Plain JavaScript: tsc infers types without checking them, so most values are `any`.
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    rules: UNSAFE_ANY,
  },
  {
    // CommonJS fixtures: they require() the package as a CommonJS user does.
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // The tests read JSON documents (a CLI's stdout, an HTTP body) and assert on them with expect().
    files: ['test/**/*.ts'],
    rules: { ...UNSAFE_ANY, '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Typed by their declaration files (scripts/*.d.mts), so no program holds the .mjs files themselves.
    files: ['scripts/darwin.mjs', 'scripts/darwin-model.mjs', 'scripts/test-bun.mjs', 'scripts/win.mjs', 'scripts/prebuild-check.mjs'],
    ...tseslint.configs.disableTypeChecked,
  },
);
