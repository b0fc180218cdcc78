import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js'
import { type Bounded, withinDeadline } from '../bounded-check.js'
import { ApiError } from '../errors.js'
import type { OutboundHttp } from '../outbound.js'
import { CompiledSchemas } from './compiled-schemas.js'
import { linearPatterns } from './linear-patterns.js'
import { linearUniqueItems } from './linear-unique-items.js'
import type { ToolRecord } from './types.js'

/** What one tool call gets and gives back. `resultId` is the identifier the trace and outcome show. */
export interface ToolCall {
  runId: string
  stepId: string
  tool: ToolRecord
  input: Record<string, unknown>
  newResultId: () => string
  /** The guarded way out for the `http` provider. */
  outbound: OutboundHttp
}

export type ToolOutcome =
  | { ok: true; resultId: string; output: unknown }
  | { ok: false; reason: string; detail: Record<string, unknown> }

const MAX_DELAY_MS = 10 * 60 * 1000
const DEFAULT_HTTP_TIMEOUT_MS = 10_000
/**
 * The longest a tool answer's check against its `output_schema` may take: past it the step fails, so a schema whose
 * cost grows out of bounds with the answer holds the server's one thread this long at most (../bounded-check.ts).
 */
const ANSWER_CHECK_MS = 2_000
/** A tool answer larger than this fails the step rather than filling the server's memory. */
const MAX_HTTP_ANSWER_BYTES = 8 * 1024 * 1024

export const PROVIDERS = ['builtin:echo', 'builtin:fail', 'builtin:delay', 'builtin:data', 'http'] as const

/**
 * The longest compiling a tool's schema may take when it is registered, and the most its JSON text may hold: a
 * schema is a tenant's text, compiled on the server's one thread (800 kB of properties took about 4 s).
 */
const SCHEMA_COMPILE_MS = 1_000
const MAX_SCHEMA_BYTES = 64 * 1024

/**
 * The Ajv instance tools' schemas compile on. A tenant's patterns run on RE2 (./linear-patterns.ts) and its
 * uniqueItems on a set (./linear-unique-items.ts): linear time, whatever the schema and the data.
 */
function newAjv(): Ajv2020 {
  const instance = new Ajv2020({ strict: false, allErrors: true, code: { regExp: linearPatterns } })
  instance.removeKeyword('uniqueItems')
  instance.addKeyword(linearUniqueItems)
  return instance
}
let ajv = newAjv()

/**
 * `work` (a compile, a check) given `ms` (../bounded-check.ts). Work cut off there never ran its own clean-up (a
 * stopped script runs no `finally`), so a compile may have left the shared instance's registries half-changed:
 * the instance is replaced.
 */
function bounded<T>(work: () => T, ms: number): Bounded<T> {
  const result = withinDeadline(work, ms)
  // Stryker disable next-line ConditionalExpression,BooleanLiteral: reached only past a deadline, which no check can ask of a deployment (callTool says why); a fresh instance after every check only costs time
  if (!result.done) ajv = newAjv()
  return result
}

/**
 * Compiles one tool's schema on the shared Ajv instance and leaves the instance as it found it: Ajv keeps every
 * compiled schema and registers each `$id` it meets (nested ones too), so without this a schema's `$id` would refuse
 * every later schema with the same `$id` ("already exists"), in any workspace, and resolve other tools' `$ref`s to
 * it, and the instance would grow with every registration. Compiling costs a fraction of a fresh instance's set-up.
 */
function compileAlone(schema: Record<string, unknown>): ValidateFunction {
  const refs = { ...ajv.refs }
  const schemas = { ...ajv.schemas }
  try {
    return ajv.compile(schema)
  } finally {
    ajv.removeSchema(schema)
    restore(ajv.refs, refs)
    restore(ajv.schemas, schemas)
  }
}

/** Puts a registry of the Ajv instance back as it was (removeSchema also drops an `$id` it shares with one there). */
function restore<T>(registry: Record<string, T>, saved: Record<string, T>): void {
  for (const key of Object.keys(registry)) if (!(key in saved)) delete registry[key]
  Object.assign(registry, saved)
}

