import { HTTP } from 'cloudevents'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ApiError } from '../../src/domain/errors.js'
import type { EventKind } from '../../src/domain/webhooks/body.js'
import { createDestinationTransports } from '../../src/outbound/destinations/index.js'
import { createOutboundHttp } from '../../src/outbound/http.js'
import { backends } from '../support/backends.js'
import { type Receiver, startReceiver } from '../webhooks/receiver.js'
import { type DestinationHarness, destinationHarness } from './helpers.js'

const WS = 'ws_dest'
const RUN = { run_id: 'run_1', agent_id: 'agt_a', task_id: null, status: 'failed', outcome: null }

describe.each(backends())('destination outbox on $name', (backend) => {
  let h: DestinationHarness
  let receiver: Receiver

  beforeEach(async () => {
    h = await destinationHarness(await backend.freshUrl(), { random: () => 0.999999 })
    receiver = await startReceiver()
  })
  afterEach(async () => {
    await h.close()
    await receiver.close()
  })

  const sink = (extra: Record<string, unknown> = {}, events: EventKind[] = ['run.failed', 'run.succeeded']) =>
    h.destinations.create(WS, {
      type: 'cloudevents',
      name: 'sink',
      events,
      config: { url: receiver.url, ...extra },
      secrets: { authorization: 'Bearer sink-secret-token' },
    })

  it('delivers each event once as a binary-mode CloudEvent: id the event id, type its kind', async () => {
    await sink()
    await h.append(WS, 'run.failed', RUN)
    await h.append(WS, 'run.started', RUN) // not listed
    await h.append('ws_other', 'run.failed', RUN) // another workspace
    await h.destinations.dispatcher.runOnce()
    await h.destinations.dispatcher.runOnce()
    expect(receiver.received).toHaveLength(1)
    const got = receiver.received[0]
    if (!got) throw new Error('nothing received')
    const ce = HTTP.toEvent({ headers: got.headers, body: got.body })
    if (Array.isArray(ce)) throw new Error('one event expected')
    const data = ce.data as Record<string, unknown>
    expect(ce.specversion).toBe('1.0')
    expect(ce.type).toBe('run.failed')
    expect(ce.id).toBe(data.id)
    expect(String(ce.id)).toMatch(/^evt_/)
    expect(ce.source).toBe(`urn:agentops:workspace:${WS}`)
    expect(ce.subject).toBe('run_1')
    expect(data).toMatchObject({ event: 'run.failed', run_id: 'run_1', agent_id: 'agt_a' })
    expect(got.headers['ce-id']).toBe(data.id)
    expect(got.headers.authorization).toBe('Bearer sink-secret-token')
  })

  it('structured mode sends one application/cloudevents+json body', async () => {
    await sink({ mode: 'structured', source: 'urn:example:agentops' })
    await h.append(WS, 'run.succeeded', { ...RUN, status: 'succeeded' })
    await h.destinations.dispatcher.runOnce()
    const got = receiver.received[0]
    if (!got) throw new Error('nothing received')
    expect(got.headers['content-type']).toMatch(/^application\/cloudevents\+json/)
    const body = JSON.parse(got.body) as Record<string, unknown>
    expect(body).toMatchObject({ specversion: '1.0', type: 'run.succeeded', source: 'urn:example:agentops' })
    expect(body.id).toBe((body.data as Record<string, unknown>).id)
  })

  it('an agent filter passes only events naming one of its agents', async () => {
    await h.destinations.create(WS, {
      type: 'cloudevents',
      name: 'agent b only',
      events: ['run.failed', 'tool.registered'],
      agent_ids: ['agt_b'],
      config: { url: receiver.url },
    })
    await h.append(WS, 'run.failed', RUN)
    await h.append(WS, 'run.failed', { ...RUN, run_id: 'run_2', agent_id: 'agt_b' })
    await h.append(WS, 'tool.registered', { tool_id: 'tool_1', name: 't', status: 'active' })
    await h.destinations.dispatcher.runOnce()
    expect(receiver.received.map((r) => r.headers['ce-subject'])).toEqual(['run_2'])
  })

  it('shares the outbox with webhooks without either dispatcher sending the other one rows', async () => {
    const d = await sink()
    const w = await h.webhooks.create(WS, {
      url: receiver.url,
      events: ['run.failed'],
      secret: 'shared-outbox-secret',
    })
    await h.append(WS, 'run.failed', RUN)
    await h.webhooks.dispatcher.runOnce()
    expect(receiver.received).toHaveLength(1)
    expect(receiver.received[0]?.headers['webhook-id']).toBeDefined()
    await h.destinations.dispatcher.runOnce()
    expect(receiver.received).toHaveLength(2)
    expect(receiver.received[1]?.headers['ce-id']).toBeDefined()
    const dl = await h.destinations.listDeliveries(WS, d.id, 0, 10)
    const wl = await h.webhooks.listDeliveries(WS, w.id, 0, 10)
    expect(dl.rows.map((r) => r.status)).toEqual(['delivered'])
    expect(wl.rows.map((r) => r.status)).toEqual(['delivered'])
  })

  it('retries a failed attempt with jittered backoff, then delivers; metrics count per type', async () => {
    const d = await sink()
    receiver.script(500)
    await h.append(WS, 'run.failed', RUN)
    await h.destinations.dispatcher.runOnce()
    let [row] = (await h.destinations.listDeliveries(WS, d.id, 0, 10)).rows
    expect(row).toMatchObject({ status: 'pending', attempts: 1, lastStatusCode: 500 })
    // random() pinned just under 1: the first retry waits just under the 1 s base.
    expect((row?.nextAttemptAt ?? 0) - h.clock.now()).toBeGreaterThan(900)
    h.clock.advance(1_000)
    await h.destinations.dispatcher.runOnce()
    ;[row] = (await h.destinations.listDeliveries(WS, d.id, 0, 10)).rows
    expect(row).toMatchObject({ status: 'delivered', attempts: 2, lastStatusCode: 200 })
    expect(h.heard).toEqual(['cloudevents:failed', 'cloudevents:delivered'])
  })

  it("honours a 429's Retry-After instead of its own backoff", async () => {
    const d = await sink()
    receiver.answerHeaders = { 'retry-after': '120' }
    receiver.script(429)
    await h.append(WS, 'run.failed', RUN)
    await h.destinations.dispatcher.runOnce()
    const [row] = (await h.destinations.listDeliveries(WS, d.id, 0, 10)).rows
    expect(row).toMatchObject({ status: 'pending', attempts: 1, lastStatusCode: 429 })
    expect((row?.nextAttemptAt ?? 0) - h.clock.now()).toBe(120_000)
  })

  it('gives up after the last attempt, and redeliver starts a fresh round with the same ids', async () => {
    await h.close()
    h = await destinationHarness(await backend.freshUrl(), {
      random: () => 0,
      retry: { baseMs: 1, maxAttempts: 2 },
    })
    const d = await sink()
    receiver.fallback = 503
    await h.append(WS, 'run.failed', RUN)
    await h.destinations.dispatcher.runOnce()
    const [failed] = (await h.destinations.listDeliveries(WS, d.id, 0, 10)).rows
    expect(failed).toMatchObject({ status: 'failed', attempts: 2, lastStatusCode: 503 })
    expect(h.heard).toEqual(['cloudevents:failed', 'cloudevents:failed', 'cloudevents:gave-up'])
    receiver.fallback = 200
    if (!failed) throw new Error('no row')
    const requeued = await h.destinations.redeliver(WS, d.id, failed.id)
    expect(requeued).toMatchObject({ status: 'pending', attempts: 0, id: failed.id })
    await h.destinations.dispatcher.runOnce()
    const ids = receiver.received.map((r) => r.headers['ce-id'])
    expect(new Set(ids).size).toBe(1)
    expect(ids).toHaveLength(3)
    const [done] = (await h.destinations.listDeliveries(WS, d.id, 0, 10)).rows
    expect(done?.status).toBe('delivered')
  })

  it('a destination created later never gets the backlog; a deleted one drops its pending rows', async () => {
    await h.append(WS, 'run.failed', RUN)
    const d = await sink()
    await h.destinations.dispatcher.runOnce()
    expect(receiver.received).toHaveLength(0)
    receiver.fallback = 500
    await h.append(WS, 'run.failed', RUN)
    await h.destinations.dispatcher.runOnce()
    expect(receiver.received).toHaveLength(1)
    await h.destinations.delete(WS, d.id)
    h.clock.advance(3_600_000)
    await h.destinations.dispatcher.runOnce()
    expect(receiver.received).toHaveLength(1)
    await expect(h.destinations.get(WS, d.id)).rejects.toMatchObject({ code: 'not_found' })
  })

  it('is tenant-scoped: another workspace reads, changes and deletes nothing of it', async () => {
    const d = await sink()
    for (const call of [
      () => h.destinations.get('ws_x', d.id),
      () => h.destinations.update('ws_x', d.id, { name: 'x' }),
      () => h.destinations.delete('ws_x', d.id),
      () => h.destinations.listDeliveries('ws_x', d.id, 0, 10),
      () => h.destinations.test('ws_x', d.id),
    ]) {
      await expect(call()).rejects.toMatchObject({ code: 'not_found', message: 'Destination not found' })
    }
    expect((await h.destinations.get(WS, d.id)).name).toBe('sink')
  })
})

