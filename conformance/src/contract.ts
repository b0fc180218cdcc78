/**
 * The OpenAPI document as the suite reads it: Ajv 2020 over the YAML (no code from the server), used to validate
 * every response body the suite sees and to derive bad request bodies for the fuzz checks.
 */
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { parse } from 'yaml'

type Json = Record<string, unknown>

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const

export interface Operation {
  id: string
  template: string
  method: string
  pattern: RegExp
  responses: Record<string, Json>
  requestSchemaPointer?: string
}

export interface ContractViolation {
  method: string
  path: string
  status: number
  message: string
}

/** An OpenAPI document (YAML or JSON) read from a file. */
export function readDocument(path: string): Json {
  return parseDocument(readFileSync(path, 'utf8'))
}

const PARSED = join(tmpdir(), 'agentops-conformance-documents')

/** Where a YAML text's parse is kept: named by the text's digest. */
export function keptParse(text: string): string {
  return join(PARSED, `${createHash('sha256').update(text).digest('hex')}.json`)
}

/**
 * An OpenAPI document's text as JSON. JSON parses as it is; YAML parses once per content: its JSON is kept in the
 * temporary directory under the text's digest (YAML parses far slower than JSON, and the suite reads its contract
 * on every run), so a kept copy is never stale. Keeping is best effort: an unwritable directory only means parsing every time.
 */
export function parseDocument(text: string): Json {
  if (text.trimStart().startsWith('{')) return JSON.parse(text) as Json
  const kept = keptParse(text)
  try {
    return JSON.parse(readFileSync(kept, 'utf8')) as Json
  } catch {
    // not kept yet (or unreadable): parse it
  }
  const doc = parse(text) as Json
  try {
    mkdirSync(PARSED, { recursive: true })
    const partial = `${kept}.${process.pid}`
    writeFileSync(partial, JSON.stringify(doc))
    renameSync(partial, kept)
  } catch {
    // nowhere to keep it: parsed again next time
  }
  return doc
}