/**
 * Each schema compiled once by its JSON text: a registration's check and a call's output check share them, so
 * registering many tools of one schema (most carry `{"type": "object"}`) compiles it once, and a call reads the
 * validator its tool's registration made, whichever record of the tool it reads.
 */
const validators = new CompiledSchemas(compileAlone)

function invalid(field: string, message: string): ApiError {
  return new ApiError('invalid_request', message, { issues: [{ path: field, message }], fields: [field] })
}

function isRemoteReference(err: unknown): boolean {
  const ref = (err as { missingSchema?: unknown }).missingSchema
  // Stryker disable next-line ConditionalExpression: equivalent, a test of anything else than a string reads "undefined" or the like, no http(s) URI
  return typeof ref === 'string' && /^https?:\/\//.test(ref)
}

/** Checks a registration before it is stored, so a bad tool is a 400 now rather than a failed step later. */
export function checkToolDefinition(
  provider: string,
  config: Record<string, unknown>,
  schemas: { input_schema: Record<string, unknown>; output_schema: Record<string, unknown> },
): void {
  if (!(PROVIDERS as readonly string[]).includes(provider)) {
    throw invalid('provider', `provider must be one of ${PROVIDERS.join(', ')}`)
  }
  for (const name of ['input_schema', 'output_schema'] as const) {
    const size = Buffer.byteLength(JSON.stringify(schemas[name]))
    if (size > MAX_SCHEMA_BYTES)
      throw invalid(
        name,
        `${name} is ${size} bytes of JSON; a tool's schema holds at most ${MAX_SCHEMA_BYTES}`,
      )
    let compiled: Bounded<unknown>
    try {
      compiled = bounded(() => validators.validatorFor(schemas[name]), SCHEMA_COMPILE_MS)
    } catch (err) {
      // Spec §2 lets input_schema be "a reference to a schema": a reference to an absolute http(s) URI is
      // stored as given and never fetched (the server does not call out to resolve schemas). output_schema
      // is checked against every answer, so it must be complete.
      if (name === 'input_schema' && isRemoteReference(err)) continue
      // A reference that leads back to itself with nothing between (`#/$defs/a` being `{"$ref": "#/$defs/a"}`)
      // sends the compiler round it until the stack runs out: said as what it is, not as the stack's message.
      const why =
        err instanceof RangeError ? 'its references lead back to themselves' : (err as Error).message
      throw invalid(name, `${name} is not a valid JSON Schema: ${why}`)
    }
    // Stryker disable next-line ConditionalExpression,StringLiteral: reached only past a deadline, which no check can ask of a deployment (callTool says why)
    if (!compiled.done) throw invalid(name, `${name} takes longer than ${SCHEMA_COMPILE_MS} ms to compile`)
  }
  if (provider === 'builtin:delay') {
    const d = config.delay_ms
    if (!Number.isInteger(d) || (d as number) < 0 || (d as number) > MAX_DELAY_MS) {
      throw invalid('config.delay_ms', `config.delay_ms must be an integer from 0 to ${MAX_DELAY_MS}`)
    }
  }
  if (provider === 'http') {
    let url: URL
    try {
      // Stryker disable next-line StringLiteral: equivalent, any text that is no URL is refused alike
      url = new URL(String(config.url ?? ''))
    } catch {
      throw invalid('config.url', 'config.url must be an absolute http(s) URL')
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw invalid('config.url', 'config.url must use http or https')
    }
    if (url.username || url.password) throw invalid('config.url', 'config.url must not carry credentials')
    const t = config.timeout_ms
    if (t !== undefined && (!Number.isInteger(t) || (t as number) < 1 || (t as number) > 120_000)) {
      throw invalid('config.timeout_ms', 'config.timeout_ms must be an integer from 1 to 120000')
    }
  }
}

