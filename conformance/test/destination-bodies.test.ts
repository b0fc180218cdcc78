import { describe, expect, it } from 'vitest'
import {
  pagerDutyEventProblems,
  SLACK_MARKUP_NOTE,
  slackEscapingProblems,
  slackMessageProblems,
} from '../src/checks/destinations/bodies.js'
import { refusesType } from '../src/checks/destinations/index.js'
import type { Delivery } from '../src/receiver.js'

const delivered = (body: unknown, contentType = 'application/json'): Delivery => {
  const raw = JSON.stringify(body)
  return {
    receivedAt: 0,
    method: 'POST',
    path: '/hooks/x',
    headers: { 'content-type': contentType },
    raw,
    body: JSON.parse(raw) as Record<string, unknown>,
    status: 200,
  }
}

describe('Slack incoming-webhook messages', () => {
  it("accepts Slack's own examples: a text alone, and blocks with a text fallback", () => {
    expect(slackMessageProblems(delivered({ text: 'Hello, world.' }))).toEqual([])
    const blocks = [
      { type: 'header', text: { type: 'plain_text', text: 'Approval needed', emoji: true } },
      {
        type: 'section',
        text: { type: 'mrkdwn', text: 'Danny Torrence left the following review' },
        fields: [{ type: 'mrkdwn', text: '*Agent*\n`agt_1`' }],
      },
      { type: 'divider' },
      {
        type: 'actions',
        elements: [{ type: 'button', text: { type: 'plain_text', text: 'Approve' }, value: 'x' }],
      },
      { type: 'context', elements: [{ type: 'mrkdwn', text: 'run.awaiting_approval' }] },
    ]
    expect(slackMessageProblems(delivered({ text: 'fallback', blocks }))).toEqual([])
    expect(slackMessageProblems(delivered({ blocks }))).toEqual([])
  })

  it('finds what Slack refuses: no text nor blocks, undocumented types, empty or over-long texts, too many blocks', () => {
    const problems = (body: unknown) => slackMessageProblems(delivered(body)).join('; ')
    expect(problems({ blocks: [] })).toMatch(/neither a text nor any block/)
    expect(problems({ text: '', username: 'x' })).toMatch(/neither a text nor any block/)
    expect(problems({ text: 't', blocks: [{ type: 'paragraph' }] })).toMatch(/type paragraph/)
    expect(
      problems({ text: 't', blocks: [{ type: 'section', text: { type: 'markdown', text: 'x' } }] }),
    ).toMatch(/not plain_text or mrkdwn/)
    expect(
      problems({ text: 't', blocks: [{ type: 'section', text: { type: 'mrkdwn', text: '' } }] }),
    ).toMatch(/has no text/)
    expect(
      problems({ text: 't', blocks: [{ type: 'header', text: { type: 'mrkdwn', text: 'x' } }] }),
    ).toMatch(/not plain_text/)
    expect(
      problems({
        text: 't',
        blocks: [{ type: 'section', text: { type: 'mrkdwn', text: 'x'.repeat(3001) } }],
      }),
    ).toMatch(/3001 characters/)
    expect(problems({ text: 't', blocks: Array.from({ length: 51 }, () => ({ type: 'divider' })) })).toMatch(
      /51 blocks/,
    )
    expect(slackMessageProblems(delivered({ text: 't' }, 'text/plain')).join()).toMatch(/content-type/)
  })

  it('finds buttons a click could not name: an empty or over-long action_id, or one two buttons share', () => {
    const button = (action_id: string) => ({
      type: 'button',
      text: { type: 'plain_text', text: 'Approve' },
      action_id,
      value: 'x',
    })
    const actions = (...elements: unknown[]) => ({ text: 't', blocks: [{ type: 'actions', elements }] })
    const problems = (body: unknown) => slackMessageProblems(delivered(body)).join('; ')
    expect(problems(actions(button('approve'), button('deny')))).toBe('')
    expect(problems(actions(button('approve'), button('')))).toMatch(/action_id that is not 1 to 255/)
    expect(problems(actions(button('a'.repeat(256))))).toMatch(/action_id that is not 1 to 255/)
    expect(problems(actions(button('approve'), button('approve')))).toMatch(
      /action_id approve names more than one/,
    )
    expect(
      problems({
        text: 't',
        blocks: [actions(button('approve')).blocks[0], actions(button('approve')).blocks[0]],
      }),
    ).toMatch(/names more than one/)
  })
})

