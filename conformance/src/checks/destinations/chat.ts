/** Chat: a Slack incoming webhook's messages, and its Retry-After honoured. */
import { randomBytes } from 'node:crypto'
import { sameJson } from '../../canonical.js'
import type { Check } from '../../check.js'
import { expectStatus, ownId } from '../../fixtures.js'
import { obj } from '../../http.js'
import type { Delivery } from '../../receiver.js'
import { assert, fail, skip } from '../../types.js'
import { short } from '../../wait.js'
import { atTag, receiverUrl } from '../webhooks.js'
import { SLACK_MARKUP_NOTE, slackEscapingProblems, slackMessageProblems } from './bodies.js'

import {
  deliveredInLog,
  logUntil,
  refusesType,
  retried,
  secretKept,
  skipWithoutDestinations,
  slackDestination,
} from './sinks.js'

/** Where a Slack message says it is a test send (`(test)`): in its header block, in its `text`. */
function testMarks(d: Delivery): { header: boolean; text: boolean } {
  const blocks = Array.isArray(d.body?.blocks) ? d.body.blocks.map(obj) : []
  const header = obj(obj(blocks.find((b) => b.type === 'header')).text).text
  return {
    header: typeof header === 'string' && header.includes('(test)'),
    text: typeof d.body?.text === 'string' && d.body.text.includes('(test)'),
  }
}

/** A slack destination's sender settings, which its messages carry. */
const SLACK_SENDER = { username: 'conformance-bot', icon_emoji: ':robot_face:' }

export const slackIncomingWebhook: Check = {
  id: 'destinations.slack-incoming-webhook',
  title:
    'A slack destination posts each event it lists once, as a Slack incoming-webhook message (JSON with a text or Block Kit blocks of documented types within their limits) naming the run and its agent, any run input it shows escaped as Slack requires (never a ping, mention or link), logged delivered once Slack answered 200; a test send says "(test)" in its header and its text, a real event neither; its webhook URL is never answered',
  level: 'profile',
  clauses: ['S6.5'],
  async run(ctx) {
    // The profile's sender settings, which each message carries as Slack's incoming webhooks take them.
    const hook = await slackDestination(ctx, ['run.awaiting_approval'], 'slack', { config: SLACK_SENDER })
    const since = Date.now()
    // Its input carries Slack markup: a message that shows it must escape it.
    const { runId, agentId } = await ctx.fx.awaitingRun({ note: SLACK_MARKUP_NOTE })
    const forRun = (d: Delivery) => atTag(hook.tag)(d) && d.raw.includes(runId)
    const got = await ctx.receiver!.waitFor(forRun, ctx.config.waitMs)
    if (!got) {
      // A message that names no run at all is judged as it is: a missing run is one problem among its others.
      const other = ctx.receiver!.deliveries.find((d) => atTag(hook.tag)(d) && d.receivedAt >= since)
      fail(
        other
          ? `the Slack messages since run ${runId} awaited approval name no run ${runId}: ${[...slackMessageProblems(other), short(other.raw, 300)].join('; ')}`
          : `no Slack message about run ${runId}'s run.awaiting_approval reached the receiver within ${ctx.config.waitMs} ms`,
      )
    }
    const problems = [...slackMessageProblems(got), ...slackEscapingProblems(got, SLACK_MARKUP_NOTE)]
    for (const [k, v] of Object.entries(SLACK_SENDER))
      if (got.body?.[k] !== v)
        problems.push(`its ${k} is ${short(got.body?.[k])}, not the destination's ${v}`)
    // Buttons only where approval_buttons asked for them (and a signing secret checks their clicks): none here.
    const blocks = Array.isArray(got.body?.blocks) ? got.body.blocks.map(obj) : []
    if (blocks.some((b) => b.type === 'actions'))
      problems.push('it carries action buttons, though the destination has no approval_buttons')
    if (!got.raw.includes(agentId)) problems.push(`the message does not name the run's agent ${agentId}`)
    const marks = testMarks(got)
    if (marks.header || marks.text) problems.push('it says "(test)", though its event is real')
    const copies = ctx.receiver!.deliveries.filter((d) => forRun(d) && d.status < 300).length
    if (copies > 1) problems.push(`the message arrived ${copies} times`)
    const logged = await deliveredInLog(ctx, hook)
    if (logged) problems.push(logged)
    assert(problems.length === 0, `the Slack message about run ${runId}: ${problems.join('; ')}`)
    // A test send (the profile's POST /v1/destinations/{id}/test) says it is one where a person reads it.
    const testSent = Date.now()
    expectStatus(
      await ctx.http.post(`/v1/destinations/${hook.id}/test`, {}),
      200,
      'a test send to the slack destination',
    )
    const test = await ctx.receiver!.waitFor(
      (d) => atTag(hook.tag)(d) && d.receivedAt >= testSent && testMarks(d).header,
      ctx.config.waitMs,
    )
    assert(test, 'no Slack message whose header says "(test)" arrived after a test send')
    assert(testMarks(test).text, `the test send's text does not say "(test)": ${short(test.body?.text)}`)
    await secretKept(ctx, hook)
  },
}

