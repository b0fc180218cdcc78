/**
 * The runs topic's events are typed in GraphQL (`run_event: RunEvent`, generated from the contract's event schemas):
 * a subscription selects their fields per kind, and each typed event is the JSON `event` of the same message.
 */
import { type Client, createClient } from 'graphql-ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { startTestServer, type TestServer } from '../support/server.js'
import { agentWithTool } from './helpers.js'

let t: TestServer
let token: string
let client: Client

beforeAll(async () => {
  t = await startTestServer()
  token = (await t.createKey({ scopes: ['*'] })).token
  client = createClient({
    url: `${t.baseUrl.replace('http', 'ws')}/v1/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${token}` },
    retryAttempts: 0,
    lazy: true,
  })
})
afterAll(async () => {
  await client.dispose()
  await t.close()
})

type Typed = Record<string, unknown> & { __typename: string; event: string; run_id?: string }
type Message = { seq: number; event: Record<string, unknown>; run_event: Typed }

const QUERY = `subscription {
  runEvents(since: 0) {
    seq
    event
    run_event {
      __typename
      id
      event
      ts
      ... on RunLifecycleEvent { run_id agent_id task_id status outcome { status results { tool } error { code } } }
      ... on RunAwaitingApprovalEvent { run_id step_id queue reason payload_preview }
      ... on PolicyDeniedEvent { tool detail { envelope violation escalation_queue } }
    }
  }
}`

/** Replays the runs topic from the start until `enough` holds (bounded: 10 s). */
function replay(enough: (all: Message[]) => boolean): Promise<Message[]> {
  const seen: Message[] = []
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out with ${JSON.stringify(seen)}`)), 10_000)
    const stop = client.subscribe(
      { query: QUERY },
      {
        next: (m) => {
          if (m.errors) {
            clearTimeout(timer)
            reject(new Error(JSON.stringify(m.errors)))
            return
          }
          seen.push((m.data as { runEvents: Message }).runEvents)
          if (enough(seen)) {
            clearTimeout(timer)
            stop()
            resolve(seen)
          }
        },
        error: (err) => {
          clearTimeout(timer)
          reject(err)
        },
        complete: () => resolve(seen),
      },
    )
  })
}

describe('typed subscription payloads (run_event: RunEvent)', () => {
  it('selects the fields of each event kind, equal to the JSON event of the same message', async () => {
    const agentId = await agentWithTool(t, token, 'typed-echo')
    const done = await t.request('POST', `/v1/agents/${agentId}/runs`, { token, body: {} })
    // A supervised agent's tool call waits for approval: a run.awaiting_approval event.
    const supervised = await t.request('POST', '/v1/agents', {
      token,
      body: { name: 'reviewer', behavior: 'supervised', capabilities: ['typed-echo'] },
    })
    const waiting = await t.request('POST', `/v1/agents/${supervised.body.agent_id}/runs`, {
      token,
      body: {},
    })
    const has = (all: Message[], kind: string, runId: string) =>
      all.some((m) => m.run_event.event === kind && m.run_event.run_id === runId)

    const all = await replay(
      (seen) =>
        has(seen, 'run.succeeded', done.body.run_id) &&
        has(seen, 'run.awaiting_approval', waiting.body.run_id),
    )

    for (const m of all) {
      const { __typename, ...typed } = m.run_event
      // Every selected field is the JSON event's (the typed form adds nothing and changes nothing); an object
      // field is the selected part of the JSON one.
      for (const [field, value] of Object.entries(typed)) {
        if (
          value !== null &&
          typeof value === 'object' &&
          !Array.isArray(value) &&
          field !== 'payload_preview'
        ) {
          expect(m.event[field], `${__typename}.${field}`).toMatchObject(value)
        } else {
          expect(value, `${__typename}.${field}`).toEqual(m.event[field] ?? null)
        }
      }
    }
    const succeeded = all.find((m) => m.run_event.event === 'run.succeeded')?.run_event
    expect(succeeded).toMatchObject({
      __typename: 'RunLifecycleEvent',
      run_id: done.body.run_id,
      agent_id: agentId,
      status: 'succeeded',
      outcome: { status: 'succeeded', results: [{ tool: 'typed-echo' }], error: null },
    })
    const started = all.find((m) => m.run_event.event === 'run.started')?.run_event
    expect(started?.__typename).toBe('RunLifecycleEvent')
    const awaiting = all.find((m) => m.run_event.event === 'run.awaiting_approval')?.run_event
    expect(awaiting).toMatchObject({
      __typename: 'RunAwaitingApprovalEvent',
      run_id: waiting.body.run_id,
      queue: expect.any(String),
      step_id: expect.any(String),
    })
    expect(typeof awaiting?.ts).toBe('string')
  })
})
