/** Operating destinations: create, read, list, update, delete, redeliver, and the settings each type judges. */
import { randomBytes } from 'node:crypto'
import { sameJson } from '../../canonical.js'
import type { Check } from '../../check.js'
import { settingName } from '../../config.js'
import { expectStatus, ownId, pageItems, unwantedHookUrl } from '../../fixtures.js'
import { type HttpResponse, obj } from '../../http.js'
import { natsTarget } from '../../nats.js'
import { assert } from '../../types.js'
import { short } from '../../wait.js'
import { contractEventKinds } from '../every-kind.js'
import {
  deletedThenGoneProbes,
  type Probe,
  redeliverDuringAttempt,
  redeliverUnknown,
  refusedRedelivery,
  runProbes,
} from '../extensions.js'
import { atTag, receiverUrl } from '../webhooks.js'

import { ensureSink, namesField, skipWithoutDestinations } from './sinks.js'

/** Besides the field's name, the message says something of why: a word of three letters or more. */
function givesReason(message: string, field: string): boolean {
  return /[A-Za-z]{3,}/.test(
    message
      .split(field)
      .join(' ')
      .replace(/invalid|settings|destination/gi, ' '),
  )
}

/** `url` over ftp:, a scheme no outbound call takes (the suite's receiver, so nothing else is ever named). */
const ftpOf = (url: string) => url.replace(/^https?:/, 'ftp:')

/** The host of a `host:port` (an IPv6 host keeps its brackets). */
const natsHostOnly = (hostPort: string) => hostPort.replace(/:\d+$/, '')

