/**
 * Shutdown waits for answers still being worked on, never for ones already sent: a server whose requests have all
 * been answered closes at once, well inside its grace period.
 */
import { describe, expect, it } from 'vitest'
import { startTestServer } from '../support/server.js'

describe('shutdown', () => {
  it('does not wait for requests that were already answered', async () => {
    const t = await startTestServer({ config: { shutdownGraceMs: 5_000 } })
    const { token } = await t.createKey()
    for (let i = 0; i < 3; i++) expect((await t.request('GET', '/v1/agents', { token })).status).toBe(200)
    const started = performance.now()
    await t.close()
    expect(performance.now() - started).toBeLessThan(2_500)
  })
})
