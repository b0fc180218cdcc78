/**
 * What a destination's service documents for the bodies it accepts, as problems found in one request the suite's
 * receiver took in that service's place: Slack's incoming webhooks (a message of `text` and Block Kit `blocks`,
 * https://docs.slack.dev/messaging/sending-messages-using-incoming-webhooks, https://docs.slack.dev/reference/block-kit)
 * and PagerDuty's Events API v2 (https://developer.pagerduty.com/docs/events-api-v2/trigger-events). Only what
 * the service itself requires or limits is judged, never how the reference words a message.
 */
import { obj } from '../../http.js'
import type { Delivery } from '../../receiver.js'
import { short } from '../../wait.js'

/** Block Kit's block types (https://docs.slack.dev/reference/block-kit/blocks). */
const BLOCK_TYPES = new Set([
  'actions',
  'context',
  'divider',
  'file',
  'header',
  'image',
  'input',
  'markdown',
  'rich_text',
  'section',
  'table',
  'video',
])
/** Slack's limits: blocks per message, characters of a message's `text`. */
const MAX_BLOCKS = 50
const MAX_MESSAGE_TEXT = 40_000

const isText = (v: unknown): v is string => typeof v === 'string' && v !== ''

/** A Block Kit text object: `plain_text` or `mrkdwn`, non-empty, within `max` characters. */
function textObjectProblem(
  value: unknown,
  where: string,
  max: number,
  plainOnly = false,
): string | undefined {
  const t = obj(value)
  const types = plainOnly ? ['plain_text'] : ['plain_text', 'mrkdwn']
  if (!types.includes(String(t.type)))
    return `${where} is a text object of type ${String(t.type)}, not ${types.join(' or ')}`
  if (!isText(t.text)) return `${where} has no text`
  if (t.text.length > max) return `${where} is ${t.text.length} characters, more than Block Kit's ${max}`
  // A plain_text with `emoji: false` shows a :name: code as typed, not as its emoji.
  if (t.type === 'plain_text' && t.emoji === false && /:[a-z0-9_+-]+:/.test(t.text))
    return `${where} holds an emoji code but sets emoji: false, so Slack shows it as typed: ${short(t.text)}`
  return undefined
}

function blockProblems(block: Record<string, unknown>, where: string): (string | undefined)[] {
  const type = String(block.type)
  if (!BLOCK_TYPES.has(type)) return [`${where} is of type ${type}, which Block Kit does not document`]
  const out: (string | undefined)[] = []
  if (block.block_id !== undefined && (!isText(block.block_id) || block.block_id.length > 255))
    out.push(`${where} has a block_id that is not 1 to 255 characters`)
  switch (type) {
    case 'header':
      out.push(textObjectProblem(block.text, `${where} (header) text`, 150, true))
      break
    case 'section': {
      const fields = block.fields
      if (block.text === undefined && fields === undefined)
        out.push(`${where} (section) has neither text nor fields`)
      if (block.text !== undefined) out.push(textObjectProblem(block.text, `${where} (section) text`, 3000))
      if (fields !== undefined) {
        if (!Array.isArray(fields) || fields.length === 0 || fields.length > 10)
          out.push(`${where} (section) fields is not a list of 1 to 10 text objects`)
        else
          for (const [i, f] of fields.entries())
            out.push(textObjectProblem(f, `${where} (section) field ${i}`, 2000))
      }
      break
    }
    case 'context': {
      const elements = block.elements
      if (!Array.isArray(elements) || elements.length === 0 || elements.length > 10)
        out.push(`${where} (context) elements is not a list of 1 to 10 elements`)
      else
        elements.forEach((e, i) => {
          if (obj(e).type !== 'image') out.push(textObjectProblem(e, `${where} (context) element ${i}`, 3000))
        })
      break
    }
    case 'actions': {
      const elements = block.elements
      if (!Array.isArray(elements) || elements.length === 0 || elements.length > 25)
        out.push(`${where} (actions) elements is not a list of 1 to 25 elements`)
      else
        elements.forEach((e, i) => {
          const element = obj(e)
          if (element.type === 'button') {
            out.push(textObjectProblem(element.text, `${where} button ${i} text`, 75, true))
            // A button's style is primary, danger, or absent (the default look).
            if (element.style !== undefined && element.style !== 'primary' && element.style !== 'danger')
              out.push(`${where} button ${i} has style ${short(element.style)}, not primary or danger`)
            if (typeof element.value === 'string' && element.value.length > 2000)
              out.push(`${where} button ${i} value is more than 2000 characters`)
          }
          // An element's action_id (how a click names it back) is optional, and 1 to 255 characters when given.
          if (
            element.action_id !== undefined &&
            (!isText(element.action_id) || element.action_id.length > 255)
          )
            out.push(`${where} element ${i} has an action_id that is not 1 to 255 characters`)
        })
      break
    }
    case 'markdown':
      if (!isText(block.text) || block.text.length > 12_000)
        out.push(`${where} (markdown) text is not 1 to 12000 characters`)
      break
  }
  return out
}

/**
 * A Slack incoming-webhook message: a JSON body with a non-empty `text` or non-empty `blocks` (Slack refuses one
 * with neither: `no_text`), every block of a documented type within Block Kit's limits, at most 50 blocks.
 */
