/**
 * A tool's schema is a tenant's text, checked on the server's only thread: its patterns run on RE2
 * (src/domain/tools/linear-patterns.ts), so a pattern that makes a backtracking engine take hours (`^(a+)+$` against a
 * run of a's ending in "!") is matched in linear time, and its uniqueItems on a set of canonical forms
 * (src/domain/tools/linear-unique-items.ts), not Ajv's pairwise comparison. Each costly case runs in a child process
 * under a deadline: were the quadratic or exponential way back, the test fails at the deadline instead of hanging.
 */
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { OutboundHttp } from '../../src/domain/outbound.js'
import { toRe2Syntax } from '../../src/domain/tools/linear-patterns.js'
import { callTool, checkToolDefinition } from '../../src/domain/tools/providers.js'
import type { ToolRecord } from '../../src/domain/tools/types.js'
import { startTestServer, type TestServer } from '../support/server.js'
import { createAgent, registerTool, startRun, status, waitForRun } from './helpers.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
/** builtin:echo never goes out. */
const NO_OUTBOUND: OutboundHttp = {
  refusal: () => null,
  post: () => Promise.reject(new Error('builtin:echo never goes out')),
}
const EVIL = { type: 'object', properties: { a: { type: 'string', pattern: '^(a+)+$' } } }

function echoTool(outputSchema: Record<string, unknown>): ToolRecord {
  return {
    seq: 1,
    id: 'tool_1',
    workspaceId: 'ws_1',
    name: 'echo',
    provider: 'builtin:echo',
    config: {},
    inputSchema: {},
    outputSchema,
    policyBinding: { envelope: 'default', required_scopes: [] },
    idempotent: true,
    status: 'active',
    createdAt: 0,
    retiredAt: null,
  }
}

async function echo(outputSchema: Record<string, unknown>, input: Record<string, unknown>) {
  return callTool({
    runId: 'run_1',
    stepId: 'step_1',
    tool: echoTool(outputSchema),
    input,
    newResultId: () => 'res_1',
    outbound: NO_OUTBOUND,
  })
}

describe('the patterns of tool schemas', () => {
  it('write ECMA-262 \\u escapes as RE2 reads them, and leave every other escape alone', () => {
    expect(toRe2Syntax('^\\u00e9\\u{1F600}$')).toBe('^\\x{00e9}\\x{1F600}$')
    expect(toRe2Syntax('\\\\u0041')).toBe('\\\\u0041')
    expect(toRe2Syntax('[\\u0041-\\u005A]+\\d\\.')).toBe('[\\x{0041}-\\x{005A}]+\\d\\.')
    expect(toRe2Syntax('\\u12')).toBe('\\u12')
    expect(toRe2Syntax('trailing\\')).toBe('trailing\\')
    expect(toRe2Syntax('\\\\\\u0041\\w{12}')).toBe('\\\\\\x{0041}\\w{12}')
    expect(toRe2Syntax('\\uzz0041')).toBe('\\uzz0041')
  })

  it('search as JavaScript does, each pattern of a schema its own', async () => {
    const schema = {
      type: 'object',
      properties: { code: { type: 'string', pattern: '^[A-Z]{3}$' }, word: { type: 'string', pattern: 'é' } },
      patternProperties: { '^x-\\u0061': { type: 'integer' } },
    }
    expect((await echo(schema, { code: 'ABC', word: 'café', 'x-a1': 1 })).ok).toBe(true)
    expect((await echo(schema, { code: 'ABCD' })).ok).toBe(false)
    expect((await echo(schema, { word: 'cafe' })).ok).toBe(false)
    expect((await echo(schema, { 'x-a1': 'one' })).ok).toBe(false)
  })

  it('fail the steps of a tool stored with a pattern registered before it was refused', async () => {
    const outcome = await echo(
      { type: 'object', properties: { a: { type: 'string', pattern: '^(?=a)a$' } } },
      {},
    )
    expect(outcome).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^the tool's output_schema does not compile: /),
      detail: { provider: 'builtin:echo', violation: 'output_schema' },
    })
  })

  it('refuse at registration what a linear-time engine cannot match (lookaround, backreferences)', () => {
    for (const pattern of ['^(?=a)a$', '(a)\\1']) {
      expect(() =>
        checkToolDefinition(
          'builtin:echo',
          {},
          {
            input_schema: {},
            output_schema: { type: 'object', properties: { a: { type: 'string', pattern } } },
          },
        ),
      ).toThrow(/output_schema is not a valid JSON Schema/)
    }
  })

  it('match a catastrophic pattern in linear time (a child process under a 30 s deadline)', async () => {
    const outcome = await echoUnderDeadline(EVIL, "{ a: 'a'.repeat(50000) + '!' }")
    expect(outcome).toMatchObject({ ok: false, detail: { violation: 'output_schema' } })
  })
})

