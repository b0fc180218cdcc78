import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.js'

let t: TestServer
let token: string
const binding = { envelope: 'default', required_scopes: [] }

beforeAll(async () => {
  t = await startTestServer()
  token = (await t.createKey()).token
})
afterAll(() => t.close())

describe('agents and tasks', () => {
  it('creates, reads, lists and deletes an agent', async () => {
    const created = await t.request('POST', '/v1/agents', {
      token,
      body: { name: 'researcher', behavior: 'supervised', capabilities: ['search'] },
    })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({
      name: 'researcher',
      behavior: 'supervised',
      status: 'idle',
      active_runs: 0,
    })
    const id = created.body.agent_id
    expect((await t.request('GET', `/v1/agents/${id}`, { token })).body.agent_id).toBe(id)
    const list = await t.request('GET', '/v1/agents?limit=200', { token })
    expect(list.body.data.map((a: { agent_id: string }) => a.agent_id)).toContain(id)
    expect((await t.request('DELETE', `/v1/agents/${id}`, { token })).status).toBe(204)
    expect((await t.request('GET', `/v1/agents/${id}`, { token })).status).toBe(404)
    expect((await t.request('DELETE', `/v1/agents/${id}`, { token })).status).toBe(404)
  })

  it('assigns a task with a priority and reads it back', async () => {
    const agent = (
      await t.request('POST', '/v1/agents', { token, body: { name: 'a', behavior: 'autonomous' } })
    ).body
    const res = await t.request('POST', `/v1/agents/${agent.agent_id}/tasks`, {
      token,
      body: { description: 'summarise', data_source: 's3://bucket/x', priority: 5 },
    })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ description: 'summarise', data_source: 's3://bucket/x', priority: 5 })
    const read = await t.request('GET', `/v1/tasks/${res.body.task_id}`, { token })
    expect(read.body.task_id).toBe(res.body.task_id)
    const dflt = await t.request('POST', `/v1/agents/${agent.agent_id}/tasks`, {
      token,
      body: { description: 'd' },
    })
    expect(dflt.body.priority).toBe(3)
    for (const priority of [0, 6, 2.5, '3']) {
      const bad = await t.request('POST', `/v1/agents/${agent.agent_id}/tasks`, {
        token,
        body: { description: 'd', priority },
      })
      expect(bad.status, `priority ${priority}`).toBe(400)
      expect(bad.body.error.detail.fields).toContain('priority')
    }
  })
})

describe('tools', () => {
  it('registers, lists, inspects and retires; a retired tool stays readable by id', async () => {
    const reg = await t.request('POST', '/v1/tools', {
      token,
      body: { name: 'lookup', provider: 'builtin:echo', policy_binding: binding, idempotent: true },
    })
    expect(reg.status).toBe(201)
    const id = reg.body.tool_id
    const dup = await t.request('POST', '/v1/tools', {
      token,
      body: { name: 'lookup', provider: 'builtin:echo', policy_binding: binding },
    })
    expect(dup.status).toBe(409)
    expect(dup.body.error.code).toBe('already_exists')
    const retired = await t.request('DELETE', `/v1/tools/${id}`, { token })
    expect(retired.status).toBe(200)
    expect(retired.body.status).toBe('retired')
    expect(retired.body.retired_at).not.toBeNull()
    expect((await t.request('DELETE', `/v1/tools/${id}`, { token })).body.retired_at).toBe(
      retired.body.retired_at,
    )
    const listed = await t.request('GET', '/v1/tools?limit=200', { token })
    expect(listed.body.data.map((x: { tool_id: string }) => x.tool_id)).not.toContain(id)
    const all = await t.request('GET', '/v1/tools?limit=200&include_retired=true', { token })
    expect(all.body.data.map((x: { tool_id: string }) => x.tool_id)).toContain(id)
    expect((await t.request('GET', `/v1/tools/${id}`, { token })).body.status).toBe('retired')
    // The name is free again once the old tool is retired.
    const again = await t.request('POST', '/v1/tools', {
      token,
      body: { name: 'lookup', provider: 'builtin:echo', policy_binding: binding },
    })
    expect(again.status).toBe(201)
  })

  it('accepts an input_schema that is a reference to a schema (spec §2) and refuses broken schemas', async () => {
    const ref = { $ref: 'https://schemas.example.com/tools/lookup-input.json' }
    const reg = await t.request('POST', '/v1/tools', {
      token,
      body: { name: 'by-reference', provider: 'builtin:echo', policy_binding: binding, input_schema: ref },
    })
    expect(reg.status).toBe(201)
    expect(reg.body.input_schema).toEqual(ref)
    for (const [field, schema] of [
      ['input_schema', { type: 'no-such-type' }],
      ['input_schema', { $ref: '#/$defs/missing' }],
      ['output_schema', { $ref: 'https://schemas.example.com/tools/out.json' }],
    ] as const) {
      const bad = await t.request('POST', '/v1/tools', {
        token,
        body: { name: 'broken-schema', provider: 'builtin:echo', policy_binding: binding, [field]: schema },
      })
      expect(bad.status, JSON.stringify(schema)).toBe(400)
      expect(bad.body.error.detail.fields).toEqual([field])
    }
  })

  it("keeps each tool's schema to itself: the same $id in another tool or workspace is no conflict", async () => {
    const other = (await t.createKey()).token
    const schema = (type: string) => ({
      $id: 'https://schemas.example.com/tools/shared.json',
      type: 'object',
      properties: { q: { type }, nested: { $id: 'https://schemas.example.com/tools/inner.json', type } },
    })
    for (const [who, name, type] of [
      [token, 'ids-a', 'string'],
      [token, 'ids-b', 'integer'],
      [other, 'ids-a', 'boolean'],
    ] as const) {
      const reg = await t.request('POST', '/v1/tools', {
        token: who,
        body: {
          name,
          provider: 'builtin:echo',
          policy_binding: binding,
          input_schema: schema(type),
          output_schema: schema(type),
        },
      })
      expect(reg.status, `${name} ${type}: ${JSON.stringify(reg.body)}`).toBe(201)
    }
    // An $id that names Ajv's own meta-schema is refused, and leaves the validator whole for the next tool.
    const meta = await t.request('POST', '/v1/tools', {
      token,
      body: {
        name: 'meta-id',
        provider: 'builtin:echo',
        policy_binding: binding,
        output_schema: { $id: 'https://json-schema.org/draft/2020-12/schema', type: 'object' },
      },
    })
    expect(meta.status).toBe(400)
    const after = await t.request('POST', '/v1/tools', {
      token,
      body: {
        name: 'after-meta',
        provider: 'builtin:echo',
        policy_binding: binding,
        input_schema: { type: 'object' },
      },
    })
    expect(after.status).toBe(201)
  })
})

