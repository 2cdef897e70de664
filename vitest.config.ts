import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    // chDB is one engine per process: every test file runs in its own forked process.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    env: {
      NODE_ENV: 'test',
      DATABASE_URL: process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/looptrace_test',
      REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0',
      REDIS_PREFIX: 'looptrace-test',
      AUTH_JWT_SECRET: 'test-session-secret-0123456789abcdef',
      LOOPTRACE_SECRET_KEY: '0'.repeat(64),
      LOG_LEVEL: 'silent',
      // Servers that tests spawn (test/helpers/server-process.ts) serve no OTLP/gRPC unless a test
      // asks: parallel files would all bind the default 4317.
      OTLP_GRPC_PORT: '0',
    },
  },
});
