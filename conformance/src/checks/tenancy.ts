/**
 * Spec §5.6 beyond a read by id: "A resource that does not exist, or is out of scope for the calling identity,
 * yields 404" holds for everything a workspace can observe, so another workspace's events never reach a
 * subscription, a connector id names one connector per workspace, and a cursor pages only the list (and the
 * workspace) that minted it. Every check proves its path first (the owner's own traffic arrives, the owner's cursor
 * pages), so a deployment that delivers or pages nothing cannot pass by saying nothing.
 */
import type { Check, CheckContext } from '../check.js'
import { eventOf, fieldOf } from '../delivery-body.js'
import { expectStatus, nextCursor, pageItems, type ToolAgent, toolId, unservedPart } from '../fixtures.js'
import { type HttpClient, obj } from '../http.js'
import type { Delivery } from '../receiver.js'
import { assert, fail, skip } from '../types.js'
import { short } from '../wait.js'
import { batch } from './ingest.js'
import { openStream, subscribed, subscribeMessage, topicOf } from './stream.js'
import { atTag, ensureWebhook, ownHook, SPEC_EVENTS, toHook } from './webhooks.js'

type Json = Record<string, unknown>

/**
 * A tool and an autonomous agent that calls it in the workspace of `client`: the tool with the spec's fields only,
 * the agent the way the config declares (`toolRun`).
 */
async function runnableAgent(ctx: CheckContext, client: HttpClient, label: string): Promise<ToolAgent> {
  const hint = ctx.config.profile.tools.succeed
  const name = ctx.name(`${label}-tool`)
  const tool = await client.post('/v1/tools', {
    name,
    provider: hint.provider,
    input_schema: { type: 'object' },
    output_schema: {},
    policy_binding: { envelope: 'default', required_scopes: [] },
    idempotent: true,
    ...(hint.config ? { config: hint.config } : {}),
  })
  expectStatus(tool, [200, 201], `registering a tool (${label})`)
  const tid = toolId(tool.body)
  if (!tid) fail(`tool registration (${label}) answered no identifier: ${short(tool.body)}`)
  ctx.cleanup(`retire tool ${name}`, (http) => http.withToken(client.token).delete(`/v1/tools/${tid}`))
  return ctx.fx.newToolAgent([{ id: tid, name }], 'autonomous', client)
}

async function startRun(ctx: CheckContext, client: HttpClient, agent: ToolAgent): Promise<string> {
  return (await ctx.fx.startRun(agent, {}, client)).runId
}

const idsOf = (items: unknown[]): string[] =>
  items.map((i) => {
    const o = obj(i)
    return String(o.tool_id ?? o.id ?? JSON.stringify(i))
  })

