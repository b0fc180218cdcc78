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
  // The outbox (fan-out of the event log, attempts, retries with backoff, the delivery log) is shared by webhooks and
  // destinations since destinations came: src/domain/outbox. The outbound client (src/outbound/*.ts) sends both.
  '§5.5, §6 webhook outbox, signing, retries': [
    'src/domain/webhooks/**/*.ts',
    'src/domain/outbox/**/*.ts',
    'src/outbound/*.ts',
  ],
  // §6: "Events can be routed to webhooks and to chat, paging and downstream systems": which events a destination
  // gets, its settings and delivery log (src/domain/destinations), and each type's transport (src/outbound/destinations).
  '§6 destinations: chat, paging, event bus': [
    'src/domain/destinations/**/*.ts',
    'src/outbound/destinations/**/*.ts',
  ],
  // The stream's shared topic readers (one read per topic for every subscriber, woken by the change feed) are how
  // a record reaches a subscriber "as it lands" (§4): the surface layer holds them, the stream's section judges them.
  // So is the server's one upgrade router (which path reaches the stream, and what any other upgrade is answered),
  // and the raw refusal a refused upgrade gets.
  '§4 stream': [
    'src/stream/**/*.ts',
    'src/surface/topic-feeds.ts',
    'src/surface/upgrade.ts',
    'src/surface/socket-refusal.ts',
  ],
  '§7 error envelopes': ['src/domain/errors.ts', 'src/http/errors.ts'],
  '§4 GraphQL surface': ['src/graphql/**/*.ts'],
}

/**
 * The checks that can kill a mutant of each section (check id prefixes, as `--only` takes them): the suite run for
 * one mutant is the families that exercise its module, not all 133 checks. `sweep` (every exchange of the run
 * against the contract) judges every run, so it is everywhere.
 * A section whose modules every request passes through (authentication, error envelopes) runs the families that
 * probe them from the edges; the per-section table shows what a narrower selection lets survive.
 */
