import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { ERROR_CATALOGUE } from '../../src/domain/errors.js'
import { DEFAULT_POLICY_CLASSES } from '../../src/domain/keys/service.js'
import { ENVELOPES } from '../../src/domain/policy/envelopes.js'
import { PROVIDERS } from '../../src/domain/tools/providers.js'
import { EVENT_KINDS } from '../../src/domain/webhooks/body.js'

type Json = Record<string, unknown>
const doc = parse(
  readFileSync(new URL('../../openapi/agent-operations.yaml', import.meta.url), 'utf8'),
) as Json
const paths = doc.paths as Record<string, Record<string, Json>>

function operations(): { template: string; method: string; op: Json }[] {
  const out: { template: string; method: string; op: Json }[] = []
  for (const [template, item] of Object.entries(paths)) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
      const op = item[method] as Json | undefined
      if (op) out.push({ template, method, op })
    }
  }
  return out
}

const refs = (op: Json) => ((op.parameters as Json[] | undefined) ?? []).map((p) => String(p.$ref ?? p.name))

describe('the contract document', () => {
  it('lists exactly the error catalogue of the code, with the same statuses', () => {
    const listed = (doc['x-error-codes'] as { code: string; status: number }[]).map((e) => [e.code, e.status])
    expect(listed).toEqual(Object.entries(ERROR_CATALOGUE).map(([code, e]) => [code, e.status]))
    const codeEnum = ((doc.components as Json).schemas as Record<string, Json>).KnownErrorCode?.enum
    expect(codeEnum).toEqual(Object.keys(ERROR_CATALOGUE))
  })

  it('lists exactly the event kinds the service emits', () => {
    const schemas = (doc.components as Json).schemas as Record<string, Json>
    expect(schemas.EventKind?.enum).toEqual([...EVENT_KINDS])
  })

  it("lists the reference server's providers, envelopes and default policy classes as the known values", () => {
    const schemas = (doc.components as Json).schemas as Record<string, Json>
    expect(schemas.KnownToolProvider?.enum).toEqual([...PROVIDERS])
    expect(schemas.KnownPolicyEnvelope?.enum).toEqual(Object.keys(ENVELOPES))
    expect(schemas.KnownPolicyClass?.enum).toEqual(DEFAULT_POLICY_CLASSES)
  })

  it('takes an Idempotency-Key on every POST and cursor/limit on every list', () => {
    for (const { template, method, op } of operations()) {
      // The API's POSTs; a callback a third party signs (Slack's interactions) is idempotent by its decision.
      if (method === 'post' && template.startsWith('/v1/'))
        expect(refs(op), `${method} ${template}`).toContain('#/components/parameters/IdempotencyKey')
      const schema = JSON.stringify(((op.responses as Json)['200'] as Json | undefined)?.content ?? {})
      if (method === 'get' && /Page"/.test(schema)) {
        expect(refs(op), `${template}`).toEqual(
          expect.arrayContaining(['#/components/parameters/Cursor', '#/components/parameters/Limit']),
        )
      }
    }
    const limit = ((doc.components as Json).parameters as Record<string, Json>).Limit?.schema as Json
    expect(limit).toMatchObject({ minimum: 1, maximum: 200, default: 50 })
  })

  it('puts the rate-limit headers and the request id on every HTTP response', () => {
    for (const { template, method, op } of operations()) {
      for (const [status, response] of Object.entries(op.responses as Record<string, Json>)) {
        if (status === '101') continue
        let headers = response.headers as Json | undefined
        if (typeof response.$ref === 'string') {
          const name = response.$ref.split('/').at(-1) ?? ''
          headers = ((doc.components as Json).responses as Record<string, Json>)[name]?.headers as Json
        }
        const names = Object.keys(headers ?? {})
        expect(names, `${method} ${template} ${status}`).toEqual(expect.arrayContaining(['X-Request-Id']))
        // 401 comes before the workspace is known, and 500/503 may too: those carry the figures only when it was.
        if (template.startsWith('/v1/') && !['401', '500', '503'].includes(status)) {
          expect(names, `${method} ${template} ${status}`).toEqual(
            expect.arrayContaining(['RateLimit-Policy', 'RateLimit']),
          )
        }
      }
    }
  })

  it('records every gap decision with the spec section it closes', () => {
    const gaps: Json[] = []
    const walk = (node: unknown) => {
      if (Array.isArray(node)) node.forEach(walk)
      else if (node && typeof node === 'object') {
        for (const [k, v] of Object.entries(node)) {
          if (k === 'x-spec-gap') gaps.push(v as Json)
          walk(v)
        }
      }
    }
    walk(doc)
    expect(gaps.length).toBeGreaterThan(20)
    for (const g of gaps) {
      expect(String(g.section)).toMatch(/^§\d/)
      expect(String(g.decision).length).toBeGreaterThan(10)
    }
  })
})