export const operations: Check = {
  id: 'destinations.operations',
  title:
    'The destination operations answer as documented: list, read, change, test, delivery log, redelivery (409 while an attempt is in progress), delete (then its read, its log and a second delete are 404); bad input (a url at a private or metadata address included) is 400, an unknown id 404, a creation key reused with another body 409',
  level: 'profile',
  clauses: ['S6.5', 'S7.3', 'S7.6', 'S7.7'],
  async run(ctx) {
    const sink = await ensureSink(ctx)
    await ctx.fx.newAgent()
    await ctx.receiver!.waitFor(atTag(sink.tag), ctx.config.waitMs)
    let deliveryId: unknown
    let eventId: unknown
    for (let i = 0; i < 20 && deliveryId === undefined; i++) {
      const log = await ctx.http.get(`/v1/destinations/${sink.id}/deliveries`)
      expectStatus(log, 200, 'GET /v1/destinations/{id}/deliveries')
      const first = obj(pageItems(log.body)?.[0])
      deliveryId = first.delivery_id
      eventId = first.event_id
      if (deliveryId === undefined) await new Promise((r) => setTimeout(r, 100))
    }
    assert(typeof deliveryId === 'string', `the delivery log of ${sink.id} lists no delivery`)
    const base = `/v1/destinations/${sink.id}`
    const key = (k: string) => ({
      headers: { 'idempotency-key': `conf-${k}-${randomBytes(9).toString('hex')}` },
    })
    const createKey = key('dst')
    const bad = (change: Record<string, unknown>) => () =>
      ctx.http.post('/v1/destinations', {
        type: 'cloudevents',
        name: 'bad',
        events: ['run.failed'],
        config: { url: unwantedHookUrl(ctx) },
        ...change,
      })
    const listed = (res: HttpResponse) =>
      (pageItems(res.body) ?? []).some((d) => ownId(d, 'destination') === sink.id)
        ? undefined
        : `${sink.id} is not listed`
    const probes: Probe[] = [
      {
        what: 'GET /v1/destinations',
        expect: 200,
        send: () => ctx.http.get('/v1/destinations?limit=200'),
        judge: listed,
      },
      {
        what: 'POST /v1/destinations with an unknown type',
        expect: 400,
        send: bad({ type: 'carrier-pigeon' }),
      },
      {
        what: 'POST /v1/destinations with an unknown event kind',
        expect: 400,
        send: bad({ events: ['run.exploded'] }),
      },
      {
        what: 'POST /v1/destinations with a malformed URL',
        expect: 400,
        send: bad({ config: { url: 'http//x' } }),
      },
      {
        what: 'POST /v1/destinations with a url at a private address',
        expect: 400,
        send: bad({ config: { url: 'https://10.0.0.1/sink' } }),
      },
      {
        what: 'POST /v1/destinations with a url at the cloud metadata address',
        expect: 400,
        send: bad({ config: { url: 'http://169.254.169.254/latest/meta-data' } }),
      },
      {
        what: 'PATCH /v1/destinations/{id}',
        expect: 200,
        send: () => ctx.http.patch(base, { name: `${sink.tag}-renamed` }),
        judge: (res) => (obj(res.body).name === `${sink.tag}-renamed` ? undefined : short(res.body)),
      },
      {
        what: 'PATCH /v1/destinations/{unknown id}',
        expect: 404,
        send: () => ctx.http.patch('/v1/destinations/conf-unknown-destination', { name: 'x' }),
      },
      {
        what: 'POST /v1/destinations/{id}/test',
        expect: 200,
        send: () => ctx.http.post(`${base}/test`, {}),
        judge: (res) =>
          obj(res.body).ok === true ? undefined : `the sample was not delivered: ${short(res.body)}`,
      },
      {
        what: 'POST /v1/destinations/{id}/deliveries/{delivery_id}/redeliver',
        expect: 202,
        send: () => ctx.http.post(`${base}/deliveries/${deliveryId}/redeliver`),
      },
      {
        what: 'POST …/redeliver while an attempt of it is in progress',
        expect: 409,
        send: () =>
          redeliverDuringAttempt(
            ctx,
            { deliveryId: String(deliveryId), eventId, tag: sink.tag },
            `${base}/deliveries/${deliveryId}/redeliver`,
          ),
        judge: refusedRedelivery,
      },
      redeliverUnknown(ctx, base, '/v1/destinations/{id}'),
    ]
    const wrong = await runProbes(probes)
    // A POST repeated under its key with another body is 409, as every POST's.
    const keyed = {
      type: 'cloudevents',
      name: 'k',
      events: ['tool.retired'],
      config: { url: `${receiverUrl(ctx)}/${sink.tag}-k` },
    }
    const first = await ctx.http.post('/v1/destinations', keyed, createKey)
    if (first.status !== 201)
      wrong.push(`POST /v1/destinations under a key answered ${first.status}, not 201`)
    else {
      const id = ownId(first.body, 'destination')
      if (id) ctx.cleanup(`delete destination ${id}`, (http) => http.delete(`/v1/destinations/${id}`))
      const again = await ctx.http.post('/v1/destinations', { ...keyed, name: 'other' }, createKey)
      if (again.status !== 409)
        wrong.push(`the same creation key with another body answered ${again.status}, not 409`)
      // A deleted destination is gone, as a deleted webhook is: its read, its log and a second delete are 404.
      if (id)
        wrong.push(
          ...(await runProbes(deletedThenGoneProbes(ctx, '/v1/destinations/{id}', `/v1/destinations/${id}`))),
        )
    }
    assert(wrong.length === 0, wrong.join('; '))
  },
}

