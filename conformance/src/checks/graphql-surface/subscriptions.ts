/** graphql-ws subscriptions: runs and connector records pushed, their arguments refused, resume points kept apart. */
import { sameJson } from '../../canonical.js'
import type { Check, CheckContext } from '../../check.js'
import { obj } from '../../http.js'
import { assert } from '../../types.js'
import { short, sleep, waitUntil } from '../../wait.js'
import { declaredSurface } from '../graphql.js'
import { batch, ingestAccepted } from '../ingest.js'
import { assertResumedPastWindow, FAR_SINCE } from '../stream.js'
import { errorsOf, type Json, wsErrorsOf } from './answers.js'
import { type GqlSocket, openGql, payloadsOf } from './socket.js'

/** The refusals of a subscription's arguments: their message and the one issue their detail names. */
const ARG_REFUSALS: Readonly<Record<string, { message: string; path: string; issue: string }>> = {
  neg: {
    message: 'since must be a non-negative integer seq',
    path: 'since',
    issue: 'must be a non-negative integer',
  },
  badc: {
    message: 'connector_id is not a valid connector id',
    path: 'connector_id',
    issue: 'must match ^[A-Za-z0-9_.:-]{1,128}$',
  },
}

/**
 * On one socket and connector: a live connectorRecords subscription and one with since FAR_SINCE, subscribed in
 * the given order, then records ingested one at a time until three have reached the live one (the first may come
 * before its first read: a subscription states no moment it starts from). The problems found.
 */
async function gqlResumePointsApart(
  ctx: CheckContext,
  url: string,
  order: 'ahead-first' | 'live-first',
): Promise<string[]> {
  const connector = ctx.name(`gql-apart-${order}`)
  const s = await openGql(ctx, url, ctx.config.tokens.primary)
  const problems: string[] = []
  const recordsOf = (id: string) =>
    payloadsOf(s, id).map((p) => String(obj(obj(obj(p.data).connectorRecords).record).id))
  const subscribe = (id: 'live' | 'ahead') =>
    s.send({
      id,
      type: 'subscribe',
      payload: {
        query: `subscription($c: ID!, $since: Int) { connectorRecords(connector_id: $c, since: $since) { record { id } } }`,
        variables: { c: connector, since: id === 'ahead' ? FAR_SINCE : null },
      },
    })
  const ingestOne = async () => {
    const [record] = batch(ctx, 1)
    await ingestAccepted(ctx, connector, [record!], 'ingesting a record')
    return String(record!.id)
  }
  try {
    assert(
      s.messages.some((m) => m.type === 'connection_ack'),
      `no connection_ack: ${short(s.messages)}`,
    )
    subscribe(order === 'ahead-first' ? 'ahead' : 'live')
    subscribe(order === 'ahead-first' ? 'live' : 'ahead')
    // Until one record reaches the live subscription, the ones before were ingested before it began: not judged.
    // graphql-ws acknowledges no subscribe, so records go in until one arrives: four a second, for as long as the
    // run's wait (a record that came before the subscription began is not judged).
    let first: string | undefined
    const deadline = Date.now() + ctx.config.waitMs
    let tried = 0
    while (!first && (tried === 0 || Date.now() < deadline)) {
      const id = await ingestOne()
      tried++
      if (await s.next((m) => m.id === 'live' && recordsOf('live').includes(id), 250)) first = id
    }
    if (!first)
      return [
        `(${order}) none of ${tried} records ingested over ${ctx.config.waitMs} ms reached the live connectorRecords subscription`,
      ]
    const judged = [first]
    for (let i = 0; i < 2; i++) {
      const id = await ingestOne()
      judged.push(id)
      if (!(await s.next((m) => m.id === 'live' && recordsOf('live').includes(id), ctx.config.waitMs))) {
        problems.push(
          `(${order}) a record did not reach the live subscription within ${ctx.config.waitMs} ms, while another subscription of the connector waits beyond seq ${FAR_SINCE}`,
        )
        break
      }
    }
    await sleep(200) // a duplicate, or a record the other should not get, would show now
    const live = recordsOf('live')
    const fromFirst = live.slice(live.indexOf(first))
    if (problems.length === 0 && !sameJson(fromFirst, judged))
      problems.push(
        `(${order}) the live subscription got ${short(fromFirst)}, expected ${short(judged)} once each in order`,
      )
    const ahead = payloadsOf(s, 'ahead')
    if (ahead.length > 0)
      problems.push(
        `(${order}) the subscription with since ${FAR_SINCE} got ${short(ahead)}, records not after it`,
      )
    return problems
  } finally {
    s.ws.terminate()
  }
}

