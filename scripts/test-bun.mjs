#!/usr/bin/env node
// `npm run test:bun`: the suite's library and CLI tests under Bun. vitest itself
// runs under Bun (`bun --bun`), so its workers, and every process a test starts
// with process.execPath (the CLI, holders, fixtures), are Bun too; a guard test
// (test/runtime-bun.test.ts, in the list) fails unless that is so.
//
// Bun comes from scripts/runtime.sh (the npm package @oven/bun-linux-x64, into
// ~/.cache/runwarden). What is left out is named below with its reason: whole
// files, and single tests (a regular expression vitest's -t must not match).
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));

/** The files run under Bun. */
export const BUN_FILES = [
  'test/runtime-bun.test.ts',
  'test/lock-*.test.ts',
  'test/lockfile.test.ts',
  'test/status*.test.ts',
  'test/runs*.test.ts',
  'test/leg-writer.test.ts',
  'test/follow-run.test.ts',
  'test/live-*.test.ts',
  'test/watch.test.ts',
  'test/holder-exit.test.ts',
  'test/notify-*.test.ts',
  'test/native.test.ts',
  'test/exec*.test.ts',
  'test/cli-probe.test.ts',
  'test/demo.test.ts',
  'test/serve-api.test.ts',
  'test/serve-cli.test.ts',
  'test/serve-live.test.ts',
  'test/auto-leg.test.ts',
  'test/snapshot.test.ts',
  'test/tail-*.test.ts',
  'test/stream.test.ts',
  'test/probe-files.test.ts',
  'test/readonly.test.ts',
  'test/replaced-lock.test.ts',
];

/** Files not run under Bun, and why. */
export const LEFT_OUT_FILES = {
  'repository checks (docs, api-docs, api-surface, contract-doc, headlines, layout, package-lint, release-gate, darwin-build, bench-smoke)':
    'they check the repository\'s files and builds, not what runs: the runtime does not change their answer',
  'consumer.test.ts': 'it packs and installs with npm and runs the package under each Node major itself',
  'browser-dashboard.test.ts': 'it drives chromium through playwright-core; not tried under Bun',
  'serve-memory, memory-release, serve-scale, soak, threads-cap': 'they measure V8 heaps and long runs; not tried under Bun',
  'the other library tests (addon-*, bounds, clock-step, dirfd, fsgate, full-disk, hints, metrics, names-*, prometheus, serve-* not listed, stream-property, swap-race, syscall-budget, write-failure)':
    'not tried under Bun yet: the lane holds what has been run under Bun and passed',
};

/** Single tests not run under Bun, and why. */
export const LEFT_OUT_TESTS = {
  'ExitWatcher: an exit is told once': 'it counts every pidfd of the process, and Bun\'s child_process holds one per child it spawned',
  'run as an unprivileged user': 'Bun\'s child_process does not run a child under another uid (the spawn option uid), which these tests need',
  'an unreadable (run directory or file is a named skip|root is a clear error)': 'the same: an unprivileged child (uid option)',
  'a command that does not exist exits 127 even when PATH holds a directory the user cannot search': 'the same: an unprivileged child (uid option)',
  'permission denied \\(EACCES\\), not ENOENT': 'the same: an unprivileged child (uid option)',
  'a reader that never lets go is refused at the bound|a shared lock held longer than the retry window': 'they compare the holder pid /proc/locks names with the pid Bun\'s child_process reports for the flock(1) reader, and under Bun the two differed (the first in every run, the second in one of two); not yet explained',
};

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const fetched = spawnSync(join(root, 'scripts', 'runtime.sh'), ['bun'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (fetched.status !== 0) {
    process.stderr.write('test:bun: no Bun (scripts/runtime.sh bun failed)\n');
    process.exit(1);
  }
  const bun = fetched.stdout.trim();
  const skip = Object.keys(LEFT_OUT_TESTS).join('|');
  const args = ['--bun', join(root, 'node_modules', 'vitest', 'vitest.mjs'), 'run', '-t', `^(?!.*(${skip})).*$`, ...BUN_FILES.flatMap((g) => expand(g))];
  process.stdout.write(`test:bun: ${bun} (Bun ${spawnSync(bun, ['--version'], { encoding: 'utf8' }).stdout.trim()}), ${Object.keys(LEFT_OUT_TESTS).length} tests left out by name:\n`);
  for (const [t, why] of Object.entries(LEFT_OUT_TESTS)) process.stdout.write(`  - ${t}: ${why}\n`);
  const r = spawnSync(bun, args, { cwd: root, stdio: 'inherit', env: { ...process.env, RUNWARDEN_TEST_RUNTIME: 'bun' } });
  process.exit(r.status ?? 1);
}

/** A `test/x*.test.ts` pattern's files (no shell does it for spawnSync). */
function expand(glob) {
  const r = spawnSync('sh', ['-c', `ls ${glob}`], { cwd: root, encoding: 'utf8' });
  return r.stdout.split('\n').filter(Boolean);
}
