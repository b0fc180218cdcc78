import type { InteractionLog, SlackResponder } from '../../domain/destinations/slack-interactions.js'
import type { OutboundHttp } from '../../domain/outbound.js'
import { decidedMessage } from './slack-message.js'

const TIMEOUT_MS = 10_000

/**
 * Answers Slack interactions through their `response_url` (Slack's hooks host, or a compatible server's), posted
 * through the destinations' guarded outbound port. A failure is logged, never thrown: the decision is recorded.
 */
export function slackResponder(outbound: OutboundHttp, log: InteractionLog): SlackResponder {
  const post = async (url: string, message: Record<string, unknown>) => {
    const answer = await outbound.post({
      url,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(message),
      timeoutMs: TIMEOUT_MS,
      maxAnswerBytes: 4096,
    })
    // Stryker disable next-line all: whether a failed update is logged: a log line, which no answer shows (Slack keeps its own message either way).
    if (!answer.ok || answer.status < 200 || answer.status >= 300)
      log.warn(
        { reason: answer.ok ? `answered ${answer.status}` : answer.message },
        'slack message update failed',
      )
  }
  return {
    decided: (url, original, decision, actor, at) => post(url, decidedMessage(original, decision, actor, at)),
    refused: (url, text) => post(url, { response_type: 'ephemeral', replace_original: false, text }),
  }
}
