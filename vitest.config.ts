import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'conformance/test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Most test files wait on servers, child processes and sockets rather than compute: vitest's default of one
    // worker per core but one left over runs them one at a time on 2 cores, with a core mostly idle.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // Servers the tests start log warnings and errors only (a test that reads the request log sets its own level).
    env: { AGENTOPS_LOG_LEVEL: 'warn' },
    globalSetup: ['test/support/global-setup.ts'],
    reporters: ['default'],
    // graphql-ws must see the same graphql module instance as src/graphql (one realm for schema and errors).
    server: { deps: { inline: ['graphql-ws'] } },
  },
})
