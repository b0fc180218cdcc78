import { z } from 'zod'
import { ApiError } from '../errors.js'
import type { OutboundHttp } from '../outbound.js'
import { EVENT_KINDS, type EventKind } from '../webhooks/body.js'
import { checkWebhookUrl } from '../webhooks/url-check.js'
import { PAGERDUTY_DEFAULT_EVENTS, PAGERDUTY_EVENTS_URL, PAGERDUTY_SEVERITIES } from './pagerduty.js'
import type { DestinationType } from './types.js'

/** One type's settings: the public `config` and the write-only `secrets`, each a strict object. */
interface TypeSettings {
  config: z.ZodType<Record<string, unknown>>
  secrets: z.ZodType<Record<string, string>>
  /** Fields of `config` or `secrets` that are URLs the outbound port will call (checked like webhook URLs). */
  urls: { in: 'config' | 'secrets'; field: string }[]
}

const text = (max: number) => z.string().min(1).max(max)

const SETTINGS: Record<DestinationType, TypeSettings> = {
  cloudevents: {
    config: z.strictObject({
      url: text(2048),
      /** binary: attributes as ce-* headers, data as the body; structured: one application/cloudevents+json body. */
      mode: z.enum(['binary', 'structured']).default('binary'),
      /** The CloudEvents `source`; default `urn:agentops:workspace:<workspace id>`. */
      source: text(512).optional(),
    }),
    secrets: z.strictObject({
      /** Sent as the Authorization header (`Bearer …`). */
      authorization: text(4096).optional(),
    }),
    urls: [{ in: 'config', field: 'url' }],
  },
  slack: {
    config: z.strictObject({
      /** Shown as the sender, where the workspace's Slack app allows overriding it. */
      username: text(80).optional(),
      icon_emoji: z
        .string()
        .regex(/^:[a-z0-9_+-]{1,60}:$/)
        .optional(),
      /** Approval messages carry Approve and Deny buttons (needs `secrets.signing_secret` and Slack interactivity). */
      approval_buttons: z.boolean().default(false),
    }),
    secrets: z.strictObject({
      /** The incoming webhook URL (it carries the token): https://hooks.slack.com/services/… or a compatible one. */
      webhook_url: text(2048),
      /** The Slack app's signing secret, checking the button clicks Slack posts back. */
      signing_secret: text(256).optional(),
    }),
    urls: [{ in: 'secrets', field: 'webhook_url' }],
  },
  pagerduty: {
    config: z.strictObject({
      /** The Events API v2 endpoint; PagerDuty's EU region or a proxy can be named here. */
      url: text(2048).default(PAGERDUTY_EVENTS_URL),
      /** Fixed severity; by default run.failed is error, policy.denied and run.awaiting_approval warning. */
      severity: z.enum(PAGERDUTY_SEVERITIES).optional(),
      /** The incident's `source`; default `agentops:<workspace id>`. */
      source: text(255).optional(),
      /** The incident's `component`; default the agent id. */
      component: text(255).optional(),
    }),
    secrets: z.strictObject({
      /** The service integration's routing key (Events API v2). */
      routing_key: z
        .string()
        .regex(/^[A-Za-z0-9]{32}$/, 'must be a 32-character Events API v2 integration key'),
    }),
    urls: [{ in: 'config', field: 'url' }],
  },
  nats: {
    config: z.strictObject({
      /** The NATS servers, `nats://host:port` (or `tls://`); the client fails over between them. */
      servers: z.array(text(512)).min(1).max(10),
      /** Subjects are `<subject_prefix>.<workspace id>.<kind>`. */
      subject_prefix: z
        .string()
        .regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, 'must be NATS subject tokens separated by dots')
        .max(200)
        .default('agentops'),
      /** When set, JetStream refuses a publish that would land in any other stream (`expect.streamName`). */
      stream: z
        .string()
        .regex(/^[A-Za-z0-9_-]{1,255}$/)
        .optional(),
    }),
    secrets: z
      .strictObject({
        token: text(4096).optional(),
        user: text(512).optional(),
        password: text(4096).optional(),
      })
      .refine((s) => (s.user === undefined) === (s.password === undefined), {
        message: 'user and password go together',
        path: ['password'],
      }),
    urls: [],
  },
}

