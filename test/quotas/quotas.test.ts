/**
 * Quotas (src/domain/quotas) through the server on both stores: a workspace's own setting over its tier's, one
 * refusal shape (403 quota_exceeded naming the quota, its limit and its use), counts exact under concurrent writes
 * and given back on delete, and the Idempotency-Key answers a workspace may keep (count, bytes, one answer's size).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { timesStatements } from '../../src/store/db.js'
import { backends } from '../support/backends.js'
import { startTestServer, type TestServer } from '../support/server.js'
import { workspaceRecord } from '../support/workspace.js'

const agent = (name: string) => ({ name, behavior: 'autonomous' })

describe.each(backends())('quotas on $name', (backend) => {
  let t: TestServer

  beforeAll(async () => {
    t = await startTestServer({ databaseUrl: await backend.freshUrl() })
  })

  afterAll(async () => {
    await t?.close()
  })

  it('refuses the agent past the workspace quota with 403 quota_exceeded, and counts a delete back', async () => {
    const { token } = await t.createKey({ quotas: { agents: 2 } })
    const made = []
    for (const name of ['a', 'b'])
      made.push(await t.request('POST', '/v1/agents', { token, body: agent(name) }))
    expect(made.map((r) => r.status)).toEqual([201, 201])
    const refused = await t.request('POST', '/v1/agents', { token, body: agent('c') })
    expect(refused.status).toBe(403)
    expect(refused.body.error.code).toBe('quota_exceeded')
    expect(refused.body.error.detail).toEqual({ quota: 'agents', limit: 2, used: 2 })
    expect((await t.request('GET', '/v1/agents', { token })).body.data).toHaveLength(2)
    expect((await t.request('DELETE', `/v1/agents/${made[0]?.body.agent_id}`, { token })).status).toBe(204)
    expect((await t.request('POST', '/v1/agents', { token, body: agent('c') })).status).toBe(201)
  })

  it('lets exactly the quota through when creations race, over REST and GraphQL alike', async () => {
    const { token } = await t.createKey({ quotas: { agents: 5 } })
    const rest = Array.from({ length: 8 }, (_, i) =>
      t.request('POST', '/v1/agents', { token, body: agent(`r${i}`) }),
    )
    const graphql = Array.from({ length: 8 }, (_, i) =>
      t.request('POST', '/v1/graphql', {
        token,
        body: {
          query: 'mutation($i: AgentCreate!) { createAgent(input: $i) { agent_id } }',
          variables: { i: agent(`g${i}`) },
        },
      }),
    )
    const answers = await Promise.all([...rest, ...graphql])
    const created =
      answers.filter((r) => r.status === 201).length +
      answers.filter((r) => r.status === 200 && r.body.data?.createAgent?.agent_id).length
    expect(created).toBe(5)
    const refusals = answers.filter(
      (r) =>
        r.body?.error?.code === 'quota_exceeded' ||
        r.body?.errors?.[0]?.extensions?.code === 'quota_exceeded',
    )
    expect(refusals).toHaveLength(11)
    expect((await t.request('GET', '/v1/agents?limit=100', { token })).body.data).toHaveLength(5)
  })

  it('keeps exactly idempotency_keys answers when keyed writes race, each refused one doing nothing', async () => {
    const { token, workspace_id } = await t.createKey({ quotas: { idempotency_keys: 5 } })
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        t.request('POST', '/v1/agents', {
          token,
          body: agent(`race-${i}`),
          headers: { 'idempotency-key': `race-${i}` },
        }),
      ),
    )
    // Each answer's status and code, so a failure shows what the others were answered.
    expect(answers.map((r) => `${r.status} ${r.body?.error?.code ?? ''}`).sort()).toEqual([
      ...Array(5).fill('201 '),
      ...Array(7).fill('403 quota_exceeded'),
    ])
    for (const r of answers.filter((a) => a.status === 403))
      expect(r.body.error.detail).toMatchObject({ quota: 'idempotency_keys', limit: 5 })
    expect((await t.request('GET', '/v1/agents?limit=100', { token })).body.data).toHaveLength(5)
    expect(await t.services.quotas.usageOf(workspace_id, 'idempotency_keys')).toBe(5)
    expect(await t.services.quotas.usageOf(workspace_id, 'agents')).toBe(5)
  })

  it('refuses keyed creates past the agents quota when they race, leaving their keys free for a retry', async () => {
    const { token, workspace_id } = await t.createKey({ quotas: { agents: 3 } })
    const keyed = (i: number) =>
      t.request('POST', '/v1/agents', {
        token,
        body: agent(`keyed-${i}`),
        headers: { 'idempotency-key': `keyed-${i}` },
      })
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => keyed(i)))
    const made = answers.filter((r) => r.status === 201)
    expect(made).toHaveLength(3)
    const refused = answers.map((r, i) => ({ r, i })).filter(({ r }) => r.status === 403)
    expect(refused).toHaveLength(5)
    for (const { r } of refused) expect(r.body.error.detail).toEqual({ quota: 'agents', limit: 3, used: 3 })
    expect(await t.services.quotas.usageOf(workspace_id, 'agents')).toBe(3)
    expect(await t.services.quotas.usageOf(workspace_id, 'idempotency_keys')).toBe(3)
    // A refused key kept nothing: once there is room, the same request with the same key creates.
    expect((await t.request('DELETE', `/v1/agents/${made[0]?.body.agent_id}`, { token })).status).toBe(204)
    const retried = await keyed(refused[0]?.i ?? -1)
    expect([retried.status, retried.headers.get('idempotent-replayed')]).toEqual([201, null])
  })

  it('bounds tools, webhooks and destinations the same way', async () => {
    const { token } = await t.createKey({ quotas: { tools: 1, webhooks: 1, destinations: 1 } })
    const tool = (name: string) => ({
      name,
      provider: 'builtin:echo',
      output_schema: {},
      policy_binding: { envelope: 'default', required_scopes: [] },
    })
    expect((await t.request('POST', '/v1/tools', { token, body: tool('t1') })).status).toBe(201)
    const tools = await t.request('POST', '/v1/tools', { token, body: tool('t2') })
    expect([tools.status, tools.body.error.detail.quota]).toEqual([403, 'tools'])
    const hook = {
      url: 'http://127.0.0.1:9/hook',
      events: ['agent.created'],
      secret: 'quota-suite-secret-01',
    }
    expect((await t.request('POST', '/v1/webhooks', { token, body: hook })).status).toBe(201)
    const hooks = await t.request('POST', '/v1/webhooks', { token, body: hook })
    expect([hooks.status, hooks.body.error.detail.quota]).toEqual([403, 'webhooks'])
  })

  it('refuses a batch that would pass the records of its connector, storing none of it', async () => {
    const { token } = await t.createKey({ quotas: { records_per_connector: 3 } })
    const record = (id: string) => ({
      id,
      ts: '2026-01-01T00:00:00Z',
      source: 'test',
      policy_class: 'public',
      body: { n: id },
    })
    const path = '/v1/grid/connectors/c1/ingest'
    expect(
      (await t.request('POST', path, { token, body: { records: [record('1'), record('2')] } })).status,
    ).toBe(202)
    const over = await t.request('POST', path, { token, body: { records: [record('3'), record('4')] } })
    expect(over.status).toBe(403)
    expect(over.body.error.detail).toEqual({
      quota: 'records_per_connector',
      limit: 3,
      used: 2,
      requested: 2,
    })
    // Another connector has its own count.
    expect(
      (await t.request('POST', '/v1/grid/connectors/c2/ingest', { token, body: { records: [record('3')] } }))
        .status,
    ).toBe(202)
    expect((await t.request('POST', path, { token, body: { records: [record('3')] } })).status).toBe(202)
  })

  it('keeps at most idempotency_keys answers: a keyed write past it is refused and does nothing', async () => {
    const { token } = await t.createKey({ quotas: { idempotency_keys: 2 } })
    const keyed = (key: string, name: string) =>
      t.request('POST', '/v1/agents', { token, body: agent(name), headers: { 'idempotency-key': key } })
    expect((await keyed('k1', 'one')).status).toBe(201)
    expect((await keyed('k2', 'two')).status).toBe(201)
    const over = await keyed('k3', 'three')
    expect(over.status).toBe(403)
    expect(over.body.error.detail).toEqual({ quota: 'idempotency_keys', limit: 2, used: 2 })
    // Nothing was done, and the stored answers still replay.
    expect(
      (await t.request('GET', '/v1/agents', { token })).body.data.map((a: { name: string }) => a.name),
    ).toEqual(['one', 'two'])
    const replay = await keyed('k1', 'one')
    expect([replay.status, replay.headers.get('idempotent-replayed')]).toEqual([201, 'true'])
    // Without a key the write goes through.
    expect((await t.request('POST', '/v1/agents', { token, body: agent('three') })).status).toBe(201)
  })

  it('answers a keyed refusal (4xx) the quotas have no room for unstored: too large, or past idempotency_keys', async () => {
    const { token } = await t.createKey({ quotas: { idempotency_keys: 1, idempotency_answer_bytes: 4096 } })
    const keyed = (key: string, body: object) =>
      t.request('POST', '/v1/agents', { token, body, headers: { 'idempotency-key': key } })
    const twice = async (key: string, body: object) => {
      const answers = [await keyed(key, body), await keyed(key, body)]
      return answers.map((r) => [r.status, r.headers.get('idempotent-replayed')])
    }
    // A refusal larger than one stored answer may be (100 issues): answered each time, never replayed. On
    // PostgreSQL a create's refusal is stored by the ordinary claim after its deferred unit, which once ran
    // without the workspace's quotas and kept it.
    const tooLong = { ...agent('long'), capabilities: Array.from({ length: 100 }, () => 'c'.repeat(101)) }
    expect(await twice('large', tooLong)).toEqual([
      [400, null],
      [400, null],
    ])
    // The one stored answer taken, a small refusal is not kept either.
    expect((await keyed('fill', agent('one'))).status).toBe(201)
    expect(await twice('small', { ...agent('bad'), behavior: 'not-a-behavior' })).toEqual([
      [400, null],
      [400, null],
    ])
  })

  it('refuses a keyed write whose answer is larger than one stored answer may be, before committing its work', async () => {
    const { token } = await t.createKey({ quotas: { idempotency_answer_bytes: 600 } })
    const big = {
      ...agent('x'.repeat(200)),
      capabilities: ['c'.repeat(100), 'd'.repeat(100), 'e'.repeat(100)],
    }
    const refused = await t.request('POST', '/v1/agents', {
      token,
      body: big,
      headers: { 'idempotency-key': 'big' },
    })
    expect(refused.status).toBe(403)
    expect(refused.body.error.detail.quota).toBe('idempotency_answer_bytes')
    expect(refused.body.error.detail.limit).toBe(600)
    expect(refused.body.error.detail.used).toBeGreaterThan(600)
    expect((await t.request('GET', '/v1/agents', { token })).body.data).toHaveLength(0)
    // A small one is kept and replayed.
    const small = await t.request('POST', '/v1/agents', {
      token,
      body: agent('s'),
      headers: { 'idempotency-key': 's' },
    })
    expect(small.status).toBe(201)
    const replay = await t.request('POST', '/v1/agents', {
      token,
      body: agent('s'),
      headers: { 'idempotency-key': 's' },
    })
    expect(replay.headers.get('idempotent-replayed')).toBe('true')
  })

  it('bounds the bytes of the answers a workspace keeps', async () => {
    const { token, workspace_id } = await t.createKey({ quotas: { idempotency_bytes: 1200 } })
    const statuses = []
    for (let i = 0; i < 6; i++) {
      const r = await t.request('POST', '/v1/agents', {
        token,
        body: agent(`agent-${i}`),
        headers: { 'idempotency-key': `b${i}` },
      })
      statuses.push(r.status)
      if (r.status === 403) expect(r.body.error.detail.quota).toBe('idempotency_bytes')
    }
    expect(statuses).toContain(403)
    const usage = await t.services.quotas.usageOf(workspace_id, 'idempotency_bytes')
    expect(usage).toBeLessThanOrEqual(1200)
  })

  it('does not key GraphQL queries: the key is ignored and nothing is stored', async () => {
    const { token } = await t.createKey({ quotas: { idempotency_keys: 1 } })
    const query = { query: '{ agents { data { agent_id } } }' }
    for (let i = 0; i < 3; i++) {
      const r = await t.request('POST', '/v1/graphql', {
        token,
        body: query,
        headers: { 'idempotency-key': 'q' },
      })
      expect(r.status).toBe(200)
      expect(r.headers.get('idempotent-replayed')).toBeNull()
      expect(r.body.errors).toBeUndefined()
    }
    // The one stored answer the quota allows is still free for a mutation.
    const mutation = {
      query: 'mutation { createAgent(input: {name: "m", behavior: autonomous}) { agent_id } }',
    }
    const first = await t.request('POST', '/v1/graphql', {
      token,
      body: mutation,
      headers: { 'idempotency-key': 'm' },
    })
    const again = await t.request('POST', '/v1/graphql', {
      token,
      body: mutation,
      headers: { 'idempotency-key': 'm' },
    })
    expect(first.body.data.createAgent.agent_id).toBe(again.body.data.createAgent.agent_id)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
  })
})

describe.each(backends().filter((b) => b.name === 'postgres'))(
  'quota counts at the commit on $name',
  (backend) => {
    let t: TestServer

    beforeAll(async () => {
      t = await startTestServer({ databaseUrl: await backend.freshUrl() })
    })

    afterAll(async () => {
      await t?.close()
    })

    it('takes the usage rows in one order in every commit: keyed creates and keyed ingests racing never deadlock', async () => {
      const { token } = await t.createKey()
      const record = (id: string) => ({
        id,
        ts: '2026-11-23T06:00:00Z',
        source: 's',
        policy_class: 'internal',
        body: {},
      })
      const answers = await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          i % 2 === 0
            ? t.request('POST', '/v1/agents', {
                token,
                body: agent(`order-${i}`),
                headers: { 'idempotency-key': `order-${i}` },
              })
            : t.request('POST', `/v1/grid/connectors/c${i % 3}/ingest`, {
                token,
                body: { records: [record(`order-${i}`)] },
                headers: { 'idempotency-key': `order-${i}` },
              }),
        ),
      )
      expect(answers.map((r) => r.status).filter((s) => s !== 201 && s !== 202)).toEqual([])
    })

    it('sends a keyed create with its counts as one statement, in the counts’ order (src/store/ordered-statement.ts)', async () => {
      const own = await startTestServer({ databaseUrl: await backend.freshUrl() })
      try {
        const { token, workspace_id } = await own.createKey({ quotas: { agents: 5 } })
        const db = own.services.db
        if (!timesStatements(db)) throw new Error('PostgreSQL times its statements')
        const paths: string[] = []
        db.timeStatements((path) => paths.push(path))
        const created = await own.request('POST', '/v1/agents', {
          token,
          body: agent('in-one-statement'),
          headers: { 'idempotency-key': 'in-one-statement' },
        })
        expect(created.status).toBe(201)
        // The claim, both counts, the agent and its event: one statement in a transaction of its own.
        expect(paths.filter((p) => p === 'transaction')).toEqual(['transaction'])
        expect(await own.services.quotas.usageOf(workspace_id, 'agents')).toBe(1)
        expect(await own.services.quotas.usageOf(workspace_id, 'idempotency_keys')).toBe(1)
        const replay = await own.request('POST', '/v1/agents', {
          token,
          body: agent('in-one-statement'),
          headers: { 'idempotency-key': 'in-one-statement' },
        })
        expect(replay.body.agent_id).toBe(created.body.agent_id)
      } finally {
        await own.close()
      }
    })

    /** A transaction of the workspace that counts one agent, then waits for `release` before it commits. */
    function heldCount(workspaceId: string) {
      let release = () => {}
      const released = new Promise<void>((resolve) => {
        release = resolve
      })
      let counted = () => {}
      const taken = new Promise<void>((resolve) => {
        counted = resolve
      })
      const done = t.services.db.transaction(async (tx) => {
        await tx.one('SELECT 1 AS one')
        await t.services.quotas.take(tx, workspaceId, 'agents')
        counted()
        await released
      })
      return { taken, release, done }
    }

    it('holds the usage row for the COMMIT alone: another write of the workspace is not kept waiting on it', async () => {
      const { token, workspace_id } = await t.createKey({ quotas: { agents: 3 } })
      const held = heldCount(workspace_id)
      await held.taken
      // With the count taken as it came, this create would wait for the held transaction's row lock.
      const other = await Promise.race([
        t.request('POST', '/v1/agents', { token, body: agent('not-kept-waiting') }),
        new Promise<'waited'>((resolve) => setTimeout(() => resolve('waited'), 10_000)),
      ])
      held.release()
      await held.done
      expect(other === 'waited' ? other : other.status).toBe(201)
      expect(await t.services.quotas.usageOf(workspace_id, 'agents')).toBe(2)
    })

    it("gives an expired answer's counts back at the COMMIT: a keyed write reusing its key holds no usage row across its work", async () => {
      const { token, workspace_id } = await t.createKey()
      const first = await t.request('POST', '/v1/agents', {
        token,
        body: agent('expired-first'),
        headers: { 'idempotency-key': 'expired' },
      })
      expect(first.status).toBe(201)
      await t.services.db.run(
        'UPDATE idempotency_keys SET expires_at = 0 WHERE workspace_id = $1 AND idem_key = $2',
        [workspace_id, 'expired'],
      )
      let release = () => {}
      const released = new Promise<void>((resolve) => {
        release = resolve
      })
      let working = () => {}
      const atWork = new Promise<void>((resolve) => {
        working = resolve
      })
      // The key reused: its claim removes the expired answer, then the work waits for `release`.
      const reuse = t.services.idempotency.once(
        workspace_id,
        'expired',
        'another request',
        async () => {
          working()
          await released
          return { response: { status: 200, headers: {}, body: '{}' }, failed: false }
        },
        { quota: { workspace: workspaceRecord(workspace_id) } },
      )
      await atWork
      // With the expired answer's counts given back before the work, this write's count would wait for that row.
      const other = await Promise.race([
        t.request('POST', '/v1/agents', {
          token,
          body: agent('not-kept-waiting-by-a-give-back'),
          headers: { 'idempotency-key': 'other' },
        }),
        new Promise<'waited'>((resolve) => setTimeout(() => resolve('waited'), 10_000)),
      ])
      release()
      expect((await reuse).kind).toBe('answered')
      expect(other === 'waited' ? other : other.status).toBe(201)
      // Two answers kept ('other' and the reused key's), the expired one given back.
      expect(await t.services.quotas.usageOf(workspace_id, 'idempotency_keys')).toBe(2)
    })

    it('fails the commit of a count the quota no longer has room for, naming the quota, its limit and its use', async () => {
      const { token, workspace_id } = await t.createKey({ quotas: { agents: 1 } })
      const held = heldCount(workspace_id)
      await held.taken
      expect((await t.request('POST', '/v1/agents', { token, body: agent('first') })).status).toBe(201)
      held.release()
      const refusal = await held.done.then(
        () => undefined,
        (err: unknown) => err,
      )
      expect(refusal).toMatchObject({
        status: 403,
        code: 'quota_exceeded',
        detail: { quota: 'agents', limit: 1, used: 1 },
      })
      expect(await t.services.quotas.usageOf(workspace_id, 'agents')).toBe(1)
    })
  },
)
