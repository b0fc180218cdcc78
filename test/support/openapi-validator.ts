/**
 * Checks responses against the contract: every response body a test sees goes through here, because
 * @hono/zod-openapi validates requests only.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { parse } from 'yaml'

type Json = Record<string, unknown>

const doc = parse(
  readFileSync(join(import.meta.dirname, '../../openapi/agent-operations.yaml'), 'utf8'),
) as Json
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true })
addFormats.default(ajv)
ajv.addSchema({ ...doc, $id: 'contract' })

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const

interface Operation {
  template: string
  method: string
  pattern: RegExp
  responses: Record<string, Json>
}

function escapePointer(s: string): string {
  return s.replace(/~/g, '~0').replace(/\//g, '~1')
}

const operations: Operation[] = []
for (const [template, item] of Object.entries(doc.paths as Record<string, Json>)) {
  for (const method of METHODS) {
    const op = item[method] as Json | undefined
    if (!op) continue
    const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`)
    operations.push({ template, method, pattern, responses: op.responses as Record<string, Json> })
  }
}
// Literal paths win over templated ones (/v1/agents/x vs /v1/agents/{agent_id}).
operations.sort((a, b) => (a.template.match(/\{/g)?.length ?? 0) - (b.template.match(/\{/g)?.length ?? 0))

export function findOperation(method: string, concretePath: string): Operation | undefined {
  const path = concretePath.split('?')[0] ?? concretePath
  return operations.find((o) => o.method === method.toLowerCase() && o.pattern.test(path))
}

export function allOperations(): { template: string; method: string }[] {
  return operations.map(({ template, method }) => ({ template, method }))
}

const cache = new Map<string, ValidateFunction>()

function validatorFor(op: Operation, status: string, pointer: string): ValidateFunction {
  const key = `${op.method} ${op.template} ${status}`
  let fn = cache.get(key)
  if (!fn) {
    fn = ajv.compile({ $ref: `contract#${pointer}` })
    cache.set(key, fn)
  }
  return fn
}

/** Throws a readable error when the status is undocumented or the body breaks the documented schema. */
export function assertMatchesContract(
  method: string,
  concretePath: string,
  status: number,
  body: unknown,
): void {
  const op = findOperation(method, concretePath)
  if (!op) throw new Error(`contract: ${method.toUpperCase()} ${concretePath} is not in the document`)
  const statusKey = String(status)
  let response = op.responses[statusKey]
  if (!response) {
    throw new Error(
      `contract: ${method.toUpperCase()} ${op.template} answered ${status}, which the document does not list (${Object.keys(op.responses).join(', ')})`,
    )
  }
  let pointer = `/paths/${escapePointer(op.template)}/${op.method}/responses/${statusKey}`
  if (typeof response.$ref === 'string') {
    pointer = response.$ref.slice(1)
    const name = response.$ref.split('/').pop() ?? ''
    response = ((doc.components as Json).responses as Record<string, Json>)[name] as Json
  }
  const content = response.content as Record<string, Json> | undefined
  if (!content) {
    if (body !== undefined && body !== null && body !== '') {
      throw new Error(
        `contract: ${method.toUpperCase()} ${op.template} ${status} documents no body but one came`,
      )
    }
    return
  }
  if (!content['application/json']) return // HTML, SSE: not JSON bodies
  const validate = validatorFor(op, statusKey, `${pointer}/content/application~1json/schema`)
  if (!validate(body)) {
    const errors = (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message}`).join('; ')
    throw new Error(
      `contract: ${method.toUpperCase()} ${op.template} ${status} body breaks the document: ${errors}\n${JSON.stringify(body).slice(0, 500)}`,
    )
  }
}

/** Validates a value against one of the document's component schemas (event bodies, stream messages, …). */
export function assertMatchesSchema(name: string, value: unknown): void {
  const key = `schema ${name}`
  let fn = cache.get(key)
  if (!fn) {
    fn = ajv.compile({ $ref: `contract#/components/schemas/${name}` })
    cache.set(key, fn)
  }
  if (!fn(value)) {
    const errors = (fn.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message}`).join('; ')
    throw new Error(
      `contract: value breaks schema ${name}: ${errors}\n${JSON.stringify(value).slice(0, 500)}`,
    )
  }
}
