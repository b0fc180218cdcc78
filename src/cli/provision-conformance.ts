/**
 * `agentops keys provision-conformance`: the reference's side of the conformance suite's provisioning contract
 * (conformance/README.md "Provisioning"). One command issues every identity the suite asks for, each in fresh
 * workspaces of this run's own (so a second run starts with untouched quotas), and prints them as the suite's
 * config fragment: `{"tokens": {"primary": ..., "secondWorkspace": ..., ...}}`.
 */
import { randomBytes } from 'node:crypto'
import { OPERATION_SCOPES } from '../../generated/contract.js'
import type { Tier } from '../domain/identity.js'
import type { KeyAdministration } from '../domain/keys/administration.js'
import type { IssuedKey, IssueKeyInput } from '../domain/keys/service.js'

/** The suite's token names (its config file's `tokens.*`), in the order they are issued. */
export type ConformanceRole =
  | 'primary'
  | 'expired'
  | 'secondWorkspace'
  | 'narrowScope'
  | 'otherScope'
  | 'runsOnly'
  | 'rateLimited'
  | 'rateLimitedPeer'
  | 'revoked'
  | 'revocable'
  | 'quotaLimited'
  | 'standardTier'
  | 'proTier'

/**
 * Room for many runs: enterprise limits and quotas no run reaches. A run creates tools, webhooks and agents it leaves
 * behind, and one provisioning may serve many runs (the stand-in of the walk-through, a CI job's retries).
 */
const ROOM_FOR_MANY_RUNS = {
  tier: 'enterprise',
  limitPerHour: 1_000_000,
  burstLimit: 100_000,
  quotas: {
    agents: 1_000_000_000,
    tools: 1_000_000_000,
    webhooks: 1_000_000_000,
    destinations: 1_000_000_000,
    idempotency_keys: 1_000_000_000,
  },
} satisfies Omit<IssueKeyInput, 'workspace'>

/**
 * Every resource family of the contract as a wildcard scope (`agents:*`, ...): the families of its operations'
 * scopes, and the stream's (its topics are no operation of the contract: `stream:runs`).
 */
const EVERY_FAMILY = [
  ...new Set([...Object.values(OPERATION_SCOPES), 'stream:runs'].map((scope) => scope.split(':')[0])),
].map((family) => `${family}:*`)

const FAR_EXPIRY_SECONDS = 10 * 365 * 24 * 3600

/**
 * What each identity is, keyed by the suite's name for it. `prefix` names this run's workspaces. `primaryTier` puts
 * the primary identity on that tier's rate limit (quotas still out of reach): `standard` makes a run pace itself on
 * the rate-limit headers.
 */
