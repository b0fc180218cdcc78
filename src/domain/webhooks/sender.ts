import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { isIP } from 'node:net'
import { guardedLookup, hostOf, isNonPublicAddress, PrivateAddressError } from './url-guard.js'

export interface SendResult {
  /** The receiver's status code, when it answered in time. */
  statusCode: number | null
  /** Why the attempt failed without a 2xx (time-out, refused, private address, non-2xx status). */
  error: string | null
  ok: boolean
}

export interface SendOptions {
  timeoutMs: number
  allowPrivate: boolean
  /** Ends the attempt early (server shutdown). */
  signal?: AbortSignal
}

/** Reads at most this much of a receiver's answer: only the status matters, the rest is drained. */
const MAX_RESPONSE_BYTES = 64 * 1024

/** One POST attempt; never throws, so the dispatcher records every outcome the same way. */
export function sendWebhook(
  target: string,
  headers: Record<string, string>,
  rawBody: string,
  options: SendOptions,
): Promise<SendResult> {
  return new Promise((resolve) => {
    let settled = false
    let timer: NodeJS.Timeout | undefined
    const finish = (result: SendResult) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      options.signal?.removeEventListener('abort', onAbort)
      resolve(result)
    }
    let url: URL
    try {
      url = new URL(target)
    } catch {
      return finish({ ok: false, statusCode: null, error: 'invalid url' })
    }
    const host = hostOf(url)
    if (!options.allowPrivate && isIP(host) !== 0 && isNonPublicAddress(host)) {
      return finish({ ok: false, statusCode: null, error: new PrivateAddressError(host).message })
    }
    const body = Buffer.from(rawBody, 'utf8')
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest
    const req = send(url, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(body.length) },
      ...(options.allowPrivate ? {} : { lookup: guardedLookup }),
      agent: false,
    })
    // The whole attempt (connect, headers, body) must fit in the time-out, not just each idle gap.
    timer = setTimeout(() => {
      finish({ ok: false, statusCode: null, error: `timed out after ${options.timeoutMs} ms` })
      req.destroy()
    }, options.timeoutMs)
    const onAbort = () => {
      finish({ ok: false, statusCode: null, error: 'aborted: the server is shutting down' })
      req.destroy()
    }
    if (options.signal?.aborted) onAbort()
    options.signal?.addEventListener('abort', onAbort)
    req.on('error', (err) => {
      finish({ ok: false, statusCode: null, error: describe(err) })
    })
    req.on('response', (res) => {
      const status = res.statusCode ?? 0
      let seen = 0
      res.on('data', (chunk: Buffer) => {
        seen += chunk.length
        if (seen > MAX_RESPONSE_BYTES) res.destroy()
      })
      const done = () => {
        const ok = status >= 200 && status < 300
        finish({ ok, statusCode: status, error: ok ? null : `receiver answered ${status}` })
      }
      res.on('end', done)
      res.on('close', done)
      res.on('error', done)
    })
    req.end(body)
  })
}

function describe(err: Error & { code?: string }): string {
  if (err instanceof PrivateAddressError) return err.message
  return err.code ? `${err.code}: ${err.message}` : err.message
}
