import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parsePrivateTargets } from '../../src/outbound/private-targets.js'
import { NO_TARGETS } from '../support/private-targets.js'
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
    t = await startTestServer({ config: { privateTargets: NO_TARGETS } })
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

/**
 * Private targets are per purpose (issue 44): the webhook receiver the operator listed (what the conformance suite
 * needs) takes deliveries, and the same host:port stays closed to `http` tools, where a tenant chooses the URL.
 */
describe('a webhook receiver listed for webhooks only', () => {
  let t: TestServer
  let token: string
  let receiver: Receiver
  beforeAll(async () => {
    receiver = await startReceiver()
    const { host } = new URL(receiver.url)
    t = await startTestServer({
      config: { privateTargets: { ...NO_TARGETS, webhooks: parsePrivateTargets(host, 'TEST') } },
    })
    token = (await t.createKey()).token
  })
  afterAll(async () => {
    await t.close()
    await receiver.close()
  })

  it('takes webhook deliveries while an http tool at the same host:port fails with private_address', async () => {
    const hook = await t.request('POST', '/v1/webhooks', {
      token,
      body: { url: receiver.url, events: ['agent.created'], secret: 'listed-receiver-secret' },
    })
    expect(hook.status).toBe(201)
    await registerTool(t, token, { name: 'same-receiver', provider: 'http', config: { url: receiver.url } })
    const agent = await createAgent(t, token, 'autonomous', ['same-receiver'])
    await receiver.waitFor(1)
    const run = await startRun(t, token, agent)
    const done = await waitForRun(t, token, run.run_id, status('failed'))
    const failed = (await traceOf(t, token, run.run_id)).find((f) => f.kind === 'step.failed')
    expect(failed.detail).toMatchObject({ provider: 'http', violation: 'private_address' })
    expect(done.outcome.error.code).toBe('tool_failed')
    // Only webhook deliveries arrived (they carry a signature); the tool never called.
    expect(receiver.received.length).toBeGreaterThanOrEqual(1)
    for (const got of receiver.received) expect(JSON.parse(got.body)).toHaveProperty('signature')
  })
})
