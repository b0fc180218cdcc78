/**
 * Mutations go through the same Idempotency-Key middleware as every POST under /v1, so they get REST's semantics
 * exactly: a repeat replays the stored answer byte for byte, another body is 409, and the key is free after 24 h.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/domain/clock.js'
import { startTestServer, type TestServer } from '../support/server.js'
import { gql } from './helpers.js'

const DAY_MS = 24 * 3600 * 1000
const clock = new ManualClock(Date.UTC(2026, 5, 1, 12))
let t: TestServer
let token: string

beforeAll(async () => {
  t = await startTestServer({ clock, config: { workers: false } })
  token = (await t.createKey({ scopes: ['*'] })).token
})
afterAll(() => t.close())

const create = (name: string) =>
  `mutation { createAgent(input: { name: "${name}", behavior: hybrid }) { agent_id name } }`

describe('Idempotency-Key on GraphQL mutations', () => {
  it('replays within 24 hours, refuses another body, and frees the key after 24 hours', async () => {
    const headers = { 'Idempotency-Key': 'gql-day' }
    const first = await gql(t, token, create('one'), undefined, headers)
    clock.advance(DAY_MS - 1000)
    const replay = await gql(t, token, create('one'), undefined, headers)
    expect(replay.headers.get('idempotent-replayed')).toBe('true')
    expect(replay.text).toBe(first.text)
    const other = await gql(t, token, create('two'), undefined, headers)
    expect(other.status).toBe(409)
    expect(other.body.error.code).toBe('idempotency_key_reused')
    clock.advance(2000)
    const fresh = await gql(t, token, create('two'), undefined, headers)
    expect(fresh.headers.get('idempotent-replayed')).toBeNull()
    expect(fresh.body.data.createAgent.name).toBe('two')
  })

  it('stores a refused mutation too, as REST stores a 4xx: the repeat replays the refusal', async () => {
    const headers = { 'Idempotency-Key': 'gql-refused' }
    const q = 'mutation { startRun(agent_id: "agt_00000000000000000000000000") { run_id } }'
    const first = await gql(t, token, q, undefined, headers)
    expect(first.body.errors[0].extensions.code).toBe('not_found')
    const replay = await gql(t, token, q, undefined, headers)
    expect(replay.headers.get('idempotent-replayed')).toBe('true')
    expect(replay.text).toBe(first.text)
  })
})
