/**
 * Page cursors are opaque, tamper-proof and bound to their workspace and list (src/domain/cursors.ts): another
 * workspace's, another list's, an edited or a rotated-out cursor answers 400 invalid_cursor on REST and GraphQL,
 * and no cursor shows the shared row counter. Before, a cursor was base64 JSON in clear (`{"l":"agents","k":1}`)
 * and another workspace's answered 200 with an empty page.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CursorKeyring } from '../../src/domain/cursors.js'
import { migrate } from '../../src/store/migrations/index.js'
import { openDb } from '../../src/store/open.js'
import { sharedSecret, storedSecret } from '../../src/store/repos/server-secrets.js'
import { backends } from '../support/backends.js'
import { startTestServer, type TestServer } from '../support/server.js'

const SECRET_A = 'a'.repeat(32)
const SECRET_B = 'b'.repeat(32)

/** Every cursor with one character changed to another base64url character. */
function edits(cursor: string): string[] {
  return Array.from(cursor, (ch, i) => `${cursor.slice(0, i)}${ch === 'A' ? 'B' : 'A'}${cursor.slice(i + 1)}`)
}

describe('the cursor keyring', () => {
  const ring = new CursorKeyring([SECRET_A])

  it('reads back what it made, only for the same workspace and list', () => {
    const c = ring.encode('ws_1', 'agents', 42)
    expect(ring.decode('ws_1', 'agents', c)).toBe(42)
    expect(ring.decode('ws_2', 'agents', c)).toBe('invalid')
    expect(ring.decode('ws_1', 'tools', c)).toBe('invalid')
    // Field boundaries are part of what the tag covers.
    expect(ring.decode('ws_1a', 'gents', c)).toBe('invalid')
  })

  it('refuses every one-character edit', () => {
    const c = ring.encode('ws_1', 'agents', 42)
    for (const edited of edits(c)) expect(ring.decode('ws_1', 'agents', edited)).not.toBe(42)
    expect(ring.decode('ws_1', 'agents', `${c}A`)).toBe('invalid')
    expect(ring.decode('ws_1', 'agents', c.slice(0, -1))).toBe('invalid')
  })

  it('shows neither the position, the list nor the workspace', () => {
    const one = Buffer.from(ring.encode('ws_1', 'agents', 1), 'base64url')
    const two = Buffer.from(ring.encode('ws_1', 'agents', 2), 'base64url')
    expect(one.toString('latin1')).not.toMatch(/agents|ws_1|"k"/)
    expect(one.readBigUInt64BE(one.length - 8)).not.toBe(1n)
    // Positions one apart share no sealed byte pattern: the mask depends on the tag.
    expect(one.subarray(-8).equals(two.subarray(-8))).toBe(false)
    expect(one.readBigUInt64BE(one.length - 8) ^ two.readBigUInt64BE(two.length - 8)).not.toBe(3n)
  })

  it('accepts the previous secret after a rotation and says "rotated" for one it no longer holds', () => {
    const old = ring.encode('ws_1', 'agents', 7)
    expect(new CursorKeyring([SECRET_B, SECRET_A]).decode('ws_1', 'agents', old)).toBe(7)
    expect(new CursorKeyring([SECRET_B]).decode('ws_1', 'agents', old)).toBe('rotated')
  })
})

describe.each(backends())('the shared cursor secret on $name', (backend) => {
  it('is made once and read back the same by every replica of the store', async () => {
    const url = await backend.freshUrl()
    const first = await openDb(url)
    await migrate(first)
    // PostgreSQL replicas may start at the same moment; SQLite has one server (the CLI opens it after).
    const opened = backend.name === 'postgres' ? [first, await openDb(url)] : [first]
    try {
      const made = await Promise.all(opened.map((db, i) => sharedSecret(db, 'cursor', i)))
      expect(new Set(made).size).toBe(1)
      expect(made[0]?.length).toBeGreaterThanOrEqual(32)
    } finally {
      for (const db of opened) await db.close()
    }
    const again = await openDb(url)
    try {
      expect(await sharedSecret(again, 'cursor', 9)).toBe((await storedSecret(again, 'cursor')) ?? '')
      expect(await storedSecret(again, 'cursor')).toBeDefined()
    } finally {
      await again.close()
    }
  })
})