export function slackMessageProblems(d: Delivery): string[] {
  const problems: string[] = []
  if (d.headers['content-type']?.startsWith('application/json') !== true)
    problems.push(`content-type ${d.headers['content-type']}, not application/json`)
  const body = d.body
  if (body === undefined) return [...problems, `the body is not a JSON object: ${d.raw.slice(0, 200)}`]
  const { text, blocks } = body
  if (text !== undefined && typeof text !== 'string') problems.push('text is not a string')
  if (typeof text === 'string' && text.length > MAX_MESSAGE_TEXT)
    problems.push(`text is ${text.length} characters, more than Slack's ${MAX_MESSAGE_TEXT}`)
  if (blocks !== undefined && !Array.isArray(blocks)) problems.push('blocks is not a list')
  const list = Array.isArray(blocks) ? blocks : []
  if (!isText(text) && list.length === 0)
    problems.push('the message has neither a text nor any block (Slack answers no_text)')
  if (list.length > MAX_BLOCKS) problems.push(`${list.length} blocks, more than Slack's ${MAX_BLOCKS}`)
  list.forEach((b, i) => {
    for (const p of blockProblems(obj(b), `block ${i}`)) if (p) problems.push(p)
  })
  // Block Kit: every action_id in a message is its own (a click names its element by it).
  const actionIds = list.flatMap((b) => {
    const elements = obj(b).elements
    return (Array.isArray(elements) ? elements : []).map((e) => obj(e).action_id).filter(isText)
  })
  const repeated = actionIds.filter((id, i) => actionIds.indexOf(id) !== i)
  if (repeated.length > 0) problems.push(`action_id ${short(repeated[0])} names more than one element`)
  return problems
}

/**
 * What a run's input carries for the Slack checks: Slack's markup for a channel ping, a user mention and a link, and
 * an ampersand, behind a marker that finds it in a message.
 */
export const SLACK_MARKUP_NOTE = 'CONFNOTE <!channel> <@U0CONF> & <https://conformance.invalid|open>'
const MARKUP = ['<!channel>', '<@U0CONF>', '<https://conformance.invalid']

/** The texts Slack reads as markup: the message's `text` and every mrkdwn text object of its blocks. */
function mrkdwnTexts(body: Record<string, unknown>): string[] {
  const texts: string[] = []
  if (typeof body.text === 'string' && body.mrkdwn !== false) texts.push(body.text)
  const add = (t: unknown) => {
    const o = obj(t)
    if (o.type === 'mrkdwn' && typeof o.text === 'string') texts.push(o.text)
  }
  for (const b of Array.isArray(body.blocks) ? body.blocks.map(obj) : []) {
    add(b.text)
    for (const f of Array.isArray(b.fields) ? b.fields : []) add(f)
    if (b.type === 'context') for (const e of Array.isArray(b.elements) ? b.elements : []) add(e)
  }
  return texts
}

/** A text as it reads once JSON's \u escapes and Slack's three entities are undone. */
const readBack = (text: string) =>
  text
    .replace(/\\u([0-9a-fA-F]{4})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')

/**
 * How a message shows a run's input that carries `note` (SLACK_MARKUP_NOTE): Slack reads &, < and > as markup in
 * mrkdwn text, so text it did not write must be sent as &amp;, &lt; and &gt;
 * (https://api.slack.com/reference/surfaces/formatting#escaping). Shown unescaped, the input pings the
 * channel, mentions a user and links; shown with characters lost, it is not the input. A message that does not show
 * the input has nothing to judge.
 */
export function slackEscapingProblems(d: Delivery, note: string): string[] {
  const problems: string[] = []
  for (const text of mrkdwnTexts(d.body ?? {})) {
    if (!text.includes(note.slice(0, note.indexOf(' ')))) continue
    const raw = MARKUP.filter((m) => text.includes(m))
    if (raw.length > 0)
      problems.push(
        `it shows the run's input with Slack markup unescaped (${raw.join(', ')}): Slack would ping, mention or link`,
      )
    else if (!readBack(text).includes(note))
      problems.push(
        `it shows the run's input as ${JSON.stringify(text.slice(0, 200))}, which does not read back as ${JSON.stringify(note)} (escape &, < and > as &amp;, &lt; and &gt;)`,
      )
  }
  return problems
}

export const PAGERDUTY_SEVERITIES = ['critical', 'error', 'warning', 'info']

/**
 * A PagerDuty Events API v2 event: `routing_key` the integration's, `event_action` trigger, acknowledge or
 * resolve, a `dedup_key` (at most 255 characters) when it acknowledges or resolves; a trigger's `payload` has a
 * summary of 1 to 1024 characters, a source and a severity of critical, error, warning or info.
 */
export function pagerDutyEventProblems(d: Delivery, routingKey: string): string[] {
  const problems: string[] = []
  if (d.headers['content-type']?.startsWith('application/json') !== true)
    problems.push(`content-type ${d.headers['content-type']}, not application/json`)
  const body = d.body
  if (body === undefined) return [...problems, `the body is not a JSON object: ${d.raw.slice(0, 200)}`]
  if (body.routing_key !== routingKey)
    problems.push(
      body.routing_key === undefined
        ? 'no routing_key'
        : 'routing_key is not the one the destination was given',
    )
  const action = body.event_action
  if (action !== 'trigger' && action !== 'acknowledge' && action !== 'resolve')
    problems.push(`event_action is ${JSON.stringify(action)}, not trigger, acknowledge or resolve`)
  const key = body.dedup_key
  if (key !== undefined && (!isText(key) || key.length > 255))
    problems.push('dedup_key is not 1 to 255 characters')
  if (action !== 'trigger' && key === undefined) problems.push(`a ${String(action)} without a dedup_key`)
  if (action === 'trigger') {
    const payload = obj(body.payload)
    if (!isText(payload.summary) || payload.summary.length > 1024)
      problems.push('payload.summary is not 1 to 1024 characters')
    if (!isText(payload.source)) problems.push('payload.source is missing')
    if (!PAGERDUTY_SEVERITIES.includes(String(payload.severity)))
      problems.push(
        `payload.severity is ${JSON.stringify(payload.severity)}, not ${PAGERDUTY_SEVERITIES.join(', ')}`,
      )
  }
  return problems
}
