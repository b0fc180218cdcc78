/**
 * Batched loading: the store queries one request costs do not grow with the page. A page of 200 runs with their
 * agents (and plan counts) costs the same number of queries as a page of 10.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Db } from '../../src/store/db.js'
import { backends } from '../support/backends.js'
import { startTestServer, type TestServer } from '../support/server.js'
import { gql } from './helpers.js'

describe.each(backends())('batched loading on $name', (backend) => {
  let t: TestServer
  let token: string
  let workspaceId: string
  let queries = 0

  beforeAll(async () => {
    // No scheduler: runs stay queued, so no background work adds queries while one request is counted.
    t = await startTestServer({ databaseUrl: await backend.freshUrl(), config: { workers: false } })
    const key = await t.createKey({ scopes: ['*'] })
    token = key.token
    workspaceId = (
      (await t.services.keys.verifyRequest({ accessToken: key.token })) as { workspace: { id: string } }
    ).workspace.id
    const db = t.services.db as Db & Record<'query' | 'one' | 'run', (...args: never[]) => unknown>
    for (const method of ['query', 'one', 'run'] as const) {
      const original = db[method].bind(db)
      db[method] = ((...args: never[]) => {
        queries++
        return original(...args)
      }) as never
    }
  })
  afterAll(() => t.close())

  async function agentWithRuns(n: number): Promise<string> {
    const agent = await t.services.agents.create(workspaceId, { name: `a${n}`, behavior: 'autonomous' })
    const caller = { keyId: 'k', identity: 'test', scopes: ['*'] }
    for (let i = 0; i < n; i++) await t.services.runs.start(workspaceId, agent.id, {}, caller)
    return agent.id
  }

  /**
   * The fewest of four runs: a one-off load that may land in any (the key cache's 1 s refresh, a new 10 s rate
   * window read once; on a loaded machine a request can take long enough for two in a row to refresh) is not the
   * page's own cost, and an N+1 would show in all.
   */
  async function count(query: string, variables: Record<string, unknown>): Promise<number> {
    const once = async () => {
      const before = queries
      const res = await gql(t, token, query, variables)
      expect(res.status).toBe(200)
      expect(res.body.errors).toBeUndefined()
      return queries - before
    }
    return Math.min(await once(), await once(), await once(), await once())
  }

  // The first request of a key loads what later ones find cached (the verified key, the rate windows): measure
  // warm requests only, so the figures compare the page's own queries.
  const warm = () => count('{ __typename }', {})

  it('a page of 200 runs with their agents costs as many store queries as a page of 10', async () => {
    const small = await agentWithRuns(10)
    const large = await agentWithRuns(200)
    const query = `query($id: ID!) { agent(id: $id) { runs(limit: 200) { data {
      run_id plan { steps_total steps_completed } agent { agent_id name status active_runs } } } } }`
    await warm()
    const few = await count(query, { id: small })
    const many = await count(query, { id: large })
    expect(many).toBe(few)
    expect(many).toBeLessThan(20)
    const res = await gql(t, token, query, { id: large })
    expect(res.body.data.agent.runs.data).toHaveLength(200)
    expect(res.body.data.agent.runs.data[199].agent).toMatchObject({ agent_id: large, active_runs: 200 })
  })

  it('a page of agents with their status costs the same whatever its size', async () => {
    await warm()
    const one = await count('{ agents(limit: 1) { data { agent_id status active_runs } } }', {})
    for (let i = 0; i < 30; i++)
      await t.services.agents.create(workspaceId, { name: `b${i}`, behavior: 'hybrid' })
    const page = await count('{ agents(limit: 200) { data { agent_id status active_runs } } }', {})
    expect(page).toBe(one)
  })
})
