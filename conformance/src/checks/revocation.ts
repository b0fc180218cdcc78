/**
 * A key that stops being one while it holds connections open (§5.3: "The stream requires a bearer token plus topic
 * scope"): revoked by its deployment, or past its expiry (§5.2: "A missing or expired bearer token yields HTTP 401").
 * How keys are issued, revoked and rotated is §5's gap ("How keys are issued and rotated: not shown"), so the
 * deployment names its own commands and the checks are profile.
 */
import WebSocket from 'ws'
import type { Check, CheckContext } from '../check.js'
import { settingName, tokenName } from '../config.js'
import { obj } from '../http.js'
import { issueExpiringKey } from '../issue-expiring.js'
import { revokeToken } from '../revoke.js'
import { assert, fail, skip } from '../types.js'
import { short, sleep, waitUntil } from '../wait.js'
import { envelopeProblems } from './assertions.js'
import { type GqlSocket, openGql } from './graphql-surface/index.js'
import { connect, type Opened, subscribed, subscribeMessage, topicOf } from './stream.js'

type Json = Record<string, unknown>

/**
 * How long a revocable key's connections are held open before the revoke: a few polls of a deployment that reads its
 * open sockets' keys again every half second (the reference's AGENTOPS_KEY_WATCH_POLL_MS).
 */
const HOLD_MS = 1500

/**
 * How long before a short-lived key's expiry its connections must still be open: room for the deployment's clock
 * and the suite's to differ, and for the suite's own reading of the connections.
 */
const EXPIRY_MARGIN_MS = 1000

/** A refusal-shaped answer: an `error` message, or one carrying an `error` or `errors` member. */
const refusal = (m: Json | undefined) =>
  m === undefined || m.type === 'error' || 'error' in m || 'errors' in m

/** Why a key stopped being one: its `detail.reason` on the stream, as REST's 401 gives it (auth.refusal-reason). */
type KeyEnd = 'revoked' | 'expired'

/** A stream subscription, and a graphql-ws one when the deployment declares a GraphQL surface, held with one key. */
interface Held {
  stream: Opened
  graphql: GqlSocket | undefined
  /** How the stream closed, once it has. */
  ended: { stream?: { code: number; reason: string } }
}

/** Opens and subscribes the key's connections; `named` is how messages name the key ("the revocable token"). */
async function holdOpen(ctx: CheckContext, token: string, named: string, label: string): Promise<Held> {
  const opened = await connect(ctx, token)
  if (!('ws' in opened))
    fail(`${named}'s stream upgrade was refused ${opened.refused} while the key was good`)
  const held: Held = { stream: opened, graphql: undefined, ended: {} }
  opened.ws.once('close', (code, reason) => {
    held.ended.stream = { code, reason: reason.toString() }
  })
  const connector = ctx.name(label)
  const answer = await subscribed(ctx, opened, subscribeMessage(ctx, [connector]), [topicOf(ctx, connector)])
  assert(!refusal(answer), `${named}'s subscribe to ${topicOf(ctx, connector)} was answered ${short(answer)}`)
  // The same key on the GraphQL surface, when the deployment declares one.
  if (ctx.config.graphqlUrl) {
    const graphql = await openGql(ctx, ctx.config.graphqlUrl, token)
    held.graphql = graphql
    assert(
      graphql.messages.some((m) => m.type === 'connection_ack'),
      `${named}'s graphql-ws socket got no connection_ack: ${graphql.refused !== undefined ? `upgrade refused ${graphql.refused}` : graphql.closed ? `closed ${graphql.closed.code}` : `messages ${short(graphql.messages)}`}`,
    )
    // The key's own connector, not runEvents: a subscription to the workspace's runs would hold the one shared
    // reading of that topic for the seconds this check lasts, and a /v1/stream subscriber of `runs` meanwhile would
    // be served by it whatever its own transport does.
    graphql.send({
      id: label,
      type: 'subscribe',
      payload: {
        query: 'subscription($c: ID!) { connectorRecords(connector_id: $c) { seq } }',
        variables: { c: connector },
      },
    })
  }
  // One more connection of the key, opened and closed before its end: the ones still open must end all the same (a
  // deployment that forgets every connection of a key once one of them closes would keep the others open).
  const spare = await connect(ctx, token)
  if ('ws' in spare) {
    const gone = new Promise<void>((resolve) => spare.ws.once('close', () => resolve()))
    spare.ws.close()
    await Promise.race([gone, sleep(SPARE_CLOSE_MS)])
    spare.ws.terminate()
  }
  return held
}

/** How long the spare connection's closing handshake may take before it is cut. */
const SPARE_CLOSE_MS = 2_000

/**
 * The positive control: while the key is good, its connections stay open (a deployment that ended them of itself
 * would pass what follows without ever hearing of the key's end).
 */
function stillOpen(held: Held, when: string): void {
  const closed = [
    ...(held.ended.stream
      ? [`the stream closed ${held.ended.stream.code} ${short(held.ended.stream.reason)}`]
      : []),
    ...(held.graphql?.closed
      ? [`the graphql-ws socket closed ${held.graphql.closed.code} ${short(held.graphql.closed.reason)}`]
      : []),
  ]
  assert(closed.length === 0, `with the key still good, ${closed.join(' and ')} ${when}`)
}

/**
 * The key has ended (`why`): both connections end within the wait, the stream with an `unauthenticated` error in the
 * envelope giving `detail.reason` `why` and REST's 401 message for the token, then 4401 with a reason; graphql-ws
 * 4401 with that message; and the token is refused 401 at the next upgrade.
 */
