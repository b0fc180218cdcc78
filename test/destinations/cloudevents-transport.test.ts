/**
 * The CloudEvents transport builds an event's message once for every sink that shares its source and mode (one
 * event fanned out to many sinks), and never lets one sink's source, mode or credential reach another's request.
 */
import { HTTP } from 'cloudevents'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { DestinationRecord } from '../../src/domain/destinations/types.js'
import { cloudEventsTransport } from '../../src/outbound/destinations/cloudevents.js'
import { createOutboundHttp } from '../../src/outbound/http.js'
import { ANY_LOOPBACK_PORT } from '../support/private-targets.js'
import { type Receiver, startReceiver } from '../webhooks/receiver.js'

const WS = 'ws_ce'

function sink(
  id: string,
  url: string,
  config: Record<string, unknown> = {},
  secrets: Record<string, string> = {},
): DestinationRecord {
  return {
    seq: 1,
    id,
    workspaceId: WS,
    type: 'cloudevents',
    name: id,
    events: ['run.failed'],
    agentIds: null,
    config: { url, ...config },
    secrets,
    status: 'active',
    afterEventSeq: 0,
    createdAt: 0,
    updatedAt: 0,
    deletedAt: null,
  }
}

const payload = (id: string) => ({
  id,
  event: 'run.failed',
  ts: '2026-11-29T10:00:00.000Z',
  run_id: 'run_1',
  agent_id: 'agt_a',
})

describe('CloudEvents transport', () => {
  let receiver: Receiver
  beforeEach(async () => {
    receiver = await startReceiver()
  })
  afterEach(async () => {
    vi.restoreAllMocks()
    await receiver.close()
  })

  it('builds one message per event, source and mode, and sends each sink its own', async () => {
    const transport = cloudEventsTransport(createOutboundHttp({ privateTargets: ANY_LOOPBACK_PORT }))
    const binary = vi.spyOn(HTTP, 'binary')
    const structured = vi.spyOn(HTTP, 'structured')
    const context = { timeoutMs: 5_000 }
    const plain = [1, 2, 3].map((i) => sink(`dst_${i}`, receiver.url))
    const withToken = sink('dst_token', receiver.url, {}, { authorization: 'Bearer only-mine' })
    const otherSource = sink('dst_source', receiver.url, { source: 'urn:example:other' })
    const whole = sink('dst_structured', receiver.url, { mode: 'structured' })
    const event = { deliveryId: 'dlv_1', kind: 'run.failed' as const, payload: payload('evt_1') }
    for (const d of [...plain, withToken, otherSource, whole]) {
      expect(await transport.send(d, event, context)).toMatchObject({ ok: true, statusCode: 200 })
    }
    // Default source in binary mode (four sinks), another source, structured mode: three builds.
    expect(binary).toHaveBeenCalledTimes(2)
    expect(structured).toHaveBeenCalledTimes(1)
    const got = receiver.received
    expect(got).toHaveLength(6)
    expect(new Set(got.slice(0, 4).map((r) => r.body)).size).toBe(1)
    expect(got.map((r) => r.headers.authorization)).toEqual([
      undefined,
      undefined,
      undefined,
      'Bearer only-mine',
      undefined,
      undefined,
    ])
    expect(got.map((r) => r.headers['ce-source'])).toEqual([
      ...Array(4).fill(`urn:agentops:workspace:${WS}`),
      'urn:example:other',
      undefined,
    ])
    expect(JSON.parse(got[5]?.body ?? '{}')).toMatchObject({
      id: 'evt_1',
      source: `urn:agentops:workspace:${WS}`,
    })

    // Another event is a message of its own.
    const next = { deliveryId: 'dlv_2', kind: 'run.failed' as const, payload: payload('evt_2') }
    await transport.send(plain[0] as DestinationRecord, next, context)
    expect(binary).toHaveBeenCalledTimes(3)
    expect(receiver.received[6]?.headers['ce-id']).toBe('evt_2')
  })
})
