/**
 * A local stand-in for PagerDuty's Events API v2 (POST /v2/enqueue) on 127.0.0.1: it checks each body as the API
 * documents it and answers as the API does, 202 `{status: "success", dedup_key}` or 400 `{status: "invalid event",
 * errors}`; a test may script a 429 with Retry-After.
 */
import { createServer } from 'node:http'
import { listenOnTestPort } from '../support/ports.js'

export interface PagerDutyEventBody {
  routing_key: string
  event_action: 'trigger' | 'acknowledge' | 'resolve'
  dedup_key?: string
  payload?: {
    summary: string
    source: string
    severity: string
    timestamp?: string
    component?: string
    group?: string
    class?: string
    custom_details?: Record<string, unknown>
  }
  links?: { href: string; text?: string }[]
  client?: string
  client_url?: string
}

/** What the Events API v2 refuses in a body (https://developer.pagerduty.com/docs/events-api-v2/trigger-events/). */
export function eventsV2Problems(body: unknown): string[] {
  const problems: string[] = []
  if (typeof body !== 'object' || body === null) return ['the body is not a JSON object']
  const b = body as Record<string, unknown>
  const known = [
    'routing_key',
    'event_action',
    'dedup_key',
    'payload',
    'links',
    'images',
    'client',
    'client_url',
  ]
  for (const key of Object.keys(b)) if (!known.includes(key)) problems.push(`unknown field ${key}`)
  if (typeof b.routing_key !== 'string' || b.routing_key.length !== 32)
    problems.push('routing_key must be 32 characters')
  if (!['trigger', 'acknowledge', 'resolve'].includes(String(b.event_action)))
    problems.push('bad event_action')
  if (b.dedup_key !== undefined && (typeof b.dedup_key !== 'string' || b.dedup_key.length > 255))
    problems.push('dedup_key must be a string of at most 255 characters')
  if (b.event_action !== 'trigger') {
    if (typeof b.dedup_key !== 'string') problems.push(`${String(b.event_action)} needs a dedup_key`)
    return problems
  }
  const p = b.payload as Record<string, unknown> | undefined
  if (typeof p !== 'object' || p === null) return [...problems, 'trigger needs a payload']
  if (typeof p.summary !== 'string' || p.summary === '' || p.summary.length > 1024)
    problems.push('payload.summary must be 1-1024 characters')
  if (typeof p.source !== 'string' || p.source === '') problems.push('payload.source is required')
  if (!['critical', 'error', 'warning', 'info'].includes(String(p.severity)))
    problems.push('bad payload.severity')
  if (p.timestamp !== undefined && Number.isNaN(Date.parse(String(p.timestamp))))
    problems.push('payload.timestamp is not ISO 8601')
  if (p.custom_details !== undefined && (typeof p.custom_details !== 'object' || p.custom_details === null))
    problems.push('payload.custom_details must be an object')
  return problems
}

export interface PagerDutyReceiver {
  url: string
  events: PagerDutyEventBody[]
  refused: string[][]
  /** The next answers' statuses (429 carries `Retry-After: retryAfter`). */
  script(...statuses: number[]): void
  retryAfter: string
  close(): Promise<void>
}

export async function startPagerDutyReceiver(): Promise<PagerDutyReceiver> {
  const queue: number[] = []
  const r: PagerDutyReceiver = {
    url: '',
    events: [],
    refused: [],
    retryAfter: '30',
    script: (...statuses) => queue.push(...statuses),
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
        res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body))
      const scripted = queue.shift()
      if (scripted === 429)
        return json(
          429,
          { status: 'throttle event', message: 'Requests for this service are arriving too quickly.' },
          {
            'retry-after': r.retryAfter,
          },
        )
      if (scripted !== undefined) return json(scripted, { status: 'error' })
      let body: unknown
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      } catch {
        r.refused.push(['not JSON'])
        return json(400, {
          status: 'invalid event',
          message: 'Event object is invalid',
          errors: ['not JSON'],
        })
      }
      const problems = req.headers['content-type']?.startsWith('application/json')
        ? eventsV2Problems(body)
        : ['content-type is not application/json']
      if (problems.length) {
        r.refused.push(problems)
        return json(400, { status: 'invalid event', message: 'Event object is invalid', errors: problems })
      }
      const event = body as PagerDutyEventBody
      r.events.push(event)
      json(202, { status: 'success', message: 'Event processed', dedup_key: event.dedup_key ?? 'generated' })
    })
  })
  r.url = `http://127.0.0.1:${await listenOnTestPort(server)}/v2/enqueue`
  return r
}
