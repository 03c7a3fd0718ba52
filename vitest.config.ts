import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Tests spawn real processes and take real locks; two cores, so keep it modest.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
