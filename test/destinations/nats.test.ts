import { jetstreamManager } from '@nats-io/jetstream'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { ApiError } from '../../src/domain/errors.js'
import { createOutboundHttp } from '../../src/outbound/http.js'
import { type NatsServer, startNats } from '../support/nats.js'
import { type DestinationHarness, destinationHarness } from './helpers.js'

const WS = 'ws_bus'
const RUN = { run_id: 'run_1', agent_id: 'agt_a', task_id: null, status: 'failed', outcome: null }

let nats: NatsServer
let nc: NatsConnection
let h: DestinationHarness

beforeAll(async () => {
  nats = await startNats()
  nc = await connect({ servers: nats.url })
})
afterAll(async () => {
  await nc?.close()
  await nats?.stop()
})

let stream = ''
beforeEach(async () => {
  h = await destinationHarness('sqlite::memory:', { random: () => 0.999999 })
  // A stream of its own per test (subjects under a fresh prefix), so tests never read each other's messages.
  stream = `T${Math.random().toString(36).slice(2, 10)}`
  const jsm = await jetstreamManager(nc)
  await jsm.streams.add({ name: stream, subjects: [`${stream.toLowerCase()}.>`] })
})
afterEach(async () => {
  await h.close()
  const jsm = await jetstreamManager(nc)
  await jsm.streams.delete(stream).catch(() => undefined)
})

const bus = (config: Record<string, unknown> = {}) =>
  h.destinations.create(WS, {
    type: 'nats',
    name: 'data team bus',
    config: { servers: [nats.url], subject_prefix: stream.toLowerCase(), ...config },
  })

async function stored(): Promise<
  { subject: string; msgId: string | undefined; body: Record<string, unknown> }[]
> {
  const jsm = await jetstreamManager(nc)
  const info = await jsm.streams.info(stream)
  const out = []
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq })
    if (m)
      out.push({
        subject: m.subject,
        msgId: m.header.get('Nats-Msg-Id'),
        body: m.json<Record<string, unknown>>(),
      })
  }
  return out
}

describe(`nats destinations`, () => {
  it('publishes every event to <prefix>.<workspace>.<kind> with Nats-Msg-Id the event id', async () => {
    const d = await bus()
    expect(d.config).toEqual({ servers: [nats.url], subject_prefix: stream.toLowerCase() })
    expect(d.events).toContain('agent.created')
    await h.append(WS, 'run.failed', RUN)
    await h.append(WS, 'agent.created', { agent_id: 'agt_a', name: 'a', status: 'active' })
    await h.append('ws_other', 'run.failed', RUN)
    await h.destinations.dispatcher.runOnce()
    const got = await stored()
    const prefix = stream.toLowerCase()
    expect(got.map((m) => m.subject)).toEqual([`${prefix}.${WS}.run.failed`, `${prefix}.${WS}.agent.created`])
    for (const m of got) {
      expect(m.msgId).toBe(m.body.id)
      expect(String(m.msgId)).toMatch(/^evt_/)
    }
    expect(got[0]?.body).toMatchObject({ event: 'run.failed', run_id: 'run_1' })
    const rows = (await h.destinations.listDeliveries(WS, d.id, 0, 10)).rows
    expect(rows.map((r) => r.status)).toEqual(['delivered', 'delivered'])
    expect(h.heard).toEqual(['nats:delivered', 'nats:delivered'])
  })

  it("a re-publish of the same event (redelivery) is dropped by JetStream's duplicate window", async () => {
    const d = await bus()
    await h.append(WS, 'run.failed', RUN)
    await h.destinations.dispatcher.runOnce()
    const [row] = (await h.destinations.listDeliveries(WS, d.id, 0, 10)).rows
    if (!row) throw new Error('no delivery')
    await h.destinations.redeliver(WS, d.id, row.id)
    await h.destinations.dispatcher.runOnce()
    expect((await h.destinations.listDeliveries(WS, d.id, 0, 10)).rows[0]?.status).toBe('delivered')
    expect(await stored()).toHaveLength(1)
  })

  it('with no stream on the subject the attempt fails (503) and is retried until one listens', async () => {
    const d = await bus({ subject_prefix: 'nowhere' })
    await h.append(WS, 'run.failed', RUN)
    await h.destinations.dispatcher.runOnce()
    let [row] = (await h.destinations.listDeliveries(WS, d.id, 0, 10)).rows
    expect(row).toMatchObject({ status: 'pending', attempts: 1, lastStatusCode: 503 })
    expect(row?.lastError).toContain('no JetStream stream')
    const jsm = await jetstreamManager(nc)
    await jsm.streams.add({ name: `${stream}N`, subjects: ['nowhere.>'] })
    try {
      h.clock.advance(60_000)
      await h.destinations.dispatcher.runOnce()
      ;[row] = (await h.destinations.listDeliveries(WS, d.id, 0, 10)).rows
      expect(row).toMatchObject({ status: 'delivered', attempts: 2 })
    } finally {
      await jsm.streams.delete(`${stream}N`)
    }
  })

  it('a server that does not answer is a failed attempt whose error names no credential', async () => {
    const d = await bus({ servers: ['nats://127.0.0.1:1'] })
    await h.destinations.update(WS, d.id, { secrets: { user: 'svc', password: 'bus-password-not-shown' } })
    await h.append(WS, 'run.failed', RUN)
    await h.destinations.dispatcher.runOnce()
    const [row] = (await h.destinations.listDeliveries(WS, d.id, 0, 10)).rows
    expect(row).toMatchObject({ status: 'pending', attempts: 1, lastStatusCode: null })
    expect(row?.lastError).toMatch(/^NATS: /)
    expect(JSON.stringify(row)).not.toContain('bus-password-not-shown')
  })

  it('refuses bad settings with 400 naming the field, and private servers unless listed', async () => {
    const refusal = async (config: unknown, secrets?: unknown, guarded = false) => {
      const target = guarded
        ? await destinationHarness('sqlite::memory:', { outbound: createOutboundHttp() })
        : h
      try {
        await target.destinations.create(WS, {
          type: 'nats',
          name: 'n',
          config: config as Record<string, unknown>,
          ...(secrets ? { secrets: secrets as Record<string, unknown> } : {}),
        })
      } catch (err) {
        if (err instanceof ApiError) return err.detail
        throw err
      } finally {
        if (guarded) await target.close()
      }
      throw new Error('accepted')
    }
    expect(await refusal({})).toMatchObject({ fields: ['config.servers'] })
    expect(await refusal({ servers: [] })).toMatchObject({ fields: ['config.servers'] })
    expect(await refusal({ servers: ['http://127.0.0.1:4222'] })).toMatchObject({
      fields: ['config.servers'],
    })
    expect(await refusal({ servers: ['nats://u:p@127.0.0.1:4222'] })).toMatchObject({
      fields: ['config.servers'],
    })
    expect(await refusal({ servers: [nats.url], subject_prefix: 'a..b' })).toMatchObject({
      fields: ['config.subject_prefix'],
    })
    expect(await refusal({ servers: [nats.url] }, { user: 'only-user' })).toMatchObject({
      fields: ['secrets.password'],
    })
    expect(await refusal({ servers: ['nats://10.1.2.3:4222'] }, undefined, true)).toMatchObject({
      fields: ['config.servers'],
    })
    const d = await bus({ servers: ['127.0.0.1:4222', 'tls://127.0.0.1'] })
    expect(d.config.servers).toEqual(['nats://127.0.0.1:4222', 'tls://127.0.0.1:4222'])
  })
})