export function conformanceIdentities(
  prefix: string,
  primaryTier?: Tier,
): Array<[ConformanceRole, IssueKeyInput]> {
  const primary = `${prefix}-primary`
  const limited = `${prefix}-limited`
  return [
    // Every scope and room for a whole run (about 2,000 requests) without pacing.
    [
      'primary',
      primaryTier
        ? { workspace: primary, tier: primaryTier, quotas: ROOM_FOR_MANY_RUNS.quotas }
        : { workspace: primary, ...ROOM_FOR_MANY_RUNS },
    ],
    // Expires the moment it is issued (auth.expired-token-401): a key past its expiry from the suite's first request,
    // with no wait for it to lapse.
    ['expired', { workspace: primary, expiresInSeconds: 0 }],
    // As the primary: a pro tier's 10,000 requests an hour run out over a mutation run.
    // Every resource family as a wildcard (`agents:*`, ...): the wildcard form of a scope carries its requests.
    ['secondWorkspace', { workspace: `${prefix}-second`, ...ROOM_FOR_MANY_RUNS, scopes: EVERY_FAMILY }],
    // Refused POST /v1/agents (the suite's default narrowDenied): 403 policy_denied. Its expiry is ten years
    // ahead: a key whose expiry is still to come is accepted.
    ['narrowScope', { workspace: primary, scopes: ['agents:read'], expiresInSeconds: FAR_EXPIRY_SECONDS }],
    // Scopes without the narrow token's: refused the reads the narrow token may make; a wildcard that must not
    // reach beyond its family.
    ['otherScope', { workspace: primary, scopes: ['tasks:*'] }],
    // A burst of 5: the 429 checks reach it within a few requests. In a 3 s burst window: the rate-limit checks
    // wait for this window to roll over (a search's Retry-After, a burst's Retry-After), and a 3 s window keeps a
    // whole --reference run's waits short while leaving the same >1 s margin the suite's guards ask for. Not 2 s:
    // judged against the answer's Date (whole seconds), a 429's reset_at naming the window's start instead of its end
    // is then within the rounding (mutant ratelimit-reset-at-window-start survived).
    ['rateLimited', { workspace: limited, limitPerHour: 1000, burstLimit: 5, burstWindowSeconds: 3 }],
    ['rateLimitedPeer', { workspace: limited }],
    // May start runs and nothing else: the policy gate refuses its run a tool that requires another scope.
    ['runsOnly', { workspace: primary, scopes: ['runs:write'] }],
    // Revoked as soon as it is issued (auth.revoked-token-401).
    ['revoked', { workspace: primary }],
    // Left for the suite to revoke while it holds connections open (stream.revoked-key-ends-connections, with the
    // suite's revoke command: agentops keys revoke --token-stdin).
    ['revocable', { workspace: primary }],
    // Small quotas on what its workspace keeps (idempotency.quota-refusals): one agent, three stored Idempotency-Key
    // answers, 8 KiB for one answer. Its stored answers stay 24 hours: a later run with this identity finds them
    // full, and the check judges what it still can. And on what its key holds open (stream.key-quotas,
    // graphql.ws-key-quotas): two stream or graphql-ws connections, three topics or subscriptions across them. And one
    // tool, one webhook subscription and one destination (quotas.room-returns).
    [
      'quotaLimited',
      {
        workspace: `${prefix}-quota`,
        tier: 'enterprise',
        limitPerHour: ROOM_FOR_MANY_RUNS.limitPerHour,
        burstLimit: ROOM_FOR_MANY_RUNS.burstLimit,
        quotas: {
          agents: 1,
          tools: 1,
          webhooks: 1,
          destinations: 1,
          idempotency_keys: 3,
          idempotency_answer_bytes: 8192,
          stream_sockets_per_key: 2,
          stream_subscriptions_per_key: 3,
        },
      },
    ],
    // A workspace on each tier §8 gives a figure, with the tier's own limits (ratelimit.tier-limits): the suite reads
    // the hourly window its answers announce, a request or two each.
    [
      'standardTier',
      { workspace: `${prefix}-standard`, tier: 'standard', quotas: ROOM_FOR_MANY_RUNS.quotas },
    ],
    ['proTier', { workspace: `${prefix}-pro`, tier: 'pro', quotas: ROOM_FOR_MANY_RUNS.quotas }],
  ]
}

/** Issues every identity; resolves to the config fragment the suite reads. */
export async function provisionConformance(
  keys: Pick<KeyAdministration, 'issue' | 'revoke'>,
  prefix = `conformance-${randomBytes(4).toString('hex')}`,
  primaryTier?: Tier,
): Promise<{ tokens: Record<ConformanceRole, string>; workspaces: string[] }> {
  const tokens: Partial<Record<ConformanceRole, string>> = {}
  const workspaces = new Set<string>()
  for (const [role, input] of conformanceIdentities(prefix, primaryTier)) {
    const issued: IssuedKey = await keys.issue(input)
    if (role === 'revoked') await keys.revoke(issued.key_id)
    tokens[role] = issued.token
    workspaces.add(issued.workspace)
  }
  return { tokens: tokens as Record<ConformanceRole, string>, workspaces: [...workspaces] }
}
