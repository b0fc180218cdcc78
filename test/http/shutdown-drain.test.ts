/**
 * The drain window of a graceful shutdown (`AGENTOPS_SHUTDOWN_DRAIN_MS`): from its first moment `/readyz` answers
 * 503, yet the server still accepts and answers (each answer closing its connection) until the window ends, so a
 * balancer that polls /readyz stops sending before the port closes; then it stops listening.
 */
import { describe, expect, it } from 'vitest'
import { startTestServer } from '../support/server.js'

const DRAIN_MS = 800

describe('the drain window of a graceful shutdown', () => {
  it('answers readiness 503 and still serves requests until the window ends, then refuses connections', async () => {
    const t = await startTestServer({ config: { shutdownDrainMs: DRAIN_MS, shutdownGraceMs: 5_000 } })
    const { token } = await t.createKey()
    const readyz = () => fetch(`${t.baseUrl}/readyz`, { headers: { connection: 'close' } })
    expect((await readyz()).status).toBe(200)
    const started = performance.now()
    const closing = t.close()

    const ready = await readyz()
    expect(ready.status).toBe(503)
    expect(await ready.json()).toMatchObject({ status: 'shutting_down' })
    const served = await t.request('GET', '/v1/agents', { token })
    expect(served.status).toBe(200)
    expect(served.headers.get('connection')).toBe('close')
    // A new connection in the window, on a fresh socket: the port still accepts.
    const fresh = await fetch(`${t.baseUrl}/v1/agents`, {
      headers: { authorization: `Bearer ${token}`, connection: 'close' },
    })
    expect(fresh.status).toBe(200)
    expect(performance.now() - started).toBeLessThan(DRAIN_MS)

    await closing
    expect(performance.now() - started).toBeGreaterThanOrEqual(DRAIN_MS - 50)
    await expect(fetch(`${t.baseUrl}/healthz`, { headers: { connection: 'close' } })).rejects.toThrow()
  })
})