/** Runs one call through the tool's provider and checks the answer against its `output_schema`. */
export async function callTool(call: ToolCall): Promise<ToolOutcome> {
  const { tool } = call
  let output: unknown
  let resultId: string | undefined
  try {
    switch (tool.provider) {
      case 'builtin:echo':
        output = call.input
        break
      case 'builtin:fail':
        return {
          ok: false,
          reason: typeof tool.config.message === 'string' ? tool.config.message : 'the tool failed',
          detail: { provider: tool.provider },
        }
      case 'builtin:delay':
        await new Promise((r) => setTimeout(r, Number(tool.config.delay_ms ?? 0)))
        output = { delayed_ms: Number(tool.config.delay_ms ?? 0) }
        break
      case 'builtin:data':
        output = tool.config.data ?? null
        break
      case 'http': {
        const answer = await callHttp(call)
        if (!answer.ok) return answer
        output = answer.output
        resultId = answer.resultId
        break
      }
      default:
        // Stryker disable next-line ObjectLiteral,BooleanLiteral,StringLiteral: unreachable, a registration names one of PROVIDERS (checkToolDefinition)
        return { ok: false, reason: `unknown provider ${tool.provider}`, detail: { provider: tool.provider } }
    }
    // The catch below is unreachable, no provider throws (the http one answers its failures as values): its emptied
    // block is NoCoverage in the mutation run (a directive here would lead no node and disable nothing).
  } catch (err) {
    // Stryker disable next-line ObjectLiteral: unreachable, no provider throws (the http one answers its failures as values)
    return {
      // Stryker disable next-line BooleanLiteral: unreachable, no provider throws (the http one answers its failures as values)
      ok: false,
      // Stryker disable next-line StringLiteral: unreachable, no provider throws (the http one answers its failures as values)
      reason: `the provider threw: ${(err as Error).message}`,
      // Stryker disable next-line ObjectLiteral: unreachable, no provider throws (the http one answers its failures as values)
      detail: { provider: tool.provider },
    }
  }
  // Stryker disable all: a schema registered under these rules compiles; only one stored before them does not, which no check can register
  let validate: ValidateFunction
  try {
    validate = validators.validatorFor(tool.outputSchema)
  } catch (err) {
    // A schema stored before the rules it now meets (a lookahead, before patterns ran on RE2) fails its steps.
    return {
      ok: false,
      reason: `the tool's output_schema does not compile: ${(err as Error).message}`,
      detail: { provider: tool.provider, violation: 'output_schema' },
    }
  }
  // Stryker restore all
  const checked = bounded(() => validate(output), ANSWER_CHECK_MS)
  // Stryker disable all: reached only past the deadline, which no check can ask of a deployment (a schema costly enough would hold a deployment without such a guard for hours; test/runs/linear-schemas.test.ts proves the deadline on the reference, in a child process under a deadline of its own).
  if (!checked.done) {
    return {
      ok: false,
      reason: `checking the tool answer against its output_schema took longer than ${ANSWER_CHECK_MS} ms`,
      detail: { provider: tool.provider, violation: 'output_schema_too_costly', limit_ms: ANSWER_CHECK_MS },
    }
  }
  // Stryker restore all
  if (!checked.value) {
    return {
      ok: false,
      reason: 'the tool answer does not match its output_schema',
      detail: {
        provider: tool.provider,
        violation: 'output_schema',
        // Stryker disable next-line ArrayDeclaration: equivalent, Ajv sets errors whenever a validation fails
        errors: (validate.errors ?? []).slice(0, 10).map(errorLine),
      },
    }
  }
  return { ok: true, resultId: resultId ?? call.newResultId(), output }
}

/** One of Ajv's errors as a line: where it is ("/": the answer itself) and what is wrong there. */
function errorLine(e: ErrorObject): string {
  // Stryker disable next-line StringLiteral,MethodExpression: equivalent, Ajv gives every error a message (the trim only drops the space before an empty one)
  return `${e.instancePath || '/'} ${e.message ?? ''}`.trim()
}

