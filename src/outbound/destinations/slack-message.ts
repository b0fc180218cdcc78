import type { IncomingWebhookSendArguments } from '@slack/webhook'
import { describeEvent, pendingAction, runLink } from '../../domain/destinations/describe.js'
import { asObject } from '../../domain/destinations/json-values.js'
import { APPROVE_ACTION, DENY_ACTION, type SlackActor } from '../../domain/destinations/slack-interactions.js'
import type { EventKind } from '../../domain/webhooks/body.js'

export type SlackMessage = IncomingWebhookSendArguments
type SlackBlock = NonNullable<SlackMessage['blocks']>[number]

const EMOJI: Partial<Record<EventKind, string>> = {
  'run.awaiting_approval': ':raised_hand:',
  'run.failed': ':x:',
  'policy.denied': ':no_entry:',
  'run.succeeded': ':white_check_mark:',
  'run.cancelled': ':heavy_minus_sign:',
  'task.failed': ':x:',
}

/** Slack's mrkdwn control characters, escaped as its docs ask (&, <, >). */
export function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}

const cut = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`)

export interface SlackMessageOptions {
  /** The server's public URL: the run's id links to it. */
  publicUrl?: string | undefined
  /** Approve and Deny buttons on approval messages. */
  approvalButtons?: boolean
}

/** What the buttons carry back: which run's step is decided (Slack returns `value` verbatim). */
export function approvalValue(runId: string, stepId: string): string {
  return JSON.stringify({ run_id: runId, step_id: stepId })
}

/**
 * One Block Kit message per event: a header saying what happened, the sentence naming agent and run, the facts,
 * for an approval the pending action's preview (and the buttons when enabled), and the event id. `text` is the
 * notification and the fallback for Slack-compatible receivers that draw no blocks (Mattermost, Rocket.Chat).
 */
export function slackMessage(
  kind: EventKind,
  payload: Record<string, unknown>,
  options: SlackMessageOptions = {},
): SlackMessage {
  const d = describeEvent(kind, payload)
  const link = runLink(options.publicUrl, d.runId)
  // A test send says so in the header and in the notification, so no one acts on it.
  const marker = payload.test === true ? ' (test)' : ''
  const title = `${EMOJI[kind] ?? ':information_source:'} ${d.title}${marker}`
  const fields: { type: 'mrkdwn'; text: string }[] = []
  if (d.agentId) fields.push({ type: 'mrkdwn', text: `*Agent*\n\`${escapeMrkdwn(d.agentId)}\`` })
  if (d.runId) {
    const run = escapeMrkdwn(d.runId)
    fields.push({ type: 'mrkdwn', text: `*Run*\n${link ? `<${link}|${run}>` : `\`${run}\``}` })
  }
  for (const [label, value] of d.facts) {
    if (fields.length >= 10) break
    fields.push({ type: 'mrkdwn', text: cut(`*${label}*\n${escapeMrkdwn(value)}`, 2000) })
  }
  const blocks: SlackBlock[] = [
    { type: 'header', text: { type: 'plain_text', text: cut(title, 150), emoji: true } },
    {
      type: 'section',
      text: { type: 'mrkdwn', text: cut(escapeMrkdwn(d.headline), 3000) },
      ...(fields.length ? { fields } : {}),
    },
  ]
  const action = kind === 'run.awaiting_approval' ? pendingAction(payload) : null
  if (action) {
    const input = cut(action.input.replace(/```/g, '`\u200b``'), 2700)
    blocks.push({
      type: 'section',
      text: {
        type: 'mrkdwn',
        text: `*Pending action:* \`${escapeMrkdwn(action.tool)}\`\n\`\`\`${escapeMrkdwn(input)}\`\`\`${action.truncated ? '\n_(input cut short)_' : ''}`,
      },
    })
  }
  const stepId = typeof payload.step_id === 'string' ? payload.step_id : null
  if (kind === 'run.awaiting_approval' && options.approvalButtons && d.runId && stepId) {
    const value = approvalValue(d.runId, stepId)
    blocks.push({
      type: 'actions',
      block_id: APPROVAL_BLOCK,
      elements: [
        {
          type: 'button',
          action_id: APPROVE_ACTION,
          style: 'primary',
          text: { type: 'plain_text', text: 'Approve' },
          value,
        },
        {
          type: 'button',
          action_id: DENY_ACTION,
          style: 'danger',
          text: { type: 'plain_text', text: 'Deny' },
          value,
        },
      ],
    })
  }
  blocks.push({
    type: 'context',
    elements: [
      {
        type: 'mrkdwn',
        text: `${escapeMrkdwn(String(payload.event))} · \`${escapeMrkdwn(String(payload.id))}\` · ${escapeMrkdwn(String(payload.ts))}`,
      },
    ],
  })
  return { text: cut(`${d.title}${marker}: ${d.headline}`, 3000), blocks }
}

/** The block id of the approval buttons: a decided message drops that block. */
export const APPROVAL_BLOCK = 'agentops_approval'

/**
 * The approval message once decided: the blocks Slack sent back with the click (the message as shown), without
 * the buttons, and a line saying who decided and when; `replace_original` so it replaces the message in place.
 */
export function decidedMessage(
  original: Record<string, unknown> | null,
  decision: 'approve' | 'reject',
  actor: SlackActor,
  at: number,
): Record<string, unknown> {
  const blocks = Array.isArray(original?.blocks)
    ? original.blocks.filter((b: unknown) => asObject(b).block_id !== APPROVAL_BLOCK)
    : []
  const verb = decision === 'approve' ? ':white_check_mark: *Approved*' : ':no_entry_sign: *Denied*'
  const when = `<!date^${Math.floor(at / 1000)}^{date_short_pretty} at {time}|${new Date(at).toISOString()}>`
  const line = `${verb} by <@${escapeMrkdwn(actor.userId)}> ${when}`
  const text = typeof original?.text === 'string' ? original.text : 'Approval'
  return {
    replace_original: true,
    text: `${text} (${decision === 'approve' ? 'approved' : 'denied'} by ${actor.userName})`,
    blocks: [...blocks, { type: 'section', text: { type: 'mrkdwn', text: line } }],
  }
}
