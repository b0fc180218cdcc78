/**
 * The reference server's modules that carry a spec statement, by spec section: what `npm run conformance:stryker`
 * mutates. Paths follow src/ as it is laid out (merge main before changing them: src/ moves).
 */
export const SCOPE = {
  '§5 authentication and scopes': [
    'src/domain/scopes.ts',
    'src/domain/identity.ts',
    'src/domain/keys/**/*.ts',
  ],
  '§5.6 tenancy': ['src/domain/agents/**/*.ts', 'src/domain/tasks/**/*.ts'],
  '§8 idempotency': ['src/domain/idempotency/**/*.ts'],
  '§8 rate limits': ['src/domain/limits/**/*.ts', 'src/http/middleware/rate-limit.ts'],
  '§8 pagination and cursors': ['src/domain/pagination.ts', 'src/domain/cursors.ts'],
  '§2-§3 runs: state machine, plan, trace, approvals': ['src/domain/runs/**/*.ts', 'src/http/trace-sse.ts'],
  '§1, §2 policy gate and tool bindings': ['src/domain/policy/**/*.ts', 'src/domain/tools/**/*.ts'],
  '§2, §4 ingestion and lineage': ['src/domain/ingestion/**/*.ts'],
  '§6 events': ['src/domain/events/**/*.ts'],
  '§5.5, §6 webhook outbox, signing, retries': ['src/domain/webhooks/**/*.ts', 'src/outbound/**/*.ts'],
  '§4 stream': ['src/stream/**/*.ts'],
  '§7 error envelopes': ['src/domain/errors.ts', 'src/http/errors.ts'],
  '§4 GraphQL surface': ['src/graphql/**/*.ts'],
}

/** Every glob of the scope, with type-only files left out (nothing in them runs). */
export function scopeGlobs() {
  return [...Object.values(SCOPE).flat(), '!src/**/ports.ts', '!src/**/*.d.ts']
}
