/** The event bus: every event published to a NATS JetStream subject, acknowledged, retried until it is. */
import { randomBytes } from 'node:crypto'
import type { Check } from '../../check.js'
import { settingName } from '../../config.js'
import { expectStatus, ownId } from '../../fixtures.js'
import { obj } from '../../http.js'
import { natsTarget } from '../../nats.js'
import { assert, fail, skip } from '../../types.js'
import { short } from '../../wait.js'

import { logUntil, refusesType, retried, skipWithoutDestinations } from './sinks.js'

/** One message the suite's NATS subscriber got: its subject, headers and body. */
interface BusMessage {
  subject: string
  headers: Record<string, string>
  text: string
  body: Record<string, unknown> | undefined
}

/** A JetStream publish acknowledgement (what a stream answers a publish that expects one). */
const pubAck = (stream: string, seq: number) => JSON.stringify({ stream, seq, duplicate: false })

/** What is wrong with one event's message on the bus (the reference profile's `nats` type, docs/events.md). */
function busMessageProblems(m: BusMessage, prefix: string, kind: string, stream: string): string[] {
  const problems: string[] = []
  const workspace =
    m.subject.startsWith(`${prefix}.`) && m.subject.endsWith(`.${kind}`)
      ? m.subject.slice(prefix.length + 1, -kind.length - 1)
      : ''
  if (!/^[^.*>\s]+$/.test(workspace))
    problems.push(`subject ${m.subject} is not ${prefix}.<workspace id>.${kind}`)
  if (m.body === undefined) problems.push(`the body is not a JSON object: ${short(m.text, 120)}`)
  else {
    if (m.body.event !== kind) problems.push(`its event is ${short(m.body.event)}, not ${kind}`)
    if (typeof m.body.id !== 'string' || m.body.id === '') problems.push('it has no event id')
    if ('signature' in m.body) problems.push('it carries a webhook signature (a bus message has none)')
    if (m.headers['nats-msg-id'] !== m.body.id)
      problems.push(
        `its Nats-Msg-Id header ${short(m.headers['nats-msg-id'])} is not the event id ${short(m.body.id)}`,
      )
  }
  if (!/^application\/json\b/.test(m.headers['content-type'] ?? ''))
    problems.push(`its Content-Type is ${short(m.headers['content-type'])}, not application/json`)
  if (m.headers['nats-expected-stream'] !== stream)
    problems.push(
      `it does not expect the destination's stream ${stream} (Nats-Expected-Stream ${short(m.headers['nats-expected-stream'])})`,
    )
  return problems
}