const EVERYWHERE = ['sweep']
export const CHECKS = {
  // The stream's authentication (§5.3): the one place a token comes in the access_token query parameter, its
  // upgrade reads the key without the HTTP middleware's cached path, and a revoke ends its open sockets.
  '§5 authentication and scopes': [
    'auth',
    'authz',
    'scoping',
    'tenancy',
    'ratelimit.per-workspace',
    // Each tier's hourly figure (§8), which key issuance gives a standard or pro workspace (TIER_DEFAULTS).
    'ratelimit.tier-limits',
    'surface',
    'stream.requires-token',
    'stream.plain-get-refused',
    'stream.accepts-token',
    'stream.access-token-query',
    // A key revoked or expiring while it holds sockets open: the key watch (watch.ts) is the one way its end reaches
    // them.
    'stream.revoked-key-ends-connections',
    'stream.expired-key-ends-connections',
  ],
  // The GraphQL checks that read agents by id in one batch (a run's agent) and across workspaces: AgentService.getMany.
  '§5.6 tenancy': [
    'resources',
    'readback',
    'scoping',
    'tenancy',
    'validation',
    'graphql.run-with-agent-and-trace',
    'graphql.foreign-id-like-missing',
    'graphql.spec-tenancy',
  ],
  '§8 idempotency': ['idempotency'],
  // stream.plain-get-refused: the stream's plain GET, counted like every request under /v1 (the sweep judges its headers).
  // pagination.bad-cursor: a GET the text guard refuses after the count began (the step's refusal path).
  '§8 rate limits': ['ratelimit', 'graphql.spec-', 'stream.plain-get-refused', 'pagination.bad-cursor'],
  // graphql.page-limits: a GraphQL list's limit reaches pageRequest's range check unrefused (REST's is the contract's).
  '§8 pagination and cursors': [
    'pagination',
    'tenancy.cursor-stays-in-workspace',
    'readback',
    'graphql.page-limits',
  ],
  // The scoping checks that read, start and control runs out of scope or missing (the runs' own 404s).
  '§2-§3 runs: state machine, plan, trace, approvals': [
    'runs',
    'readback',
    'tools',
    'webhooks.awaiting-approval-body',
    'scoping.run-404',
    'scoping.cross-workspace-writes-404',
    'scoping.cross-workspace-controls-404',
    // The executor's deny and escalate paths under the reference's envelopes.
    'authz.gate-decisions-recorded',
  ],
  // scoping.tool-404: the one check that reads a tool that does not exist (ToolService.get's 404).
  // quotas.room-returns: a retired tool gives its room back.
  '§1, §2 policy gate and tool bindings': [
    'tools',
    'authz',
    'runs',
    'readback.tool-fields-everywhere',
    'scoping.tool-404',
    'quotas',
  ],
  '§2, §4 ingestion and lineage': ['ingest', 'stream', 'tenancy.connector-id-per-workspace', 'validation'],
  '§6 events': ['webhooks', 'stream', 'destinations', 'readback.awaiting-approval-event', 'graphql'],
  // scoping.webhook-404: a subscription read from another workspace and an unknown one (WebhookService.get);
  // surface.extension-operations: the subscription list, redelivery and rotation of an unknown subscription;
  // tools.provider-calls: the outbound client's answers no delivery makes (a call past its timeout, an answer
  // read whole or cut), through the http tool that shares it. quotas.room-returns: a deleted subscription's room.
  '§5.5, §6 webhook outbox, signing, retries': [
    'webhooks',
    'destinations',
    'tenancy.webhooks-never-cross-workspaces',
    'scoping.webhook-404',
    'surface.extension-operations',
    'tools.provider-calls',
    'quotas',
  ],
  // The destinations' own checks, the GraphQL forms of their operations (create, update, test, deliveries), and the
  // room a deleted destination gives back (quotas.room-returns).
  '§6 destinations: chat, paging, event bus': ['destinations', 'graphql.webhooks-and-destinations', 'quotas'],
  // `validation` for the sweep: without an error answer in the run, sweep.error-envelope-everywhere and
  // sweep.ratelimit-headers-everywhere have nothing to judge and fail, against the clean reference too.
  // An upgrade the router hands back to the HTTP side as a plain request (h2c, a WebSocket handshake of a REST path).
  '§4 stream': [
    'stream',
    'ingest',
    'tenancy.connector-id-per-workspace',
    'validation',
    'surface.upgrade-ignored',
  ],
  '§7 error envelopes': [
    'auth',
    'validation',
    'idempotency',
    'scoping',
    'pagination',
    'ratelimit.429-at-limit',
    'surface',
  ],
  // A revoked key's graphql-ws socket closed with its stream connection: one check, since the key is revoked once.
  '§4 GraphQL surface': [
    'graphql',
    'stream.revoked-key-ends-connections',
    'stream.expired-key-ends-connections',
  ],
}

/**
 * The suite's --wait-ms (its bound on every wait for something the deployment does in its own time) for a section's
 * runs, where the default 15 s, set for a slower foreign deployment, is what a mutant run spends waiting for a frame
 * that never comes: the reference the runner starts pushes a landed record to its subscribers within milliseconds
 * (its change feed wakes the topic at commit) and beats every second (AGENTOPS_STREAM_HEARTBEAT_MS=1000), and the
 * stream section's clean run takes about 6 s, so a mutant that pushes nothing ran to the runner's deadline (1.5 x
 * the clean run + 10 s) in each of the waits before it (173 of its 646 mutants Timeout, 2026-11-30 05:13). 4 s
 * leaves the reference a margin of hundreds on a machine busy with other work; the dry run, with the same waits,
 * shows the clean reference passes them. The runs section's runs end within a second, and a mutant that stalls
 * every run (the executor's, the scheduler's) met three 15 s waits before its first core check failed, past the
 * runner's deadline (a Timeout after 16-45 s); at 3 s it gets its verdict, and the check that gave it. In a mutant
 * run a wait gives back the time a busy machine withheld from the suite or the server, as the runner's deadline
 * does (at most the wait's own length: wait.ts). The webhook section's server retries from 500 ms, each retry
 * waking its outbox when due (AGENTOPS_WEBHOOK_*), its slowest clean check (three attempts with growing gaps) takes about
 * 3 s; a destination mutant that breaks a delivery left its check waiting the default 15 s, past the runner's
 * deadline (87 Timeouts of the whole-scope run, 2026-11-30): 6 s. The GraphQL surface's subscriptions ride the
 * same pushes as the stream, and the authentication section's one slow wait is for a revoked or expired key's sockets
 * to close, which the reference's key watch does within a second of the revoke command's exit (bench:revocation): a
 * mutant that breaks either left its check waiting the default 15 s (in the whole-scope run at 47536b7, kills that
 * waited 5 s or more took 1,135 worker-seconds in keys/, graphql/subscriptions.ts and graphql/ws.ts): 4 s each. The
 * ingestion section is judged by the stream section's check families (its records reach subscribers by the same
 * pushes), so its waits are the stream's: with the default 15 s, its kills that waited 10 s or more took 370
 * worker-seconds of the whole-scope run at a6bb26d. The suite's own default for any other deployment is unchanged.
 */