describe('PagerDuty Events API v2 events', () => {
  const key = 'R0123456789abcdef0123456789abcde'
  const trigger = {
    routing_key: key,
    event_action: 'trigger',
    dedup_key: 'agentops:ws_1:run_1',
    payload: { summary: 'Approval needed: run run_1', source: 'agentops:ws_1', severity: 'warning' },
  }

  it("accepts PagerDuty's documented trigger and resolve", () => {
    expect(pagerDutyEventProblems(delivered(trigger), key)).toEqual([])
    const resolve = { routing_key: key, event_action: 'resolve', dedup_key: 'agentops:ws_1:run_1' }
    expect(pagerDutyEventProblems(delivered(resolve), key)).toEqual([])
  })

  it('finds what PagerDuty refuses: another or no routing key, an unknown action or severity, a resolve with no key', () => {
    const problems = (body: unknown) => pagerDutyEventProblems(delivered(body), key).join('; ')
    expect(problems({ ...trigger, routing_key: 'other' })).toMatch(/not the one/)
    const { routing_key: _k, ...keyless } = trigger
    expect(problems(keyless)).toMatch(/no routing_key/)
    expect(problems({ ...trigger, event_action: 'open' })).toMatch(/event_action/)
    expect(problems({ ...trigger, payload: { ...trigger.payload, severity: 'high' } })).toMatch(/severity/)
    expect(problems({ ...trigger, payload: { ...trigger.payload, summary: 'x'.repeat(1025) } })).toMatch(
      /summary/,
    )
    expect(problems({ ...trigger, payload: { ...trigger.payload, source: '' } })).toMatch(/source/)
    expect(problems({ routing_key: key, event_action: 'resolve' })).toMatch(/without a dedup_key/)
  })
})

describe('a destination type the deployment does not have', () => {
  const answer = (status: number, body: unknown) => ({ status, text: JSON.stringify(body) })
  it('is a refusal naming the type field (the check skips), not one naming a URL (the check fails)', () => {
    const unknownType = {
      error: { code: 'invalid_request', message: 'type must be one of cloudevents, nats' },
    }
    expect(refusesType(answer(400, unknownType))).toBe(true)
    const privateUrl = {
      error: { code: 'invalid_request', message: 'secrets.webhook_url: a private address' },
    }
    expect(refusesType(answer(400, privateUrl))).toBe(false)
    expect(refusesType(answer(429, unknownType))).toBe(false)
  })
})

describe("a run's input shown in a Slack message", () => {
  const escaped = SLACK_MARKUP_NOTE.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
  const section = (text: string) => ({ blocks: [{ type: 'section', text: { type: 'mrkdwn', text } }] })
  const problems = (body: unknown) => slackEscapingProblems(delivered(body), SLACK_MARKUP_NOTE)

  it('passes escaped, in JSON with its own escapes, in plain text, or not shown at all', () => {
    expect(problems(section(`*Pending action*\n\`\`\`{"note":"${escaped}"}\`\`\``))).toEqual([])
    // Go's encoding/json writes <, > and & as \u escapes: Slack shows them as such, and nothing pings.
    const goJson = SLACK_MARKUP_NOTE.replace(/</g, '\\u003c')
      .replace(/>/g, '\\u003e')
      .replace(/&/g, '\\u0026')
    expect(problems(section(goJson))).toEqual([])
    // plain_text is never read as markup.
    expect(
      problems({ blocks: [{ type: 'header', text: { type: 'plain_text', text: SLACK_MARKUP_NOTE } }] }),
    ).toEqual([])
    expect(problems({ text: 'A run awaits approval', ...section('*Run* `run_1`') })).toEqual([])
  })

  it('finds markup sent as it came, in the text, a section or its fields, and characters lost', () => {
    expect(problems(section(SLACK_MARKUP_NOTE)).join()).toMatch(/unescaped \(<!channel>, <@U0CONF>, <https/)
    expect(problems({ text: `input: ${SLACK_MARKUP_NOTE}` })).toHaveLength(1)
    expect(
      problems({ blocks: [{ type: 'section', fields: [{ type: 'mrkdwn', text: SLACK_MARKUP_NOTE }] }] }),
    ).toHaveLength(1)
    for (const lost of [
      escaped.replace(/&amp;/g, ''),
      escaped.replace(/&lt;/g, ''),
      escaped.replace(/&gt;/g, ''),
    ])
      expect(problems(section(lost)).join()).toMatch(/does not read back as/)
  })
})
