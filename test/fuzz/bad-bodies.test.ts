/**
 * No bad body answers a server error (issue 44): a few bad bodies per surface (REST JSON bodies, GraphQL documents
 * and variables, stream frames, ingest batches) on both stores, from a fixed seed, so a failure replays. The 10,000
 * per surface run as `npm run bench:fuzz`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from '../support/backends.js'
import { fuzzSurfaces, serverErrors } from '../support/bad-bodies.js'
import { startTestServer, type TestServer } from '../support/server.js'

const RUNS = 40
const SEED = 44

describe.each(backends())('bad bodies on $name', (backend) => {
  let t: TestServer
  let token: string
  let agentId: string

  beforeAll(async () => {
    t = await startTestServer({ databaseUrl: await backend.freshUrl() })
    token = (await t.createKey({ tier: 'enterprise', limitPerHour: 1_000_000, burstLimit: 100_000 })).token
    agentId = (
      await t.request('POST', '/v1/agents', { token, body: { name: 'target', behavior: 'autonomous' } })
    ).body.agent_id
  })

  afterAll(async () => {
    await t?.close()
  })

  it('answers every bad body of every surface without a 5xx', async () => {
    const counts = await fuzzSurfaces({ baseUrl: t.baseUrl, token, agentId }, RUNS, SEED)
    expect(serverErrors(counts)).toEqual({ rest: 0, graphql: 0, stream: 0, ingest: 0 })
    for (const surface of Object.values(counts)) {
      expect([...surface.values()].reduce((a, n) => a + n, 0)).toBe(RUNS)
    }
  }, 60_000)
})
