import { promises as dns, type LookupAddress } from 'node:dns'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import type { OutboundAnswer, OutboundFailure, OutboundHttp, OutboundPost } from '../domain/outbound.js'
import { hostOf, isLocalName, isNeverAllowedAddress, isNonPublicAddress } from './addresses.js'
import {
  listedTarget,
  NO_PRIVATE_TARGETS,
  type OutboundPurpose,
  type PrivateTargets,
} from './private-targets.js'

/** Resolves a host name to every address it has (the system resolver unless a test gives another). */
export type Resolve = (hostname: string) => Promise<LookupAddress[]>

export interface OutboundOptions {
  /**
   * The private host:port pairs this client may call anyway (a local receiver); none by default. Link-local and
   * cloud metadata addresses stay refused for them too.
   */
  privateTargets?: PrivateTargets
  resolve?: Resolve
  /** Which addresses are refused; the IANA non-public ranges unless a test narrows them. */
  blocks?: (address: string) => boolean
}

const systemResolve: Resolve = (hostname) => dns.lookup(hostname, { all: true, verbatim: true })

class PrivateAddressError extends Error {
  readonly code = 'EPRIVATEADDRESS'
  constructor(address: string) {
    super(`refused to connect to non-public address ${address}`)
    this.name = 'PrivateAddressError'
  }
}

/**
 * The socket's own `lookup`: the name is resolved once, every answer is checked, and the socket connects to the
 * checked answers only. There is no separate resolution before the connect, so no DNS-rebinding window.
 */
function guardedLookup(resolve: Resolve, blocks: (address: string) => boolean): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (found) => {
        const family = options.family === 4 || options.family === 6 ? options.family : 0
        const addresses = family === 0 ? found : found.filter((a) => a.family === family)
        const bad = addresses.find((a) => blocks(a.address))
        if (bad) return callback(new PrivateAddressError(bad.address), [])
        const first = addresses[0]
        if (!first) {
          const err: NodeJS.ErrnoException = new Error(`no address for ${hostname}`)
          err.code = 'ENOTFOUND'
          return callback(err, [])
        }
        if (options.all) return callback(null, addresses)
        callback(null, first.address, first.family)
      },
      (err: NodeJS.ErrnoException) => callback(err, []),
    )
  }
}

function failed(failure: OutboundFailure, message: string): OutboundAnswer {
  return { ok: false, failure, message }
}

function describe(err: Error & { code?: string }): string {
  if (err instanceof PrivateAddressError) return err.message
  return err.code ? `${err.code}: ${err.message}` : err.message
}

/**
 * The server's outbound HTTP client; one per purpose (webhooks, destinations, `http` tools), each with its own
 * private targets. Redirects are never followed (a 3xx is the answer), so a public URL cannot bounce a call to a
 * private one. A URL whose host and port are listed may reach private addresses, never link-local or metadata ones.
 */
export function createOutboundHttp(options: OutboundOptions = {}): OutboundHttp {
  const targets = options.privateTargets ?? NO_PRIVATE_TARGETS
  const blocks = options.blocks ?? isNonPublicAddress
  const resolve = options.resolve ?? systemResolve
  const strict = guardedLookup(resolve, blocks)
  const listed = guardedLookup(resolve, isNeverAllowedAddress)
  const guardFor = (url: URL) =>
    listedTarget(targets, url)
      ? { blocks: isNeverAllowedAddress, lookup: listed }
      : { blocks, lookup: strict }
  return {
    refusal(url) {
      const host = hostOf(url)
      if (isIP(host) !== 0 && isNeverAllowedAddress(host)) return 'points at a link-local or metadata address'
      if (listedTarget(targets, url)) return null
      if ((isIP(host) !== 0 && blocks(host)) || isLocalName(host))
        return 'points at a private, loopback or link-local address'
      return null
    },
    post: (request) => post(request, guardFor),
  }
}

/** One outbound client per purpose, each guarded by that purpose's private targets only. */
export function createOutboundPorts(
  privateTargets: Record<OutboundPurpose, PrivateTargets>,
): Record<OutboundPurpose, OutboundHttp> {
  return {
    webhooks: createOutboundHttp({ privateTargets: privateTargets.webhooks }),
    destinations: createOutboundHttp({ privateTargets: privateTargets.destinations }),
    tools: createOutboundHttp({ privateTargets: privateTargets.tools }),
  }
}

function post(
  request: OutboundPost,
  guardFor: (url: URL) => { blocks: (address: string) => boolean; lookup: LookupFunction },
): Promise<OutboundAnswer> {
  return new Promise((resolve) => {
    let settled = false
    let timer: NodeJS.Timeout | undefined
    const finish = (answer: OutboundAnswer) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      request.signal?.removeEventListener('abort', onAbort)
      resolve(answer)
    }
    let url: URL
    try {
      url = new URL(request.url)
    } catch {
      return finish(failed('invalid_url', 'invalid url'))
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      return finish(failed('invalid_url', 'url must use http or https'))
    }
    // A literal address is connected to without a lookup, so it is checked here.
    const { blocks, lookup } = guardFor(url)
    const host = hostOf(url)
    if (isIP(host) !== 0 && blocks(host)) {
      return finish(failed('private_address', new PrivateAddressError(host).message))
    }
    const body = Buffer.from(request.body, 'utf8')
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest
    const req = send(url, {
      method: 'POST',
      headers: { ...request.headers, 'content-length': String(body.length) },
      lookup,
      agent: false,
    })
    timer = setTimeout(() => {
      finish(failed('timeout', `timed out after ${request.timeoutMs} ms`))
      req.destroy()
    }, request.timeoutMs)
    const onAbort = () => {
      finish(failed('aborted', 'aborted: the server is shutting down'))
      req.destroy()
    }
    if (request.signal?.aborted) onAbort()
    request.signal?.addEventListener('abort', onAbort)
    req.on('error', (err: Error & { code?: string }) => {
      finish(failed(err instanceof PrivateAddressError ? 'private_address' : 'unreachable', describe(err)))
    })
    req.on('response', (res) => readAnswer(res, request.maxAnswerBytes, finish))
    req.end(body)
  })
}

/** Collects up to `limit` bytes of the answer, then stops reading; the status is known either way. */
function readAnswer(res: IncomingMessage, limit: number, finish: (answer: OutboundAnswer) => void): void {
  const status = res.statusCode ?? 0
  const chunks: Buffer[] = []
  let seen = 0
  let truncated = false
  res.on('data', (chunk: Buffer) => {
    if (truncated) return
    if (seen + chunk.length > limit) {
      chunks.push(chunk.subarray(0, limit - seen))
      seen = limit
      truncated = true
      res.destroy()
      return
    }
    seen += chunk.length
    chunks.push(chunk)
  })
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(res.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value
  }
  const done = () =>
    finish({ ok: true, status, body: Buffer.concat(chunks).toString('utf8'), truncated, headers })
  res.on('end', done)
  res.on('close', done)
  res.on('error', done)
}