/**
 * connectorRecords(since: 0) on a connector holding `window + 2` records, `window` the stream's declared replay
 * window: one `gap` first (its `from..to` a range of seqs), then the newest `window` records, each once, in order,
 * as /v1/stream resumes (the reference's subscriptions follow the stream's topics, window included).
 */
async function resumePastWindow(ctx: CheckContext, s: GqlSocket, window: number): Promise<void> {
  const connector = ctx.name('gql-gap')
  const records = batch(ctx, window + 2)
  await ingestAccepted(ctx, connector, records, `ingesting ${records.length} records`)
  s.send({
    id: 'gap',
    type: 'subscribe',
    payload: {
      query:
        'subscription($c: ID!) { connectorRecords(connector_id: $c, since: 0) { type from to record { id } } }',
      variables: { c: connector },
    },
  })
  const last = records.at(-1)?.id
  const messages = () => payloadsOf(s, 'gap').map((p) => obj(obj(p.data).connectorRecords))
  await waitUntil(
    `the newest of ${records.length} records over connectorRecords(since: 0)`,
    async () => messages(),
    (got) => got.some((m) => obj(m.record).id === last),
    ctx.config.waitMs,
  )
  const [gap, ...rest] = messages()
  assertResumedPastWindow(
    'connectorRecords(since: 0)',
    gap,
    rest.map((m) => obj(m.record).id),
    records,
    window,
  )
}