describe('pagination (spec §8)', () => {
  it('walks every page exactly once, refuses limit 201 and bad cursors', async () => {
    const own = (await t.createKey()).token
    const ids: string[] = []
    for (let i = 0; i < 7; i++) {
      const r = await t.request('POST', '/v1/tools', {
        token: own,
        body: { name: `p${i}`, provider: 'builtin:echo', policy_binding: binding },
      })
      ids.push(r.body.tool_id)
    }
    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const q: string = cursor ? `&cursor=${cursor}` : ''
      const page = await t.request('GET', `/v1/tools?limit=3${q}`, { token: own })
      expect(page.body.data.length).toBeLessThanOrEqual(3)
      seen.push(...page.body.data.map((x: { tool_id: string }) => x.tool_id))
      cursor = page.body.next_cursor
      pages++
    } while (cursor && pages < 10)
    expect(seen).toEqual(ids)
    expect(pages).toBe(3)

    for (const q of ['limit=201', 'limit=0', 'limit=-1', 'limit=abc']) {
      const r = await t.request('GET', `/v1/tools?${q}`, { token: own })
      expect(r.status, q).toBe(400)
      expect(r.body.error.code).toBe('invalid_request')
    }
    // A page size is written in decimal digits: what Number() would also read (hex, exponents, a sign, blanks, an
    // empty value as 0) is refused by name, and leading zeros are still the decimal number.
    for (const q of ['limit=0x10', 'limit=1e1', 'limit=%2B5', 'limit=%205', 'limit=', 'limit=1.0']) {
      const r = await t.request('GET', `/v1/tools?${q}`, { token: own })
      expect([r.status, r.body.error?.message], q).toEqual([
        400,
        'The request query is invalid: limit: must be a whole number written in decimal digits',
      ])
    }
    const padded = await t.request('GET', '/v1/tools?limit=003', { token: own })
    expect([padded.status, padded.body.data.length]).toEqual([200, 3])
    // A parameter given twice is named as such, not as the list the schema then meets ("received NaN").
    for (const q of ['limit=5&limit=5', 'cursor=a&cursor=b', 'include_retired=true&include_retired=false']) {
      const r = await t.request('GET', `/v1/tools?${q}`, { token: own })
      const name = q.slice(0, q.indexOf('='))
      expect([r.status, r.body.error.code, r.body.error.detail.fields], q).toEqual([
        400,
        'invalid_request',
        [name],
      ])
      expect(r.body.error.message).toBe(`The request query is invalid: ${name}: Given 2 times; give it once`)
    }
    const badCursor = await t.request('GET', '/v1/tools?cursor=not-a-cursor!', { token: own })
    expect(badCursor.status).toBe(400)
    expect(badCursor.body.error.code).toBe('invalid_cursor')
    const agentsCursor = Buffer.from(JSON.stringify({ l: 'agents', k: 1 })).toString('base64url')
    const foreign = await t.request('GET', `/v1/tools?cursor=${agentsCursor}`, { token: own })
    expect(foreign.body.error.code).toBe('invalid_cursor')
  })
})

