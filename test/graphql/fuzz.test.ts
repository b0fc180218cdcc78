/**
 * Bad input is never a 500: random documents, variables and mangled valid queries all answer a clear error
 * (400 with the envelope for a body that is not a GraphQL request, otherwise `errors` with an invalid_request or
 * domain code). Bounded: a fixed number of runs with a fixed seed.
 */
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.js'
import { gql } from './helpers.js'

let t: TestServer
let token: string

beforeAll(async () => {
  t = await startTestServer({ config: { workers: false } })
  token = (await t.createKey({ scopes: ['*'] })).token
})
afterAll(() => t.close())

const VALID = [
  'query($id: ID!) { run(id: $id) { run_id agent { name } trace(limit: 3) { data { seq } } } }',
  'query($c: String, $l: Int) { agents(cursor: $c, limit: $l) { data { agent_id runs { next_cursor } } } }',
  'mutation($i: AgentCreate!) { createAgent(input: $i) { agent_id } }',
  'mutation($a: ID!, $i: RunStartRequest) { startRun(agent_id: $a, input: $i) { run_id } }',
  'query($c: ID!) { records(connector_id: $c) { data { id } } }',
]

const mangled = fc
  .tuple(fc.constantFrom(...VALID), fc.nat(200), fc.nat(8), fc.string({ maxLength: 6 }))
  .map(([q, at, cut, insert]) => q.slice(0, at % q.length) + insert + q.slice((at % q.length) + cut))

const variables = fc.dictionary(
  fc.constantFrom('id', 'c', 'l', 'i', 'a'),
  fc.oneof(fc.string({ maxLength: 80 }), fc.integer(), fc.constant(null), fc.jsonValue({ maxDepth: 3 })),
)

function expectClearError(res: { status: number; body: Record<string, unknown> }): void {
  expect(res.status).toBeLessThan(500)
  if (res.status === 400) {
    expect((res.body.error as { code: string }).code).toBe('invalid_request')
    return
  }
  expect(res.status).toBe(200)
  const errors = (res.body.errors ?? []) as {
    message: string
    extensions: { code: string; status: number }
  }[]
  for (const e of errors) {
    expect(e.message.length).toBeGreaterThan(0)
    expect(e.extensions.status).toBeLessThan(500)
    expect(e.extensions.code).not.toBe('internal_error')
  }
}

describe('bad GraphQL input never gets a 500', () => {
  it('mangled documents with random variables', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(mangled, fc.string({ maxLength: 120 })), variables, async (query, vars) => {
        expectClearError(await gql(t, token, query.trim() === '' ? '{' : query, vars))
      }),
      { numRuns: 150, seed: 15 },
    )
  })

  it('a document over the token limit is refused without parsing it all', async () => {
    const res = await gql(t, token, `{ ${'agents { next_cursor } '.repeat(2000)} }`)
    expect(res.status).toBe(200)
    expect(res.body.data).toBeUndefined()
    expect(res.body.errors[0].message).toContain('tokens')
    expect(res.body.errors[0].extensions.code).toBe('invalid_request')
  })
})
