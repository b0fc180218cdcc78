import { type FetchFunction, IncomingWebhook, IncomingWebhookHTTPError } from '@slack/webhook'
import { retryAfterMs } from '../../domain/destinations/answer.js'
import { asText } from '../../domain/destinations/json-values.js'
import type { DestinationTransport } from '../../domain/destinations/ports.js'
import type { OutboundAnswer, OutboundHttp } from '../../domain/outbound.js'
import type { NotDelivered, SendResult } from '../../domain/webhooks/sender.js'
import { slackMessage } from './slack-message.js'

const MAX_ANSWER_BYTES = 16 * 1024

type FetchResponse = Awaited<ReturnType<FetchFunction>>

/**
 * A `fetch` for @slack/webhook that goes through the guarded outbound port (the private-address check after DNS,
 * no redirects, the attempt's time-out and shutdown signal), keeping the last answer: the library's HTTP error
 * carries the status and body but not the headers, and a 429's Retry-After is in the headers.
 */
function guardedFetch(
  outbound: OutboundHttp,
  context: { timeoutMs: number; signal?: AbortSignal | undefined },
  last: { answer?: OutboundAnswer },
): FetchFunction {
  return async (url, init) => {
    const answer = await outbound.post({
      url: String(url),
      // Stryker disable next-line OptionalChaining: equivalent: @slack/webhook always passes its init, with headers.
      headers: init?.headers ?? {},
      // Stryker disable next-line ConditionalExpression,OptionalChaining: equivalent: @slack/webhook's body is always its JSON string.
      body: typeof init?.body === 'string' ? init.body : '',
      timeoutMs: context.timeoutMs,
      maxAnswerBytes: MAX_ANSWER_BYTES,
      // Stryker disable next-line ObjectLiteral: the shutdown signal: it ends an attempt only when the server stops.
      ...(context.signal ? { signal: context.signal } : {}),
    })
    last.answer = answer
    if (!answer.ok) throw new Error(answer.message)
    return answerAsResponse(answer, String(url))
  }
}

function answerAsResponse(answer: Extract<OutboundAnswer, { ok: true }>, url: string): FetchResponse {
  // Stryker disable next-line LogicalOperator: equivalent: these headers feed only the response's headers, which @slack/webhook never reads.
  const headers = answer.headers ?? {}
  return {
    // Stryker disable next-line ConditionalExpression: equivalent: an answer's status is never below 200 (Node reads past 1xx).
    ok: answer.status >= 200 && answer.status < 300,
    status: answer.status,
    // Stryker disable next-line StringLiteral: equivalent: @slack/webhook reads a response's ok, status and text() only.
    statusText: '',
    url,
    // Stryker disable next-line all: equivalent: @slack/webhook reads a response's ok, status and text() only (its result, the text, is not used).
    headers: { get: (name) => headers[name.toLowerCase()] ?? null, entries: () => Object.entries(headers) },
    // Stryker disable next-line all: the same: never read.
    arrayBuffer: async () => new TextEncoder().encode(answer.body).buffer,
    // Stryker disable next-line all: the same: never read.
    json: async () => JSON.parse(answer.body),
    // Stryker disable next-line all: the same: read into the send's result (unused) and a failure's words (the log's last_error).
    text: async () => answer.body,
  }
}

export interface SlackTransportOptions {
  /** The server's public URL, for links to runs. */
  publicUrl?: string | undefined
  now?: () => number
}

/**
 * Slack incoming webhooks (and Slack-compatible ones: Mattermost, Rocket.Chat) through Slack's @slack/webhook, one
 * Block Kit message per event. The library's own retries stay off: the outbox retries, and honours a 429's
 * Retry-After. The webhook URL is a credential: no error built here quotes it.
 */
export function slackTransport(
  outbound: OutboundHttp,
  options: SlackTransportOptions = {},
): DestinationTransport {
  const now = options.now ?? Date.now
  return {
    async send(destination, event, context): Promise<SendResult> {
      const last: { answer?: OutboundAnswer } = {}
      const config = destination.config
      const webhook = new IncomingWebhook(String(destination.secrets.webhook_url), {
        fetch: guardedFetch(outbound, context, last),
        retryConfig: { retries: 0 },
        // An absent setting is undefined, which the JSON body leaves out.
        username: asText(config.username) ?? undefined,
        icon_emoji: asText(config.icon_emoji) ?? undefined,
      })
      const message = slackMessage(event.kind, event.payload, {
        publicUrl: options.publicUrl,
        approvalButtons: config.approval_buttons === true,
      })
      try {
        await webhook.send(message)
        // Stryker disable next-line OptionalChaining: equivalent: a sent message had an answer.
        return { ok: true, statusCode: last.answer?.ok ? last.answer.status : 200, error: null }
      } catch (err) {
        if (err instanceof IncomingWebhookHTTPError) {
          const result: NotDelivered = {
            ok: false,
            statusCode: err.statusCode,
            error: `Slack answered ${err.statusCode}${err.body ? ` ${err.body.slice(0, 200)}` : ''}`,
          }
          // Stryker disable next-line OptionalChaining: equivalent: an HTTP error comes from an answer.
          const headers = last.answer?.ok ? last.answer.headers : undefined
          if (err.statusCode === 429 || err.statusCode === 503) {
            // Stryker disable next-line OptionalChaining: equivalent: an answer's headers are always there.
            const wait = retryAfterMs(headers?.['retry-after'], now())
            // Stryker disable next-line ConditionalExpression: equivalent: an undefined retryAfterMs is an absent one.
            if (wait !== undefined) result.retryAfterMs = wait
          }
          return result
        }
        // The outbound port's own message (time-out, refused address, unreachable), never the URL.
        const reason = last.answer && !last.answer.ok ? last.answer.message : 'request failed'
        return { ok: false, statusCode: null, error: reason }
      }
    },
  }
}
