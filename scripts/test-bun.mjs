#!/usr/bin/env node
// `npm run test:bun`: the suite's library and CLI tests under Bun. vitest itself
// runs under Bun (`bun --bun`), so its workers, and every process a test starts
// with process.execPath (the CLI, holders, fixtures), are Bun too; a guard test
// (test/runtime-bun.test.ts, in the list) fails unless that is so.
//
// Bun comes from scripts/runtime.sh (the npm package @oven/bun-linux-x64, into
// ~/.cache/runwarden). What is left out is named below with its reason, as
// observed under Bun: whole files, and single tests (a regular expression
// vitest's -t must not match). test/bun-lane.test.ts holds every test file to
// one list or the other.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));

/** The files run under Bun. */
export const BUN_FILES = [
  'test/runtime-bun.test.ts',
  'test/addon-*.test.ts',
  'test/lockfile.test.ts',
  'test/auto-leg.test.ts',
  'test/bounds.test.ts',
  'test/browser-dashboard.test.ts',
  'test/build-hints.test.ts',
  'test/cli-probe.test.ts',
  'test/clock-step.test.ts',
  'test/darwin-model.test.ts',
  'test/demo.test.ts',
  'test/dirfd.test.ts',
  'test/exec*.test.ts',
  'test/follow-run.test.ts',
  'test/fsgate.test.ts',
  'test/full-disk.test.ts',
  'test/hints.test.ts',
  'test/holder-exit.test.ts',
  'test/leg-writer.test.ts',
  'test/live-*.test.ts',
  'test/lock-*.test.ts',
  'test/mac-checks.test.ts',
  'test/memory-release.test.ts',
  'test/metrics.test.ts',
  'test/names-*.test.ts',
  'test/native.test.ts',
  'test/nofile-budget.test.ts',
  'test/nofile-listing.test.ts',
  'test/notify-*.test.ts',
  'test/probe-files.test.ts',
  'test/prometheus.test.ts',
  'test/readonly.test.ts',
  'test/replaced-lock.test.ts',
  'test/root-paths.test.ts',
  'test/runs*.test.ts',
  'test/serve-addon-library.test.ts',
  'test/serve-api.test.ts',
  'test/serve-assets.test.ts',
  'test/serve-bounds.test.ts',
  'test/serve-byte-names.test.ts',
  'test/serve-cli.test.ts',
  'test/serve-first-listing.test.ts',
  'test/serve-hostile.test.ts',
  'test/serve-hub.test.ts',
  'test/serve-live.test.ts',
  'test/serve-long-stream.test.ts',
  'test/serve-model.test.ts',
  'test/serve-one-owner.test.ts',
  'test/serve-reader-faults.test.ts',
  'test/serve-root-replaced.test.ts',
  'test/serve-safety-env.test.ts',
  'test/serve-scale.test.ts',
  'test/serve-surfaces-property.test.ts',
  'test/serve-unwatched-metric.test.ts',
  'test/snapshot.test.ts',
  'test/soak.test.ts',
  'test/status*.test.ts',
  'test/stream.test.ts',
  'test/stream-property.test.ts',
  'test/swap-race.test.ts',
  'test/syscall-budget.test.ts',
  'test/tail-*.test.ts',
  'test/threads-cap.test.ts',
  'test/watch.test.ts',
  'test/write-failure.test.ts',
];