describe('uniqueItems in tool schemas', () => {
  const UNIQUE = { type: 'object', properties: { list: { type: 'array', uniqueItems: true } } }

  it('compares items as JSON does (1 and 1.0 alike, keys in any order), naming the two that repeat', async () => {
    expect((await echo(UNIQUE, { list: [1, '1', [1], { a: 1 }, { a: 2 }, null, true] })).ok).toBe(true)
    for (const [list, first, second] of [
      [[{ a: 1, b: [2] }, 0, { b: [2], a: 1 }], 0, 2],
      [[3, 'x', 3.0], 0, 2],
    ] as const) {
      const outcome = await echo(UNIQUE, { list })
      expect(outcome).toMatchObject({
        ok: false,
        detail: {
          errors: [`/list must NOT have duplicate items (items ## ${first} and ${second} are identical)`],
        },
      })
    }
  })

  it('checks 200,000 distinct objects in linear time (a child process under a 30 s deadline)', async () => {
    // Distinct items are the costly case of a pairwise comparison: every pair is compared.
    const outcome = await echoUnderDeadline(
      UNIQUE,
      '{ list: Array.from({ length: 200000 }, (_, i) => ({ n: i })) }',
    )
    expect(outcome).toEqual({ ok: true, resultId: 'x' })
  })
})

describe('a schema whose cost grows exponentially with the answer', () => {
  // Each level's two alternatives both descend (the first fails only after its items are checked): a few
  // kilobytes of schema and an answer sixty arrays deep cost about 2^30 checks.
  const defs: Record<string, unknown> = { s0: {} }
  for (let k = 1; k <= 60; k++)
    defs[`s${k}`] = {
      anyOf: [
        { items: { $ref: `#/$defs/s${k - 1}` }, maxItems: 0 },
        { items: { $ref: `#/$defs/s${k - 1}` } },
      ],
    }
  const EXPONENTIAL = { $defs: defs, type: 'object', properties: { deep: { $ref: '#/$defs/s60' } } }

  it('fails the step once its check has taken 2 s (a child process under a 30 s deadline)', async () => {
    const outcome = await echoUnderDeadline(
      EXPONENTIAL,
      '(() => { let a = 1; for (let k = 0; k < 60; k++) a = [a]; return { deep: a } })()',
    )
    expect(outcome).toEqual({
      ok: false,
      reason: 'checking the tool answer against its output_schema took longer than 2000 ms',
      detail: { provider: 'builtin:echo', violation: 'output_schema_too_costly', limit_ms: 2000 },
    })
  })

  it('leaves a shallow answer to it checked as usual', async () => {
    expect((await echo(EXPONENTIAL, { deep: [[[1]]] })).ok).toBe(true)
  })
})

describe('registering a tool schema', () => {
  const register = (output_schema: Record<string, unknown>) => () =>
    checkToolDefinition('builtin:echo', {}, { input_schema: {}, output_schema })

  it('refuses one over 64 KiB of JSON, naming its size', () => {
    expect(register({ type: 'object', description: 'x'.repeat(70_000) })).toThrow(
      /^output_schema is 70034 bytes of JSON; a tool's schema holds at most 65536$/,
    )
  })

  it('refuses one that takes over 1 s to compile, and compiles the next as before', () => {
    // 700 patterns RE2 compiles slowly (large repeat counts): about 6 s of compiling in 59 kB.
    const slow = {
      type: 'object',
      properties: Object.fromEntries(
        Array.from({ length: 700 }, (_, i) => [
          `p${i}`,
          { type: 'string', pattern: `^(?:\\p{L}{0,1000}\\p{N}{0,1000}\\p{L}{0,${100 + i}})$` },
        ]),
      ),
    }
    expect(register(slow)).toThrow(/^output_schema takes longer than 1000 ms to compile$/)
    // The shared instance a cut-off compile may have left half-changed is a fresh one: an $id compiles again.
    const withId = { $id: 'https://schemas.example.com/after-cut-off.json', type: 'object' }
    expect(register(withId)).not.toThrow()
    expect(register(withId)).not.toThrow()
  })
})

/**
 * builtin:echo's answer (its input, given as JavaScript) checked against the schema in a child process, killed after
 * 30 s: the outcome, or a failed expectation saying it did not finish.
 */
async function echoUnderDeadline(outputSchema: Record<string, unknown>, input: string): Promise<unknown> {
  const script = `
    const { callTool } = await import('./src/domain/tools/providers.ts')
    const tool = { provider: 'builtin:echo', config: {}, outputSchema: ${JSON.stringify(outputSchema)} }
    const outcome = await callTool({ runId: 'r', stepId: 's', tool, input: ${input}, newResultId: () => 'x',
      outbound: {} })
    process.stdout.write(JSON.stringify({ ...outcome, output: undefined }))`
  const out = await new Promise<{ stdout: string; killed: boolean }>((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      { cwd: ROOT, timeout: 30_000, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout) => resolve({ stdout, killed: err?.killed === true }),
    )
  })
  expect(out.killed, 'the check did not finish within 30 s').toBe(false)
  return JSON.parse(out.stdout)
}

describe('a run whose tool answer meets a pattern of its output_schema', () => {
  let t: TestServer
  let token: string
  beforeAll(async () => {
    t = await startTestServer()
    token = (await t.createKey({ scopes: ['*'] })).token
  })
  afterAll(() => t.close())

  it('fails its step when the answer breaks it, and succeeds when the answer matches', async () => {
    await registerTool(t, token, { name: 'evil', output_schema: EVIL })
    const agentId = await createAgent(t, token, 'autonomous', [])
    const run = await startRun(t, token, agentId, { inputs: { plan: ['evil'], a: `${'a'.repeat(20)}!` } })
    const ended = await waitForRun(t, token, run.run_id, status('failed'))
    expect(ended.status).toBe('failed')
    const fine = await startRun(t, token, agentId, { inputs: { plan: ['evil'], a: 'aaaa' } })
    expect((await waitForRun(t, token, fine.run_id, status('succeeded'))).status).toBe('succeeded')
  })
})
