/**
 * A deployment whose choices the suite cannot discover, declared in the config the way a foreign team would
 * (README "Declaring what cannot be discovered"): its own stream protocol and topic names, rate-limit headers with
 * names of its own, pages of `{results, meta: {continuation}}`, signatures whose t= is an RFC 3339 time over the
 * raw body, run controls and agent deletions answered 202 whose effect lands a moment later, a run's plan named by
 * its `inputs.steps` (an agent's capabilities plan nothing), run statuses of its own (./status-names.ts:
 * `in_progress`, `suspended`, `completed`, `errored`, `canceled` everywhere a status travels), and answers a little
 * slower.
 */
import { createHmac } from 'node:crypto'
import { parseLimitList } from '../../src/ratewindows.js'
import type { Dialect } from '../dialects.js'
import { type Json, type ProxiedResponse, parseJson, pathOnly } from '../proxy.js'
import {
  declareOwnStatusNames,
  ownStatusNames,
  ownStatusNamesIn,
  referenceStatusQuery,
} from './status-names.js'
import { isJsonAnswer, Secrets } from './wire.js'

const CONTROL = /^\/v1\/runs\/[^/]+\/(pause|resume|cancel)$/
const AGENT = /^\/v1\/agents\/[^/]+$/
const TRACE = /^\/v1\/runs\/[^/]+\/trace$/
const RUN_START = /^\/v1\/agents\/[^/]+\/runs$/

/**
 * This deployment plans a run from its `inputs.steps` (tool names) and from nothing else: the reference's
 * `inputs.plan`, empty when no steps are named, so an agent's capabilities alone call no tool.
 */
export function plannedFromSteps(body: string): string {
  let b: unknown
  try {
    b = JSON.parse(body)
  } catch {
    return body
  }
  if (b === null || typeof b !== 'object' || Array.isArray(b)) return body
  // Absent inputs name no steps; any inputs that are not an object (null included) are left for the 400.
  const inputs = 'inputs' in b ? (b as Json).inputs : {}
  if (inputs === null || typeof inputs !== 'object' || Array.isArray(inputs)) return body
  const { steps, ...rest } = inputs as Json
  return JSON.stringify({ ...(b as Json), inputs: { ...rest, plan: Array.isArray(steps) ? steps : [] } })
}
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** The reference's two windows under this dialect's own names. */
function quotaHeaders(headers: Record<string, string>): Record<string, string> {
  const { ratelimit, 'ratelimit-policy': policyHeader, ...rest } = headers
  if (ratelimit === undefined) return headers
  const items = parseLimitList(ratelimit)
  const policy = parseLimitList(policyHeader)
  const out: Record<string, string> = { ...rest }
  for (const [theirs, ours] of [
    ['burst', 'Short'],
    ['hourly', 'Long'],
  ] as const) {
    const item = items.find((i) => i.name === theirs)
    if (!item) continue
    out[`quota-${ours.toLowerCase()}-left`] = String(item.params.r)
    out[`quota-${ours.toLowerCase()}-renews-in`] = String(item.params.t)
    const size = policy.find((p) => p.name === theirs)?.params.q
    if (size !== undefined) out[`quota-${ours.toLowerCase()}-size`] = String(size)
  }
  return out
}

