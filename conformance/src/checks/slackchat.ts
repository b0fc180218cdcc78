/**
 * The reference profile's approvals from chat: a slack destination with `approval_buttons` posts approval messages
 * with Approve and Deny buttons, and a click Slack posts back (signed with the app's signing secret) decides the
 * step and replaces the message through the click's `response_url`. Spec §6 leaves routing to chat open ("How
 * routing to chat and paging destinations is configured: not shown"), so the check is profile. The suite's receiver
 * poses as Slack twice: the incoming webhook the message goes to, and the `response_url` the decision goes to.
 */
import { createHmac, randomBytes } from 'node:crypto'
import type { Check, CheckContext } from '../check.js'
import { expectStatus, ownId } from '../fixtures.js'
import { obj } from '../http.js'
import type { Delivery } from '../receiver.js'
import { assert, fail, skip } from '../types.js'
import { short } from '../wait.js'
import { envelopeProblems } from './assertions.js'
import { slackMessageProblems } from './destinations/bodies.js'
import { slackDestination } from './destinations/index.js'
import { atTag, receiverUrl } from './webhooks.js'

type Json = Record<string, unknown>

/** Slack's request signature: `v0=` HMAC-SHA256 of `v0:<timestamp>:<raw body>` under the signing secret. */
function slackSignature(secret: string, timestamp: string, body: string): string {
  return `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex')}`
}

const blocksOf = (body: Json | undefined): Json[] =>
  Array.isArray(body?.blocks) ? body.blocks.map((b: unknown) => obj(b)) : []

/** The message's buttons (the elements of its actions block, as a click names it) by their label. */
function buttonOf(message: Json | undefined, label: string): Json | undefined {
  const actions = blocksOf(message).find((b) => b.type === 'actions')
  return (Array.isArray(actions?.elements) ? actions.elements : [])
    .map((e: unknown) => obj(e))
    .find((b) => b.type === 'button' && String(obj(b.text).text) === label)
}

/**
 * What the message a click leaves must be (Slack's `replace_original`): the message as it was shown, its blocks
 * naming the run kept, without the buttons, plus a line naming the decision, the clicker as a mention and when
 * (a Slack date token, drawn in each reader's time zone); its notification text the shown one with the decision.
 */
function decidedProblems(
  replaced: Delivery,
  shown: Json,
  runId: string,
  verb: 'Approved' | 'Denied',
): string[] {
  const body = replaced.body ?? {}
  const blocks = blocksOf(body)
  const problems: string[] = []
  if (body.replace_original !== true) problems.push('replace_original is not true')
  if (blocks.some((b) => b.type === 'actions')) problems.push('the buttons are still there')
  if (!blocks.some((b) => b.type === 'header' && JSON.stringify(b).includes('Approval needed')))
    problems.push("the shown message's header is gone")
  if (!blocks.some((b) => b.type !== 'actions' && JSON.stringify(b).includes(runId)))
    problems.push(`no block of the shown message naming run ${runId} is kept`)
  const text = String(body.text)
  if (
    !text.startsWith(String(shown.text)) ||
    !new RegExp(verb, 'i').test(text.slice(String(shown.text).length))
  )
    problems.push(`its text is not the shown one with the step ${verb.toLowerCase()}: ${short(body.text)}`)
  const line = blocks
    .map((b) => String(obj(b.text).text ?? ''))
    .find((t) => t.includes(`${verb}* by <@UCONF>`))
  if (!line) problems.push(`no block says ${verb} by <@UCONF>: ${short(body.blocks, 300)}`)
  else {
    const at = Number(/<!date\^(\d+)\^/.exec(line)?.[1])
    if (!(Math.abs(at - Date.now() / 1000) < 300))
      problems.push(`the decision line does not say when as a Slack date token of now: ${short(line)}`)
  }
  problems.push(...slackMessageProblems(replaced))
  return problems
}

/**
 * The run's trace records who decided in Slack: the frame of the decision names the Slack user and team as the
 * deciding identity, and its comment says what was decided and by whom (the clicking user's name).
 */
async function decisionRecorded(
  ctx: CheckContext,
  runId: string,
  kind: string,
  said: RegExp,
): Promise<string[]> {
  const { frames } = await ctx.fx.readTrace(runId)
  const frame = frames.find((f) => f.kind === kind)
  if (!frame) return [`the trace of ${runId} has no ${kind} frame`]
  const detail = obj(frame.detail)
  const by = String(detail.decided_by ?? '')
  const comment = String(detail.comment ?? '')
  const problems: string[] = []
  if (!by.includes('UCONF') || !by.includes('TCONF'))
    problems.push(
      `the ${kind} frame's decided_by ${short(detail.decided_by)} does not name the Slack user UCONF of team TCONF`,
    )
  if (!said.test(comment) || !comment.includes('conformance'))
    problems.push(
      `the ${kind} frame's comment ${short(detail.comment)} does not say ${said.source} by conformance`,
    )
  return problems
}

