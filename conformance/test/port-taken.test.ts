/**
 * A reference whose port another server holds: that server answers /healthz too, so a start that waited on /healthz
 * alone ran the suite against a stranger (every check then failed on its keys or its answers). The start now asks
 * with a key it issued, and says what happened instead.
 */
import { createServer } from 'node:http'
import { afterAll, describe, expect, it } from 'vitest'
import { listenOnTestPort } from '../../test/support/ports.js'
import { startReference } from '../src/reference.js'

describe('a reference whose port is taken', () => {
  const stranger = createServer((req, res) => {
    const healthy = req.url === '/healthz'
    res.writeHead(healthy ? 200 : 401, { 'content-type': 'application/json' })
    res.end(JSON.stringify(healthy ? { status: 'ok' } : { error: { code: 'unauthenticated' } }))
  })
  afterAll(() => new Promise<void>((r) => stranger.close(() => r())))

  it('is refused with the reason, not run against the server that holds it', async () => {
    const port = await listenOnTestPort(stranger)
    await expect(startReference(() => {}, undefined, { port })).rejects.toThrow(
      new RegExp(
        `another server answers at http://127.0.0.1:${port} \\(it refused the key issued for the reference with 401`,
      ),
    )
  }, 120_000)
})