/** The kinds a destination of `type` gets when its creation lists none. */
export function defaultEvents(type: DestinationType): EventKind[] {
  if (type === 'pagerduty' || type === 'slack') return [...PAGERDUTY_DEFAULT_EVENTS]
  return [...EVENT_KINDS]
}

/**
 * One NATS server address as the client dials it (`nats://host:port`, `tls://host:port`; a bare `host:port` gets
 * `nats://`). The host passes the same private-address rules as an HTTP destination's (listed host:port pairs in
 * AGENTOPS_DESTINATION_PRIVATE_TARGETS), since an event bus usually sits on a private network.
 */
function checkNatsServer(raw: string, outbound: Pick<OutboundHttp, 'refusal'>): string {
  const field = 'config.servers'
  const bad = (message: string) => refuse([{ path: field, message: `${field}: ${message}` }])
  const text = /^[a-z]+:\/\//i.test(raw) ? raw : `nats://${raw}`
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw bad('each server must be nats://host:port')
  }
  if (url.protocol !== 'nats:' && url.protocol !== 'tls:') throw bad('each server must use nats:// or tls://')
  if (url.username !== '' || url.password !== '') throw bad('credentials go in secrets, not in a server URL')
  if (url.hostname === '' || (url.pathname !== '' && url.pathname !== '/') || url.search !== '')
    throw bad('each server must be nats://host:port')
  const port = url.port === '' ? '4222' : url.port
  const refusal = outbound.refusal(new URL(`http://${url.hostname}:${port}/`))
  if (refusal) throw bad(`a server ${refusal}`)
  return `${url.protocol}//${url.hostname}:${port}`
}

export interface ParsedSettings {
  config: Record<string, unknown>
  secrets: Record<string, string>
}

function refuse(issues: { path: string; message: string }[]): ApiError {
  const fields = [...new Set(issues.map((i) => i.path.split('.').slice(0, 2).join('.')))]
  return new ApiError('invalid_request', `Invalid destination settings: ${issues[0]?.message ?? ''}`, {
    issues,
    fields,
  })
}

function parsePart<T>(schema: z.ZodType<T>, value: unknown, part: 'config' | 'secrets'): T {
  const parsed = schema.safeParse(value ?? {})
  if (parsed.success) return parsed.data
  // Zod's messages name the expected type or the unknown key, never the value: a secret is not echoed back.
  throw refuse(
    parsed.error.issues.map((issue) => {
      const keys = issue.code === 'unrecognized_keys' ? issue.keys : []
      const path = [part, ...issue.path.map(String), ...keys.slice(0, 1)].join('.')
      return { path, message: `${path}: ${issue.message}` }
    }),
  )
}

/**
 * Checks a type's config and secrets (a clear 400 naming the field, never the secret's value) and every URL the
 * outbound port would call: absolute http(s), no credentials in it, no literal private address unless allowed.
 */
export function parseSettings(
  type: DestinationType,
  config: unknown,
  secrets: unknown,
  outbound: Pick<OutboundHttp, 'refusal'>,
): ParsedSettings {
  const settings = SETTINGS[type]
  const parsed = {
    config: parsePart(settings.config, config, 'config'),
    secrets: parsePart(settings.secrets, secrets, 'secrets'),
  }
  for (const url of settings.urls) {
    const value = parsed[url.in][url.field]
    if (typeof value === 'string') checkWebhookUrl(value, outbound, `${url.in}.${url.field}`)
  }
  if (type === 'slack' && parsed.config.approval_buttons === true && !parsed.secrets.signing_secret)
    throw refuse([
      {
        path: 'secrets.signing_secret',
        message: 'secrets.signing_secret: approval buttons need the Slack app signing secret',
      },
    ])
  if (type === 'nats' && Array.isArray(parsed.config.servers))
    parsed.config.servers = parsed.config.servers.map((s) => checkNatsServer(String(s), outbound))
  return parsed
}