export const settingsJudged: Check = {
  id: 'destinations.settings-judged',
  title:
    "A destination's settings are judged by its type as documented: a creation without events gets the type's default kinds; a config read back with its documented defaults (CloudEvents' binary mode, NATS' agentops subject prefix); a config or secrets of the wrong shape (an unknown field, a routing key that is not 32 letters and digits, a severity or CloudEvents mode outside its list, a Slack icon_emoji that is not one :name:, approval buttons without a signing secret, no NATS server or more than ten, one that is not nats://host:port, carries credentials or names an unlisted private port, an endpoint or incoming webhook that is not http(s), a subject prefix that is not dot-separated tokens, a stream name that is not one token, a NATS user without a password) is 400 naming the field in detail.fields and the message, which says why, never quoting a secret; settings at the edge of each rule are taken as sent (tls:// and bare host:port NATS servers read back as URLs)",
  level: 'profile',
  clauses: ['S6.5', 'S7.3'],
  async run(ctx) {
    await skipWithoutDestinations(ctx)
    const url = `${receiverUrl(ctx)}/${ctx.name('settings')}`
    const routingKey = randomBytes(16).toString('hex')
    // Each type as the contract's DestinationType documents its config and secrets (and no events).
    const types: Record<string, Record<string, unknown>> = {
      cloudevents: { config: { url } },
      slack: { secrets: { webhook_url: url } },
      pagerduty: { config: { url }, secrets: { routing_key: routingKey } },
    }
    const declared = ctx.config.natsUrl
    const nats = declared ? natsTarget(declared) : undefined
    if (nats) types.nats = { config: { servers: [`nats://${nats.hostPort}`] } }
    else
      ctx.partial(
        `the NATS settings part did not run: no NATS server declared (${settingName('nats-url')}) for a nats destination the deployment may reach`,
      )
    const wrong: string[] = []
    /** Creates a destination (or is refused); one created is deleted at the end of the run whatever happens. */
    const create = async (destination: Record<string, unknown>) => {
      const res = await ctx.http.post('/v1/destinations', destination)
      const id = ownId(res.body, 'destination')
      if (id) ctx.cleanup(`delete destination ${id}`, (http) => http.delete(`/v1/destinations/${id}`))
      return { res, id }
    }
    // The documented defaults: run.failed, policy.denied and run.awaiting_approval for slack and pagerduty, every
    // kind for cloudevents and nats.
    const alerting = ['policy.denied', 'run.awaiting_approval', 'run.failed']
    // Each config read back: the documented defaults filled in (CloudEvents' binary mode, NATS' subject prefix).
    const defaults: Record<string, (config: Record<string, unknown>) => boolean> = {
      cloudevents: (c) => c.mode === 'binary',
      nats: (c) => c.subject_prefix === 'agentops',
    }
    for (const [type, settings] of Object.entries(types)) {
      const { res, id } = await create({ type, name: `${type} defaults`, ...settings })
      if (res.status !== 201) {
        wrong.push(`a ${type} destination without events answered ${res.status}: ${short(res.body)}`)
        continue
      }
      const got = (Array.isArray(obj(res.body).events) ? (obj(res.body).events as unknown[]) : []).map(String)
      const want = type === 'slack' || type === 'pagerduty' ? alerting : contractEventKinds(ctx)
      if (!sameJson([...got].sort(), [...want].sort()))
        wrong.push(`a ${type} destination without events got ${short(got)}, not ${short(want)}`)
      const config = obj(obj(res.body).config)
      if (defaults[type] && !defaults[type](config))
        wrong.push(
          `a ${type} destination without those settings reads back config ${short(config)}, without its documented defaults`,
        )
      if (id) await ctx.http.delete(`/v1/destinations/${id}`)
    }
    // Settings of the wrong shape: 400 invalid_request, detail.fields naming the field, no secret in the answer.
    const secret = 'conf-not-a-routing-key'
    const refused: [string, Record<string, unknown>, string][] = [
      ['an unknown config field', { type: 'cloudevents', config: { url, colour: 'red' } }, 'config.colour'],
      [
        'two unknown config fields',
        { type: 'cloudevents', config: { url, colour: 'red', size: 'large' } },
        'config.colour',
      ],
      [
        'a routing key that is not 32 characters',
        { type: 'pagerduty', config: { url }, secrets: { routing_key: secret } },
        'secrets.routing_key',
      ],
      [
        'approval buttons without a signing secret',
        { type: 'slack', config: { approval_buttons: true }, secrets: { webhook_url: url } },
        'secrets.signing_secret',
      ],
      // A pattern holds over the whole value, not only a part of it.
      [
        'a routing key of 32 letters and digits after another character',
        { type: 'pagerduty', config: { url }, secrets: { routing_key: `-${routingKey}` } },
        'secrets.routing_key',
      ],
      [
        'a routing key of 32 letters and digits before another character',
        { type: 'pagerduty', config: { url }, secrets: { routing_key: `${routingKey}-` } },
        'secrets.routing_key',
      ],
      [
        'a severity outside critical, error, warning and info',
        { type: 'pagerduty', config: { url, severity: 'loud' }, secrets: { routing_key: routingKey } },
        'config.severity',
      ],
      // Every URL the outbound port would call is judged at creation: absolute http(s) only.
      [
        'a PagerDuty endpoint over ftp://',
        { type: 'pagerduty', config: { url: ftpOf(url) }, secrets: { routing_key: routingKey } },
        'config.url',
      ],
      [
        'a Slack incoming webhook over ftp://',
        { type: 'slack', secrets: { webhook_url: ftpOf(url) } },
        'secrets.webhook_url',
      ],
      [
        'a CloudEvents mode outside binary and structured',
        { type: 'cloudevents', config: { url, mode: 'batched' } },
        'config.mode',
      ],
      [
        'a Slack icon_emoji with text before it',
        { type: 'slack', config: { icon_emoji: 'x:robot_face:' }, secrets: { webhook_url: url } },
        'config.icon_emoji',
      ],
      [
        'a Slack icon_emoji with text after it',
        { type: 'slack', config: { icon_emoji: ':robot_face:x' }, secrets: { webhook_url: url } },
        'config.icon_emoji',
      ],
    ]
    if (nats) {
      const servers = (server: string) => ({ type: 'nats', config: { servers: [server] } })
      refused.push(
        ['a NATS server over http://', servers(`http://${nats.hostPort}`), 'config.servers'],
        ['a NATS server with credentials', servers(`nats://u:p@${nats.hostPort}`), 'config.servers'],
        ['a NATS server with a user name', servers(`nats://u@${nats.hostPort}`), 'config.servers'],
        ['a NATS server with a password', servers(`nats://:p@${nats.hostPort}`), 'config.servers'],
        ['a NATS server with no host', servers('nats:///'), 'config.servers'],
        // The same host on a port no one allowed: private addresses are refused unless listed, as for HTTP.
        [
          'a NATS server at an unlisted private port',
          servers(`nats://${natsHostOnly(nats.hostPort)}:1`),
          'config.servers',
        ],
        ['a NATS server that is a number', { type: 'nats', config: { servers: [4222] } }, 'config.servers'],
        ['a NATS server with a path', servers(`nats://${nats.hostPort}/bus`), 'config.servers'],
        ['a NATS server with a query', servers(`nats://${nats.hostPort}?q=1`), 'config.servers'],
        ['a NATS server that is no URL', servers('nats://[bus'), 'config.servers'],
        [
          'a NATS user without a password',
          { ...servers(`nats://${nats.hostPort}`), secrets: { user: 'conf-user' } },
          'secrets.password',
        ],
        ['no NATS server', { type: 'nats', config: { servers: [] } }, 'config.servers'],
        [
          'eleven NATS servers',
          { type: 'nats', config: { servers: Array(11).fill(`nats://${nats.hostPort}`) } },
          'config.servers',
        ],
      )
      // No port: NATS' own (4222), at the declared server's private host an unlisted port unless it is that one.
      if (!nats.hostPort.endsWith(':4222'))
        refused.push([
          'a NATS server with no port, at a private address',
          servers(`nats://${natsHostOnly(nats.hostPort)}`),
          'config.servers',
        ])
      const natsConfig = (config: Record<string, unknown>) => ({
        type: 'nats',
        config: { servers: [`nats://${nats.hostPort}`], ...config },
      })
      for (const [what, config, field] of [
        ['a subject prefix ending in a dot', { subject_prefix: 'agentops.' }, 'config.subject_prefix'],
        ['a subject prefix starting with a dot', { subject_prefix: '.agentops' }, 'config.subject_prefix'],
        ['a subject prefix with an empty token', { subject_prefix: 'agent..ops' }, 'config.subject_prefix'],
        ['a stream name after a space', { stream: ' EVENTS' }, 'config.stream'],
        ['a stream name before a space', { stream: 'EVENTS ' }, 'config.stream'],
      ] as const)
        refused.push([what, natsConfig(config), field])
    }
    for (const [what, body, field] of refused) {
      const { res } = await create({ name: 'refused', events: ['run.failed'], ...body })
      const error = obj(obj(res.body).error)
      const fields = obj(error.detail).fields
      if (res.status !== 400 || error.code !== 'invalid_request')
        wrong.push(`${what} answered ${res.status} ${short(error.code ?? res.body)}, not 400 invalid_request`)
      else if (!Array.isArray(fields) || !fields.includes(field))
        wrong.push(`${what}: detail.fields is ${short(fields)}, not naming ${field}`)
      else if (typeof error.message !== 'string' || !namesField(error.message, field))
        wrong.push(
          `${what}: error.message ${short(error.message)} does not name ${field} (as itself, not a deeper path)`,
        )
      else if (!givesReason(error.message, field))
        wrong.push(`${what}: error.message ${short(error.message)} names ${field} but says nothing of why`)
      if (res.text.includes(secret)) wrong.push(`${what}: the answer quotes the secret`)
    }
    // Settings at the edge of each rule are taken as sent.
    const taken: [string, Record<string, unknown>, Record<string, unknown>][] = [
      [
        'a Slack icon_emoji, with approval buttons and their signing secret',
        {
          type: 'slack',
          config: { icon_emoji: ':robot_face:', approval_buttons: true },
          secrets: { webhook_url: url, signing_secret: 'conf-signing-secret' },
        },
        { icon_emoji: ':robot_face:', approval_buttons: true },
      ],
    ]
    if (nats) {
      const servers = [`nats://${nats.hostPort}`, `nats://${nats.hostPort}`]
      taken.push(
        [
          'two NATS servers and a stream',
          { type: 'nats', config: { servers, stream: 'CONF_EVENTS' } },
          { servers, stream: 'CONF_EVENTS' },
        ],
        // tls:// is the other scheme NATS clients dial; a bare host:port gets nats://, a trailing slash is no path.
        [
          'a NATS server over tls://, one without a scheme and one with a trailing slash',
          {
            type: 'nats',
            config: { servers: [`tls://${nats.hostPort}`, nats.hostPort, `nats://${nats.hostPort}/`] },
          },
          {
            servers: [`tls://${nats.hostPort}`, `nats://${nats.hostPort}`, `nats://${nats.hostPort}`],
          },
        ],
        [
          'a subject prefix of several tokens, and a user with a password',
          {
            type: 'nats',
            config: { servers: servers.slice(1), subject_prefix: 'acme-prod.agent_ops.v2' },
            secrets: { user: 'conf-user', password: 'conf-password' },
          },
          { subject_prefix: 'acme-prod.agent_ops.v2' },
        ],
      )
    }
    for (const [what, body, want] of taken) {
      const { res, id } = await create({ name: 'taken', events: ['run.failed'], ...body })
      const config = obj(obj(res.body).config)
      if (res.status !== 201) wrong.push(`${what} answered ${res.status}, not 201: ${short(res.body)}`)
      else if (Object.entries(want).some(([k, v]) => !sameJson(config[k], v)))
        wrong.push(`${what} reads back config ${short(config)}, not ${short(want)}`)
      if (id) await ctx.http.delete(`/v1/destinations/${id}`)
    }
    assert(wrong.length === 0, wrong.join('; '))
  },
}
