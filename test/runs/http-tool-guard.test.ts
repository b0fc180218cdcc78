import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.js'
import { type Receiver, startReceiver } from '../webhooks/receiver.js'
import { createAgent, registerTool, startRun, status, traceOf, waitForRun } from './helpers.js'

/**
 * The `http` tool provider goes out through the same guarded port as webhooks: with private targets not allowed,
 * no spelling of a loopback address reaches a receiver on this host (the provider's former host-name regex let
 * `[::ffff:127.0.0.1]` through).
 */
describe('the http tool provider with private targets not allowed', () => {
  let t: TestServer
  let token: string
  let receiver: Receiver
  beforeAll(async () => {
    receiver = await startReceiver()
    t = await startTestServer({ config: { allowPrivateWebhooks: false } })
    token = (await t.createKey()).token
  })
  afterAll(async () => {
    await t.close()
    await receiver.close()
  })

  it.each(['[::ffff:127.0.0.1]', '127.0.0.1', 'localhost', '[::1]'])(
    'fails the step at %s with private_address and never calls it',
    async (host) => {
      const port = new URL(receiver.url).port
      const name = `loopback-${host.replace(/[^a-z0-9]/gi, '')}`
      await registerTool(t, token, { name, provider: 'http', config: { url: `http://${host}:${port}/tool` } })
      const agent = await createAgent(t, token, 'autonomous', [name])
      const run = await startRun(t, token, agent)
      const done = await waitForRun(t, token, run.run_id, status('failed'))
      expect(done.outcome.error.code).toBe('tool_failed')
      const failed = (await traceOf(t, token, run.run_id)).find((f) => f.kind === 'step.failed')
      expect(failed.detail).toMatchObject({ provider: 'http', violation: 'private_address' })
      expect(receiver.received).toHaveLength(0)
    },
  )
})