export const tenancyChecks: Check[] = [
  {
    id: 'tenancy.webhooks-never-cross-workspaces',
    title:
      'A subscription receives its own workspace’s events only, even of the same kind produced at the same time in another',
    level: 'core',
    clauses: ['S5.6', 'S6.3', 'S1.8'],
    async run(ctx) {
      // §5.6: an event of another workspace is out of scope for the subscriber; §6 routes events to subscribers.
      const other = ctx.as('secondWorkspace')
      const hook = await ensureWebhook(ctx)
      const { tag } = await ownHook(ctx, 'hook-second', SPEC_EVENTS, {
        as: other,
        what: 'the second workspace subscribing to every event kind',
      })
      const [mineAgent, theirsAgent] = await Promise.all([
        runnableAgent(ctx, ctx.http, 'tenancy-primary'),
        runnableAgent(ctx, other, 'tenancy-second'),
      ])
      // Same kinds, same moment, two workspaces.
      const [mine, theirs] = await Promise.all([
        startRun(ctx, ctx.http, mineAgent),
        startRun(ctx, other, theirsAgent),
      ])
      const wait = ctx.config.waitMs
      const ownStarted = (d: Delivery, t: string, run: string) =>
        atTag(t)(d) && fieldOf(d, 'run_id') === run && eventOf(d) === 'run.started'
      // Each subscriber gets its own workspace's event: the path is proven before its absence is judged.
      const [a, b] = await Promise.all([
        ctx.receiver!.waitFor((d) => ownStarted(d, hook.tag, mine), wait),
        ctx.receiver!.waitFor((d) => ownStarted(d, tag, theirs), wait),
      ])
      if (!a || !b)
        skip(
          `no run.started delivery of ${!a ? 'the primary' : 'the second'} workspace's own run within ${wait} ms, so another workspace's absence proves nothing (--wait-ms)`,
        )
      // The terminal events come later; wait for them too so a leak of those has its chance to show.
      await Promise.all([
        ctx.receiver!.waitFor(
          (d) => toHook(d, hook) && fieldOf(d, 'run_id') === mine && eventOf(d) !== 'run.started',
          wait,
        ),
        ctx.receiver!.waitFor(
          (d) => atTag(tag)(d) && fieldOf(d, 'run_id') === theirs && eventOf(d) !== 'run.started',
          wait,
        ),
      ])
      const mentions = (d: Delivery, run: string, agent: string) =>
        d.raw.includes(run) || d.raw.includes(agent)
      const leakedIn = ctx.receiver!.deliveries.filter(
        (d) => atTag(tag)(d) && mentions(d, mine, mineAgent.id),
      )
      const leakedOut = ctx.receiver!.deliveries.filter(
        (d) => toHook(d, hook) && mentions(d, theirs, theirsAgent.id),
      )
      assert(
        leakedIn.length === 0,
        `the second workspace's subscription received ${leakedIn.length} event(s) of the primary workspace's run ${mine}: ${leakedIn.map((d) => String(eventOf(d))).join(', ')}`,
      )
      assert(
        leakedOut.length === 0,
        `the primary workspace's subscription received ${leakedOut.length} event(s) of the second workspace's run ${theirs}: ${leakedOut.map((d) => String(eventOf(d))).join(', ')}`,
      )
    },
  },
  {
    id: 'tenancy.cursor-stays-in-workspace',
    title:
      'A list cursor presented by another workspace pages nothing of the workspace that minted it (a 4xx, or its own items only)',
    level: 'core',
    clauses: ['S5.6', 'S8.1'],
    async run(ctx) {
      // §8 cursor pagination + §5.6: the minting workspace's items are out of scope for any other identity.
      const other = ctx.as('secondWorkspace')
      const ours = [
        await ctx.fx.tool('succeed'),
        await ctx.fx.newTool('succeed'),
        await ctx.fx.newTool('succeed'),
      ]
      const first = await ctx.http.get('/v1/tools?limit=1')
      expectStatus(first, 200, 'the owner listing tools with limit=1')
      const cursor = nextCursor(first.body, first.headers, ctx.config.paging.cursorField)
      if (!cursor)
        skip(
          `the first page of /v1/tools?limit=1 carries no next cursor the suite can find (declare it with paging.cursorField in --config): ${short(first.body)}`,
        )
      const path = `/v1/tools?limit=1&cursor=${encodeURIComponent(cursor)}`
      // The owner's cursor pages (the path is proven), and shows which of the owner's items come next.
      const own = await ctx.http.get(path)
      expectStatus(own, 200, 'the owner following its own cursor')
      const ownItems = pageItems(own.body, ctx.config.paging.itemsField)
      if (!ownItems || ownItems.length === 0)
        skip(
          `the owner's second page holds no items, so another workspace's page proves nothing: ${short(own.body)}`,
        )
      const foreign = await other.get(path)
      if (foreign.status >= 400 && foreign.status < 500 && foreign.status !== 429) return
      expectStatus(foreign, [200], 'another workspace presenting the cursor')
      const seen = idsOf(pageItems(foreign.body, ctx.config.paging.itemsField) ?? [])
      const primaryIds = new Set([...idsOf(ownItems), ...ours.map((t) => t.id)])
      const leaked = seen.filter((id) => primaryIds.has(id))
      assert(
        leaked.length === 0 && !foreign.text.includes(ours[0]!.id),
        `another workspace presenting the owner's cursor was shown the owner's tools: ${leaked.join(', ') || ours[0]!.id}`,
      )
    },
  },
  {
    id: 'tenancy.connector-id-per-workspace',
    title:
      'Two workspaces ingesting under the same connector id each see only their own records and stream, never the other’s',
    level: 'core',
    clauses: ['S5.6', 'S4.10', 'S1.6'],
    async run(ctx) {
      // §5.6: a connector id is resolved inside the caller's workspace; another workspace's records are out of scope.
      const other = ctx.as('secondWorkspace')
      const connector = ctx.name('conn-shared')
      const path = `/v1/grid/connectors/${connector}`
      const [own] = batch(ctx, 1)
      const [theirs] = batch(ctx, 1)
      const ownId = String(own!.id)
      const theirId = String(theirs!.id)
      // The second workspace watches the shared connector id; its own record proves the subscription works.
      const watcher = await openStream(ctx, other.token ?? null)
      // Declared, the stream's protocol is the deployment's own word: a stream that will not open for a token with
      // every scope fails here (as stream.accepts-token would, core), not only after every later wait for it.
      if (!watcher && ctx.config.stream.declared)
        fail(`the stream did not open for the second workspace's token (stream.subscribe is declared)`)
      try {
        // Inside the try: a refused ingest had left the watcher open, and its heartbeats kept the CLI alive after
        // its verdict.
        const ownAccepted = await ctx.http.post(`${path}/ingest`, { records: [own] })
        expectStatus(ownAccepted, 202, 'the primary workspace ingesting under the shared connector id')
        const theirAccepted = await other.post(`${path}/ingest`, { records: [theirs] })
        expectStatus(theirAccepted, 202, 'the second workspace ingesting under the same connector id')
        const checked: string[] = []
        for (const [client, mineId, notMine, who] of [
          [ctx.http, ownId, theirId, 'the primary workspace'],
          [other, theirId, ownId, 'the second workspace'],
        ] as const) {
          const records = await client.get(`${path}/records?limit=200`)
          // Reading records back is the reference profile's extension: judged only where it is served.
          if (
            unservedPart(
              ctx,
              records,
              'GET /v1/grid/connectors/{connector_id}/records',
              `the records part (${who} reading the shared connector's records)`,
            )
          )
            continue
          expectStatus(records, 200, `${who} reading the connector's records`)
          assert(records.text.includes(mineId), `${who} does not read back its own record ${mineId}`)
          assert(
            !records.text.includes(notMine),
            `${who} reads another workspace's record ${notMine} under the shared connector id`,
          )
          checked.push('records')
        }
        if (watcher) {
          await subscribed(ctx, watcher, subscribeMessage(ctx, [connector]), [topicOf(ctx, connector)])
          const leakProbe = batch(ctx, 1)[0]!
          const ownProbe = batch(ctx, 1)[0]!
          expectStatus(await ctx.http.post(`${path}/ingest`, { records: [leakProbe] }), 202, 'primary ingest')
          expectStatus(await other.post(`${path}/ingest`, { records: [ownProbe] }), 202, 'second ingest')
          const carries = (id: unknown) => (m: Json) => JSON.stringify(m).includes(String(id))
          const got = await watcher.next(carries(ownProbe.id), ctx.config.waitMs)
          // Declared, the subscribe message is the deployment's own word: its silence is a failure (§4 "The server
          // pushes records, with lineage, as they land"), not a guess of the suite's that missed.
          if (!got && ctx.config.stream.declared)
            fail(
              `the second workspace's subscriber to connector ${connector} never received its own record within ${ctx.config.waitMs} ms, subscribed with the declared stream.subscribe`,
            )
          if (got) {
            const leaked = watcher.messages.find(carries(leakProbe.id))
            assert(
              !leaked,
              `the second workspace's stream subscription to connector ${connector} received the primary workspace's record: ${short(leaked)}`,
            )
            checked.push('stream')
          }
        }
        if (checked.length === 0)
          skip(
            'neither a records read nor the stream showed a workspace its own records under the connector id, so the absence of the other’s proves nothing (declare stream.subscribe in --config)',
          )
      } finally {
        watcher?.close()
      }
    },
  },
]
