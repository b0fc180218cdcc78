/** Paging: PagerDuty's Events API v2, an incident triggered and resolved. */
import { randomBytes } from 'node:crypto'
import type { Check } from '../../check.js'
import { decideStep, expectStatus, firstAwaitingStep } from '../../fixtures.js'
import { obj } from '../../http.js'
import { assert, fail } from '../../types.js'
import { short } from '../../wait.js'
import { decided } from '../outcomes.js'
import { receiverUrl } from '../webhooks.js'
import { PAGERDUTY_SEVERITIES, pagerDutyEventProblems } from './bodies.js'

import {
  deliveredInLog,
  ensureDestination,
  pagerDestination,
  pagerResolve,
  pagerTrigger,
  secretKept,
} from './sinks.js'

/** A pagerduty destination's own settings, which its incidents carry. */
const PAGER_SETTINGS = {
  source: 'conformance-source',
  component: 'conformance-component',
  severity: 'critical',
}

export const pagerdutyEventsV2: Check = {
  id: 'destinations.pagerduty-events-v2',
  title:
    "A pagerduty destination triggers an Events API v2 incident for a run that awaits approval (its routing_key, a summary, the source, component and severity it was configured with, a dedup_key) and resolves that dedup_key once the step is approved, logged delivered once answered 2xx; a run whose step is rejected is an incident of its own, resolved once the run fails (failures not listed); approving the first of two approval steps resolves before the second pages again; two runs of one agent paged at their start are two incidents, each resolved once its run succeeds; a change to another severity is the next incident's (a sample whose kind's own default is another); two samples of one agent are one incident; a new routing key alone is checked and taken; its routing key is never answered",
  level: 'profile',
  clauses: ['S6.5'],
  async run(ctx) {
    const pager = await ensureDestination(ctx, 'pagerduty', (receiver, tag) => {
      const routingKey = randomBytes(16).toString('hex')
      return {
        type: 'pagerduty',
        events: ['run.awaiting_approval'],
        // The profile's settings of an incident: its source, component and severity (critical, not the
        // warning an approval gets by default).
        config: { url: `${receiver}/${tag}`, ...PAGER_SETTINGS },
        secrets: { routing_key: routingKey },
        secret: routingKey,
      }
    })
    const { runId } = await decided(ctx, 'approve')
    const trigger = await ctx.receiver!.waitFor(pagerTrigger(pager.tag, runId), ctx.config.waitMs)
    if (!trigger)
      fail(`no Events API v2 trigger naming run ${runId} reached the receiver within ${ctx.config.waitMs} ms`)
    const problems = pagerDutyEventProblems(trigger, pager.secret)
    const payload = obj(trigger.body?.payload)
    for (const [k, v] of Object.entries(PAGER_SETTINGS))
      if (payload[k] !== v) problems.push(`payload.${k} is ${short(payload[k])}, not the destination's ${v}`)
    assert(problems.length === 0, `the trigger for run ${runId}: ${problems.join('; ')}`)
    const key = trigger.body?.dedup_key
    assert(
      typeof key === 'string',
      `the trigger for run ${runId} has no dedup_key: an approval cannot resolve it`,
    )
    const resolve = await ctx.receiver!.waitFor(pagerResolve(pager.tag, key), ctx.config.waitMs)
    if (!resolve)
      fail(
        `run ${runId}'s step was approved, but no resolve with the trigger's dedup_key ${key} reached the receiver within ${ctx.config.waitMs} ms`,
      )
    const resolveProblems = pagerDutyEventProblems(resolve, pager.secret)
    const logged = await deliveredInLog(ctx, pager)
    if (logged) resolveProblems.push(logged)
    assert(resolveProblems.length === 0, `the resolve for run ${runId}: ${resolveProblems.join('; ')}`)
    // A rejected step fails its run, which is not paged here (run.failed is not listed): that ends the run's
    // incident too. Each run is an incident of its own, whatever agent runs it.
    const rejected = await decided(ctx, 'reject')
    const rejectedTrigger = await ctx.receiver!.waitFor(
      pagerTrigger(pager.tag, rejected.runId),
      ctx.config.waitMs,
    )
    if (!rejectedTrigger)
      fail(
        `no Events API v2 trigger naming run ${rejected.runId} reached the receiver within ${ctx.config.waitMs} ms`,
      )
    const rejectedKey = rejectedTrigger.body?.dedup_key
    assert(
      typeof rejectedKey === 'string' && rejectedKey !== key,
      `the triggers of runs ${runId} and ${rejected.runId} share dedup_key ${short(key)}: two runs are one incident`,
    )
    const ended = await ctx.receiver!.waitFor(pagerResolve(pager.tag, rejectedKey), ctx.config.waitMs)
    if (!ended)
      fail(
        `run ${rejected.runId}'s step was rejected and the run failed, but no resolve with its dedup_key ${rejectedKey} reached the receiver within ${ctx.config.waitMs} ms`,
      )
    // A run of two approval steps: approving the first ends the incident (a resolve before the second step's
    // trigger opens it again), although the run has not ended.
    const ok = await ctx.fx.tool('succeed')
    const twoSteps = await ctx.fx.startRun(
      await ctx.fx.newToolAgent([ok, ok], ctx.config.profile.approvalBehavior),
    )
    const firstWait = await ctx.fx.waitForStatus(
      twoSteps.runId,
      (s) => s === 'awaiting_approval',
      'awaiting approval',
    )
    const firstStep = firstAwaitingStep(firstWait)
    const firstTrigger = await ctx.receiver!.waitFor(
      pagerTrigger(pager.tag, twoSteps.runId),
      ctx.config.waitMs,
    )
    if (!firstTrigger)
      fail(`no trigger naming run ${twoSteps.runId} reached the receiver within ${ctx.config.waitMs} ms`)
    expectStatus(
      await decideStep(ctx, twoSteps.runId, firstStep, 'approve'),
      200,
      `approving step ${firstStep}`,
    )
    const secondWait = await ctx.fx.awaitingAnotherStep(
      twoSteps.runId,
      [firstStep],
      'past its first approval',
    )
    if (secondWait.status === 'awaiting_approval') {
      const secondStep = firstAwaitingStep(secondWait)
      const secondTrigger = await ctx.receiver!.waitFor(
        pagerTrigger(pager.tag, twoSteps.runId, secondStep),
        ctx.config.waitMs,
      )
      if (!secondTrigger)
        fail(
          `no trigger for step ${secondStep} of run ${twoSteps.runId} reached the receiver within ${ctx.config.waitMs} ms`,
        )
      const between = ctx.receiver!.deliveries.filter(
        (d) =>
          pagerResolve(pager.tag, firstTrigger.body?.dedup_key)(d) &&
          d.receivedAt >= firstTrigger.receivedAt &&
          d.receivedAt <= secondTrigger.receivedAt,
      )
      assert(
        between.length > 0,
        `step ${firstStep} of run ${twoSteps.runId} was approved, but its incident was not resolved before step ${secondStep}'s trigger`,
      )
      expectStatus(
        await decideStep(ctx, twoSteps.runId, secondStep, 'approve'),
        200,
        `approving step ${secondStep}`,
      )
    } else ctx.partial(`run ${twoSteps.runId} of two approval steps awaited one approval only`)
    // A run paged at its start that then succeeds on its own: its success ends the incident.
    const agent = await ctx.fx.newToolAgent([ok])
    // Paging for this agent alone, so it stays quiet for the rest of the suite run.
    const atStart = await pagerDestination(ctx, ['run.started'], 'pagerduty-started', [agent.id])
    // Two runs of one agent: two incidents, each resolved once its run succeeds.
    const keys = new Set<unknown>()
    for (const quick of [await ctx.fx.startRun(agent), await ctx.fx.startRun(agent)]) {
      const paged = await ctx.receiver!.waitFor(pagerTrigger(atStart.tag, quick.runId), ctx.config.waitMs)
      if (!paged)
        fail(
          `a pagerduty destination listing run.started opened no incident for run ${quick.runId} within ${ctx.config.waitMs} ms`,
        )
      keys.add(paged.body?.dedup_key)
      const settled = await ctx.fx.waitForStatus(quick.runId, (s) => ctx.fx.statuses.terminal(s), 'ended')
      const closed = await ctx.receiver!.waitFor(
        pagerResolve(atStart.tag, paged.body?.dedup_key),
        ctx.config.waitMs,
      )
      assert(
        closed,
        `run ${quick.runId} ${String(settled.status)}, but the incident its start opened was not resolved within ${ctx.config.waitMs} ms`,
      )
    }
    assert(
      keys.size === 2,
      `two runs of agent ${agent.id} paged with one dedup_key ${short([...keys][0])}: one incident for two runs`,
    )
    // Each severity PagerDuty takes, set by a change of the destination, is the next incident's (its sample,
    // which is sent at once and answered with what the receiver said). The sample is of a kind whose own default
    // severity is another (an approval's is warning, an agent's creation info; both page, one listed and one not
    // about a run), so only the setting can give it.
    const base = `/v1/destinations/${pager.id}`
    /**
     * Sends a sample of `event` and answers the triggers at the destination's receiver between the send and its
     * answer (the sample arrives before the answer; the destination pages every run of the workspace that awaits
     * approval, so other checks' triggers may arrive alongside).
     */
    const sampleTriggers = async (event: string, what: string) => {
      const since = Date.now()
      const sample = await ctx.http.post(`${base}/test`, { event })
      const answered = Date.now()
      expectStatus(sample, 200, `POST /v1/destinations/{id}/test ${what}`)
      const sent = ctx.receiver!.deliveries.filter(
        (d) => pagerTrigger(pager.tag)(d) && d.receivedAt >= since && d.receivedAt <= answered,
      )
      return { sample, sent }
    }
    const agentKeys = new Set<unknown>()
    for (const severity of PAGERDUTY_SEVERITIES.filter((s) => s !== PAGER_SETTINGS.severity)) {
      const event = severity === 'info' ? 'run.awaiting_approval' : 'agent.created'
      const config = { url: `${receiverUrl(ctx)}/${pager.tag}`, ...PAGER_SETTINGS, severity }
      expectStatus(
        await ctx.http.patch(base, { config }),
        200,
        `PATCH /v1/destinations/{id} to severity ${severity}`,
      )
      // The sample is one of the triggers of that moment (the approval's own left out), whichever came last.
      const { sample, sent: triggers } = await sampleTriggers(event, `at severity ${severity}`)
      const sent = triggers.filter((d) => d.body?.dedup_key !== key)
      assert(sent.length > 0, `the sample at severity ${severity} reached no receiver: ${short(sample.body)}`)
      const got = sent.map((d) => obj(d.body?.payload).severity)
      assert(
        got.includes(severity),
        `with severity ${severity} configured, the ${event} sample's payload.severity is ${short(got.at(-1))}`,
      )
      for (const d of sent)
        if (obj(d.body?.payload).class === 'agent.created') agentKeys.add(d.body?.dedup_key)
    }
    // The agent.created samples name one made-up agent: one incident per agent, as per run.
    assert(
      agentKeys.size === 1,
      `two agent.created samples of one agent were paged with dedup_keys ${short([...agentKeys])}, not one incident`,
    )
    // A change of the secrets alone is checked and taken as at creation: a routing key of the wrong form is
    // refused naming it, and the next incident carries a new one.
    const refused = await ctx.http.patch(base, { secrets: { routing_key: 'short' } })
    assert(
      refused.status === 400 &&
        JSON.stringify(obj(obj(obj(refused.body).error).detail).fields).includes('secrets.routing_key'),
      `PATCH /v1/destinations/{id} with a 5-character routing key alone answered ${refused.status} ${short(refused.body)}, not 400 naming secrets.routing_key`,
    )
    const rotated = randomBytes(16).toString('hex')
    expectStatus(
      await ctx.http.patch(base, { secrets: { routing_key: rotated } }),
      200,
      'PATCH /v1/destinations/{id} with a new routing key alone',
    )
    const { sent: afterRotation } = await sampleTriggers('agent.created', 'after a new routing key')
    const carried = afterRotation
      .filter((d) => obj(d.body?.payload).class === 'agent.created')
      .map((d) => d.body?.routing_key)
    assert(
      carried.includes(rotated),
      `after PATCH /v1/destinations/{id} with a new routing key alone, the sample carried ${short(carried)}`,
    )
    const config = { url: `${receiverUrl(ctx)}/${pager.tag}`, ...PAGER_SETTINGS }
    expectStatus(
      await ctx.http.patch(base, { config, secrets: { routing_key: pager.secret } }),
      200,
      'PATCH /v1/destinations/{id} back',
    )
    await secretKept(ctx, pager)
  },
}