describe('destination settings', () => {
  let h: DestinationHarness
  beforeEach(async () => {
    h = await destinationHarness(`sqlite::memory:`)
  })
  afterEach(async () => {
    await h.close()
  })

  const refusal = async (input: Record<string, unknown>) => {
    try {
      await h.destinations.create(WS, {
        type: 'cloudevents',
        name: 'n',
        events: ['run.failed'],
        config: { url: 'https://sink.example.com/' },
        ...input,
      })
    } catch (err) {
      if (err instanceof ApiError) return { code: err.code, message: err.message, detail: err.detail }
      throw err
    }
    throw new Error('accepted')
  }

  it('refuses bad input with invalid_request naming the field, never echoing a secret', async () => {
    // The type, the event kinds and the agent ids are the contract's to judge (http.test.ts refuses them).
    expect(await refusal({ config: { url: 'not a url' } })).toMatchObject({
      code: 'invalid_request',
      detail: { fields: ['config.url'] },
    })
    expect(await refusal({ config: { url: 'ftp://sink.example.com/' } })).toMatchObject({
      detail: { fields: ['config.url'] },
    })
    expect(await refusal({ config: { url: 'https://u:p@sink.example.com/' } })).toMatchObject({
      detail: { fields: ['config.url'] },
    })
    expect(await refusal({ config: {} })).toMatchObject({ detail: { fields: ['config.url'] } })
    expect(await refusal({ config: { url: 'https://a.example/', mode: 'sideways' } })).toMatchObject({
      detail: { fields: ['config.mode'] },
    })
    expect(await refusal({ config: { url: 'https://a.example/', extra: 1 } })).toMatchObject({
      detail: { fields: ['config.extra'] },
    })
    const secret = await refusal({ secrets: { authorization: 42, token: 'do-not-echo-this-secret' } })
    expect(secret.detail.fields).toEqual(['secrets.authorization', 'secrets.token'])
    expect(JSON.stringify(secret)).not.toContain('do-not-echo-this-secret')
  })

  it('refuses a URL at a private or loopback address unless private targets are allowed', async () => {
    const guarded = await destinationHarness('sqlite::memory:', {
      outbound: createOutboundHttp(),
      transports: createDestinationTransports(createOutboundHttp()),
    })
    try {
      for (const url of ['http://127.0.0.1:9/x', 'http://169.254.169.254/latest', 'http://localhost/x']) {
        await expect(
          guarded.destinations.create(WS, {
            type: 'cloudevents',
            name: 'n',
            events: ['run.failed'],
            config: { url },
          }),
        ).rejects.toMatchObject({ code: 'invalid_request', detail: { fields: ['config.url'] } })
      }
    } finally {
      await guarded.close()
    }
  })

  it('updates what is given: a new config is checked whole, the secrets stay unless replaced', async () => {
    const d = await h.destinations.create(WS, {
      type: 'cloudevents',
      name: 'n',
      events: ['run.failed'],
      config: { url: 'https://a.example/' },
      secrets: { authorization: 'Bearer one' },
    })
    expect(d.config).toEqual({ url: 'https://a.example/', mode: 'binary' })
    const changed = await h.destinations.update(WS, d.id, {
      config: { url: 'https://b.example/', mode: 'structured' },
      events: ['run.succeeded'],
      agent_ids: ['agt_1'],
    })
    expect(changed).toMatchObject({
      config: { url: 'https://b.example/', mode: 'structured' },
      secrets: { authorization: 'Bearer one' },
      events: ['run.succeeded'],
      agentIds: ['agt_1'],
    })
    await expect(h.destinations.update(WS, d.id, { config: { mode: 'binary' } })).rejects.toMatchObject({
      code: 'invalid_request',
    })
    expect((await h.destinations.get(WS, d.id)).config.url).toBe('https://b.example/')
  })
})