export const eventBus: Check = {
  id: 'destinations.event-bus',
  title:
    'A nats destination publishes each event it lists once to <subject_prefix>.<workspace id>.<kind>, the webhook body without a signature, Nats-Msg-Id the event id, Content-Type application/json, expecting its stream, logged delivered (200) at the first attempt once acknowledged; where nothing listens, each attempt is logged 503 "no responders" and retried; a publish JetStream refuses is logged with its reason and retried; its credential is never answered',
  level: 'profile',
  clauses: ['S6.5'],
  // It waits for a second publish that must not come, on subjects and destinations of its own.
  overlap: true,
  async run(ctx) {
    const declared = ctx.config.natsUrl
    if (!declared)
      skip(
        `no NATS server declared (${settingName('nats-url')}): the event-bus destination needs one the suite can subscribe at`,
      )
    const target = natsTarget(declared)
    await skipWithoutDestinations(ctx)
    const { connect } = await import('@nats-io/transport-node')
    const nc = await connect({
      servers: target.server,
      name: 'agentops-conformance',
      timeout: ctx.config.timeoutMs,
      ...(target.token ? { token: target.token } : {}),
      ...(target.user ? { user: target.user, pass: target.password ?? '' } : {}),
    }).catch((err: unknown) =>
      fail(
        `the suite cannot connect to the declared NATS server ${target.server}: ${(err as Error).message}`,
      ),
    )
    const created: string[] = []
    try {
      const tag = ctx.name('bus')
      // The stream the destination names: the suite answers its publishes' acknowledgements as JetStream would.
      const stream = `CONF_${randomBytes(6).toString('hex')}`
      const got: BusMessage[] = []
      let seq = 0
      const sub = nc.subscribe(`${tag}.>`, {
        callback: (_err, m) => {
          const headers: Record<string, string> = {}
          for (const [k, v] of m.headers ?? []) headers[k.toLowerCase()] = v.join(', ')
          const text = m.string()
          let body: Record<string, unknown> | undefined
          try {
            const parsed: unknown = JSON.parse(text)
            body =
              parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
                ? obj(parsed)
                : undefined
          } catch {
            body = undefined
          }
          got.push({ subject: m.subject, headers, text, body })
          if (m.reply) m.respond(pubAck(stream, ++seq))
        },
      })
      // A stream that refuses: JetStream's own error for a publish its stream does not take.
      const REFUSAL = 'expected stream does not match'
      const refusing = nc.subscribe(`${tag}_refused.>`, {
        callback: (_err, m) => {
          if (m.reply)
            m.respond(JSON.stringify({ error: { code: 400, err_code: 10060, description: REFUSAL } }))
        },
      })
      await nc.flush()
      const secret = target.token ?? target.password
      const create = async (prefix: string, withStream: boolean) => {
        const res = await ctx.http.post('/v1/destinations', {
          name: prefix,
          type: 'nats',
          events: ['agent.created'],
          config: { servers: [target.server], subject_prefix: prefix, ...(withStream ? { stream } : {}) },
          secrets: target.token
            ? { token: target.token }
            : target.user
              ? { user: target.user, password: target.password ?? '' }
              : {},
        })
        if (refusesType(res))
          skip(
            `the deployment has no nats destinations: it refused one (${res.status} ${short(res.body, 200)})`,
          )
        if (res.status >= 400 && res.status < 500 && res.status !== 429)
          fail(
            `the deployment refused a nats destination at the declared NATS server (${res.status} ${short(res.body, 200)}); ` +
              `the reference server needs its host:port in AGENTOPS_DESTINATION_PRIVATE_TARGETS=${target.hostPort}`,
          )
        expectStatus(res, 201, 'creating a nats destination')
        const id = ownId(res.body, 'destination')
        assert(id, `the destination answer has no destination_id: ${short(res.body)}`)
        created.push(id)
        if (secret)
          assert(!res.text.includes(secret), "the creation answer shows the NATS server's credential")
        return id
      }
      const busId = await create(tag, true)
      // A prefix nothing subscribes to: NATS answers each publish "no responders".
      const voidId = await create(`${tag}_void`, false)
      const refusedId = await create(`${tag}_refused`, true)
      const agents = [await ctx.fx.newAgent(), await ctx.fx.newAgent()]
      const problems: string[] = []
      const ids: unknown[] = []
      // One wait for both: a deployment that publishes nothing costs the run one wait, not two.
      const deadline = Date.now() + ctx.config.waitMs
      for (const agent of agents) {
        let m = got.find((x) => x.body?.agent_id === agent)
        while (!m && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 50))
          m = got.find((x) => x.body?.agent_id === agent)
        }
        if (!m) {
          problems.push(
            `no message about agent ${agent}'s agent.created arrived under ${tag}.> within ${ctx.config.waitMs} ms (${got.length} others did: ${short(
              got.map((x) => x.subject),
              200,
            )})`,
          )
          continue
        }
        ids.push(m.body?.id)
        for (const p of busMessageProblems(m, tag, 'agent.created', stream))
          problems.push(`agent ${agent}'s message: ${p}`)
      }
      assert(problems.length === 0, problems.join('; '))
      const workspaces = new Set(got.map((m) => m.subject.slice(tag.length + 1).split('.')[0]))
      assert(
        workspaces.size === 1,
        `one workspace's events came under ${workspaces.size} workspace subjects: ${short([...workspaces])}`,
      )
      assert(ids[0] !== ids[1], `both agents' events carry the same id ${short(ids[0])}`)
      const log = await logUntil(ctx, busId, (entries) =>
        ids.every((id) => entries.some((e) => e.event_id === id && e.status === 'delivered')),
      )
      for (const id of ids) {
        const entry = log.find((e) => e.event_id === id)
        if (!entry) problems.push(`the delivery log lists no delivery of event ${short(id)}`)
        else if (entry.status !== 'delivered' || entry.attempts !== 1 || entry.last_status_code !== 200)
          problems.push(
            `event ${short(id)}'s delivery is logged ${short(entry.status)} after ${short(entry.attempts)} attempts with status ${short(entry.last_status_code)}, not delivered at the first with 200`,
          )
      }
      // Acknowledged once, published once: no message of either event comes again.
      await new Promise((r) => setTimeout(r, 500))
      for (const id of ids) {
        const copies = got.filter((m) => m.body?.id === id).length
        if (copies !== 1) problems.push(`event ${short(id)} was published ${copies} times`)
      }
      // Each failing destination judged by the delivery of this check's first event: other checks' agents are
      // announced to it too, and their deliveries may have been given up already.
      const own = (entries: Record<string, unknown>[]) => entries.find((e) => e.event_id === ids[0])
      const failing = own(await logUntil(ctx, voidId, (entries) => own(entries)?.last_status_code === 503))
      if (
        failing?.last_status_code !== 503 ||
        !/no responders/i.test(String(failing.last_error ?? '')) ||
        !retried(failing)
      )
        problems.push(
          `a delivery to a subject nothing listens on is logged ${short(failing, 300)}, not retried with status 503 and NATS's "no responders"`,
        )
      const refusal = own(
        await logUntil(ctx, refusedId, (entries) => String(own(entries)?.last_error ?? '').includes(REFUSAL)),
      )
      if (
        refusal === undefined ||
        !String(refusal.last_error ?? '').includes(REFUSAL) ||
        refusal.last_status_code === 200 ||
        !retried(refusal)
      )
        problems.push(
          `a publish JetStream refused ("${REFUSAL}") is logged ${short(refusal, 300)}, not retried with JetStream's reason`,
        )
      await sub.drain()
      await refusing.drain()
      assert(problems.length === 0, problems.join('; '))
      if (secret)
        for (const id of created) {
          const read = await ctx.http.get(`/v1/destinations/${id}`)
          expectStatus(read, 200, 'GET /v1/destinations/{id}')
          assert(!read.text.includes(secret), "the destination answer shows the NATS server's credential")
        }
    } finally {
      await nc.close().catch(() => undefined)
      // Deleted here, not at the run's end: the destination that never delivers stops retrying now.
      for (const id of created) await ctx.http.delete(`/v1/destinations/${id}`).catch(() => undefined)
    }
  },
}