async function judgeEnded(ctx: CheckContext, token: string, held: Held, why: KeyEnd): Promise<void> {
  const { stream, graphql, ended } = held
  const key = `the ${why} key's`
  await waitUntil(
    `${key} connections to end`,
    async () => ({ stream: ended.stream, graphql: graphql?.closed }),
    (now) => now.stream !== undefined && (graphql === undefined || now.graphql !== undefined),
    ctx.config.waitMs,
  )
  const said = stream.messages.find((m) => m.type === 'error')
  assert(
    ended.stream?.code === 4401 && obj(said?.error).code === 'unauthenticated',
    `${key} stream ended with close ${ended.stream?.code} and error ${short(said)}, not an unauthenticated error then 4401`,
  )
  // The error says why as REST's 401 does (auth.refusal-reason), in the envelope, with REST's message for the token
  // from now on; the close names it too.
  const rest = obj(obj((await ctx.http.get('/v1/agents?limit=1', { token })).body).error).message
  const problems = envelopeProblems(said)
  assert(
    problems.length === 0 && obj(obj(said?.error).detail).reason === why,
    `${key} stream error ${short(said)} ${problems.length > 0 ? `breaks the error envelope: ${problems.join('; ')}` : `gives no detail.reason "${why}"`}`,
  )
  assert(
    typeof rest === 'string' && obj(said?.error).message === rest,
    `${key} stream error says ${short(obj(said?.error).message)}, not the message REST's 401 gives the token now (${short(rest)})`,
  )
  assert(
    ended.stream?.reason !== '',
    `${key} stream closed 4401 with no reason: a client's close handler gets no word of why`,
  )
  if (graphql) {
    // Its reason is the message REST's 401 gives the token, as for every 4401 (graphql.ws-authentication).
    assert(
      graphql.closed?.code === 4401 && typeof rest === 'string' && graphql.closed.reason === rest,
      `${key} graphql-ws socket closed with ${graphql.closed?.code} ${short(graphql.closed?.reason)}, not 4401 with REST's 401 message for the token (${short(rest)})`,
    )
  }
  const again = await connect(ctx, token)
  if ('ws' in again) again.close()
  assert(
    !('ws' in again) && again.refused === 401,
    `once the key was ${why}, a stream upgrade with the token was ${'ws' in again ? 'accepted' : again.refused}, not 401`,
  )
}

/** Closes whatever of the held connections is still open. */
function release(held: Held | undefined): void {
  if (held && held.stream.ws.readyState !== WebSocket.CLOSED) held.stream.close()
  held?.graphql?.ws.terminate()
}

export const revocationChecks: Check[] = [
  {
    id: 'stream.revoked-key-ends-connections',
    title:
      "A key revoked while it holds a /v1/stream subscription and a graphql-ws subscription open (and closed a third connection) keeps both while the key is good and loses both once it is revoked: the stream says unauthenticated (with REST's 401 message for the token) and closes 4401, graphql-ws closes 4401, within the wait; the token is refused 401 at the next upgrade",
    level: 'profile',
    clauses: ['S5.3'],
    needs: ['revocable'],
    // Mostly waiting (the hold, then the revoke's reach), with a key and connections no other check uses: runs
    // alongside the next checks.
    overlap: true,
    async run(ctx) {
      // The reference ends a revoked key's connections at once, on every replica: an `error` message
      // (`unauthenticated`) then close code 4401 on the stream, 4401 (graphql-transport-ws's Unauthorized) on
      // graphql-ws. A deployment that lets them run until they close of themselves differs here.
      const token = ctx.config.tokens.revocable
      if (!token) skip(`no ${tokenName('revocable')} given`)
      const command = ctx.config.revoke
      if (!command) skip(`no revoke command (${settingName('revoke')}) given`)
      let held: Held | undefined
      try {
        held = await holdOpen(ctx, token, 'the revocable token', 'revoke')
        await sleep(HOLD_MS)
        stillOpen(held, `within ${HOLD_MS} ms of opening, before the revoke`)
        const failed = await revokeToken(command, token)
        if (failed) fail(failed)
        await judgeEnded(ctx, token, held, 'revoked')
      } finally {
        release(held)
      }
    },
  },
  {
    id: 'stream.expired-key-ends-connections',
    title:
      "A key that expires while it holds a /v1/stream subscription and a graphql-ws subscription open (and closed a third connection) keeps both until its expiry and loses both once it expired: the stream says unauthenticated (detail.reason expired, REST's 401 message for the token) and closes 4401, graphql-ws closes 4401, within the wait; the token is refused 401 at the next upgrade",
    level: 'profile',
    clauses: ['S5.2', 'S5.3'],
    // Mostly waiting for its own key's expiry, with connections of its own: runs alongside the next checks.
    overlap: true,
    async run(ctx) {
      // §5.2 refuses an expired token 401 at each request; what becomes of a connection opened before the expiry is
      // the deployment's (how keys are issued is §5's gap). The reference ends it as it ends a revoked key's.
      const command = ctx.config.issueExpiring
      if (!command) skip(`no short-lived key command (${settingName('issue-expiring')}) given`)
      const issued = await issueExpiringKey(command, ctx.config.tokens.primary)
      if ('problem' in issued) fail(issued.problem)
      const { token, expiresAt } = issued
      let held: Held | undefined
      try {
        held = await holdOpen(ctx, token, 'the short-lived token', 'expire')
        await sleep(Math.max(0, expiresAt - EXPIRY_MARGIN_MS - Date.now()))
        stillOpen(held, `${EXPIRY_MARGIN_MS} ms before its expiry`)
        await sleep(Math.max(0, expiresAt - Date.now()))
        await judgeEnded(ctx, token, held, 'expired')
      } finally {
        release(held)
      }
    },
  },
]