describe('bad bodies never reach a 500', () => {
  it('answers 413, 415, malformed JSON, a missing body and unknown fields with envelopes', async () => {
    const big = await t.request('POST', '/v1/agents', {
      token,
      rawBody: JSON.stringify({ name: 'x'.repeat(1_100_000), behavior: 'autonomous' }),
      headers: { 'content-type': 'application/json' },
    })
    expect(big.status).toBe(413)
    expect(big.body.error.code).toBe('payload_too_large')
    const text = await t.request('POST', '/v1/agents', {
      token,
      rawBody: 'name=x',
      headers: { 'content-type': 'text/plain' },
    })
    expect(text.status).toBe(415)
    // JSON is UTF-8 between systems (RFC 8259 §8.1): a body declared in another charset is refused, not misread.
    for (const [type, status] of [
      ['application/json; charset=utf-16', 415],
      ['application/json;charset=ISO-8859-1', 415],
      ['application/json; charset=', 415],
      ['application/json; charset="UTF-8"', 201],
      ['application/json; charset=utf8', 201],
    ] as const) {
      const res = await t.request('POST', '/v1/agents', {
        token,
        rawBody: JSON.stringify({
          name: `charset-${status}-${type.length}`,
          behavior: 'autonomous',
          capabilities: [],
        }),
        headers: { 'content-type': type },
        unchecked: true,
      })
      expect([res.status, res.body.error?.code], type).toEqual([
        status,
        status === 415 ? 'unsupported_media_type' : undefined,
      ])
    }
    const broken = await t.request('POST', '/v1/agents', {
      token,
      rawBody: '{"name":',
      headers: { 'content-type': 'application/json' },
    })
    expect(broken.status).toBe(400)
    expect(broken.body.error.code).toBe('invalid_request')
    const missing = await t.request('POST', '/v1/agents', { token })
    expect(missing.status).toBe(400)
    const extra = await t.request('POST', '/v1/agents', {
      token,
      body: { name: 'x', behavior: 'autonomous', colour: 'red' },
    })
    expect(extra.status).toBe(400)
    expect(extra.body.error.detail.fields).toEqual(['colour'])
    const wrongTypes = await t.request('POST', '/v1/tools', {
      token,
      body: { name: 5, provider: [], policy_binding: { envelope: 1 } },
    })
    expect(wrongTypes.status).toBe(400)
    // A field left out is said to be required; one of another type is named with the type it should have.
    const issue = (path: string) =>
      wrongTypes.body.error.detail.issues.find((i: { path: string }) => i.path === path)?.message
    expect([issue('policy_binding.required_scopes'), issue('name')]).toEqual([
      'Required: expected array',
      'Invalid input: expected string, received number',
    ])
    expect(wrongTypes.body.error.detail.fields).toEqual(
      expect.arrayContaining([
        'name',
        'provider',
        'policy_binding.envelope',
        'policy_binding.required_scopes',
      ]),
    )
  })
})

const run = promisify(execFile)

describe('the command line', () => {
  // Asynchronous on purpose: the server under test runs in this process, and a synchronous spawn would freeze its
  // event loop, possibly between a BEGIN and its COMMIT, so the command would wait for a lock nobody can release.
  const cli = async (args: string[]) => {
    try {
      const { stdout, stderr } = await run(process.execPath, ['bin/agentops.mjs', ...args], {
        encoding: 'utf8',
      })
      return { status: 0, stdout, stderr }
    } catch (err) {
      const failed = err as { code?: number; stdout?: string; stderr?: string }
      return { status: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' }
    }
  }

  it('creates a working key while the server runs on the same store', async () => {
    const url = t.services.config.databaseUrl
    // The server is mid-write as the command starts: its batch holds the write lock until the next turn of its loop.
    const serverWrite = t.services.db.run("UPDATE workspaces SET id = id WHERE id = 'none'")
    const out = await cli([
      'keys',
      'create',
      '--workspace',
      'cli-ws',
      '--scopes',
      'agents:read',
      '--json',
      '--database-url',
      url,
    ])
    expect(out.status, out.stderr).toBe(0)
    await serverWrite
    const issued = JSON.parse(out.stdout)
    expect(issued).toMatchObject({ workspace: 'cli-ws', scopes: ['agents:read'] })
    expect(issued.workspace_id).toMatch(/^ws_/)
    expect((await t.request('GET', '/v1/agents', { token: issued.token })).status).toBe(200)
    expect((await t.request('GET', '/v1/tools', { token: issued.token })).status).toBe(403)
  })

  // Each command's help and each refusal is checked in-process (test/spine/cli-help.test.ts); these two spawns prove
  // the installed binary passes the exit code through.
  it('explains itself and refuses bad flags with exit code 2', async () => {
    const out = await cli(['--help'])
    expect(out.status).toBe(0)
    expect(out.stdout).toContain('agentops')
    expect((await cli(['frobnicate'])).status).toBe(2)
  })
})
