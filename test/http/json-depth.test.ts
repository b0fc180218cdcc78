/**
 * A depth and size limit for every free-form JSON value (issue 44): a tool's `config` nested ~4,000 deep was stored
 * (201) and then answered 500 on every read; 100,000 deep answered 500 at once; a GraphQL list literal 2,000 deep
 * answered 500. Now every body, GraphQL document and variables, and stream message is held to MAX_JSON_DEPTH and
 * the body limit at the edge (400 naming `max_json_depth`, 413 naming the byte limit), and what is accepted reads
 * back exactly, on both stores. fast-check generates nesting, width and size around each limit.
 */
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { MAX_JSON_DEPTH } from '../../src/domain/json-depth.js'
import { backends } from '../support/backends.js'
import { startTestServer, type TestServer } from '../support/server.js'

const MAX_BODY = 64 * 1024
/** `{"name":…,"config":{"data": VALUE}}`: the value starts at depth 3 of the body. */
const VALUE_DEPTH_LIMIT = MAX_JSON_DEPTH - 2

/** A JSON value nested exactly `kinds.length` deep, each level an array or object with `width` scalar siblings. */
function nested(kinds: readonly ('array' | 'object')[], width: number, leaf: string): unknown {
  let value: unknown = leaf
  for (let level = kinds.length - 1; level >= 0; level--) {
    const siblings = Array.from({ length: width }, (_, i) => i * level)
    value =
      kinds[level] === 'array'
        ? [value, ...siblings]
        : Object.fromEntries([['v', value], ...siblings.map((s, i) => [`s${i}`, s])])
  }
  return value
}

describe.each(backends())('free-form JSON limits on $name', (backend) => {
  let t: TestServer
  let token: string
  let n = 0
  beforeAll(async () => {
    t = await startTestServer({ databaseUrl: await backend.freshUrl(), config: { maxBodyBytes: MAX_BODY } })
    token = (await t.createKey({ limitPerHour: 1_000_000, burstLimit: 1_000_000, tier: 'enterprise' })).token
  })
  afterAll(() => t.close())

  const register = (data: unknown) =>
    t.request('POST', '/v1/tools', {
      token,
      body: {
        name: `deep-${++n}`,
        provider: 'builtin:echo',
        config: { data },
        idempotent: true,
        output_schema: {},
        policy_binding: { envelope: 'default', required_scopes: [] },
      },
    })

  it('accepts and reads back exactly what is within the limits, and refuses the rest with 400 or 413 naming the limit', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom('array' as const, 'object' as const), {
          minLength: VALUE_DEPTH_LIMIT - 4,
          maxLength: VALUE_DEPTH_LIMIT + 4,
        }),
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: 0, max: MAX_BODY + 2048 }),
        async (kinds, width, leafLength) => {
          const value = nested(kinds, width, 'x'.repeat(leafLength))
          const res = await register(value)
          const bytes = Buffer.byteLength(JSON.stringify(value))
          if (kinds.length > VALUE_DEPTH_LIMIT && res.status !== 413) {
            expect(res.status, res.text).toBe(400)
            expect(res.body.error.detail).toMatchObject({
              limit: 'max_json_depth',
              max_depth: MAX_JSON_DEPTH,
            })
            return
          }
          if (res.status === 413) {
            expect(bytes).toBeGreaterThan(MAX_BODY - 512)
            expect(res.body.error.detail).toMatchObject({ limit_bytes: MAX_BODY })
            return
          }
          expect(res.status, res.text).toBe(201)
          const read = await t.request('GET', `/v1/tools/${res.body.tool_id}`, { token })
          expect(read.status, read.text).toBe(200)
          expect(read.body.config.data).toEqual(value)
        },
      ),
      { numRuns: 40 },
    )
  }, 120_000)

  it('answers 400 or 413 (never 500) to bodies nested 30,000 and 100,000 deep, and to one just past the limit', async () => {
    for (const depth of [100_000, 30_000, MAX_JSON_DEPTH + 1]) {
      const res = await t.request('POST', '/v1/tools', {
        token,
        rawBody: `${'['.repeat(depth)}${']'.repeat(depth)}`,
        headers: { 'content-type': 'application/json' },
      })
      expect(res.status, String(depth)).toBe(2 * depth > MAX_BODY ? 413 : 400)
    }
  })

  it('refuses a GraphQL list literal 2,000 deep and deep variables, over HTTP, without a 500', async () => {
    const literal = `${'['.repeat(2000)}1${']'.repeat(2000)}`
    const res = await t.request('POST', '/v1/graphql', {
      token,
      body: { query: `query { agents(limit: 1, cursor: ${literal}) { data { agent_id } } }` },
      unchecked: true,
    })
    expect(res.status).toBeLessThan(500)
    expect(res.text).toContain('max_json_depth')
    const deepVars = await t.request('POST', '/v1/graphql', {
      token,
      body: {
        query: 'query ($x: String) { agents(limit: 1, cursor: $x) { data { agent_id } } }',
        variables: { x: nested(Array(70).fill('object'), 0, 'x') },
      },
      unchecked: true,
    })
    expect(deepVars.status).toBe(400)
  })

  it('refuses a stream message nested past the limit with an error message, keeping the socket', async () => {
    const ws = new WebSocket(`${t.baseUrl.replace(/^http/, 'ws')}/v1/stream`, {
      headers: { authorization: `Bearer ${token}` },
    })
    const messages: string[] = []
    ws.on('message', (d) => messages.push(d.toString()))
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve())
      ws.once('error', reject)
    })
    ws.send(
      JSON.stringify({
        type: 'subscribe',
        ref: 'deep',
        topics: ['connector:x'],
        x: nested(Array(70).fill('array'), 0, 'x'),
      }),
    )
    await expect.poll(() => messages.join('\n'), { timeout: 5_000 }).toContain('nests deeper than')
    expect(ws.readyState).toBe(WebSocket.OPEN)
    ws.close()
  })
})