function escapePointer(s: string): string {
  return s.replace(/~/g, '~0').replace(/\//g, '~1')
}

export class Contract {
  readonly doc: Json
  readonly operations: Operation[] = []
  private readonly ajv: Ajv2020
  private readonly cache = new Map<string, ValidateFunction>()

  static fromFile(path: string): Contract {
    return new Contract(readDocument(path))
  }

  /** The contract inside the one-file bundle (see embedded.ts). */
  static fromText(text: string): Contract {
    return new Contract(parseDocument(text))
  }

  constructor(doc: Json) {
    this.doc = doc
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true })
    addFormats.default(this.ajv)
    this.ajv.addSchema({ ...doc, $id: 'contract' })
    for (const [template, item] of Object.entries((doc.paths ?? {}) as Record<string, Json>)) {
      for (const method of METHODS) {
        const op = item[method] as Json | undefined
        if (!op) continue
        const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`)
        const content = ((op.requestBody as Json | undefined)?.content ?? {}) as Record<string, Json>
        this.operations.push({
          id: String(op.operationId ?? `${method} ${template}`),
          template,
          method,
          pattern,
          responses: (op.responses ?? {}) as Record<string, Json>,
          ...(content['application/json']
            ? {
                requestSchemaPointer: `/paths/${escapePointer(template)}/${method}/requestBody/content/application~1json/schema`,
              }
            : {}),
        })
      }
    }
    // Literal paths win over templated ones (/v1/agents/x vs /v1/agents/{agent_id}).
    this.operations.sort(
      (a, b) => (a.template.match(/\{/g)?.length ?? 0) - (b.template.match(/\{/g)?.length ?? 0),
    )
  }

  find(method: string, concretePath: string): Operation | undefined {
    const path = concretePath.split('?')[0] ?? concretePath
    return this.operations.find((o) => o.method === method.toLowerCase() && o.pattern.test(path))
  }

  byId(operationId: string): Operation | undefined {
    return this.operations.find((o) => o.id === operationId)
  }

  /** The schema at a JSON pointer, with `$ref`s left for Ajv to resolve. */
  at(pointer: string): Json | undefined {
    let node: unknown = this.doc
    for (const raw of pointer.split('/').slice(1)) {
      const key = raw.replace(/~1/g, '/').replace(/~0/g, '~')
      node = (node as Json | undefined)?.[key]
    }
    return node as Json | undefined
  }

  /** Follows a local `$ref` chain to the schema it names. */
  deref(schema: Json | undefined): Json | undefined {
    let s = schema
    for (let i = 0; i < 10 && s && typeof s.$ref === 'string'; i++) s = this.at(s.$ref.slice(1))
    return s
  }

  validator(pointer: string): ValidateFunction {
    let fn = this.cache.get(pointer)
    if (!fn) {
      fn = this.ajv.compile({ $ref: `contract#${pointer}` })
      this.cache.set(pointer, fn)
    }
    return fn
  }

  /**
   * The JSON pointer of the delivery body schema for an event `kind` (the document's `webhooks`): the entry whose
   * `event` names the kind (a `const` or an `enum`), else the one whose `event` is any EventKind.
   */
  deliverySchemaPointer(kind: string): string | undefined {
    let generic: string | undefined
    for (const name of Object.keys((this.doc.webhooks ?? {}) as Json)) {
      const pointer = `/webhooks/${escapePointer(name)}/post/requestBody/content/application~1json/schema`
      const properties = (this.deref(this.at(pointer))?.properties ?? {}) as Json
      const event = (properties.event ?? {}) as Json
      if (event.const === kind || (Array.isArray(event.enum) && event.enum.includes(kind))) return pointer
      if (typeof event.$ref === 'string' && event.$ref.endsWith('/EventKind')) generic = pointer
    }
    return generic
  }

  /** Errors of `value` against the schema at `pointer`, or [] when it matches. */
  errors(pointer: string, value: unknown): string[] {
    const validate = this.validator(pointer)
    if (validate(value)) return []
    return (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message}`)
  }

  /** Returns why a response breaks the document, or undefined when it matches (or is not JSON). */
  checkResponse(
    method: string,
    concretePath: string,
    status: number,
    body: unknown,
    contentType = 'application/json',
  ): string | undefined {
    const op = this.find(method, concretePath)
    if (!op) return `${method} ${concretePath} is not in the document`
    const statusKey = String(status)
    let response = op.responses[statusKey]
    if (!response) {
      return `${method} ${op.template} answered ${status}, which the document does not list (${Object.keys(op.responses).join(', ')})`
    }
    let pointer = `/paths/${escapePointer(op.template)}/${op.method}/responses/${statusKey}`
    if (typeof response.$ref === 'string') {
      pointer = response.$ref.slice(1)
      response = this.at(pointer) ?? {}
    }
    const content = response.content as Record<string, Json> | undefined
    if (!content) {
      return body === undefined || body === null || body === ''
        ? undefined
        : `${method} ${op.template} ${status} documents no body but one came`
    }
    const mediaType = contentType.split(';')[0]?.trim().toLowerCase() ?? ''
    if (mediaType !== 'application/json') {
      // Streams and pages: a non-JSON answer only has to be a media type the operation documents.
      if (body === '' || content[mediaType]) return undefined
      return `${method} ${op.template} ${status} answered ${mediaType || 'no content type'}, which the document does not list (${Object.keys(content).join(', ')})`
    }
    if (!content['application/json'])
      return `${method} ${op.template} ${status} answered JSON, which the document does not list`
    const errors = this.errors(`${pointer}/content/application~1json/schema`, body)
    if (errors.length === 0) return undefined
    return `${method} ${op.template} ${status} body breaks the document: ${errors.slice(0, 5).join('; ')}`
  }
}
