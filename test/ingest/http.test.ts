import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from '../support/backends.js'
import { merkleTreeHash as mth, sha256 as sha } from '../support/rfc6962.js'
import { startTestServer, type TestServer } from '../support/server.js'

// Independent RFC 6962 + RFC 8785 for the records these tests send (flat string/number bodies, so sorted keys suffice).
const sorted = (o: Record<string, unknown>): string =>
  `{${Object.keys(o)
    .sort()
    .map((k) => {
      const v = o[k]
      return `${JSON.stringify(k)}:${typeof v === 'object' && v !== null ? sorted(v as Record<string, unknown>) : JSON.stringify(v)}`
    })
    .join(',')}}`
const rootOf = (records: Record<string, unknown>[]) =>
  mth(records.map((r) => Buffer.from(sorted(r)))).toString('hex')

const rec = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  ts: '2026-11-23T06:00:00+01:00',
  source: 'crm',
  policy_class: 'internal',
  body: { value: id, n: 1 },
  ...extra,
})

describe.each(backends())('ingestion over HTTP on $name', (backend) => {
  let t: TestServer
  let token: string
  beforeAll(async () => {
    t = await startTestServer({ databaseUrl: await backend.freshUrl() })
    token = (await t.createKey({ scopes: ['ingest:write', 'records:read'] })).token
  })
  afterAll(async () => {
    await t.close()
  })

  it('answers 202 with accepted, rejected, a recomputable root and a reason per rejected record', async () => {
    const records = [
      rec('a'),
      rec('b', { ts: '2026-11-23T06:00:00' }),
      rec('c'),
      { id: 'd' },
      rec('e', { policy_class: 'top-secret' }),
      rec('c'),
    ]
    const res = await t.request('POST', '/v1/grid/connectors/crm.eu-1/ingest', { token, body: { records } })
    expect(res.status).toBe(202)
    expect(res.body).toMatchObject({ accepted: 2, rejected: 4 })
    expect(res.body.lineage_root).toBe(rootOf([records[0], records[2]] as Record<string, unknown>[]))
    expect(res.body.rejections.map((r: { index: number; code: string }) => [r.index, r.code])).toEqual([
      [1, 'invalid_timestamp'],
      [3, 'missing_field'],
      [4, 'policy_class_not_allowed'],
      [5, 'duplicate_id'],
    ])

    const page = await t.request('GET', '/v1/grid/connectors/crm.eu-1/records', { token })
    expect(page.status).toBe(200)
    expect(page.body.next_cursor).toBeNull()
    expect(page.body.data.map((r: { id: string; seq: number }) => [r.id, r.seq])).toEqual([
      ['a', 1],
      ['c', 2],
    ])
    expect(page.body.data[1].lineage).toMatchObject({
      batch_id: res.body.batch_id,
      batch_root: res.body.lineage_root,
      leaf_index: 1,
      batch_size: 2,
    })
  })

  it('pages a connector’s records with a cursor bound to that connector', async () => {
    const records = Array.from({ length: 7 }, (_, i) => rec(`p${i}`))
    expect(
      (await t.request('POST', '/v1/grid/connectors/paged/ingest', { token, body: { records } })).status,
    ).toBe(202)
    const first = await t.request('GET', '/v1/grid/connectors/paged/records?limit=3', { token })
    expect(first.body.data.map((r: { seq: number }) => r.seq)).toEqual([1, 2, 3])
    const second = await t.request(
      'GET',
      `/v1/grid/connectors/paged/records?limit=5&cursor=${first.body.next_cursor}`,
      { token },
    )
    expect(second.body.data.map((r: { seq: number }) => r.seq)).toEqual([4, 5, 6, 7])
    expect(second.body.next_cursor).toBeNull()
    const foreign = await t.request(
      'GET',
      `/v1/grid/connectors/crm.eu-1/records?cursor=${first.body.next_cursor}`,
      { token },
    )
    expect(foreign.status).toBe(400)
    expect(foreign.body.error.code).toBe('invalid_cursor')
  })

  it('refuses more than 500 records with 413 payload_too_large and stores none of them', async () => {
    const records = Array.from({ length: 501 }, (_, i) => rec(`big${i}`, { body: {} }))
    const res = await t.request('POST', '/v1/grid/connectors/big/ingest', { token, body: { records } })
    expect(res.status).toBe(413)
    expect(res.body.error.code).toBe('payload_too_large')
    expect((await t.request('GET', '/v1/grid/connectors/big/records', { token })).status).toBe(404)
    const ok = await t.request('POST', '/v1/grid/connectors/big/ingest', {
      token,
      body: { records: records.slice(0, 500) },
    })
    expect(ok.status).toBe(202)
    expect(ok.body.accepted).toBe(500)
  })

  it('refuses a body over the 1 MiB limit with 413', async () => {
    const records = [rec('huge', { body: { blob: 'x'.repeat(1024 * 1024) } })]
    const res = await t.request('POST', '/v1/grid/connectors/huge/ingest', { token, body: { records } })
    expect(res.status).toBe(413)
    expect(res.body.error.code).toBe('payload_too_large')
  })

  it('does not store a replayed batch twice (same Idempotency-Key)', async () => {
    const body = { records: [rec('i1'), rec('i2')] }
    const headers = { 'idempotency-key': 'batch-001' }
    const first = await t.request('POST', '/v1/grid/connectors/idem/ingest', { token, body, headers })
    const second = await t.request('POST', '/v1/grid/connectors/idem/ingest', { token, body, headers })
    expect(first.status).toBe(202)
    expect(second.status).toBe(202)
    expect(second.headers.get('idempotent-replayed')).toBe('true')
    expect(second.text).toBe(first.text)
    const page = await t.request('GET', '/v1/grid/connectors/idem/records', { token })
    expect(page.body.data).toHaveLength(2)
    // Without the key the same batch is judged again: both ids are duplicates now.
    const third = await t.request('POST', '/v1/grid/connectors/idem/ingest', { token, body })
    expect(third.body).toMatchObject({ accepted: 0, rejected: 2 })
  })

  it('answers bad input with the error envelope, never a 500', async () => {
    const cases: [string, unknown, number, string][] = [
      ['/v1/grid/connectors/ok/ingest', { records: 'nope' }, 400, 'invalid_request'],
      ['/v1/grid/connectors/ok/ingest', {}, 400, 'invalid_request'],
      ['/v1/grid/connectors/ok/ingest', [], 400, 'invalid_request'],
      [`/v1/grid/connectors/${'x'.repeat(129)}/ingest`, { records: [] }, 400, 'invalid_request'],
      ['/v1/grid/connectors/bad%20id/ingest', { records: [] }, 400, 'invalid_request'],
    ]
    for (const [path, body, status, code] of cases) {
      const res = await t.request('POST', path, { token, body })
      expect([path, res.status, res.body.error?.code]).toEqual([path, status, code])
    }
    // A hostile nesting depth is refused at the edge, before any record is read: a 400 naming the limit, not a 500.
    const deep = `{"records":[${JSON.stringify(rec('deep')).replace('{"value":"deep","n":1}', `${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}`)},${JSON.stringify(rec('fine'))}]}`
    const deepRes = await t.request('POST', '/v1/grid/connectors/ok/ingest', {
      token,
      rawBody: deep,
      headers: { 'content-type': 'application/json' },
    })
    expect(deepRes.status).toBe(400)
    expect(deepRes.body.error).toMatchObject({ code: 'invalid_request', detail: { limit: 'max_json_depth' } })
    // A field the batch does not have (a batch id of the client's, say) is refused by name, as in every other body,
    // not ignored while the answer names a batch id of the server's.
    const unknown = await t.request('POST', '/v1/grid/connectors/ok/ingest', {
      token,
      body: { batch_id: 'b1', records: [rec('kept-out')] },
    })
    expect([unknown.status, unknown.body.error?.code, unknown.body.error?.detail.fields]).toEqual([
      400,
      'invalid_request',
      ['batch_id'],
    ])
    const empty = await t.request('POST', '/v1/grid/connectors/ok/ingest', { token, body: { records: [] } })
    expect(empty.status).toBe(202)
    expect(empty.body.lineage_root).toBe(sha().toString('hex'))
  })

  it('needs ingest:write to ingest and records:read to read; other workspaces see 404', async () => {
    const reader = (await t.createKey({ scopes: ['records:read'] })).token
    const denied = await t.request('POST', '/v1/grid/connectors/crm.eu-1/ingest', {
      token: reader,
      body: { records: [rec('z')] },
    })
    expect(denied.status).toBe(403)
    expect(denied.body.error).toMatchObject({
      code: 'policy_denied',
      detail: { violation: 'missing_scope', limit: ['ingest:write'] },
    })
    const writer = (await t.createKey({ scopes: ['ingest:write'] })).token
    const noRead = await t.request('GET', '/v1/grid/connectors/crm.eu-1/records', { token: writer })
    expect(noRead.status).toBe(403)
    const other = await t.request('GET', '/v1/grid/connectors/crm.eu-1/records', { token: reader })
    expect(other.status).toBe(404)
    expect(other.body.error.code).toBe('not_found')
    const anon = await t.request('POST', '/v1/grid/connectors/crm.eu-1/ingest', { body: { records: [] } })
    expect(anon.status).toBe(401)
  })

  it('applies the workspace’s own policy classes', async () => {
    const strict = (await t.createKey({ scopes: ['*'], policyClasses: ['pii'] })).token
    const res = await t.request('POST', '/v1/grid/connectors/strict/ingest', {
      token: strict,
      body: { records: [rec('1', { policy_class: 'pii' }), rec('2', { policy_class: 'internal' })] },
    })
    expect(res.body).toMatchObject({
      accepted: 1,
      rejected: 1,
      rejections: [{ index: 1, code: 'policy_class_not_allowed' }],
    })
  })
})
