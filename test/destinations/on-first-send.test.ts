/**
 * The transports built on a client library load it on their first send (src/outbound/destinations/index.ts): the
 * load runs once, however many sends come at once, and a transport that never sent has nothing to close.
 */
import { describe, expect, it } from 'vitest'
import type { DestinationTransport } from '../../src/domain/destinations/ports.js'
import type { DestinationRecord } from '../../src/domain/destinations/types.js'
import { onFirstSend } from '../../src/outbound/destinations/index.js'

const destination = { id: 'dst_1' } as DestinationRecord
const event = { deliveryId: 'dlv_1', kind: 'run.started' as const, payload: {} }

describe('onFirstSend', () => {
  it('loads the transport on the first send, once, and sends through it', async () => {
    let loads = 0
    const sent: string[] = []
    const transport = onFirstSend(async () => {
      loads++
      return {
        async send(d) {
          sent.push(d.id)
          return { statusCode: 200, error: null, ok: true }
        },
      } satisfies DestinationTransport
    })
    expect(loads).toBe(0)
    const results = await Promise.all(
      [1, 2, 3].map(() => transport.send(destination, event, { timeoutMs: 1000 })),
    )
    expect(results.every((r) => r.ok)).toBe(true)
    expect(loads).toBe(1)
    expect(sent).toEqual(['dst_1', 'dst_1', 'dst_1'])
  })

  it('closes what it loaded, and loads nothing to close one that never sent', async () => {
    let loads = 0
    let closed = 0
    const make = () =>
      onFirstSend(async () => {
        loads++
        return {
          send: async () => ({ statusCode: 200, error: null, ok: true }),
          close: async () => {
            closed++
          },
        }
      })
    await make().close?.()
    expect([loads, closed]).toEqual([0, 0])
    const used = make()
    await used.send(destination, event, { timeoutMs: 1000 })
    await used.close?.()
    expect([loads, closed]).toEqual([1, 1])
  })
})
