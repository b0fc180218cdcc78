import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.js'
import { type Receiver, startReceiver } from '../webhooks/receiver.js'

const SECRET = 'Bearer never-answered-0123456789'

let t: TestServer
let receiver: Receiver
let token: string
let otherToken: string
let readOnly: string

beforeAll(async () => {
  t = await startTestServer({
    config: { webhookRetryBaseMs: 40, webhookTimeoutMs: 1_000, webhookPollMs: 20 },
  })
  receiver = await startReceiver()
  const key = await t.createKey()
  token = key.token
  otherToken = (await t.createKey()).token
  readOnly = (await t.createKey({ workspace: key.workspace, scopes: ['destinations:read'] })).token
})
afterAll(async () => {
  await t.close()
  await receiver.close()
})

const create = (body: Record<string, unknown>, key = token) =>
  t.request('POST', '/v1/destinations', { token: key, body })

const sink = () => ({
  type: 'cloudevents',
  name: 'data team',
  events: ['agent.created'],
  config: { url: receiver.url },
  secrets: { authorization: SECRET },
})

describe('destinations over REST', () => {
  it('creates (201), reads, lists, changes and deletes, never answering a secret', async () => {
    const res = await create(sink())
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({
      type: 'cloudevents',
      name: 'data team',
      events: ['agent.created'],
      agent_ids: null,
      config: { url: receiver.url, mode: 'binary' },
      secrets_set: ['authorization'],
      status: 'active',
    })
    const id = res.body.destination_id as string
    expect(id).toMatch(/^dst_/)
    const got = await t.request('GET', `/v1/destinations/${id}`, { token })
    const list = await t.request('GET', '/v1/destinations', { token })
    const patched = await t.request('PATCH', `/v1/destinations/${id}`, {
      token,
      body: { status: 'disabled', name: 'renamed' },
    })
    for (const answer of [res, got, list, patched]) expect(answer.text).not.toContain('never-answered')
    expect(got.body.destination_id).toBe(id)
    expect(list.body.data.map((d: { destination_id: string }) => d.destination_id)).toContain(id)
    expect(patched.body).toMatchObject({
      status: 'disabled',
      name: 'renamed',
      secrets_set: ['authorization'],
    })
    expect((await t.request('DELETE', `/v1/destinations/${id}`, { token })).status).toBe(204)
    expect((await t.request('GET', `/v1/destinations/${id}`, { token })).status).toBe(404)
  })

  it('delivers events through the outbox and shows them in the delivery log', async () => {
    const res = await create(sink())
    const id = res.body.destination_id as string
    const agent = await t.request('POST', '/v1/agents', {
      token,
      body: { name: 'routed', behavior: 'autonomous' },
    })
    expect(agent.status).toBe(201)
    const deadline = Date.now() + 10_000
    let rows: { status: string; destination_id: string; event: string }[] = []
    while (Date.now() < deadline) {
      rows = (await t.request('GET', `/v1/destinations/${id}/deliveries`, { token })).body.data
      if (rows[0]?.status === 'delivered') break
      await new Promise((r) => setTimeout(r, 20))
    }
    expect(rows).toMatchObject([{ status: 'delivered', destination_id: id, event: 'agent.created' }])
    expect(receiver.received.some((r) => r.headers['ce-type'] === 'agent.created')).toBe(true)
  })

  it('sends a sample on test and says what the receiver answered', async () => {
    const id = (await create(sink())).body.destination_id as string
    const before = receiver.received.length
    const res = await t.request('POST', `/v1/destinations/${id}/test`, {
      token,
      body: { event: 'run.awaiting_approval' },
    })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({
      ok: true,
      status_code: 200,
      error: null,
      event: 'run.awaiting_approval',
    })
    const sent = receiver.received[before]
    expect(sent?.headers['ce-id']).toBe(res.body.event_id)
    expect(JSON.parse(sent?.body ?? '{}')).toMatchObject({ test: true, event: 'run.awaiting_approval' })
    receiver.script(500)
    const refused = await t.request('POST', `/v1/destinations/${id}/test`, { token })
    expect(refused.body).toMatchObject({ ok: false, status_code: 500, event: 'agent.created' })
  })

  it.each([
    ['an unknown type', { type: 'fax' }],
    ['an unknown event kind', { events: ['run.exploded'] }],
    ['no event kind', { events: [] }],
    ['an event kind twice', { events: ['run.failed', 'run.failed'] }],
    ['an empty agent list', { agent_ids: [] }],
    ['a malformed URL', { config: { url: 'http//nope' } }],
    ['a missing config', { config: undefined }],
    ['an unknown config field', { config: { url: 'https://a.example/', colour: 'red' } }],
    ['no name', { name: undefined }],
    ['extra fields', { extra: true }],
    ['a pagerduty destination without a routing key', { type: 'pagerduty', config: {}, secrets: {} }],
    [
      'a slack destination with a malformed webhook URL',
      { type: 'slack', config: {}, secrets: { webhook_url: 'hooks//never-answered' } },
    ],
  ])('refuses %s with 400 invalid_request', async (_what, change: Record<string, unknown>) => {
    const res = await create({ ...sink(), ...change })
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe('invalid_request')
    expect(res.text).not.toContain('never-answered')
  })

  it.each([
    ['an unknown event kind', { events: ['run.exploded'] }],
    ['no event kind', { events: [] }],
    ['an empty agent list', { agent_ids: [] }],
  ])(
    'refuses a change to %s with 400 invalid_request, leaving the destination as it was',
    async (_what, change) => {
      const id = (await create(sink())).body.destination_id as string
      const res = await t.request('PATCH', `/v1/destinations/${id}`, { token, body: change })
      expect(res.status).toBe(400)
      expect(res.body.error.code).toBe('invalid_request')
      const after = await t.request('GET', `/v1/destinations/${id}`, { token })
      expect(after.body).toMatchObject({ events: ['agent.created'], agent_ids: null })
    },
  )

  it('is tenant-scoped and needs its scopes', async () => {
    const id = (await create(sink())).body.destination_id as string
    for (const [method, path] of [
      ['GET', `/v1/destinations/${id}`],
      ['DELETE', `/v1/destinations/${id}`],
      ['GET', `/v1/destinations/${id}/deliveries`],
      ['POST', `/v1/destinations/${id}/test`],
    ] as const) {
      const res = await t.request(method, path, { token: otherToken })
      expect(res.status).toBe(404)
      expect(res.body.error.message).toBe('Destination not found')
    }
    expect((await t.request('GET', `/v1/destinations/${id}`, { token: readOnly })).status).toBe(200)
    const denied = await create(sink(), readOnly)
    expect(denied.status).toBe(403)
    expect(denied.body.error.detail.limit).toEqual(['destinations:write'])
  })
})