export const slackChatChecks: Check[] = [
  {
    id: 'destinations.slack-approve-from-chat',
    title:
      'With approval_buttons (and its username and icon_emoji) a slack destination’s approval message ends with Approve and Deny buttons naming the run and step; a click signed with the signing secret decides the step, the trace naming the Slack user and team as the decider, and replaces the message through response_url; the same request sent again, one unsigned, signed otherwise or cut short, older than five minutes, stamped with no whole number of seconds, posted at an unknown destination or at one without a signing secret is 401 in the error envelope; a signed interaction that is no Approve or Deny click by a user of a button naming a run and step is acknowledged (200), changes nothing and answers no one; a click naming a run the workspace cannot decide is told so alone (ephemeral), otherwise than a click on a decided step',
    level: 'profile',
    clauses: ['S6.5'],
    async run(ctx) {
      const receiver = receiverUrl(ctx)
      const tag = ctx.name('slack-chat')
      const signing = randomBytes(16).toString('hex')
      const created = await ctx.http.post('/v1/destinations', {
        name: tag,
        type: 'slack',
        events: ['run.awaiting_approval'],
        config: { approval_buttons: true, username: 'conformance-bot', icon_emoji: ':robot_face:' },
        secrets: {
          webhook_url: `${receiver}/T0CONF/B0CONF/conf${randomBytes(8).toString('hex')}/${tag}`,
          signing_secret: signing,
        },
      })
      if (created.status === 404 || created.status === 405)
        skip('the deployment has no /v1/destinations (no chat destinations declared)')
      expectStatus(created, 201, 'creating a slack destination with approval_buttons')
      const id = ownId(created.body, 'destination')
      assert(id, `the destination answer has no destination_id: ${short(created.body)}`)
      ctx.cleanup(`delete destination ${id}`, (http) => http.delete(`/v1/destinations/${id}`))
      assert(!created.text.includes(signing), 'the creation answer shows the signing secret')

      const { runId, agentId } = await ctx.fx.awaitingRun()
      const message = await ctx.receiver!.waitFor(
        (d) => atTag(tag)(d) && d.raw.includes(runId),
        ctx.config.waitMs,
      )
      if (!message?.body)
        fail(
          `no Slack message about run ${runId}'s approval reached the receiver within ${ctx.config.waitMs} ms`,
        )
      const shown = message.body
      // The sender's name and emoji the destination sets, which a Slack app lets an incoming webhook override.
      if (message.body.username !== 'conformance-bot' || message.body.icon_emoji !== ':robot_face:')
        fail(
          `the message does not carry the destination's username and icon_emoji: ${short({ username: message.body.username, icon_emoji: message.body.icon_emoji })}`,
        )
      // What the profile documents of an approval message (docs/events.md): a header saying what happened, the facts
      // (the agent, the run, the step), the pending action, and a context line with the kind, event id and time.
      const blocks = blocksOf(message.body)
      const texts = (type: string) =>
        blocks
          .filter((b) => b.type === type)
          .flatMap((b) => [
            String(obj(b.text).text ?? ''),
            ...[
              ...(Array.isArray(b.fields) ? b.fields : []),
              ...(Array.isArray(b.elements) ? b.elements : []),
            ].map((f: unknown) => String(obj(f).text ?? '')),
          ])
      const missing = [
        ['a header saying Approval needed', texts('header').some((t) => t.includes('Approval needed'))],
        [
          'the agent among the facts',
          texts('section').some((t) => /\*Agent\*/.test(t) && t.includes(agentId)),
        ],
        ['the run among the facts', texts('section').some((t) => /\*Run\*/.test(t) && t.includes(runId))],
        ['the pending action', texts('section').some((t) => /pending action/i.test(t))],
        ['a context line naming the kind', texts('context').some((t) => t.includes('run.awaiting_approval'))],
      ]
        .filter(([, ok]) => !ok)
        .map(([what]) => what)
      if (missing.length > 0)
        fail(`the approval message lacks ${missing.join(', ')}: ${short(message.body.blocks, 400)}`)
      // The message with its buttons is a Block Kit message too: Slack refuses the whole of it for one bad block.
      const malformed = slackMessageProblems(message)
      assert(malformed.length === 0, `the approval message with buttons: ${malformed.join('; ')}`)
      const approve = buttonOf(shown, 'Approve')
      const deny = buttonOf(shown, 'Deny')
      if (!approve || !deny)
        fail(`the approval message has no Approve and Deny buttons: ${short(message.body.blocks, 400)}`)
      let target: Json = {}
      try {
        target = obj(JSON.parse(String(approve.value)))
      } catch {
        fail(`the Approve button's value is not JSON naming the run and step: ${short(approve.value)}`)
      }
      assert(
        target.run_id === runId && typeof target.step_id === 'string' && deny.value === approve.value,
        `the buttons' value ${short(approve.value)} does not name run ${runId} and its step (Deny's: ${short(deny.value)})`,
      )

      assert(
        texts('section').some((t) => t.includes(String(target.step_id))),
        `the approval message does not name step ${String(target.step_id)} among its facts`,
      )
      const responseTag = `${tag}-response`
      /** A Slack interaction request: its form body, its X-Slack-Request-Timestamp and X-Slack-Signature (if any). */
      type Interaction = { body: string; ts: string; signature?: string }
      /** The payload Slack posts for a click of `button` in `shown` (the message as Slack shows it) by `user`. */
      const clickPayload = (shown: Json, button: Json, user: string, respondTo: string): Json => {
        const shownActions = blocksOf(shown).find((b) => b.type === 'actions')
        return {
          type: 'block_actions',
          user: { id: user, username: 'conformance' },
          team: { id: 'TCONF' },
          actions: [
            {
              type: 'button',
              action_id: button.action_id,
              block_id: shownActions?.block_id,
              value: button.value,
            },
          ],
          response_url: `${receiver}/${respondTo}`,
          // As Slack sends it back: every block has a block_id, one Slack made up where the sender gave none.
          message: {
            ...shown,
            blocks: blocksOf(shown).map((b, i) => ({ block_id: `slk${i}`, ...b })),
          },
        }
      }
      /** An interaction carrying `payload` as Slack's form body, made `ageSeconds` ago and signed by `signature`. */
      const interaction = (
        payload: Json,
        signature: (ts: string, body: string) => string,
        ageSeconds = 0,
      ): Interaction => {
        const body = new URLSearchParams({ payload: JSON.stringify(payload) }).toString()
        const ts = String(Math.floor(Date.now() / 1000) - ageSeconds)
        return { body, ts, signature: signature(ts, body) }
      }
      /**
       * A click of `button` in `shown` by `user`, answered at `respondTo`, made `ageSeconds` ago and signed by
       * `signature`.
       */
      const clickOf = (
        shown: Json,
        button: Json,
        user: string,
        respondTo: string,
        signature: (ts: string, body: string) => string,
        ageSeconds = 0,
      ): Interaction => interaction(clickPayload(shown, button, user, respondTo), signature, ageSeconds)
      /** Posts an interaction as Slack does, to the interaction URL of destination `to`. */
      const post = (to: string, sent: Interaction) =>
        ctx.http.post(`/integrations/slack/${to}/interactions`, undefined, {
          rawBody: sent.body,
          token: null,
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            'x-slack-request-timestamp': sent.ts,
            ...(sent.signature === undefined ? {} : { 'x-slack-signature': sent.signature }),
          },
        })
      const signed = (ts: string, body: string) => slackSignature(signing, ts, body)
      /** The Approve click on the approval message, signed by `signature`, made `ageSeconds` ago. */
      const approveClick = (signature: (ts: string, body: string) => string, ageSeconds = 0) =>
        clickOf(shown, approve, 'UCONF', responseTag, signature, ageSeconds)
      /** A refused interaction: 401 in the error envelope (code `unauthenticated`), whatever the reason. */
      const refusedAs401 = async (what: string, to: string, sent: Interaction) => {
        const res = await post(to, sent)
        assert(res.status === 401, `${what} answered ${res.status}, not 401`)
        const problems = envelopeProblems(res.body)
        if (problems.length === 0 && obj(obj(res.body).error).code !== 'unauthenticated')
          problems.push(`error.code is ${short(obj(obj(res.body).error).code)}, not unauthenticated`)
        assert(problems.length === 0, `${what} answered 401 ${problems.join('; ')}`)
      }
      await refusedAs401(
        'a click signed with another secret',
        id,
        approveClick((ts, body) => slackSignature(`${signing}x`, ts, body)),
      )
      // Signed with the secret, but more than five minutes old (Slack's own tolerance for replays): 401.
      await refusedAs401('a signed click six minutes old', id, approveClick(signed, 6 * 60))
      // No signature at all, and one cut short: 401 (never a failure of the server's comparison).
      await refusedAs401('a click without X-Slack-Signature', id, {
        ...approveClick(signed),
        signature: undefined,
      })
      await refusedAs401(
        'a click whose signature is cut short',
        id,
        approveClick((ts, body) => signed(ts, body).slice(0, 20)),
      )
      // A timestamp that is no count of seconds, signed as sent: no time to judge its age by, so no verified click.
      const fresh = approveClick(signed)
      const odd = `${fresh.ts}.5`
      await refusedAs401('a click whose X-Slack-Request-Timestamp is no whole number of seconds', id, {
        ...fresh,
        ts: odd,
        signature: signed(odd, fresh.body),
      })
      // Signed with the secret, posted at a destination that does not exist: 401, as nothing can verify it.
      await refusedAs401(
        "a signed click at an unknown destination's interaction URL",
        'dst_conformance_unknown',
        approveClick(signed),
      )
      // A slack destination without a signing secret takes no interaction, however it is signed.
      // Messaging about this check's agent alone, so it stays quiet for the rest of the suite run.
      const plain = await slackDestination(ctx, ['run.awaiting_approval'], 'slack-without-signing-secret', {
        agentIds: [agentId],
      })
      await refusedAs401(
        'a click at a slack destination that has no signing secret',
        plain.id,
        approveClick((ts, body) => slackSignature('', ts, body)),
      )
      const run = await ctx.http.get(`/v1/runs/${runId}`)
      assert(
        obj(run.body).status === 'awaiting_approval',
        `a forged or stale click changed the run: it is ${short(obj(run.body).status)}`,
      )
      // Signed, but not a button click of an approval message: answered 200 (Slack wants every interaction
      // acknowledged) and ignored.
      const ignoredTag = `${tag}-ignored`
      const retyped = (edit: (payload: Json) => Json): Interaction =>
        interaction(edit(clickPayload(shown, approve, 'UCONF', ignoredTag)), signed)
      const ignored: [string, Interaction][] = [
        ['a signed view_submission', retyped((p) => ({ ...p, type: 'view_submission' }))],
        [
          'a signed click of a button that names no run',
          retyped((p) => ({ ...p, actions: [{ ...obj((p.actions as unknown[])[0]), value: '{}' }] })),
        ],
        ['a signed click by no user', retyped(({ user: _user, ...p }) => p)],
        [
          'a signed click of a button that is neither Approve nor Deny',
          retyped((p) => ({
            ...p,
            actions: [{ ...obj((p.actions as unknown[])[0]), action_id: 'conformance_other_button' }],
          })),
        ],
        [
          'a signed click of a button that names the run but no step',
          retyped((p) => ({
            ...p,
            actions: [{ ...obj((p.actions as unknown[])[0]), value: JSON.stringify({ run_id: runId }) }],
          })),
        ],
      ]
      for (const [what, sent] of ignored) {
        const res = await post(id, sent)
        assert(res.status === 200, `${what} answered ${res.status}, not 200 (acknowledged, ignored)`)
      }
      const untouched = await ctx.http.get(`/v1/runs/${runId}`)
      assert(
        obj(untouched.body).status === 'awaiting_approval',
        `an interaction that is no click of the approval's button decided the run: it is ${short(obj(untouched.body).status)}`,
      )
      const approved = approveClick(signed)
      const clicked = await post(id, approved)
      assert(
        clicked.status === 200,
        `a click signed with the signing secret answered ${clicked.status}, not 200`,
      )
      // The very same request again (its signature and timestamp too), as an attacker who saw it would send it.
      const replay = await post(id, approved)
      assert(replay.status === 401, `the same signed click sent again answered ${replay.status}, not 401`)
      const replaced = await ctx.receiver!.waitFor(atTag(responseTag), ctx.config.waitMs)
      if (!replaced?.body)
        fail(`no replacement message reached the click's response_url within ${ctx.config.waitMs} ms`)
      const problems = decidedProblems(replaced, shown, runId, 'Approved')
      const after = await ctx.http.get(`/v1/runs/${runId}`)
      if (obj(after.body).status === 'awaiting_approval') problems.push('the run still awaits approval')
      problems.push(...(await decisionRecorded(ctx, runId, 'approval.granted', /approved/i)))
      assert(problems.length === 0, `after the Approve click: ${problems.join('; ')}`)

      // A second click on the decided message (another person, the message not yet replaced on their screen)
      // changes nothing, and says so to that person alone: an ephemeral answer that leaves the message as it is.
      const againTag = `${tag}-again`
      const again = await post(id, clickOf(shown, approve, 'UCONF2', againTag, signed))
      assert(again.status === 200, `a second signed click answered ${again.status}, not 200`)
      const told = await ctx.receiver!.waitFor(atTag(againTag), ctx.config.waitMs)
      if (!told?.body)
        fail(
          `no answer to a click on the decided step reached its response_url within ${ctx.config.waitMs} ms`,
        )
      assert(
        told.body.response_type === 'ephemeral' &&
          told.body.replace_original === false &&
          typeof told.body.text === 'string' &&
          told.body.text.includes(String(target.step_id)),
        `a click on the decided step was answered ${short(told.body, 300)}, not an ephemeral message naming step ${String(target.step_id)} that leaves the original in place`,
      )

      // A signed click on a button naming a run the destination's workspace cannot decide (none such): nothing
      // changes, and the clicking person alone is told so, the run named.
      const unknownTag = `${tag}-unknown`
      const unknownRun = 'run_conformance_unknown'
      const foreign = clickOf(
        shown,
        { ...approve, value: JSON.stringify({ run_id: unknownRun, step_id: target.step_id }) },
        'UCONF',
        unknownTag,
        signed,
      )
      const foreignRes = await post(id, foreign)
      assert(
        foreignRes.status === 200,
        `a signed click naming an unknown run answered ${foreignRes.status}, not 200`,
      )
      const foreignTold = await ctx.receiver!.waitFor(atTag(unknownTag), ctx.config.waitMs)
      assert(
        foreignTold?.body?.response_type === 'ephemeral' &&
          foreignTold.body.replace_original === false &&
          String(foreignTold.body.text).includes(unknownRun),
        `a click naming an unknown run was answered ${short(foreignTold?.body, 300)}, not an ephemeral message naming run ${unknownRun} that leaves the original in place`,
      )
      // Each says why nothing changed: a step decided already is not a run the workspace cannot decide.
      assert(
        String(foreignTold.body.text).replaceAll(unknownRun, '<run>') !==
          String(told.body.text).replaceAll(runId, '<run>'),
        `a click naming an unknown run and one on a decided step were told the same: ${short(told.body.text)}`,
      )
      // An interaction acknowledged and ignored changes nothing, and answers no one at its response_url.
      const answeredIgnored = ctx.receiver!.deliveries.filter(atTag(ignoredTag))
      assert(
        answeredIgnored.length === 0,
        `an ignored interaction was answered at its response_url: ${short(answeredIgnored[0]?.body, 300)}`,
      )

      // Deny on another run's message: that step is rejected and the message says who denied it.
      const denied = await ctx.fx.awaitingRun()
      const denyMessage = await ctx.receiver!.waitFor(
        (d) => atTag(tag)(d) && d.raw.includes(denied.runId),
        ctx.config.waitMs,
      )
      if (!denyMessage?.body)
        fail(
          `no Slack message about run ${denied.runId}'s approval reached the receiver within ${ctx.config.waitMs} ms`,
        )
      const denyButton = buttonOf(denyMessage.body, 'Deny')
      if (!denyButton) fail(`run ${denied.runId}'s approval message has no Deny button`)
      const denyTag = `${tag}-denied`
      const deniedClick = await post(id, clickOf(denyMessage.body, denyButton, 'UCONF', denyTag, signed))
      assert(deniedClick.status === 200, `a signed Deny click answered ${deniedClick.status}, not 200`)
      const deniedShown = await ctx.receiver!.waitFor(atTag(denyTag), ctx.config.waitMs)
      if (!deniedShown?.body)
        fail(`no replacement message reached the Deny click's response_url within ${ctx.config.waitMs} ms`)
      const denyProblems = decidedProblems(deniedShown, denyMessage.body, denied.runId, 'Denied')
      const deniedRun = obj((await ctx.http.get(`/v1/runs/${denied.runId}`)).body)
      if (deniedRun.status === 'awaiting_approval') denyProblems.push('the run still awaits approval')
      denyProblems.push(...(await decisionRecorded(ctx, denied.runId, 'approval.rejected', /denied/i)))
      assert(denyProblems.length === 0, `after the Deny click: ${denyProblems.join('; ')}`)
      await ctx.http.delete(`/v1/destinations/${id}`)
    },
  },
]
