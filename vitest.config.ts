import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'conformance/test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    globalSetup: ['test/support/global-setup.ts'],
    reporters: ['default'],
    // graphql-ws must see the same graphql module instance as src/graphql (one realm for schema and errors).
    server: { deps: { inline: ['graphql-ws'] } },
  },
})