export const WAIT_MS = {
  '§5 authentication and scopes': 4000,
  '§4 GraphQL surface': 4000,
  '§4 stream': 4000,
  '§2, §4 ingestion and lineage': 4000,
  '§2-§3 runs: state machine, plan, trace, approvals': 3000,
  '§5.5, §6 webhook outbox, signing, retries': 6000,
  '§6 destinations: chat, paging, event bus': 6000,
}

/** The check prefixes one section's mutants are judged by (`undefined`: every check). */
export function checksFor(section) {
  const own = CHECKS[section]
  return own ? [...own, ...EVERYWHERE] : undefined
}

/**
 * Modules under the scope's globs that carry no spec statement, left out of the mutation run (conformance/README.md
 * says why):
 * - the guard that keeps outbound calls off private networks (which ranges count as private, which targets an
 *   operator allows, and the connect-time check of every address a name resolves to) is the reference's own safety;
 *   no spec sentence says where a webhook may point, and the suite's receiver is itself a private target the run
 *   must allow (the creation-time refusal, OutboundHttp.refusal in http.ts, stays in the run: profile checks see it);
 * - the verified-key cache decides only WHEN a key's row is read again: what a request is answered is decided by
 *   KeyService's check on the row it gets (in scope), and how soon a revoke lands is §5's gap ("How keys are issued
 *   and rotated: not shown"). The watch of open sockets' keys (watch.ts) is in scope: it is the one way a key's end
 *   reaches an open socket, judged by stream.revoked-key-ends-connections and stream.expired-key-ends-connections;
 * - the lineage auditor's one-leaf forms (src/domain/ingestion/audit.ts: a leaf's audit path, its verification, a
 *   root over leaf data) are never run by the server, which builds every path of a batch at once (merkle.ts, in
 *   scope): they are the unit tests' second opinion, and no request reaches them;
 * - the compiled tool schemas' cache (src/domain/tools/compiled-schemas.ts) decides only how often a schema is
 *   compiled: what a call's answer is judged against is compileAlone's validator (providers.ts, in scope);
 * - key issuance and workspace settings (src/domain/keys/administration.ts) are the operator's CLI and the suite's
 *   provisioning, never an API request: §5 "How keys are issued and rotated: not shown". The tiers' figures it
 *   applies (TIER_DEFAULTS, service.ts) stay in scope, judged by ratelimit.tier-limits.
 */
export const OUT_OF_SCOPE = [
  'src/outbound/addresses.ts',
  'src/outbound/private-targets.ts',
  'src/outbound/guard.ts',
  'src/domain/keys/cache.ts',
  'src/domain/ingestion/audit.ts',
  'src/domain/tools/compiled-schemas.ts',
  'src/domain/keys/administration.ts',
]

/** What every run leaves out: type-only files (nothing in them runs) and the modules of OUT_OF_SCOPE. */
export const EXCLUDED = ['!src/**/ports.ts', '!src/**/*.d.ts', ...OUT_OF_SCOPE.map((f) => `!${f}`)]

/** Every glob of the scope, with EXCLUDED left out. */
export function scopeGlobs() {
  return [...Object.values(SCOPE).flat(), ...EXCLUDED]
}

/**
 * A glob of the scope as a RegExp over repository paths: a double star with its slash stands for any depth of
 * folders (none included), a star for any name within one folder.
 */
export const globRe = (glob) =>
  new RegExp(
    `^${glob
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .split('**/')
      .map((part) => part.replace(/\*/g, '[^/]*'))
      .join('(?:.*/)?')}$`,
  )

/** The spec section a repository path belongs to, or undefined outside the scope. */
export function sectionOf(file) {
  if (file.endsWith('/ports.ts') || file.endsWith('.d.ts') || OUT_OF_SCOPE.includes(file)) return undefined
  for (const [section, globs] of Object.entries(SCOPE))
    if (globs.some((g) => globRe(g).test(file))) return section
  return undefined
}
