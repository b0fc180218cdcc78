/**
 * The scope each operation needs is the one its `security` requirement names in the contract (`bearerAuth:
 * [scope]`), read by the server from generated/contract.ts. For every such operation: a key without the scope is
 * refused with 403 policy_denied naming exactly that scope, and a key holding only that scope gets past the gate.
 */
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { startTestServer, type TestServer } from '../support/server.js'

type Json = Record<string, unknown>
const doc = parse(
  readFileSync(new URL('../../openapi/agent-operations.yaml', import.meta.url), 'utf8'),
) as Json

interface Scoped {
  operationId: string
  method: string
  path: string
  scope: string
  body?: unknown
}

/** Every operation whose bearerAuth requirement names a scope, with its path ids filled and its body example. */
function scopedOperations(): Scoped[] {
  const out: Scoped[] = []
  for (const [template, item] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
    for (const [method, op] of Object.entries(item)) {
      const security = op.security as { bearerAuth?: string[] }[] | undefined
      const scope = security?.flatMap((r) => r.bearerAuth ?? [])[0]
      if (!scope) continue
      const media = (op.requestBody as { content: Record<string, { example?: unknown }> } | undefined)
        ?.content
      const body = media?.['application/json']?.example
      out.push({
        operationId: String(op.operationId),
        method: method.toUpperCase(),
        path: template.replace(/\{(\w+)\}/g, (_m, name: string) => `${name.replace(/_id$/, '')}_missing`),
        scope,
        ...(body === undefined ? {} : { body }),
      })
    }
  }
  return out
}

const operations = scopedOperations()
let t: TestServer

beforeAll(async () => {
  t = await startTestServer()
})
afterAll(() => t.close())

describe('operation scopes come from the contract', () => {
  it('names a scope on every /v1 operation but GraphQL (its fields check theirs)', () => {
    expect(operations.length).toBeGreaterThanOrEqual(28)
  })

  it.each(operations.map((o) => [o.operationId, o] as const))(
    '%s: refused without its scope, let through with it',
    async (_id, op) => {
      const other = await t.createKey({ scopes: ['nothing:granted'] })
      const refused = await t.request(op.method, op.path, {
        token: other.token,
        body: op.body,
        unchecked: true,
      })
      expect(refused.status).toBe(403)
      expect(refused.body.error).toMatchObject({
        code: 'policy_denied',
        detail: { violation: 'missing_scope', limit: [op.scope] },
      })
      const holder = await t.createKey({ scopes: [op.scope] })
      const allowed = await t.request(op.method, op.path, {
        token: holder.token,
        body: op.body,
        unchecked: true,
      })
      expect(allowed.status, JSON.stringify(allowed.body)).not.toBe(403)
    },
  )
})

describe('a key issued with an empty list of scopes', () => {
  it('holds no scope at all, never every scope', async () => {
    const none = await t.createKey({ scopes: [] })
    expect(none.scopes).toEqual([])
    const refused = await t.request('GET', '/v1/tools', { token: none.token, unchecked: true })
    expect(refused.status).toBe(403)
    expect(refused.body.error).toMatchObject({
      code: 'policy_denied',
      detail: { violation: 'missing_scope' },
    })
  })
})