export const slackRetryAfter: Check = {
  id: 'destinations.slack-retry-after',
  title:
    "A slack destination whose service answers 429 or 503 with Retry-After (in seconds or as an HTTP-date), and a cloudevents one whose sink answers 429 or 503 with it, is retried after that wait (not three times longer), not at the outbox's backoff (a 500 with one keeps the backoff, and so do a 429 without one and a connection dropped without an answer, logged with no status code and an error that does not quote the webhook URL): the delivery log shows the answer's status and the next attempt no sooner than Retry-After says",
  level: 'profile',
  clauses: ['S6.5'],
  async run(ctx) {
    await skipWithoutDestinations(ctx)
    const tag = ctx.name('slow')
    const receiver = receiverUrl(ctx)
    // Slack's answers when it is rate limited or down: its error word, and when to come back.
    const RETRY_AFTER_S = 120
    const created: {
      id: string
      status: number
      retryAfter: string
      path: string
      token: string
      type: string
    }[] = []
    try {
      // Status 0: no answer at all, the connection dropped once the message arrived. Retry-After in either of
      // RFC 9110's forms: delay-seconds, or an HTTP-date that far ahead.
      const inDate = new Date(Date.now() + RETRY_AFTER_S * 1000).toUTCString()
      for (const [status, word, retryAfter, label, type] of [
        [429, 'rate_limited', String(RETRY_AFTER_S), '429', 'slack'],
        [503, 'service_unavailable', String(RETRY_AFTER_S), '503', 'slack'],
        [503, 'service_unavailable', inDate, '503-date', 'slack'],
        [500, 'internal_error', String(RETRY_AFTER_S), '500', 'slack'],
        [0, '', String(RETRY_AFTER_S), '0', 'slack'],
        // A downstream sink rate limiting the deployment says when to come back the same way.
        [429, 'rate_limited', String(RETRY_AFTER_S), 'ce-429', 'cloudevents'],
        [503, 'service_unavailable', String(RETRY_AFTER_S), 'ce-503', 'cloudevents'],
        [500, 'internal_error', String(RETRY_AFTER_S), 'ce-500', 'cloudevents'],
        // A 429 that does not say when to come back ('': no Retry-After) keeps the backoff.
        [429, 'rate_limited', '', 'ce-429-bare', 'cloudevents'],
      ] as const) {
        const token = `conf${randomBytes(8).toString('hex')}`
        const path = `/T0CONF/B0CONF/${token}/${tag}-${label}`
        ctx.receiver!.answerWith((p) => p.endsWith(path), {
          status,
          body: word,
          headers: {
            ...(retryAfter === '' ? {} : { 'retry-after': retryAfter }),
            'content-type': 'text/plain',
          },
          hangUp: status === 0,
        })
        const res = await ctx.http.post('/v1/destinations', {
          name: `${tag}-${label}`,
          type,
          events: ['agent.created'],
          ...(type === 'slack'
            ? { config: {}, secrets: { webhook_url: `${receiver}${path}` } }
            : { config: { url: `${receiver}${path}` } }),
        })
        if (refusesType(res))
          skip(
            `the deployment has no ${type} destinations: it refused one (${res.status} ${short(res.body, 200)})`,
          )
        expectStatus(res, 201, `creating a ${type} destination`)
        const id = ownId(res.body, 'destination')
        assert(id, `the destination answer has no destination_id: ${short(res.body)}`)
        created.push({ id, status, retryAfter, path, token, type })
      }
      await ctx.fx.newAgent()
      const problems: string[] = []
      for (const { id, status, retryAfter, path, token, type } of created) {
        const attempt = await ctx.receiver!.waitFor((d) => d.path.endsWith(path), ctx.config.waitMs)
        if (!attempt) {
          problems.push(
            `no message reached the receiver posing as Slack answering ${status} within ${ctx.config.waitMs} ms`,
          )
          continue
        }
        // Half the wait: room for the two clocks to differ, and still far beyond a first retry's backoff.
        const earliest = attempt.receivedAt + (RETRY_AFTER_S / 2) * 1000
        if (status === 0) {
          const attempted = (e: Record<string, unknown>) => typeof e.attempts === 'number' && e.attempts >= 1
          // Other checks' agents are announced here too: a delivery still retried is judged first, as older
          // ones may have been given up already after the attempts the deployment allows.
          const log = await logUntil(ctx, id, (entries) => entries.some(attempted))
          const entry = log.find((e) => attempted(e) && e.status === 'pending') ?? log.find(attempted)
          const next = Date.parse(String(entry?.next_attempt_at ?? ''))
          if (
            entry?.status !== 'pending' ||
            entry.last_status_code !== null ||
            typeof entry.last_error !== 'string' ||
            entry.last_error === '' ||
            !(next < earliest)
          )
            problems.push(
              `after the connection to Slack dropped without an answer, the delivery is logged ${short(entry ?? null, 300)}: not pending a retry at the backoff, with no status code and an error saying why`,
            )
          else if (entry.last_error.includes(token))
            problems.push(`the delivery log's last_error quotes the webhook URL: ${short(entry.last_error)}`)
          continue
        }
        if (status === 500 || retryAfter === '') {
          // The profile waits out Retry-After on a 429 or 503 only: any other failure, and one that does not say
          // when to come back, keeps the outbox's backoff.
          // A delivery attempted again already (perhaps given up since, after the attempts the deployment
          // allows) did not wait the 120 s: this destination is younger than that.
          const backedOff = (e: Record<string, unknown>) => e.last_status_code === status && retried(e)
          const log = await logUntil(ctx, id, (entries) => entries.some(backedOff))
          const entry = log.find(backedOff) ?? log.find((e) => e.last_status_code === status)
          const next = Date.parse(String(entry?.next_attempt_at ?? ''))
          const again = typeof entry?.attempts === 'number' && entry.attempts > 1
          if (!again && (entry?.status !== 'pending' || !(next < earliest)))
            problems.push(
              `after the ${type} destination's service answered ${status} (${retryAfter === '' ? 'with no Retry-After' : `with a Retry-After ${RETRY_AFTER_S} the profile heeds on 429 and 503 only`}), the delivery is logged ${short(entry ?? log, 300)}: not pending a retry at the backoff`,
            )
          continue
        }
        const retrying = (e: Record<string, unknown>) =>
          e.last_status_code === status && typeof e.next_attempt_at === 'string'
        const log = await logUntil(ctx, id, (entries) => entries.some(retrying))
        const entry = log.find(retrying) ?? log.find((e) => e.last_status_code === status)
        const next = Date.parse(String(entry?.next_attempt_at ?? ''))
        // Waiting longer than asked is allowed (a deployment may add its own backoff), but not without bound.
        const latest = attempt.receivedAt + 3 * RETRY_AFTER_S * 1000
        if (entry?.status !== 'pending' || !(next >= earliest && next <= latest))
          problems.push(
            `after the ${type} destination's service answered ${status} with Retry-After: ${retryAfter}, the delivery is logged ${short(entry ?? log, 300)}: not pending until ${RETRY_AFTER_S} s after the attempt (and no more than ${3 * RETRY_AFTER_S} s)`,
          )
        // The same message again is a retry; another event's message (an agent another check made meanwhile) is not.
        const again = ctx.receiver!.deliveries.filter(
          (d) => d.path.endsWith(path) && sameJson(d.body, attempt.body),
        ).length
        if (again > 1)
          problems.push(
            `the message answered ${status} with Retry-After: ${retryAfter} was sent ${again} times within it`,
          )
      }
      assert(problems.length === 0, problems.join('; '))
    } finally {
      // Deleted here: the deliveries waiting out Retry-After are not attempted again.
      for (const { id } of created) await ctx.http.delete(`/v1/destinations/${id}`).catch(() => undefined)
    }
  },
}