describe('cursors over HTTP and GraphQL', () => {
  let t: TestServer
  let own: string
  let other: string
  let firstPage: { data: { agent_id: string }[]; next_cursor: string }

  beforeAll(async () => {
    t = await startTestServer()
    own = (await t.createKey()).token
    other = (await t.createKey()).token
    for (const name of ['a', 'b', 'c']) {
      await t.request('POST', '/v1/agents', { token: own, body: { name, behavior: 'autonomous' } })
    }
    await t.request('POST', '/v1/agents', { token: other, body: { name: 'x', behavior: 'autonomous' } })
    firstPage = (await t.request('GET', '/v1/agents?limit=1', { token: own })).body
  })
  afterAll(() => t.close())

  it('pages its own workspace and list to the end', async () => {
    expect(firstPage.next_cursor).toMatch(/^[A-Za-z0-9_-]{39}$/)
    const second = await t.request('GET', `/v1/agents?limit=2&cursor=${firstPage.next_cursor}`, {
      token: own,
    })
    expect(second.status).toBe(200)
    expect(second.body.data).toHaveLength(2)
    expect(second.body.next_cursor).toBeNull()
  })

  it("refuses another workspace's cursor with 400 invalid_cursor and no page", async () => {
    const foreign = await t.request('GET', `/v1/agents?limit=1&cursor=${firstPage.next_cursor}`, {
      token: other,
    })
    expect(foreign.status).toBe(400)
    expect(foreign.body.error).toMatchObject({ code: 'invalid_cursor', detail: { parameter: 'cursor' } })
    expect(foreign.body.data).toBeUndefined()
    const gql = await t.request('POST', '/v1/graphql', {
      token: other,
      body: { query: `{ agents(limit: 1, cursor: "${firstPage.next_cursor}") { data { agent_id } } }` },
    })
    expect(gql.body.errors[0].extensions.code).toBe('invalid_cursor')
    expect(gql.body.data.agents).toBeNull()
  })

  it('refuses an edited cursor and a cursor of another list', async () => {
    for (const edited of edits(firstPage.next_cursor).slice(0, 12)) {
      const res = await t.request('GET', `/v1/agents?limit=1&cursor=${edited}`, { token: own })
      expect(res.status, edited).toBe(400)
      expect(res.body.error.code).toBe('invalid_cursor')
    }
    const tools = await t.request('GET', `/v1/tools?cursor=${firstPage.next_cursor}`, { token: own })
    expect(tools.body.error.code).toBe('invalid_cursor')
  })

  it('a REST cursor pages the same list in GraphQL', async () => {
    const gql = await t.request('POST', '/v1/graphql', {
      token: own,
      body: { query: `{ agents(limit: 5, cursor: "${firstPage.next_cursor}") { data { agent_id } } }` },
    })
    expect(gql.body.data.agents.data).toHaveLength(2)
  })

  it('binds a trace cursor to its run; SSE resumes from cursor and from Last-Event-ID', async () => {
    const agent = (
      await t.request('POST', '/v1/agents', { token: own, body: { name: 't', behavior: 'autonomous' } })
    ).body.agent_id
    const runs: { run_id: string; trace_cursor: string | null }[] = []
    for (let i = 0; i < 2; i++) {
      const started = await t.request('POST', `/v1/agents/${agent}/runs`, { token: own, body: {} })
      const deadline = Date.now() + 8000
      let run = started.body
      while (run.status !== 'succeeded' && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20))
        run = (await t.request('GET', `/v1/runs/${started.body.run_id}`, { token: own })).body
      }
      expect(run.status).toBe('succeeded')
      runs.push(run)
    }
    const [a, b] = runs as [(typeof runs)[0], (typeof runs)[0]]
    const page = await t.request('GET', `/v1/runs/${a.run_id}/trace?limit=1`, { token: own })
    expect(page.body.next_cursor).not.toBeNull()
    const next = await t.request('GET', `/v1/runs/${a.run_id}/trace?cursor=${page.body.next_cursor}`, {
      token: own,
    })
    expect(next.status).toBe(200)
    expect(next.body.data.map((f: { seq: number }) => f.seq)).toEqual([2])
    const elsewhere = await t.request('GET', `/v1/runs/${b.run_id}/trace?cursor=${page.body.next_cursor}`, {
      token: own,
    })
    expect(elsewhere.body.error.code).toBe('invalid_cursor')
    const sse = (headers: Record<string, string>, query = '') =>
      fetch(`${t.baseUrl}/v1/runs/${a.run_id}/trace/stream${query}`, {
        headers: { authorization: `Bearer ${own}`, accept: 'text/event-stream', ...headers },
        signal: AbortSignal.timeout(10_000),
      }).then(async (r) => ({ status: r.status, text: await r.text() }))
    const fromCursor = await sse({}, `?cursor=${page.body.next_cursor}`)
    expect(fromCursor.text).toMatch(/id: 2\n/)
    expect(fromCursor.text).not.toMatch(/id: 1\n/)
    const fromLastEventId = await sse({ 'last-event-id': '1' })
    expect(fromLastEventId.text).toMatch(/id: 2\n/)
    expect(fromLastEventId.text).not.toMatch(/id: 1\n/)
    expect((await sse({}, `?cursor=${firstPage.next_cursor}`)).status).toBe(400)
  })
})

describe('a rotated cursor secret', () => {
  it('keeps the previous secret accepted and answers a clear "start again" for one rotated out', async () => {
    const first = await startTestServer({ config: { cursorSecret: SECRET_A } })
    const databaseUrl = first.services.config.databaseUrl
    const token = (await first.createKey()).token
    for (const name of ['a', 'b']) {
      await first.request('POST', '/v1/agents', { token, body: { name, behavior: 'autonomous' } })
    }
    const cursor = (await first.request('GET', '/v1/agents?limit=1', { token })).body.next_cursor
    await first.close()

    const rotated = await startTestServer({
      databaseUrl,
      config: { cursorSecret: SECRET_B, cursorSecretPrevious: SECRET_A },
    })
    const kept = await rotated.request('GET', `/v1/agents?limit=1&cursor=${cursor}`, { token })
    expect(kept.status).toBe(200)
    expect(kept.body.data).toHaveLength(1)
    await rotated.close()

    const later = await startTestServer({
      databaseUrl,
      config: { cursorSecret: SECRET_B, cursorSecretPrevious: 'c'.repeat(32) },
    })
    try {
      const gone = await later.request('GET', `/v1/agents?limit=1&cursor=${cursor}`, { token })
      expect(gone.status).toBe(400)
      expect(gone.body.error.code).toBe('invalid_cursor')
      expect(gone.body.error.message).toMatch(/rotated.*start again/)
      expect(gone.body.error.detail).toMatchObject({ parameter: 'cursor', reason: 'secret_rotated' })
    } finally {
      await later.close()
    }
  })
})
