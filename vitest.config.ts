import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    globalSetup: ['tests/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Most test files wait (on child processes, timers, a browser) far more than they compute: on
    // 2 cores vitest's default of one worker left the machine idle most of a 15-minute run.
    maxWorkers: 2,
    // Concurrent e2e tests each start a whole local stack: on 2 cores, more than three at once
    // only makes each slower.
    maxConcurrency: 3,
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    // A test file's local stack is closed in afterAll while an execution it started may still be
    // running in the background; the local DynamoDB (dynalite, LevelDB) then refuses that
    // execution's last writes. Only these two teardown refusals are let through; any other
    // unhandled error fails the run.
    onUnhandledError(error) {
      const { message, code } = error as { message?: string; code?: string };
      if (
        message === 'Database is closed' ||
        code === 'LEVEL_ITERATOR_NOT_OPEN' ||
        code === 'LEVEL_DATABASE_NOT_OPEN'
      )
        return false;
    },
  },
});