async function callHttp(call: ToolCall): Promise<ToolOutcome & { resultId?: string }> {
  const url = new URL(String(call.tool.config.url))
  // Stryker disable next-line ConditionalExpression: equivalent, the outbound port refuses the same address again at connect time and the call answers private_address all the same
  if (call.outbound.refusal(url)) return privateAddress(url)
  const timeoutMs = Number(call.tool.config.timeout_ms ?? DEFAULT_HTTP_TIMEOUT_MS)
  const answer = await call.outbound.post({
    url: url.href,
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({
      run_id: call.runId,
      step_id: call.stepId,
      tool: call.tool.name,
      input: call.input,
    }),
    timeoutMs,
    maxAnswerBytes: MAX_HTTP_ANSWER_BYTES,
  })
  if (!answer.ok) {
    // Stryker disable next-line ConditionalExpression,StringLiteral: reached only when a public name resolves to a private address at connect time (the outbound guard's case, out of the run's scope); the suite may call loopback only, whose addresses the guard refuses before the call
    if (answer.failure === 'private_address') return privateAddress(url)
    // Stryker disable next-line ConditionalExpression: the unreachable case cannot happen in the suite: it may call loopback only, where the guard refuses every address but its receiver's, which answers
    const timedOut = answer.failure === 'timeout'
    return {
      ok: false,
      // Stryker disable ConditionalExpression,StringLiteral: the unreachable case cannot happen in the suite: it may call loopback only, where the guard refuses every address but its receiver's, which answers
      reason: timedOut
        ? // Stryker restore next-line StringLiteral: an empty reason is a step failure that says nothing (tools.provider-calls)
          `the tool did not answer within ${timeoutMs} ms`
        : `the tool could not be reached: ${answer.message}`,
      // Stryker restore ConditionalExpression,StringLiteral
      // Stryker disable next-line StringLiteral: the unreachable case cannot happen in the suite: it may call loopback only, where the guard refuses every address but its receiver's, which answers
      detail: { provider: 'http', violation: timedOut ? 'timeout' : 'unreachable', timeout_ms: timeoutMs },
    }
  }
  // Stryker disable next-line ConditionalExpression: equivalent below 200, Node's client hands over final answers only (1xx are informational)
  if (answer.status < 200 || answer.status > 299) {
    // Redirects are answers too: following one could lead a public URL to a private address.
    return {
      ok: false,
      reason: `the tool answered HTTP ${answer.status}`,
      detail: { provider: 'http', violation: 'http_status', status: answer.status },
    }
  }
  // Stryker disable next-line ConditionalExpression,BlockStatement: an answer over 8 MiB, the reference's own memory bound (no spec sentence): a check would stream 8 MiB through the suite's receiver for every mutant
  if (answer.truncated) {
    // Stryker disable next-line ObjectLiteral: an answer over 8 MiB, the reference's own memory bound (no spec sentence): a check would stream 8 MiB through the suite's receiver for every mutant
    return {
      // Stryker disable next-line BooleanLiteral: an answer over 8 MiB, the reference's own memory bound (no spec sentence): a check would stream 8 MiB through the suite's receiver for every mutant
      ok: false,
      // Stryker disable next-line StringLiteral: an answer over 8 MiB, the reference's own memory bound (no spec sentence): a check would stream 8 MiB through the suite's receiver for every mutant
      reason: `the tool answer is larger than ${MAX_HTTP_ANSWER_BYTES} bytes`,
      // Stryker disable next-line ObjectLiteral,StringLiteral: an answer over 8 MiB, the reference's own memory bound (no spec sentence): a check would stream 8 MiB through the suite's receiver for every mutant
      detail: { provider: 'http', violation: 'too_large', limit_bytes: MAX_HTTP_ANSWER_BYTES },
    }
  }
  let output: unknown
  try {
    output = JSON.parse(answer.body)
  } catch {
    return {
      ok: false,
      reason: 'the tool answer is not JSON',
      detail: { provider: 'http', violation: 'not_json' },
    }
  }
  const resultId =
    // Stryker disable next-line ConditionalExpression: equivalent, a number, string or boolean answer has no result_id either
    typeof output === 'object' &&
    output !== null &&
    typeof (output as { result_id?: unknown }).result_id === 'string'
      ? ((output as { result_id: string }).result_id as string)
      : undefined
  return resultId ? { ok: true, output, resultId } : { ok: true, output, resultId: call.newResultId() }
}

function privateAddress(url: URL): ToolOutcome {
  return {
    ok: false,
    reason: 'the tool URL points at a private or loopback address, which this server does not call',
    detail: { provider: 'http', violation: 'private_address', host: url.hostname },
  }
}
