/**
 * A destination for some agents only (the reference profile's `agent_ids`: spec §6 routes events to "chat, paging and
 * downstream systems" and shows nothing of choosing which): a team's channel hears of its own agents' runs, not of
 * every agent in the workspace. Judged by deliveries, not only by what the destination reads back.
 */
import { sameJson } from '../../canonical.js'
import type { Check } from '../../check.js'
import { expectStatus, ownId } from '../../fixtures.js'
import { obj } from '../../http.js'
import type { Delivery } from '../../receiver.js'
import { assert } from '../../types.js'
import { short } from '../../wait.js'
import { atTag, receiverUrl } from '../webhooks.js'
import { skipWithoutDestinations } from './sinks.js'

/** The run.started deliveries at `tag`, by the agent each names (a binary CloudEvent's body is the event). */
const startedOf = (tag: string, agent: string) => (d: Delivery) =>
  atTag(tag)(d) && d.body?.event === 'run.started' && d.body?.agent_id === agent

export const destinationAgentChecks: Check[] = [
  {
    id: 'destinations.agent-filter',
    title:
      'A destination with agent_ids gets only the events of those agents: another agent’s run.started is not sent to it, nor any kind it does not list; a change of agent_ids routes the next events to the new agents, a change of its name keeps its agents and kinds, agent_ids null routes every agent’s, and an empty list is 400 naming agent_ids',
    level: 'profile',
    clauses: ['S6.5', 'S7.3'],
    // Four runs and their deliveries, on agents and a destination of its own.
    overlap: true,
    async run(ctx) {
      await skipWithoutDestinations(ctx)
      const tag = ctx.name('dest-agents')
      const [a, b] = [await ctx.fx.newAgent(), await ctx.fx.newAgent()]
      const create = await ctx.http.post('/v1/destinations', {
        type: 'cloudevents',
        name: tag,
        events: ['run.started'],
        agent_ids: [a],
        config: { url: `${receiverUrl(ctx)}/${tag}`, mode: 'binary' },
      })
      expectStatus(create, 201, 'creating a cloudevents destination for one agent')
      const id = ownId(create.body, 'destination')
      assert(id, `the destination answer has no destination_id: ${short(create.body)}`)
      ctx.cleanup(`delete destination ${id}`, (http) => http.delete(`/v1/destinations/${id}`))
      const base = `/v1/destinations/${id}`
      const wrong: string[] = []
      const readBack = async (what: string, want: Record<string, unknown>) => {
        const res = await ctx.http.get(base)
        expectStatus(res, 200, 'GET /v1/destinations/{id}')
        const got = obj(res.body)
        const off = Object.entries(want).filter(([k, v]) => !sameJson(got[k], v))
        if (off.length > 0)
          wrong.push(
            `${what}, the destination reads back ${off.map(([k]) => `${k} ${short(got[k])}`).join(', ')}, not ${short(want)}`,
          )
      }
      // The other agent's run has started before this agent's is created: its run.started comes first in the log, so
      // it would reach the receiver first (a destination gets one attempt at a time, the oldest first).
      /** Starts a run of `agent` and waits for its run.started at the destination. */
      const reached = async (what: string, agent: string) => {
        const { runId } = await ctx.fx.startRun(agent)
        const got = await ctx.receiver!.waitFor(
          (d) => startedOf(tag, agent)(d) && d.body?.run_id === runId,
          ctx.config.waitMs,
        )
        if (!got)
          wrong.push(
            `${what}: no run.started of ${agent} reached the destination within ${ctx.config.waitMs} ms`,
          )
      }
      const routed = async (what: string, to: string, not: string) => {
        const leakedBefore = ctx.receiver!.deliveries.filter(startedOf(tag, not)).length
        const other = await ctx.fx.startRun(not)
        await ctx.fx.waitForStatus(other.runId, (st) => st !== 'queued', 'started')
        await reached(what, to)
        if (ctx.receiver!.deliveries.filter(startedOf(tag, not)).length > leakedBefore)
          wrong.push(`${what}: a run.started of ${not}, which the destination does not follow, reached it`)
      }
      await routed('for agent_ids [A]', a, b)
      expectStatus(
        await ctx.http.patch(base, { name: `${tag}-renamed` }),
        200,
        'PATCH /v1/destinations/{id} {name}',
      )
      await readBack('renamed', { agent_ids: [a], events: ['run.started'] })
      expectStatus(
        await ctx.http.patch(base, { agent_ids: [b] }),
        200,
        'PATCH /v1/destinations/{id} {agent_ids}',
      )
      await readBack('with agent_ids changed to [B]', { agent_ids: [b] })
      await routed('for agent_ids [B]', b, a)
      expectStatus(
        await ctx.http.patch(base, { agent_ids: null }),
        200,
        'PATCH /v1/destinations/{id} {agent_ids: null}',
      )
      await readBack('with agent_ids null', { agent_ids: null })
      await reached('for every agent', a)
      const empty = await ctx.http.patch(base, { agent_ids: [] })
      const error = obj(obj(empty.body).error)
      const fields = obj(error.detail).fields
      if (empty.status !== 400 || !Array.isArray(fields) || !fields.includes('agent_ids'))
        wrong.push(`agent_ids [] answered ${empty.status} ${short(empty.body)}, not 400 naming agent_ids`)
      // It lists run.started alone: the runs' other events (their ends among them) are not its to get.
      const others = ctx.receiver!.deliveries.filter((d) => atTag(tag)(d) && d.body?.event !== 'run.started')
      if (others.length > 0)
        wrong.push(
          `the destination listing run.started alone got ${others.map((d) => short(d.body?.event)).join(', ')}`,
        )
      assert(wrong.length === 0, wrong.join('; '))
    },
  },
]
