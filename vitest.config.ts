import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'conformance/test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // A worker keeps its modules from one test file to the next instead of loading the server's module graph again
    // for each file (about a second a file, 182 files). The state that outlives a file is the process's own: the
    // stdout log batch (one per process), the cursor keyring each server installs, counters of open units. A file
    // that mocks a module (conformance/test/runner-reuse.test.ts) loads what it mocks afresh and forgets it after;
    // environment variables are stubbed with vi.stubEnv and restored.
    isolate: false,
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
