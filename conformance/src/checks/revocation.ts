/**
 * A key revoked while it holds connections open (§5.3: "The stream requires a bearer token plus topic scope"): the
 * token a connection was opened with stops being one mid-connection. How keys are revoked is §5's gap ("How keys
 * are issued and rotated: not shown"), so the deployment names its own revoke command and the check is profile.
 */
import WebSocket from 'ws'
import type { Check } from '../check.js'
import { settingName, tokenName } from '../config.js'
import { obj } from '../http.js'
import { revokeToken } from '../revoke.js'
import { assert, fail, skip } from '../types.js'
import { short, sleep, waitUntil } from '../wait.js'
import { envelopeProblems } from './assertions.js'
import { type GqlSocket, openGql } from './graphql-surface.js'
import { connect, subscribed, subscribeMessage, topicOf } from './stream.js'

type Json = Record<string, unknown>

/**
 * How long the key's connections are held open before the revoke: a few polls of a deployment that reads its open
 * sockets' keys again every half second (the reference's AGENTOPS_KEY_WATCH_POLL_MS).
 */
const HOLD_MS = 1500

/** A refusal-shaped answer: an `error` message, or one carrying an `error` or `errors` member. */
const refusal = (m: Json | undefined) =>
  m === undefined || m.type === 'error' || 'error' in m || 'errors' in m

export const revocationChecks: Check[] = [
  {
    id: 'stream.revoked-key-ends-connections',
    title:
      "A key revoked while it holds a /v1/stream subscription and a graphql-ws subscription open keeps both while the key is good and loses both once it is revoked: the stream says unauthenticated (with REST's 401 message for the token) and closes 4401, graphql-ws closes 4401, within the wait; the token is refused 401 at the next upgrade",
    level: 'profile',
    clauses: ['S5.3'],
    needs: ['revocable'],
    async run(ctx) {
      // The reference ends a revoked key's connections at once, on every replica: an `error` message
      // (`unauthenticated`) then close code 4401 on the stream, 4401 (graphql-transport-ws's Unauthorized) on
      // graphql-ws. A deployment that lets them run until they close of themselves differs here.
      const token = ctx.config.tokens.revocable
      if (!token) skip(`no ${tokenName('revocable')} given`)
      const command = ctx.config.revoke
      if (!command) skip(`no revoke command (${settingName('revoke')}) given`)
      const wait = ctx.config.waitMs
      const opened = await connect(ctx, token)
      if (!('ws' in opened))
        fail(`the revocable token's stream upgrade was refused ${opened.refused} before it was revoked`)
      const ended: { stream?: { code: number; reason: string } } = {}
      opened.ws.once('close', (code, reason) => {
        ended.stream = { code, reason: reason.toString() }
      })
      let graphql: GqlSocket | undefined
      try {
        const connector = ctx.name('revoke')
        const answer = await subscribed(
          opened,
          subscribeMessage(ctx, [connector]),
          [topicOf(ctx, connector)],
          wait,
        )
        assert(
          !refusal(answer),
          `before the revoke, the revocable token's subscribe to ${topicOf(ctx, connector)} was answered ${short(answer)}`,
        )
        // The same key on the GraphQL surface, when the deployment declares one.
        if (ctx.config.graphqlUrl) {
          graphql = await openGql(ctx, ctx.config.graphqlUrl, token)
          assert(
            graphql.messages.some((m) => m.type === 'connection_ack'),
            `before the revoke, the revocable token's graphql-ws socket got no connection_ack: ${graphql.refused !== undefined ? `upgrade refused ${graphql.refused}` : graphql.closed ? `closed ${graphql.closed.code}` : `messages ${short(graphql.messages)}`}`,
          )
          graphql.send({
            id: 'revoked',
            type: 'subscribe',
            payload: { query: 'subscription { runEvents { type } }' },
          })
        }
        // The positive control: while the key is good, its connections stay open (a deployment that ended them of
        // itself would pass what follows without ever hearing of the revoke).
        await sleep(HOLD_MS)
        const before = [
          ...(ended.stream ? [`the stream closed ${ended.stream.code} ${short(ended.stream.reason)}`] : []),
          ...(graphql?.closed
            ? [`the graphql-ws socket closed ${graphql.closed.code} ${short(graphql.closed.reason)}`]
            : []),
        ]
        assert(
          before.length === 0,
          `before the revoke, with the key still good, ${before.join(' and ')} within ${HOLD_MS} ms of opening`,
        )
        const failed = await revokeToken(command, token)
        if (failed) fail(failed)
        const gql = graphql
        await waitUntil(
          `the revoked key's connections to end`,
          async () => ({ stream: ended.stream, graphql: gql?.closed }),
          (now) => now.stream !== undefined && (gql === undefined || now.graphql !== undefined),
          wait,
        )
        const said = opened.messages.find((m) => m.type === 'error')
        assert(
          ended.stream?.code === 4401 && obj(said?.error).code === 'unauthenticated',
          `the revoked key's stream ended with close ${ended.stream?.code} and error ${short(said)}, not an unauthenticated error then 4401`,
        )
        // The error says why as REST's 401 does (auth.refusal-reason), in the envelope, with REST's message for the
        // token from now on; the close names it too.
        const rest = obj(obj((await ctx.http.get('/v1/agents?limit=1', { token })).body).error).message
        const problems = envelopeProblems(said)
        assert(
          problems.length === 0 && obj(obj(said?.error).detail).reason === 'revoked',
          `the revoked key's stream error ${short(said)} ${problems.length > 0 ? `breaks the error envelope: ${problems.join('; ')}` : 'gives no detail.reason "revoked"'}`,
        )
        assert(
          typeof rest === 'string' && obj(said?.error).message === rest,
          `the revoked key's stream error says ${short(obj(said?.error).message)}, not the message REST's 401 gives the token now (${short(rest)})`,
        )
        assert(
          ended.stream?.reason !== '',
          "the revoked key's stream closed 4401 with no reason: a client's close handler gets no word of why",
        )
        if (gql) {
          // Its reason is the message REST's 401 gives the revoked token, as for every 4401 (graphql.ws-authentication).
          assert(
            gql.closed?.code === 4401 && typeof rest === 'string' && gql.closed.reason === rest,
            `the revoked key's graphql-ws socket closed with ${gql.closed?.code} ${short(gql.closed?.reason)}, not 4401 with REST's 401 message for the token (${short(rest)})`,
          )
        }
        const again = await connect(ctx, token)
        if ('ws' in again) again.close()
        assert(
          !('ws' in again) && again.refused === 401,
          `after the revoke, a stream upgrade with the token was ${'ws' in again ? 'accepted' : again.refused}, not 401`,
        )
      } finally {
        if (opened.ws.readyState !== WebSocket.CLOSED) opened.close()
        graphql?.ws.terminate()
      }
    },
  },
]
