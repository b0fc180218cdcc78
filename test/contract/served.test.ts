import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { createApp } from '../../src/transports.js'
import { allOperations } from '../support/openapi-validator.js'
import { startTestServer, type TestServer } from '../support/server.js'

type Json = Record<string, unknown>
const doc = parse(
  readFileSync(new URL('../../openapi/agent-operations.yaml', import.meta.url), 'utf8'),
) as Json
const paths = doc.paths as Record<string, Record<string, Json>>

/**
 * The WebSocket stream is documented under `x-websockets` (not `paths`, so generators skip it) and served by the
 * upgrade handler on the same port; its plain-GET fallback route explains that an upgrade is needed.
 */
const WEBSOCKETS = new Set(Object.keys((doc['x-websockets'] ?? {}) as Json).map((path) => `get ${path}`))

function concrete(template: string): string {
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const prefix: Record<string, string> = {
      agent_id: 'agt',
      run_id: 'run',
      tool_id: 'tool',
      task_id: 'task',
      webhook_id: 'whk',
      delivery_id: 'dlv',
    }
    return prefix[name]
      ? `${prefix[name]}_00000000000000000000000000`
      : name === 'step_id'
        ? 'step_1'
        : 'conn-1'
  })
}

describe('the server and the contract agree', () => {
  let t: TestServer
  let token: string
  beforeAll(async () => {
    t = await startTestServer()
    token = (await t.createKey({ scopes: ['*'] })).token
  })
  afterAll(() => t.close())

  it('serves every path and method of the document, and nothing else', () => {
    const app = createApp(t.services)
    const served = new Set(
      app.routes
        // Middleware: mounted for all methods, or under /v1/* for the methods it concerns (body guard, idempotency).
        .filter((r) => r.method !== 'ALL' && r.path !== '/v1/*')
        .map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:([A-Za-z_]+)/g, '{$1}')}`),
    )
    const documented = new Set(allOperations().map((o) => `${o.method} ${o.template}`))
    const missing = [...documented, ...WEBSOCKETS].filter((op) => !served.has(op))
    const undocumented = [...served].filter((op) => !documented.has(op) && !WEBSOCKETS.has(op))
    expect(WEBSOCKETS).toEqual(new Set(['get /v1/stream']))
    expect(missing, 'documented but not served').toEqual([])
    expect(undocumented, 'served but not documented').toEqual([])
  })

  it('answers every documented operation with a documented status (never the unknown-endpoint 404)', async () => {
    for (const { method, template } of allOperations()) {
      const op = paths[template]?.[method] as Json
      const hasBody = op.requestBody !== undefined
      const res = await t.request(method.toUpperCase(), concrete(template), {
        token,
        ...(hasBody ? { body: {} } : {}),
        headers: (template === '/v1/runs/{run_id}/trace' ? { accept: 'application/json' } : {}) as Record<
          string,
          string
        >,
      })
      if (res.status === 404) {
        expect(res.body.error.message, `${method} ${template}`).not.toBe('No such endpoint')
      }
    }
  })

  it('answers a method a served path does not serve 405 method_not_allowed, naming the ones it does in Allow', async () => {
    const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']
    const servedPaths = [
      ...new Set([...allOperations().map((o) => o.template), ...[...WEBSOCKETS].map((op) => op.slice(4))]),
    ]
    let refused = 0
    for (const template of servedPaths) {
      const answered = [
        ...allOperations()
          .filter((o) => o.template === template)
          .map((o) => o.method.toUpperCase()),
        ...(WEBSOCKETS.has(`get ${template}`) ? ['GET'] : []),
      ]
      for (const method of methods.filter((m) => !answered.includes(m))) {
        const res = await t.request(method, concrete(template), { token, unchecked: true })
        const what = `${method} ${template}`
        expect([res.status, res.body.error?.code], what).toEqual([405, 'method_not_allowed'])
        const allow = (res.headers.get('allow') ?? '').split(', ')
        expect(new Set(allow), what).toEqual(
          new Set([...answered, ...(answered.includes('GET') ? ['HEAD'] : [])]),
        )
        expect(res.body.error.detail, what).toEqual({ method, allow })
        refused++
      }
    }
    expect(refused).toBeGreaterThan(100)
    // A path the contract does not serve stays 404, whatever the method; so does a served one with a trailing slash.
    for (const [method, path] of [
      ['PUT', '/v1/conf-unknown'],
      ['GET', '/v1/agents/'],
      ['PATCH', '/v1/agents/agt_00000000000000000000000000/extra'],
    ] as const) {
      const res = await t.request(method, path, { token, unchecked: true })
      expect([res.status, res.body.error?.code, res.headers.get('allow')], `${method} ${path}`).toEqual([
        404,
        'not_found',
        null,
      ])
    }
  })

  it('refuses a body that breaks the schema with 400 invalid_request naming the failing fields', async () => {
    for (const { method, template } of allOperations()) {
      const op = paths[template]?.[method] as Json
      // Outside /v1 only Slack's signed interaction callback takes a body: its signature is checked before the body
      // is read, so an unsigned one is 401 (test/destinations/slack-interactions.test.ts).
      if (!op.requestBody || !template.startsWith('/v1/')) continue
      const res = await t.request(method.toUpperCase(), concrete(template), {
        token,
        body: { __not_in_the_contract__: true },
      })
      expect(res.status, `${method} ${template}`).toBe(400)
      expect(res.body.error.code).toBe('invalid_request')
      const fields: string[] = res.body.error.detail.fields
      expect(fields.length, `${method} ${template}: ${res.text}`).toBeGreaterThan(0)
      const schema = resolveBodySchema(op)
      const required = (schema.required as string[] | undefined) ?? []
      // Either a missing required field or the unknown one is named.
      expect(
        fields.some((f) => required.includes(f) || f === '__not_in_the_contract__'),
        `${method} ${template}: ${JSON.stringify(fields)}`,
      ).toBe(true)
    }
  })
})

function resolveBodySchema(op: Json): Json {
  const content = (op.requestBody as Json).content as Record<string, Json>
  let schema = content['application/json']?.schema as Json
  if (typeof schema.$ref === 'string') {
    const name = schema.$ref.split('/').at(-1) ?? ''
    schema = ((doc.components as Json).schemas as Record<string, Json>)[name] as Json
  }
  return schema
}