export const wsSubscriptions: Check = {
  id: 'graphql.ws-subscriptions',
  // Its subscriptions judge only the runs and records it made: it waits on the deployment's pushes alongside the
  // rest of the GraphQL checks, so it comes first.
  overlap: true,
  title:
    'graphql-ws: connectorRecords delivers ingested records (a since past the declared replay window a gap first, as on the stream), runEvents without since only new events (typed in run_event), and bad arguments or documents are errors with the envelope',
  level: 'profile',
  clauses: ['S4.15', 'S1.8', 'S4.10'],
  async run(ctx) {
    const url = declaredSurface(ctx)
    const s = await openGql(ctx, url, ctx.config.tokens.primary)
    try {
      assert(
        s.messages.some((m) => m.type === 'connection_ack'),
        `no connection_ack: ${short(s.messages)}`,
      )
      // A run started and settled before the subscription: runEvents without since must not replay it. Settled
      // first, so that none of its events is live news (through a balancer, or under load, a run started a moment
      // before may still be taken and announced after the subscription began).
      const before = await ctx.fx.startRun(await ctx.fx.agent())
      await ctx.fx.waitForStatus(before.runId, (status) => ctx.fx.statuses.settled(status), 'settled')
      s.send({
        id: 'live',
        type: 'subscribe',
        payload: {
          query:
            'subscription { runEvents { type topic seq event run_event { event ... on RunLifecycleEvent { run_id status } } } }',
        },
      })
      // since: null is no since at all (live only), as absent.
      s.send({
        id: 'livenull',
        type: 'subscribe',
        payload: { query: 'subscription { runEvents(since: null) { event } }' },
      })
      // The subscription starts reading at the topic's head when its first read runs: start runs until one arrives.
      const agent = await ctx.fx.agent()
      const mine = new Set<string>()
      let live: Json | undefined
      for (let i = 0; i < 5 && !live; i++) {
        await sleep(300)
        mine.add((await ctx.fx.startRun(agent)).runId)
        const m = await s.next(
          (x) =>
            x.id === 'live' && mine.has(String(obj(obj(obj(obj(x.payload).data).runEvents).event).run_id)),
          2_000,
        )
        live = m
      }
      assert(live, `runEvents delivered none of the runs started after it: ${short(s.messages.slice(-3))}`)
      const message = obj(obj(obj(live.payload).data).runEvents)
      const typed = obj(message.run_event)
      assert(
        message.type === 'event' &&
          message.topic === 'runs' &&
          typeof message.seq === 'number' &&
          typed.event === obj(message.event).event &&
          typed.run_id === obj(message.event).run_id &&
          typeof typed.status === 'string',
        `the runs message is ${short(message)}`,
      )
      const replayed = payloadsOf(s, 'live').find(
        (p) => obj(obj(obj(p.data).runEvents).event).run_id === before.runId,
      )
      assert(!replayed, `runEvents without since replayed a run started before it: ${short(replayed)}`)
      // One more run: the since: null subscription has surely started reading by now.
      mine.add((await ctx.fx.startRun(agent)).runId)
      const nullSince = await s.next(
        (x) =>
          x.id === 'livenull' &&
          (x.type !== 'next' || mine.has(String(obj(obj(obj(obj(x.payload).data).runEvents).event).run_id))),
        ctx.config.waitMs,
      )
      const nullReplayed = payloadsOf(s, 'livenull').find(
        (p) => obj(obj(obj(p.data).runEvents).event).run_id === before.runId,
      )
      assert(
        nullSince?.type === 'next' && errorsOf(obj(nullSince.payload)).length === 0 && !nullReplayed,
        `runEvents(since: null) answered ${short(nullSince)}${nullReplayed ? ' and replayed a run started before it' : ''}`,
      )
      // connectorRecords(since: 0): the records ingested before, each with its seq and lineage.
      const connector = ctx.name('gql-conn')
      const records = batch(ctx, 2)
      await ingestAccepted(ctx, connector, records, 'ingesting 2 records')
      s.send({
        id: 'rec',
        type: 'subscribe',
        payload: {
          query:
            'subscription($c: ID!) { connectorRecords(connector_id: $c, since: 0) { type topic seq record { id seq lineage { batch_root } } run_event { event } } }',
          variables: { c: connector },
        },
      })
      await waitUntil(
        'both records to arrive over connectorRecords',
        async () => payloadsOf(s, 'rec'),
        (p) => p.length >= 2,
        ctx.config.waitMs,
      )
      const got = payloadsOf(s, 'rec').map((p) => obj(obj(p.data).connectorRecords))
      assert(
        got.map((m) => obj(m.record).id).join() === records.map((r) => r.id).join() &&
          got.every(
            (m, i) =>
              m.type === 'record' &&
              m.topic === `connector:${connector}` &&
              m.seq === i + 1 &&
              m.run_event === null,
          ),
        `connectorRecords delivered ${short(got)}`,
      )
      // since: 1 starts after the first record.
      s.send({
        id: 'rec2',
        type: 'subscribe',
        payload: {
          query: 'subscription($c: ID!) { connectorRecords(connector_id: $c, since: 1) { seq } }',
          variables: { c: connector },
        },
      })
      const second = await s.next((m) => m.id === 'rec2' && m.type === 'next', ctx.config.waitMs)
      assert(
        obj(obj(obj(second?.payload).data).connectorRecords).seq === 2,
        `connectorRecords(since: 1) first delivered ${short(second)}`,
      )
      const window = ctx.config.stream.replayWindow
      if (window !== undefined) await resumePastWindow(ctx, s, window)
      // Refusals: a negative since, an invalid connector id, a document that does not validate.
      for (const [id, query, code] of [
        ['neg', 'subscription { runEvents(since: -1) { seq } }', 'invalid_request'],
        [
          'frac',
          'subscription { connectorRecords(connector_id: "c", since: 1.5) { seq } }',
          'invalid_request',
        ],
        ['badc', 'subscription { connectorRecords(connector_id: "bad id!") { seq } }', 'invalid_request'],
        ['doc', 'subscription { runEvents { nope } }', 'invalid_request'],
      ] as const) {
        s.send({ id, type: 'subscribe', payload: { query } })
        const m = await s.next(
          (x) => x.id === id && (x.type === 'error' || x.type === 'next'),
          ctx.config.waitMs,
        )
        const errors = wsErrorsOf(m)
        const ext = obj(errors[0]?.extensions)
        assert(
          ext.code === code && /^req_/.test(String(ext.request_id)) && ext.status === 400,
          `subscribe ${short(query)} answered ${short(m)}, not ${code} with a req_ request id`,
        )
        const want = ARG_REFUSALS[id]
        if (want)
          assert(
            errors[0]?.message === want.message &&
              sameJson(ext.detail, {
                issues: [{ location: 'args', path: want.path, message: want.issue }],
                fields: [want.path],
              }),
            `subscribe ${short(query)}: the error is ${short(errors[0])}`,
          )
      }
      // operationName picks the subscription among several operations, as over HTTP.
      s.send({
        id: 'named',
        type: 'subscribe',
        payload: {
          query:
            'query Q { __typename } subscription S($c: ID!) { connectorRecords(connector_id: $c, since: 1) { seq } }',
          operationName: 'S',
          variables: { c: connector },
        },
      })
      const named = await s.next((x) => x.id === 'named' && x.type !== 'complete', ctx.config.waitMs)
      assert(
        obj(obj(obj(named?.payload).data).connectorRecords).seq === 2,
        `operationName S over graphql-ws answered ${short(named)}`,
      )
      // What only graphql-ws hands to the document checks (HTTP bodies pass the body guard first): variables
      // nested past the JSON depth limit, and a variable holding U+0000.
      let deepVar: unknown = 1
      for (let i = 0; i < 64; i++) deepVar = [deepVar]
      for (const [id, variables, judge] of [
        [
          'deep',
          { c: deepVar },
          (e: Json) =>
            obj(e.extensions).detail !== undefined &&
            obj(obj(e.extensions).detail).limit === 'max_json_depth' &&
            String(e.message).startsWith('The JSON at variables.c'),
        ],
        [
          'nul',
          { c: 'a\u0000b' },
          (e: Json) => String(e.message).startsWith('The request document is invalid: variables.c'),
        ],
      ] as const) {
        s.send({
          id,
          type: 'subscribe',
          payload: {
            query: 'subscription($c: ID!) { connectorRecords(connector_id: $c) { seq } }',
            variables,
          },
        })
        const m = await s.next((x) => x.id === id && x.type !== 'complete', ctx.config.waitMs)
        const first = obj(Array.isArray(m?.payload) ? m.payload[0] : undefined)
        assert(
          m?.type === 'error' && judge(first),
          `subscribe with variables ${id === 'deep' ? 'nested 65 deep' : 'holding U+0000'} answered ${short(m)}`,
        )
      }
    } finally {
      s.ws.terminate()
    }
    // A token without stream:runs is refused runEvents.
    const narrow = ctx.config.tokens.narrowScope
    if (narrow) {
      const n = await openGql(ctx, url, narrow)
      try {
        n.send({ id: 'n', type: 'subscribe', payload: { query: 'subscription { runEvents { seq } }' } })
        const m = await n.next((x) => x.id === 'n' && x.type !== 'complete', ctx.config.timeoutMs)
        const errors = errorsOf(obj(m?.payload))
        const first =
          m?.type === 'error' && Array.isArray(m.payload) ? obj(m.payload[0]) : errorsOf(obj(m?.payload))[0]
        const code = obj(first?.extensions).code
        assert(
          code === 'policy_denied' || code === 'forbidden' || errors.length > 0,
          `the narrow-scope token's runEvents answered ${short(m)}`,
        )
        assert(code === 'policy_denied', `the narrow-scope token's runEvents error is ${short(first)}`)
      } finally {
        n.ws.terminate()
      }
    }
  },
}

export const wsResumePointsApart: Check = {
  id: 'graphql.ws-resume-points-apart',
  overlap: true,
  title:
    'graphql-ws: two connectorRecords subscriptions of one connector, one live and one with a since beyond its newest record, whichever came first: the live one gets each next record once, in order, and the other none of them',
  level: 'profile',
  clauses: ['S4.15', 'S4.10'],
  async run(ctx) {
    // The reference's subscriptions read a topic once for all its followers (src/surface/topic-feeds.ts), as
    // /v1/stream does (stream.resume-points-apart): followers at different points keep their own.
    const url = declaredSurface(ctx)
    const problems = await Promise.all([
      gqlResumePointsApart(ctx, url, 'ahead-first'),
      gqlResumePointsApart(ctx, url, 'live-first'),
    ])
    const found = problems.flat()
    assert(found.length === 0, found.join('; '))
  },
}
