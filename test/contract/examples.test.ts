/**
 * Every request body in the contract carries a complete example at its media type (what docs pages put in "Test
 * request" and example-driven tools such as Portman send). Each example must match its schema and be accepted by a
 * fresh server: this file creates what a path needs (an agent, a run awaiting approval, a subscription) and posts
 * every example as it stands, expecting the operation's documented success status.
 */
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { assertMatchesSchema } from '../support/openapi-validator.js'
import { startTestServer, type TestServer } from '../support/server.js'
import { startReceiver } from '../webhooks/receiver.js'

type Json = Record<string, unknown>
const doc = parse(
  readFileSync(new URL('../../openapi/agent-operations.yaml', import.meta.url), 'utf8'),
) as Json

interface BodyOperation {
  operationId: string
  method: string
  template: string
  success: number
  media: Record<string, { schema?: { $ref?: string }; example?: unknown; examples?: unknown }>
}

/** Every operation (paths and webhooks) that takes a request body. */
function bodyOperations(section: 'paths' | 'webhooks'): BodyOperation[] {
  const out: BodyOperation[] = []
  for (const [template, item] of Object.entries(doc[section] as Record<string, Record<string, Json>>)) {
    for (const [method, op] of Object.entries(item)) {
      const body = op.requestBody as { content: BodyOperation['media'] } | undefined
      if (!body || typeof op !== 'object') continue
      const success = Object.keys(op.responses as Json).find((s) => s.startsWith('2'))
      out.push({
        operationId: String(op.operationId),
        method,
        template,
        success: Number(success),
        media: body.content,
      })
    }
  }
  return out
}

const schemaName = (ref: string | undefined) => ref?.split('/').at(-1) ?? ''

describe('request body examples', () => {
  const operations = [...bodyOperations('paths'), ...bodyOperations('webhooks')]

  it.each(operations.map((o) => [o.operationId, o] as const))(
    '%s: every media type has a complete example that matches its schema',
    (_, op) => {
      for (const [type, media] of Object.entries(op.media)) {
        expect(media.example, `${op.operationId} ${type}`).toBeDefined()
        assertMatchesSchema(schemaName(media.schema?.$ref), media.example)
      }
    },
  )

  describe('a fresh server accepts every example as it stands', () => {
    let t: TestServer
    let token: string
    const example = (operationId: string): unknown => {
      const op = operations.find((o) => o.operationId === operationId)
      return op?.media['application/json']?.example
    }
    const post = async (operationId: string, path: string) => {
      const op = operations.find((o) => o.operationId === operationId)
      if (!op) throw new Error(`no operation ${operationId}`)
      const res = await t.request(op.method.toUpperCase(), path, { token, body: example(operationId) })
      expect(res.status, `${operationId}: ${res.text}`).toBe(op.success)
      return res
    }
    /** Polls the run (bounded: 200 reads) until it has a pending approval. */
    async function awaitingStep(runId: string): Promise<string> {
      for (let i = 0; i < 200; i++) {
        const run = await t.request('GET', `/v1/runs/${runId}`, { token })
        const step = run.body.awaiting?.[0]?.step_id
        if (typeof step === 'string') return step
        await new Promise((r) => setTimeout(r, 25))
      }
      throw new Error(`run ${runId} never awaited an approval`)
    }

    beforeAll(async () => {
      t = await startTestServer()
      token = (await t.createKey({ scopes: ['*'] })).token
    })
    afterAll(() => t?.close())

    it('accepts a body sent as application/json; charset=utf-8, the second media type the contract lists', async () => {
      const res = await t.request('POST', '/v1/agents', {
        token,
        body: { name: 'charset', behavior: 'autonomous' },
        headers: { 'content-type': 'application/json; charset=utf-8' },
      })
      expect(res.status, res.text).toBe(201)
    })

    it('posts each example to its operation and gets the documented success', async () => {
      const posted = new Set<string>()
      const send = async (operationId: string, path: string) => {
        posted.add(operationId)
        return post(operationId, path)
      }
      await send('registerTool', '/v1/tools')
      const agent = await send('createAgent', '/v1/agents')
      const agentId: string = agent.body.agent_id
      await send('startRun', `/v1/agents/${agentId}/runs`)
      await send('assignTask', `/v1/agents/${agentId}/tasks`)
      const ingest = await send('ingestBatch', '/v1/grid/connectors/crm-eu/ingest')
      expect(ingest.body.rejections, 'the example record is accepted').toEqual([])
      const graphql = await send('postGraphql', '/v1/graphql')
      expect(graphql.body.errors, 'the example query runs').toBeUndefined()

      // A run under the `gated` envelope waits for approval at its first step.
      const reviewer = await t.request('POST', '/v1/agents', {
        token,
        body: {
          name: 'reviewer',
          behavior: 'autonomous',
          capabilities: ['search'],
          policy_envelope: 'gated',
        },
      })
      const run = await t.request('POST', `/v1/agents/${reviewer.body.agent_id}/runs`, { token, body: {} })
      const step = await awaitingStep(run.body.run_id)
      await send('decideApproval', `/v1/runs/${run.body.run_id}/steps/${step}/approval`)

      // Last, so no event of this test is ever delivered to the example's (public) address.
      const webhook = await send('createWebhook', '/v1/webhooks')
      await send('rotateWebhookSecret', `/v1/webhooks/${webhook.body.webhook_id}/rotate-secret`)
      await t.request('DELETE', `/v1/webhooks/${webhook.body.webhook_id}`, { token })
      const destination = await send('createDestination', '/v1/destinations')
      await send('updateDestination', `/v1/destinations/${destination.body.destination_id}`)
      await t.request('DELETE', `/v1/destinations/${destination.body.destination_id}`, { token })
      // The sample goes out at once: to a destination on a local receiver, never to the example's address.
      const receiver = await startReceiver()
      try {
        const local = await t.request('POST', '/v1/destinations', {
          token,
          body: { type: 'cloudevents', name: 'local', events: ['run.failed'], config: { url: receiver.url } },
        })
        const tested = await send('testDestination', `/v1/destinations/${local.body.destination_id}/test`)
        expect(tested.body.ok).toBe(true)
      } finally {
        await receiver.close()
      }

      // Slack signs its interaction callbacks: test/destinations/slack-interactions.test.ts posts signed ones.
      const withBodies = bodyOperations('paths')
        .map((o) => o.operationId)
        .filter((id) => id !== 'handleSlackInteraction')
      expect([...posted].sort()).toEqual([...withBodies].sort())
    }, 30_000)
  })
})
