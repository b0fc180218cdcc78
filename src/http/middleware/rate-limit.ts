import type { ServerResponse } from 'node:http'
import type { Context, Next } from 'hono'
import type { Tier, Workspace } from '../../domain/identity.js'
import { rateLimited, rateLimitHeader, rateLimitPolicyHeader } from '../../domain/limits/rate-limit.js'
import type { LimitsService, RateDecision } from '../../domain/limits/service.js'
import type { AppEnv } from '../../surface/context.js'
import { requestHeader } from '../../surface/request-headers.js'
import { nodeResponse, setAnswerHeaders, withAnswerHeaders } from '../node-io.js'
import type { Step } from './series.js'

const NAMES = ['RateLimit-Policy', 'RateLimit']

/** No metrics: a 429 is told to nobody. */
const NOT_TOLD = (_tier: Tier): void => {}

function valuesOf(decision: RateDecision): string[] {
  return [rateLimitPolicyHeader(decision.policies), rateLimitHeader(decision.states)]
}

/**
 * Per-workspace burst and hourly windows (spec §8), shared through the store by every key and replica.
 * Every authenticated response, success or error, carries both figures; a refusal is 429 rate_limited with
 * Retry-After and the window in `detail`.
 */
export const rateLimit =
  (
    limits: Pick<LimitsService, 'consume' | 'consumeNow' | 'hasHeadroom'>,
    /** Told of each 429 by the workspace's tier (the server's metrics). */
    refused: (tier: Tier) => void = NOT_TOLD,
  ): Step =>
  (c, next) => {
    const auth = c.get('auth')
    // Stryker disable next-line ConditionalExpression: unreachable: the auth step before this one sets the caller or refuses (every path under /v1, the stream's plain GET included).
    if (!auth) return next()
    // Counters in memory (the embedded store) decide without a promise; shared counters wait for the store.
    const known = limits.consumeNow(auth.workspace)
    if (known) return decided(c, auth.workspace, known, refused, next)
    const outgoing = nodeResponse(c)
    // A write must never run alongside (its work would be done though its count refuses it: ratelimit.refused-write-
    // has-no-effect, on a store with shared counters). Which reads do is a speed path: counted first, they answer alike.
    // Stryker disable next-line ConditionalExpression,BlockStatement: `false` and the emptied block are that speed path not taken (equivalent); the mutator is disabled whole, so its `true` (writes alongside too) goes with it, while the LogicalOperator mutants that let writes through stay judged.
    if (outgoing && readsOnly(c) && limits.hasHeadroom(auth.workspace)) {
      return countAlongside(refused, auth.workspace, limits.consume(auth.workspace), outgoing, next)
    }
    return limits
      .consume(auth.workspace)
      .then((decision) => decided(c, auth.workspace, decision, refused, next))
  }

/** The figures on whichever answer follows; a refusal is thrown, rendered by the app's error handler. */
function decided(
  c: Context<AppEnv>,
  workspace: Workspace,
  decision: RateDecision,
  refused: (tier: Tier) => void,
  next: Next,
): Promise<void> {
  const values = valuesOf(decision)
  if (decision.refusedBy) {
    refused(workspace.tier)
    setAnswerHeaders(c, NAMES, values)
    throw rateLimited(decision.refusedBy)
  }
  return withAnswerHeaders(c, NAMES, values, next)
}

/**
 * A GET or HEAD that answers in one piece (a live trace stream writes as it goes, so it is counted first). Its
 * Accept header read from Node's raw list (requestHeader): `c.req.header` would build the request's whole Fetch
 * Headers, which a heap profile of PostgreSQL's cached GET showed at about 2 KB a request, on this path alone.
 */
// Stryker disable next-line BlockStatement: the speed path not taken (undefined is falsy): equivalent.
function readsOnly(c: Context<AppEnv>): boolean {
  const method = c.req.method
  return (
    // Stryker disable next-line ConditionalExpression,LogicalOperator,StringLiteral: their narrowing variants are the speed path not taken (equivalent); the mutators are disabled whole, while EqualityOperator's variants, which let writes run alongside, stay judged (ratelimit.refused-write-has-no-effect).
    (method === 'GET' || method === 'HEAD') &&
    // Stryker disable next-line all: which reads count alongside is a speed path: a live trace stream counted alongside answers alike (its figures are set before Node writes the head).
    !(requestHeader(c, 'accept') ?? '').includes('text/event-stream')
  )
}

/**
 * A read runs while its request is being counted in the store: on PostgreSQL the count and the read are sent in the
 * same turn of the event loop (the read's run version at its end, with the other reads: a group read), one round
 * trip of waiting instead of two in a row. The answer is sent only once the count is known, and a
 * refused request is answered 429 whatever the read found. Node writes the answer after the app returns, so the
 * figures still go on Node's response here.
 */
async function countAlongside(
  refused: (tier: Tier) => void,
  workspace: Workspace,
  counting: Promise<RateDecision>,
  outgoing: ServerResponse,
  next: Next,
): Promise<void> {
  // Settled at once, so a failing count is never an unhandled rejection while the read runs.
  const outcome = counting.then(
    (decision) => ({ decision }),
    // Stryker disable next-line all: a count that fails is the store failing, which no request can bring about.
    (error: unknown) => ({ error }),
  )
  // A step after this one in the same layer (the text guard) refuses by throwing through here: its answer, rendered
  // by the app's error handler, must carry the figures too, so the count is awaited first.
  let refusal: { error: unknown } | undefined
  try {
    await next()
  } catch (error) {
    refusal = { error }
  }
  const settled = await outcome
  // Stryker disable next-line all: a count that fails is the store failing, which no request can bring about.
  if ('error' in settled) throw settled.error
  const { decision } = settled
  const values = valuesOf(decision)
  for (let i = 0; i < NAMES.length; i++) outgoing.setHeader(NAMES[i] as string, values[i] as string)
  // Thrown, like any error after next(): the app's error handler replaces whatever the read answered.
  if (decision.refusedBy) {
    refused(workspace.tier)
    throw rateLimited(decision.refusedBy)
  }
  if (refusal) throw refusal.error
}