/** Files not run under Bun, each named, and why (test/bun-lane.test.ts holds every test file to one of the two lists). */
export const LEFT_OUT_FILES = [
  {
    files: ['api-docs', 'api-surface', 'bun-lane', 'contract-doc', 'darwin-build', 'docs', 'harness', 'headlines', 'layout', 'package-lint', 'release-gate', 'skip-policy'],
    why:
      "they hold the repository to itself (its pages, API report, contract, layout, headline record, packed tarball, darwin build and the suite's own rules); " +
      'what they run is what a contributor runs with Node (tsc, typedoc, npm pack, zig), not the library under a consumer\'s runtime',
  },
  {
    files: ['win-build', 'windows'],
    why: "their subject is the Windows addon: built by zig and checked as PE files (win-build), or run by Node for Windows under Wine in the Windows lane (windows); on linux the second skips as Windows only whatever runtime starts it",
  },
  { files: ['consumer'], why: 'it packs and installs with npm and runs the package under each Node major itself' },
  { files: ['runtime-deno'], why: "its subject is Deno's refusal, run by Deno; the runtime that starts the test changes nothing it checks" },
  { files: ['scan-arm64'], why: "its subject is the arm64 build run by Debian's arm64 node under qemu-user; the runtime that starts the test changes nothing it checks" },
  {
    files: ['bench-smoke'],
    why:
      "the benches it runs need Node: fs-ext, one of the compared methods, is a V8 addon built for Node's ABI (Bun refuses it: NODE_MODULE_VERSION 115, Bun wants 147), " +
      "and the pollers bench starts its processes at an agreed process.hrtime instant, which under Bun counts from each process's own start (2.8 ms in a fresh Bun, " +
      "CLOCK_MONOTONIC's seconds since boot in Node), so probes are judged against another process's window (36,482 'wrong' shared probes in one run, none of them probeLock's)",
  },
  {
    files: ['serve-memory'],
    why:
      "its bounds are serve's memory targets as measured on Node (V8's heap); under Bun (JavaScriptCore) serve peaked at 151 MB over 20,000 settled runs against the 130 MB bound (2026-12-07); " +
      'its other test, the cost of stray entries, passed',
  },
];

/** Single tests not run under Bun, and why. */
export const LEFT_OUT_TESTS = {
  'ExitWatcher: an exit is told once': 'it counts every pidfd of the process, and Bun\'s child_process holds one per child it spawned',
  'run as an unprivileged user': 'Bun\'s child_process does not run a child under another uid (the spawn option uid), which these tests need',
  'an unreadable (run directory or file is a named skip|root is a clear error)': 'the same: an unprivileged child (uid option)',
  'a command that does not exist exits 127 even when PATH holds a directory the user cannot search': 'the same: an unprivileged child (uid option)',
  'permission denied \\(EACCES\\), not ENOENT': 'the same: an unprivileged child (uid option)',
  "starts at most the cores' threads":
    'it counts the threads a command starts with strace, against the same command on fewer threads, and Bun starts a varying number of its own (5 or 6 for one `runs --json` of an empty root, six runs under strace)',
  'readers, the probe, the lock and a whole leg leave the descriptors as they found them':
    "it compares /dev/fd before and after the same work, and Bun's child_process keeps an exited child's stdio socket open until it closes it later (after 20 spawns: 2 more descriptors one time, none the next)",
  'exec on a held run still refuses \\(75\\) when the wall clock steps back':
    "Bun's Atomics.wait, which exec's synchronous acquire sleeps with between attempts, waits until a wall-clock instant (a futex with FUTEX_CLOCK_REALTIME, seen under strace), so the clock the test steps back an hour every 20 ms keeps exec asleep past the test's 60 s bound; a 5 × 50 ms Atomics.wait alone under the same stepping does not end in 10 s under Bun and ends at once under Node (docs/install.md, Runtimes)",
  'one thread and two descriptors per notifier':
    "it counts the process's threads before and after, and Bun starts threads of its own when it needs them (one more appeared during the test in one lane run of three: 8 against 7); the descriptors it counts matched every time",
  'with glibc: the arena a worker left behind shrinks by the call':
    "it measures what malloc_trim gives back of a worker's glibc arena, and Bun allocates a worker's memory with its own allocator, not in glibc's arenas (the call gave back nothing)",
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
  process.stdout.write(`test:bun: ${bun} (Bun ${spawnSync(bun, ['--version'], { encoding: 'utf8' }).stdout.trim()}); files left out:\n`);
  for (const { files, why } of LEFT_OUT_FILES) process.stdout.write(`  - ${files.join(', ')}: ${why}\n`);
  process.stdout.write(`${Object.keys(LEFT_OUT_TESTS).length} tests left out by name:\n`);
  for (const [t, why] of Object.entries(LEFT_OUT_TESTS)) process.stdout.write(`  - ${t}: ${why}\n`);
  const r = spawnSync(bun, args, { cwd: root, stdio: 'inherit', env: { ...process.env, RUNWARDEN_TEST_RUNTIME: 'bun' } });
  process.exit(r.status ?? 1);
}

/** A `test/x*.test.ts` pattern's files (no shell does it for spawnSync). */
function expand(glob) {
  const r = spawnSync('sh', ['-c', `ls ${glob}`], { cwd: root, encoding: 'utf8' });
  return r.stdout.split('\n').filter(Boolean);
}
