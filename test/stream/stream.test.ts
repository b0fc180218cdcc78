import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createAgent, registerTool, startRun, status, waitForRun } from '../runs/helpers.js'
import { backends } from '../support/backends.js'
import { startTestServer, type TestServer } from '../support/server.js'
import {
  contractViolations,
  openClient,
  refusedUpgrade,
  type StreamMessage,
  streamUrl,
  type TestClient,
} from './client.js'

const rec = (id: string, body: Record<string, unknown> = { v: id }) => ({
  id,
  ts: '2026-11-23T06:00:00Z',
  source: 'test',
  policy_class: 'public',
  body,
})

const records = (m: StreamMessage) => m.type === 'record'
const seqs = (ms: StreamMessage[]) => ms.map((m) => m.seq)
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

describe.each(backends())('the /v1/stream WebSocket on $name', (backend) => {
  let t: TestServer
  let writer: string
  let workspace: string
  const clients: TestClient[] = []
  const open = async (token: string | undefined, viaQuery = false) => {
    const c = await openClient(t.baseUrl, token, { viaQuery })
    clients.push(c)
    return c
  }
  const ingest = async (connector: string, batch: unknown[], token = writer) => {
    const res = await t.request('POST', `/v1/grid/connectors/${connector}/ingest`, {
      token,
      body: { records: batch },
    })
    expect(res.status).toBe(202)
    return res.body
  }
  const subscribe = async (c: TestClient, topics: string[], since?: Record<string, number>) => {
    c.send({ type: 'subscribe', topics, ...(since ? { since } : {}) })
    await c.collect(
      (m) => (m.type === 'subscribed' || m.type === 'error') && topics.includes(m.topic ?? ''),
      topics.length,
    )
  }

  beforeAll(async () => {
    t = await startTestServer({ databaseUrl: await backend.freshUrl() })
    workspace = `stream-ws-${process.pid}`
    writer = (await t.createKey({ workspace, scopes: ['ingest:write', 'records:read'] })).token
  })
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => {})
    await t.close()
  })

  it('refuses an upgrade without a valid token with HTTP 401 and the error envelope', async () => {
    const attempts: Record<string, string>[] = [
      {},
      { authorization: 'Bearer nope' },
      { authorization: 'Basic abc' },
    ]
    for (const headers of attempts) {
      const res = await refusedUpgrade(streamUrl(t.baseUrl), headers)
      expect(res.status).toBe(401)
      expect(res.headers['www-authenticate']).toMatch(/^Bearer/)
      const body = JSON.parse(res.body)
      expect(body.error).toMatchObject({ code: 'unauthenticated', detail: expect.any(Object) })
      expect(body.error.request_id).toMatch(/^req_/)
    }
    const badQuery = await refusedUpgrade(streamUrl(t.baseUrl, '?access_token=aok_bad'))
    expect(badQuery.status).toBe(401)
    const revoked = await t.createKey({ workspace, scopes: ['*'] })
    await t.services.keyAdmin.revoke(revoked.key_id)
    expect(
      (await refusedUpgrade(streamUrl(t.baseUrl), { authorization: `Bearer ${revoked.token}` })).status,
    ).toBe(401)
  })

  it('answers a plain GET (no upgrade) with the envelope and the rate-limit figures, never a bare 404', async () => {
    // The stream is documented under the contract's `x-websockets`, not `paths`: no HTTP operation to check against.
    expect((await t.request('GET', '/v1/stream', { unchecked: true })).status).toBe(401)
    // A header token or the upgrade's `?access_token=`: either is an authenticated request, counted (spec §8).
    for (const res of [
      await t.request('GET', '/v1/stream', { token: writer, unchecked: true }),
      await t.request('GET', `/v1/stream?access_token=${encodeURIComponent(writer)}`, { unchecked: true }),
    ]) {
      expect(res.status).toBe(400)
      expect(res.body.error.code).toBe('invalid_request')
      expect(res.headers.get('ratelimit')).toMatch(/;r=\d+/)
      expect(res.headers.get('ratelimit-policy')).toBeTruthy()
    }
    const wrong = await t.request('GET', '/v1/stream?access_token=not-a-key', { unchecked: true })
    expect(wrong.status).toBe(401)
  })

  it('gives two clients with different scopes exactly the records they may see, in order', async () => {
    const narrow = await open((await t.createKey({ workspace, scopes: ['stream:connector:alpha'] })).token)
    const wide = await open((await t.createKey({ workspace, scopes: ['stream:connector:*'] })).token, true)
    const foreignKey = await t.createKey({ scopes: ['*'] })
    const foreign = await open(foreignKey.token)

    narrow.send({ type: 'subscribe', topics: ['connector:alpha', 'connector:beta'] })
    const [ack, refusal] = await Promise.all([
      narrow.waitFor((m) => m.type === 'subscribed' && m.topic === 'connector:alpha'),
      narrow.waitFor((m) => m.type === 'error' && m.topic === 'connector:beta'),
    ])
    expect(ack.topic).toBe('connector:alpha')
    expect(refusal.error).toMatchObject({
      code: 'policy_denied',
      detail: {
        envelope: 'api_key',
        violation: 'missing_scope',
        observed: ['stream:connector:alpha'],
        limit: ['stream:connector:beta'],
        escalation_queue: expect.any(String),
      },
      request_id: expect.stringMatching(/^req_/),
    })
    await subscribe(wide, ['connector:alpha', 'connector:beta'])
    await subscribe(foreign, ['connector:alpha'])

    const first = await ingest('alpha', [rec('a1'), rec('a2')])
    await ingest('beta', [rec('b1')])
    await ingest(
      'alpha',
      [rec('a3'), rec('bad', { nope: 1 }), rec('a4')].map((r, i) => (i === 1 ? { ...r, ts: 'x' } : r)),
    )
    // Same connector name in another workspace: must never reach this workspace's subscribers.
    await ingest(
      'alpha',
      [rec('foreign-1')],
      (await t.createKey({ workspace: foreignKey.workspace, scopes: ['ingest:write'] })).token,
    )

    const narrowGot = await narrow.collect(records, 4)
    expect(narrowGot.map((m) => [m.topic, m.seq, m.record.id])).toEqual([
      ['connector:alpha', 1, 'a1'],
      ['connector:alpha', 2, 'a2'],
      ['connector:alpha', 3, 'a3'],
      ['connector:alpha', 4, 'a4'],
    ])
    expect(narrowGot[0]?.record.lineage).toMatchObject({
      batch_id: first.batch_id,
      batch_root: first.lineage_root,
      leaf_index: 0,
      batch_size: 2,
    })
    const wideGot = await wide.collect(records, 5)
    expect(wideGot.filter((m) => m.topic === 'connector:alpha').map((m) => m.record.id)).toEqual([
      'a1',
      'a2',
      'a3',
      'a4',
    ])
    expect(wideGot.filter((m) => m.topic === 'connector:beta').map((m) => [m.seq, m.record.id])).toEqual([
      [1, 'b1'],
    ])
    const foreignGot = await foreign.collect(records, 1)
    expect(foreignGot.map((m) => m.record.id)).toEqual(['foreign-1'])

    // Nothing else arrives afterwards (the refused topic stays refused, the foreign workspace stays apart).
    narrow.send({ type: 'ping' })
    wide.send({ type: 'ping' })
    foreign.send({ type: 'ping' })
    await Promise.all([narrow, wide, foreign].map((c) => c.waitFor((m) => m.type === 'pong')))
    expect(narrow.messages.filter(records)).toHaveLength(4)
    expect(wide.messages.filter(records)).toHaveLength(5)
    expect(foreign.messages.filter(records)).toHaveLength(1)
  })

  it('fills the gap after a reconnect with since, then continues live without duplicates', async () => {
    const token = (await t.createKey({ workspace, scopes: ['stream:connector:gamma'] })).token
    const first = await open(token)
    await subscribe(first, ['connector:gamma'])
    await ingest('gamma', [rec('g1'), rec('g2'), rec('g3')])
    const seen = await first.collect(records, 3)
    const lastSeq = seen.at(-1)?.seq as number
    await first.close()

    await ingest('gamma', [rec('g4'), rec('g5')])
    await ingest('gamma', [rec('g6')])
    const second = await open(token)
    await subscribe(second, ['connector:gamma'], { 'connector:gamma': lastSeq })
    const replayed = await second.collect(records, 3)
    expect(replayed.map((m) => [m.seq, m.record.id])).toEqual([
      [4, 'g4'],
      [5, 'g5'],
      [6, 'g6'],
    ])
    await ingest('gamma', [rec('g7')])
    const all = await second.collect(records, 4)
    expect(seqs(all)).toEqual([4, 5, 6, 7])
  })

  it('keeps the seam between replay and live free of duplicates and reordering under concurrent ingest', async () => {
    const token = (await t.createKey({ workspace, scopes: ['stream:connector:*'] })).token
    for (let b = 0; b < 4; b++)
      await ingest(
        'seam',
        Array.from({ length: 50 }, (_, i) => rec(`pre-${b}-${i}`)),
      )
    const client = await open(token)
    client.send({ type: 'subscribe', topics: ['connector:seam'], since: { 'connector:seam': 0 } })
    // Batches land while the replay is running.
    await Promise.all(
      Array.from({ length: 6 }, (_, b) =>
        ingest(
          'seam',
          Array.from({ length: 20 }, (_, i) => rec(`live-${b}-${i}`)),
        ),
      ),
    )
    const got = await client.collect(records, 320)
    expect(seqs(got)).toEqual(range(1, 320))
    expect(new Set(got.map((m) => m.record.id)).size).toBe(320)
  })

  it('replays at most 1000 missed messages per topic and announces the rest with a gap', async () => {
    const token = (await t.createKey({ workspace, scopes: ['stream:connector:many'] })).token
    for (let b = 0; b < 3; b++)
      await ingest(
        'many',
        Array.from({ length: 400 }, (_, i) => rec(`m-${b}-${i}`, {})),
      )
    const client = await open(token)
    await subscribe(client, ['connector:many'], { 'connector:many': 0 })
    const got = await client.collect(records, 1000, 15_000)
    const gap = client.messages.find((m) => m.type === 'gap')
    expect(gap).toEqual({ type: 'gap', topic: 'connector:many', from: 1, to: 200 })
    expect(client.messages.indexOf(gap as StreamMessage)).toBeLessThan(
      client.messages.indexOf(got[0] as StreamMessage),
    )
    expect(seqs(got)).toEqual(range(201, 1200))
  })

  it('answers malformed messages with invalid_request and keeps the connection open', async () => {
    const client = await open((await t.createKey({ workspace, scopes: ['stream:connector:*'] })).token)
    const bad = [
      'not json',
      '[]',
      '{"type":"dance"}',
      '{"type":"subscribe"}',
      '{"type":"subscribe","topics":[]}',
      '{"type":"subscribe","topics":[7]}',
      '{"type":"subscribe","topics":["runs"],"since":{"runs":-1}}',
      '{"type":"unsubscribe","topics":"x"}',
    ]
    for (const text of bad) client.ws.send(text)
    const errors = await client.collect((m) => m.type === 'error', bad.length)
    for (const e of errors) {
      expect(e.error.code).toBe('invalid_request')
      expect(e.error.message.length).toBeGreaterThan(0)
    }
    client.send({ type: 'subscribe', topics: ['elsewhere', 'connector:bad/id'] })
    const topicErrors = await client.collect((m) => m.type === 'error' && m.topic !== undefined, 2)
    expect(topicErrors.map((e) => [e.topic, e.error.code])).toEqual([
      ['elsewhere', 'invalid_request'],
      ['connector:bad/id', 'invalid_request'],
    ])
    client.send({ type: 'ping' })
    expect((await client.waitFor((m) => m.type === 'pong')).ts).toMatch(/Z$/)
  })

  it('stops delivering a topic after unsubscribe', async () => {
    const client = await open((await t.createKey({ workspace, scopes: ['stream:connector:*'] })).token)
    await subscribe(client, ['connector:unsub', 'connector:kept'])
    client.send({ type: 'unsubscribe', topics: ['connector:unsub'] })
    await client.waitFor((m) => m.type === 'unsubscribed' && m.topic === 'connector:unsub')
    await ingest('unsub', [rec('u1')])
    await ingest('kept', [rec('k1')])
    const got = await client.waitFor(records)
    expect(got.record.id).toBe('k1')
    client.send({ type: 'ping' })
    await client.waitFor((m) => m.type === 'pong')
    expect(client.messages.filter(records).map((m) => m.record.id)).toEqual(['k1'])
  })

  it('carries run events on the runs topic (log seq), only to keys with stream:runs, and not other kinds', async () => {
    const allowed = await open(
      (await t.createKey({ workspace, scopes: ['stream:runs', 'stream:connector:*'] })).token,
    )
    const refused = await open((await t.createKey({ workspace, scopes: ['stream:connector:*'] })).token)
    await subscribe(allowed, ['runs'])
    refused.send({ type: 'subscribe', topics: ['runs', 'connector:runs-side'] })
    const err = await refused.waitFor((m) => m.type === 'error')
    expect(err).toMatchObject({
      topic: 'runs',
      error: { code: 'policy_denied', detail: { limit: ['stream:runs'] } },
    })
    await refused.waitFor((m) => m.type === 'subscribed' && m.topic === 'connector:runs-side')

    const wsId = (await t.services.keyAdmin.ensureWorkspace(workspace, {})).id
    const append = async (kind: string, subjectId: string, data: Record<string, unknown>) => {
      await t.services.db.transaction((tx) =>
        t.services.events.append(tx, { workspaceId: wsId, kind, subjectId, data }),
      )
      t.services.events.notify()
    }
    await append('run.started', 'run_1', { run_id: 'run_1', agent_id: 'agt_1' })
    await append('agent.created', 'agt_2', { agent_id: 'agt_2' })
    await append('run.failed', 'run_1', { run_id: 'run_1' })
    await t.services.db.transaction((tx) =>
      t.services.events.append(tx, {
        workspaceId: 'ws_someone_else',
        kind: 'run.started',
        subjectId: 'run_x',
        data: {},
      }),
    )
    t.services.events.notify()
    await ingest('runs-side', [rec('r1')])

    const events = await allowed.collect((m) => m.type === 'event', 2)
    expect(events.map((m) => [m.topic, m.event.event, m.event.run_id])).toEqual([
      ['runs', 'run.started', 'run_1'],
      ['runs', 'run.failed', 'run_1'],
    ])
    expect((events[1]?.seq as number) > (events[0]?.seq as number)).toBe(true)
    expect(events[0]?.event.id).toMatch(/^evt_/)
    await refused.waitFor(records)
    allowed.send({ type: 'ping' })
    await allowed.waitFor((m) => m.type === 'pong')
    expect(allowed.messages.filter((m) => m.type === 'event')).toHaveLength(2)
    expect(refused.messages.filter((m) => m.type === 'event')).toHaveLength(0)

    // A reconnect with since replays the run events it missed.
    const again = await open((await t.createKey({ workspace, scopes: ['stream:runs'] })).token)
    await subscribe(again, ['runs'], { runs: events[0]?.seq as number })
    const replay = await again.waitFor((m) => m.type === 'event')
    expect(replay.event.event).toBe('run.failed')
    expect(replay.seq).toBe(events[1]?.seq)
  })

  it('accepts batches over the socket (ingest message), answering each in order with the REST result', async () => {
    const token = (await t.createKey({ workspace, scopes: ['ingest:write', 'stream:connector:sock'] })).token
    const client = await open(token)
    await subscribe(client, ['connector:sock'])
    client.send({
      type: 'ingest',
      ref: 'b1',
      connector_id: 'sock',
      records: [rec('s1'), { ...rec('s2'), ts: 'nope' }],
    })
    client.send({ type: 'ingest', ref: 'b2', connector_id: 'sock', records: [rec('s1'), rec('s3')] })
    client.send({
      type: 'ingest',
      ref: 'b3',
      connector_id: 'sock',
      records: Array.from({ length: 501 }, (_, i) => rec(`x${i}`)),
    })
    client.send({ type: 'ingest', ref: 'b4', connector_id: 'bad/id', records: [] })
    const answers = await client.collect((m) => m.ref !== undefined, 4)
    expect(answers.map((m) => [m.ref, m.type, m.error?.code ?? null])).toEqual([
      ['b4', 'error', 'invalid_request'],
      ['b1', 'ingested', null],
      ['b2', 'ingested', null],
      ['b3', 'error', 'payload_too_large'],
    ])
    expect(answers[1]).toMatchObject({
      connector_id: 'sock',
      accepted: 1,
      rejected: 1,
      rejections: [{ index: 1, code: 'invalid_timestamp' }],
    })
    expect(answers[1]?.lineage_root).toMatch(/^[0-9a-f]{64}$/)
    expect(answers[2]).toMatchObject({
      accepted: 1,
      rejected: 1,
      rejections: [{ index: 0, code: 'duplicate_id' }],
    })
    const got = await client.collect(records, 2)
    expect(got.map((m) => [m.seq, m.record.id])).toEqual([
      [1, 's1'],
      [2, 's3'],
    ])
    const page = await t.request('GET', '/v1/grid/connectors/sock/records', { token: writer })
    expect(page.body.data.map((r: { id: string }) => r.id)).toEqual(['s1', 's3'])
  })

  it('refuses socket ingestion without ingest:write', async () => {
    const client = await open((await t.createKey({ workspace, scopes: ['stream:connector:*'] })).token)
    client.send({ type: 'ingest', ref: 'r', connector_id: 'sock2', records: [rec('z')] })
    const err = await client.waitFor((m) => m.type === 'error')
    expect(err).toMatchObject({
      ref: 'r',
      error: { code: 'policy_denied', detail: { limit: ['ingest:write'] } },
    })
    expect((await t.request('GET', '/v1/grid/connectors/sock2/records', { token: writer })).status).toBe(404)
  })

  it('streams the events of a real run on the runs topic, in log order', async () => {
    const token = (await t.createKey({ workspace, scopes: ['*'] })).token
    const client = await open(token)
    await subscribe(client, ['runs'])
    await registerTool(t, token, { name: 'stream-echo' })
    const agent = await createAgent(t, token, 'autonomous', ['stream-echo'])
    const run = await startRun(t, token, agent)
    await waitForRun(t, token, run.run_id, status('succeeded'))
    const events = await client.collect((m) => m.type === 'event' && m.event.run_id === run.run_id, 2)
    expect(events.map((m) => m.event.event)).toEqual(['run.started', 'run.succeeded'])
    expect((events[1]?.seq as number) > (events[0]?.seq as number)).toBe(true)
    // Agent and tool events of the same workspace are not part of the runs topic.
    expect(
      client.messages
        .filter((m) => m.type === 'event')
        .every((m) => /^(run\.|policy\.denied)/.test(m.event.event)),
    ).toBe(true)
  })

  it('sent only messages that match the contract (checked last)', () => {
    expect(contractViolations).toEqual([])
  })
})