const topicIn = (channel: string) => channel.replace(/^records\//, 'connector:')
const topicOut = (topic: string) => topic.replace(/^connector:/, 'records/')

function rawWithoutSignature(body: Json): string {
  const { signature: _s, ...rest } = body
  return JSON.stringify(rest)
}

export function declaredDialect(): Dialect {
  const secrets = new Secrets()
  return {
    id: 'declared-choices',
    description:
      'Own stream protocol and topics, Quota-* headers, {results, meta.continuation} pages, RFC 3339 signature times, 202 controls and agent deletions that land later, the trace as NDJSON only, plans named by inputs.steps, own run status names, slower answers',
    targets: [],
    configure(config) {
      config.stream = {
        subscribe: { op: 'join', channels: '{topics}' },
        topic: 'records/{connector}',
        declared: true,
      }
      config.rateLimitHeaders = {
        burst: { remaining: 'quota-short-left', reset: 'quota-short-renews-in' },
        sustained: { remaining: 'quota-long-left', reset: 'quota-long-renews-in', limit: 'quota-long-size' },
      }
      config.paging = { cursorField: 'meta.continuation', itemsField: 'results' }
      config.signatureTimestamp = 'rfc3339'
      config.toolRun = {
        agent: { name: '{name}', behavior: '{behavior}' },
        run: { inputs: { steps: '{tools}' }, mode: 'live', trace_level: 'detailed' },
      }
      declareOwnStatusNames(config)
    },
    async request(given, ctx) {
      secrets.learn(given)
      const req = referenceStatusQuery(given)
      const out =
        req.method === 'POST' && RUN_START.test(pathOnly(req.path))
          ? { ...req, body: plannedFromSteps(req.body) }
          : req
      if (req.method === 'GET' && TRACE.test(pathOnly(req.path))) {
        // The trace as a stream only (§4 allows either): every frame, one JSON line each.
        const frames: unknown[] = []
        let cursor: string | null = null
        for (let i = 0; i < 50; i++) {
          const page = await ctx.upstream({
            ...req,
            path: `${pathOnly(req.path)}?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
          })
          if (page.status !== 200) return { ...page, headers: quotaHeaders(page.headers) }
          const b = JSON.parse(page.body) as Json
          frames.push(...((b.data as unknown[]) ?? []))
          cursor = typeof b.next_cursor === 'string' ? b.next_cursor : null
          if (!cursor) {
            return {
              status: 200,
              headers: { ...quotaHeaders(page.headers), 'content-type': 'application/x-ndjson' },
              body: frames.map((f) => JSON.stringify(ownStatusNames(f))).join('\n'),
            }
          }
        }
        return req
      }
      const control = req.method === 'POST' && CONTROL.test(pathOnly(req.path))
      if (control || (req.method === 'DELETE' && AGENT.test(pathOnly(req.path)))) {
        // Accepted now, applied a moment later: the answer says nothing of the run's (or agent's) new state.
        const probe = await ctx.upstream({
          ...out,
          method: 'GET',
          path: control ? pathOnly(req.path).replace(/\/[a-z]+$/, '') : pathOnly(req.path),
          body: '',
        })
        if (probe.status !== 200) return out
        setTimeout(() => ctx.upstream(out).catch(() => undefined), 250)
        return {
          status: 202,
          headers: { 'content-type': 'application/json', ...quotaHeaders(probe.headers) },
          body: JSON.stringify({ accepted: true }),
        }
      }
      return out
    },
    async response(_req, res) {
      await sleep(20)
      let out: ProxiedResponse = { ...res, headers: quotaHeaders(res.headers) }
      if (isJsonAnswer(res.headers) && res.status < 400) {
        try {
          const b = JSON.parse(res.body) as Json
          if (Array.isArray(b.data) && 'next_cursor' in b) {
            const { data, next_cursor, ...rest } = b
            out = {
              ...out,
              body: JSON.stringify({ ...rest, results: data, meta: { continuation: next_cursor } }),
            }
          }
        } catch {
          // not JSON after all: passed on as it is
        }
      }
      return { ...out, body: ownStatusNamesIn(out.body, res.headers['content-type'] ?? '') }
    },
    delivery(req) {
      const parsed = parseJson(req.body)
      if (!parsed) return req
      const body = ownStatusNames(parsed)
      const secret = secrets.forDelivery(req)
      if (!secret) return req
      const t = new Date().toISOString().replace(/\.\d+Z$/, 'Z')
      const v1 = createHmac('sha256', secret)
        .update(`${t}.${rawWithoutSignature(body)}`)
        .digest('hex')
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([k]) => !k.startsWith('webhook-')),
      )
      return { ...req, headers, body: JSON.stringify({ ...body, signature: `t=${t},v1=${v1}` }) }
    },
    clientMessage(message) {
      if (message.op !== 'join' || !Array.isArray(message.channels)) return message
      return { type: 'subscribe', topics: message.channels.map((c) => topicIn(String(c))) }
    },
    streamMessage(message) {
      const { type, topic, topics, ...rest } = ownStatusNames(message)
      const renamed: Json = {
        ...rest,
        kind: type === 'record' ? 'row' : type === 'subscribed' ? 'joined' : type,
      }
      if (typeof topic === 'string') renamed.channel = topicOut(topic)
      if (Array.isArray(topics)) renamed.channels = topics.map((t) => topicOut(String(t)))
      return renamed
    },
  }
}