describe('destinations over GraphQL', () => {
  const gql = (query: string, variables: Record<string, unknown> = {}, key = token) =>
    t.request('POST', '/v1/graphql', { token: key, body: { query, variables } })

  it('creates, reads with its deliveries, tests and deletes, with REST rules', async () => {
    const created = await gql(
      `mutation($input: DestinationCreate!) { createDestination(input: $input) {
        destination_id type config secrets_set } }`,
      { input: sink() },
    )
    expect(created.body.errors).toBeUndefined()
    const d = created.body.data.createDestination
    expect(d).toMatchObject({ type: 'cloudevents', secrets_set: ['authorization'] })
    expect(created.text).not.toContain('never-answered')
    const read = await gql(
      `query($id: ID!) { destination(id: $id) { name deliveries { data { status } } } }`,
      {
        id: d.destination_id,
      },
    )
    expect(read.body.data.destination).toMatchObject({ name: 'data team', deliveries: { data: [] } })
    const tested = await gql(`mutation($id: ID!) { testDestination(id: $id) { ok status_code } }`, {
      id: d.destination_id,
    })
    expect(tested.body.data.testDestination).toEqual({ ok: true, status_code: 200 })
    const bad = await gql(
      `mutation($input: DestinationCreate!) { createDestination(input: $input) { destination_id } }`,
      { input: { ...sink(), type: 'fax' } },
    )
    expect(bad.body.errors[0].extensions.code).toBe('invalid_request')
    const other = await gql(
      `query($id: ID!) { destination(id: $id) { name } }`,
      { id: d.destination_id },
      otherToken,
    )
    expect(other.body.errors[0].extensions.code).toBe('not_found')
    const gone = await gql(`mutation($id: ID!) { deleteDestination(id: $id) }`, { id: d.destination_id })
    expect(gone.body.data.deleteDestination).toBe(true)
  })
})
