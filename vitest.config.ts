import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Clears FORCE_COLOR for the commands tests spawn (see the file).
    setupFiles: ['./test/helpers/setup-env.ts'],
    // In the XNU-model lane: runwarden's own reads of /proc fail, as on a Mac, and fail the run.
    globalSetup: ['./test/helpers/proc-guard.ts'],
    // Generous on purpose: tests wait for conditions, never for the clock, and
    // these bounds only stop a hung test on a loaded two-core machine.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    teardownTimeout: 120_000,
    // Tests spawn real processes and take real locks; two cores, so keep it modest.
    maxWorkers: 2,
    // The second reporter ends the run with one line naming every test skipped
    // (or, under CI / RUNWARDEN_TEST_STRICT, failed) for a missing prerequisite.
    reporters: ['default', './test/helpers/prereq-reporter.ts'],
  },
});
