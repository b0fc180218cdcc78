/**
 * What the reference's tool providers do and record: the `http` provider's call of the tool's URL (here the suite's
 * receiver), its answer checked against `output_schema`, each way a call fails; the built-in echo, fail, delay and
 * data providers; and the registrations their settings refuse. §2 shows `provider | string | Provider identifier.`
 * and no provider, setting or call shape, so every check here is profile.
 */
import { sameJson } from '../canonical.js'
import type { Check, CheckContext } from '../check.js'
import { eventOf } from '../delivery-body.js'
import { expectStatus, type Json, toolId } from '../fixtures.js'
import { obj } from '../http.js'
import { assert } from '../types.js'
import { short } from '../wait.js'
import { ownHook, receiverUrl } from './webhooks.js'

/** A tool the check registers itself (retired at the end); answers the registration as sent back. */
async function register(ctx: CheckContext, label: string, fields: Json) {
  const name = ctx.name(label)
  const res = await ctx.http.post('/v1/tools', {
    name,
    input_schema: { type: 'object' },
    output_schema: {},
    policy_binding: { envelope: 'default', required_scopes: [] },
    idempotent: true,
    ...fields,
  })
  const id = toolId(res.body)
  if (res.status < 300 && id) ctx.cleanup(`retire tool ${name}`, (http) => http.delete(`/v1/tools/${id}`))
  return { res, tool: id ? { id, name } : undefined }
}

/** One run of `tool` (detailed trace), settled: its status, outcome and the frames of its one step. */
async function runOf(ctx: CheckContext, tool: { id: string; name: string }) {
  const { runId } = await ctx.fx.startRun(await ctx.fx.newToolAgent([tool]), { trace_level: 'detailed' })
  const run = await ctx.fx.waitForStatus(runId, (s) => ctx.fx.statuses.settled(s), 'settled')
  const { frames } = await ctx.fx.readTrace(runId)
  const call = frames.find((f) => f.kind === 'tool.call')
  const failed = frames.find((f) => f.kind === 'step.failed')
  return { runId, run, frames, call, failedDetail: obj(failed?.detail) }
}

export const toolCallChecks: Check[] = [
  {
    id: 'tools.provider-calls',
    title:
      'The providers as the reference runs them: an http tool posts run_id, step_id, tool and input to its URL and keeps the answer’s result_id; a non-2xx, non-JSON, off-schema (its patterns read as ECMA-262 writes them) or late answer fails the step naming why; echo, fail, delay and data do what their settings say',
    level: 'profile',
    clauses: ['S1.5', 'S2.6', 'S2.7'],
    // Mostly waiting for its runs (one answers late on purpose), with tools and endpoints of its own.
    overlap: true,
    async run(ctx) {
      const base = receiverUrl(ctx)
      const receiver = ctx.receiver!
      const problems: string[] = []
      const expect = (holds: boolean, problem: string) => {
        if (!holds) problems.push(problem)
      }
      /** An http tool whose URL the receiver answers with `answer`; its run, and what the receiver got. */
      const httpRun = async (label: string, answer: ToolAnswer, fields: Json = {}, config: Json = {}) => {
        const path = `/${ctx.name(`tool-endpoint-${label}`)}`
        // The receiver's URL may carry a path of its own (a proxy's, a tunnel's): its requests end with this one.
        const mine = (p: string) => (p.split('?')[0] ?? '').endsWith(path)
        receiver.answerWith(mine, answer)
        const { res, tool } = await register(ctx, `tool-http-${label}`, {
          provider: 'http',
          config: { url: `${base}${path}`, ...config },
          ...fields,
        })
        expectStatus(res, [200, 201], `registering an http tool (${label})`)
        const ran = await runOf(ctx, tool!)
        if (ran.failedDetail.violation === 'private_address')
          problems.push(
            `the http tool of ${base}${path} was refused as a private address: the reference calls a tool on one only when AGENTOPS_TOOL_PRIVATE_TARGETS lists its host:port (--reference sets it to the receiver's)`,
          )
        return { ...ran, tool: tool!, got: receiver.deliveries.filter((d) => mine(d.path)) }
      }
      const failedWith = (
        what: string,
        r: Awaited<ReturnType<typeof httpRun>>,
        detail: Json,
        says: string,
      ) => {
        const d = r.failedDetail
        const wrong = Object.entries(detail).filter(([k, v]) => !sameJson(d[k], v))
        expect(
          ctx.fx.statuses.is(r.run.status, 'failed') &&
            wrong.length === 0 &&
            typeof d.reason === 'string' &&
            d.reason.includes(says) &&
            obj(obj(r.run.outcome).error).code === 'tool_failed',
          `${what}: the run ended ${short(r.run.status)}, its step.failed detail ${short(d)} (expected ${short(detail)} and a reason saying "${says}")`,
        )
      }
      const schema = { type: 'object', required: ['answer'], properties: { answer: { type: 'string' } } }
      await Promise.all([
        (async () => {
          const r = await httpRun(
            'ok',
            { status: 200, body: JSON.stringify({ result_id: `res-${ctx.name('kept')}`, answer: 'done' }) },
            { output_schema: schema },
          )
          const sent = r.got[0]
          const body = obj(sent?.body)
          expect(
            r.got.length === 1 &&
              sent?.headers['content-type']?.startsWith('application/json') === true &&
              sent.headers.accept === 'application/json' &&
              body.run_id === r.runId &&
              body.tool === r.tool.name &&
              typeof body.step_id === 'string' &&
              body.step_id === r.call?.step_id &&
              body.input !== null &&
              typeof body.input === 'object',
            `the http tool's URL got ${r.got.length} call(s): ${short(sent?.headers)} ${short(sent?.raw)} (expected one JSON POST naming run ${r.runId}, its step and tool, and the input)`,
          )
          expect(
            ctx.fx.statuses.is(r.run.status, 'succeeded') &&
              typeof r.call?.result === 'string' &&
              r.call.result.startsWith('res-') &&
              obj(obj(r.call.detail).output).answer === 'done',
            `an http tool answering result_id and a matching body: run ${short(r.run.status)}, tool.call ${short(r.call)}`,
          )
        })(),
        (async () => {
          // A result_id that is no string is no result identifier: the server makes its own.
          const r = await httpRun('no-result-id', { status: 299, body: '{"answer":"done","result_id":7}' })
          expect(
            ctx.fx.statuses.is(r.run.status, 'succeeded') &&
              typeof r.call?.result === 'string' &&
              r.call.result !== '',
            `an http tool answering 299 with a numeric result_id: run ${short(r.run.status)}, tool.call ${short(r.call)} (expected a success and a result the server made)`,
          )
        })(),
        (async () => {
          // JSON Schema's patterns are ECMA-262's, \u escapes included, each pattern of a schema applied to its field.
          // A title of its own, and patterns of their own (an alternative no answer meets, named for this run): a
          // deployment that keeps compiled schemas, or compiled patterns, by their text compiles these anew.
          const nonce = ctx.name('patterns')
          const patterned = {
            title: nonce,
            type: 'object',
            required: ['word', 'code', 'menu'],
            properties: {
              word: { type: 'string', pattern: `^c\\u{61}f\\u00e9$|^#${nonce}$` },
              menu: { type: 'string', pattern: `^menu0061\\\\u0061$|^#${nonce}$` },
              code: { type: 'string', pattern: `^[A-Z]\\w{2}$|^#${nonce}$` },
            },
          }
          const [kept, broken] = await Promise.all([
            httpRun(
              'patterns-met',
              { status: 200, body: JSON.stringify({ word: 'café', code: 'ABC', menu: 'menu0061\\u0061' }) },
              { output_schema: patterned },
            ),
            httpRun(
              'patterns-broken',
              { status: 200, body: JSON.stringify({ word: 'café', code: 'ABCD', menu: 'menu0061\\u0061' }) },
              { output_schema: patterned },
            ),
          ])
          expect(
            ctx.fx.statuses.is(kept.run.status, 'succeeded'),
            `an http tool answering {"word":"café","code":"ABC","menu":"menu0061\\\\u0061"} to an output_schema of patterns ^c\\u{61}f\\u00e9$, ^[A-Z]\\w{2}$ and ^menu0061\\\\u0061$: run ${short(kept.run.status)}, ${short(kept.failedDetail)}`,
          )
          failedWith(
            'an http tool answering a code of four letters to the pattern ^[A-Z]\\w{2}$',
            broken,
            { violation: 'output_schema' },
            'output_schema',
          )
        })(),
        (async () => {
          // uniqueItems compares items as JSON does: the same object with its keys in another order, and 2 and 2.0,
          // are one item twice; uniqueItems: false lets an item repeat.
          const unique = {
            title: ctx.name('unique-items'),
            type: 'object',
            properties: {
              list: { type: 'array', uniqueItems: true },
              any: { type: 'array', uniqueItems: false },
            },
          }
          const [distinct, repeated] = await Promise.all([
            httpRun(
              'unique-items',
              { status: 200, body: '{"list":[{"a":1,"b":[2]},{"a":1,"b":[3]},2,"2",[2]],"any":[1,1]}' },
              { output_schema: unique },
            ),
            httpRun(
              'repeated-items',
              { status: 200, body: '{"list":[{"a":1,"b":[2.0]},3,{"b":[2],"a":1}]}' },
              { output_schema: unique },
            ),
          ])
          expect(
            ctx.fx.statuses.is(distinct.run.status, 'succeeded'),
            `an http tool answering a list of distinct items to an output_schema with uniqueItems: run ${short(distinct.run.status)}, ${short(distinct.failedDetail)}`,
          )
          failedWith(
            'an http tool answering a list holding one object twice (its keys in another order) to uniqueItems',
            repeated,
            { violation: 'output_schema' },
            'output_schema',
          )
          const said = repeated.failedDetail.errors
          expect(
            Array.isArray(said) && said.some((e) => /^\/list .*duplicate/.test(String(e))),
            `the step.failed detail of a list holding an item twice lists ${short(said)}, not /list and the duplicate`,
          )
        })(),
        (async () => {
          const r = await httpRun('null', { status: 200, body: 'null' })
          expect(
            ctx.fx.statuses.is(r.run.status, 'succeeded') && typeof r.call?.result === 'string',
            `an http tool answering JSON null: run ${short(r.run.status)}, tool.call ${short(r.call)}`,
          )
        })(),
        (async () => {
          const r = await httpRun('status', { status: 500, body: '{"error":"boom"}' })
          failedWith(
            'an http tool answering 500',
            r,
            { provider: 'http', violation: 'http_status', status: 500 },
            'HTTP 500',
          )
        })(),
        (async () => {
          const r = await httpRun('redirect', { status: 302, body: '{}' })
          failedWith('an http tool answering 302', r, { violation: 'http_status', status: 302 }, 'HTTP 302')
        })(),
        (async () => {
          const r = await httpRun('not-json', { status: 200, body: 'plain words' })
          failedWith(
            'an http tool answering text',
            r,
            { provider: 'http', violation: 'not_json' },
            'not JSON',
          )
        })(),
        (async () => {
          const strings = Object.fromEntries(
            Array.from({ length: 11 }, (_, n) => [`n${n}`, { type: 'string' }]),
          )
          const numbers = Object.fromEntries(Array.from({ length: 11 }, (_, n) => [`n${n}`, n]))
          const r = await httpRun(
            'off-schema',
            { status: 200, body: JSON.stringify({ ...numbers, other: 1 }) },
            {
              output_schema: {
                ...schema,
                properties: { ...schema.properties, ...strings },
                additionalProperties: false,
              },
            },
          )
          const errors = r.failedDetail.errors
          failedWith(
            'an http tool answering off its output_schema',
            r,
            { violation: 'output_schema' },
            'output_schema',
          )
          // Thirteen ways off its schema: the first ten are listed, each with the place it is at ("/" the answer).
          expect(
            Array.isArray(errors) &&
              errors.length === 10 &&
              errors.some((e) => String(e).startsWith('/ must')) &&
              errors.some((e) => String(e).startsWith('/n')),
            `an answer off its schema thirteen times lists ${short(errors)}, not ten with their places`,
          )
        })(),
        (async () => {
          const r = await httpRun('late', { status: 200, body: '{}', delayMs: 1500 }, {}, { timeout_ms: 200 })
          failedWith(
            'an http tool answering after its timeout_ms',
            r,
            { provider: 'http', violation: 'timeout', timeout_ms: 200 },
            '200 ms',
          )
        })(),
        (async () => {
          // A port of this host nobody listens on, which the guard refuses unless its operator allows it.
          const { res, tool } = await register(ctx, 'tool-http-refused', {
            provider: 'http',
            config: { url: 'http://127.0.0.1:9/' },
          })
          expectStatus(res, [200, 201], 'registering an http tool of a private address')
          const r = await runOf(ctx, tool!)
          const d = r.failedDetail
          expect(
            ctx.fx.statuses.is(r.run.status, 'failed') &&
              d.provider === 'http' &&
              ((d.violation === 'private_address' &&
                d.host === '127.0.0.1' &&
                String(d.reason).includes('private')) ||
                (d.violation === 'unreachable' && String(d.reason).includes('could not be reached'))),
            `an http tool of 127.0.0.1:9: the run ended ${short(r.run.status)}, step.failed detail ${short(d)}`,
          )
        })(),
        (async () => {
          const { res, tool } = await register(ctx, 'tool-delay', {
            provider: 'builtin:delay',
            config: { delay_ms: 300 },
          })
          expectStatus(res, [200, 201], 'registering a builtin:delay tool')
          const r = await runOf(ctx, tool!)
          expect(
            ctx.fx.statuses.is(r.run.status, 'succeeded') &&
              obj(obj(r.call?.detail).output).delayed_ms === 300 &&
              Number(r.call?.latency_ms) >= 290,
            `a builtin:delay tool of 300 ms: run ${short(r.run.status)}, tool.call ${short(r.call)}`,
          )
        })(),
        (async () => {
          const data = { figures: [1, 2, 3], label: 'conformance' }
          const { res, tool } = await register(ctx, 'tool-data', {
            provider: 'builtin:data',
            config: { data },
          })
          expectStatus(res, [200, 201], 'registering a builtin:data tool')
          const r = await runOf(ctx, tool!)
          expect(
            ctx.fx.statuses.is(r.run.status, 'succeeded') &&
              sameJson(obj(r.call?.detail).output, data) &&
              typeof r.call?.result === 'string',
            `a builtin:data tool: run ${short(r.run.status)}, tool.call ${short(r.call)}`,
          )
        })(),
        (async () => {
          const { res, tool } = await register(ctx, 'tool-fail', {
            provider: 'builtin:fail',
            config: { message: 'conformance: told to fail' },
          })
          const { res: plain, tool: silent } = await register(ctx, 'tool-fail-plain', {
            provider: 'builtin:fail',
          })
          expectStatus(res, [200, 201], 'registering a builtin:fail tool')
          expectStatus(plain, [200, 201], 'registering a builtin:fail tool without a message')
          const [r, q] = await Promise.all([runOf(ctx, tool!), runOf(ctx, silent!)])
          expect(
            ctx.fx.statuses.is(r.run.status, 'failed') &&
              r.failedDetail.reason === 'conformance: told to fail' &&
              r.failedDetail.provider === 'builtin:fail',
            `a builtin:fail tool: run ${short(r.run.status)}, step.failed detail ${short(r.failedDetail)}`,
          )
          expect(
            ctx.fx.statuses.is(q.run.status, 'failed') &&
              typeof q.failedDetail.reason === 'string' &&
              q.failedDetail.reason !== '',
            `a builtin:fail tool without a message: run ${short(q.run.status)}, step.failed detail ${short(q.failedDetail)} (expected a reason all the same)`,
          )
        })(),
      ])
      assert(problems.length === 0, problems.join('; '))
    },
  },
  {
    id: 'tools.lifecycle-events',
    // It judges only its own tools' deliveries and its own run, which mostly wait on the deployment.
    overlap: true,
    title:
      'Registering and retiring a tool are announced as tool.registered and tool.retired with the tool’s id, name and status; a tool registered without `idempotent` is not idempotent (a hybrid agent’s call of it waits for approval)',
    level: 'profile',
    clauses: ['S1.8', 'S2.7'],
    async run(ctx) {
      const hook = await ownHook(ctx, 'tool-events', ['tool.registered', 'tool.retired'])
      const { res, tool } = await register(ctx, 'tool-events', {
        provider: 'builtin:echo',
        idempotent: undefined,
      })
      expectStatus(res, [200, 201], 'registering a tool without idempotent')
      expectStatus(await ctx.http.delete(`/v1/tools/${tool!.id}`), [200, 204], 'retiring it')
      const problems: string[] = []
      for (const [kind, status] of [
        ['tool.registered', 'active'],
        ['tool.retired', 'retired'],
      ]) {
        const d = await ctx.receiver!.waitFor(
          (x) => hook.mine(x) && eventOf(x) === kind && x.body?.tool_id === tool!.id,
          ctx.config.waitMs,
        )
        if (!d?.body || d.body.name !== tool!.name || d.body.status !== status)
          problems.push(`${kind}: ${d ? short(d.body) : `no delivery within ${ctx.config.waitMs} ms`}`)
      }
      const { res: again, tool: once } = await register(ctx, 'tool-no-idempotent', {
        provider: 'builtin:echo',
        idempotent: undefined,
      })
      expectStatus(again, [200, 201], 'registering a tool without idempotent')
      const { runId } = await ctx.fx.startRun(await ctx.fx.newToolAgent([once!], 'hybrid'))
      const run = await ctx.fx.waitForStatus(runId, (s) => ctx.fx.statuses.settled(s), 'settled')
      if (run.status !== 'awaiting_approval')
        problems.push(
          `a hybrid agent's run of a tool registered without idempotent ended ${short(run.status)}, not awaiting approval`,
        )
      assert(problems.length === 0, problems.join('; '))
    },
  },
  {
    id: 'tools.registration-refusals',
    title:
      'A registration the reference cannot run is refused 400 naming the field: an unknown provider, an invalid schema, a schema over 64 KiB or with an invalid pattern or one no linear-time engine matches (lookaround, backreference), an http tool without an absolute http(s) URL or with credentials or a timeout_ms out of 1..120000, a delay_ms out of 0..600000',
    level: 'profile',
    clauses: ['S2.7', 'S7.3'],
    async run(ctx) {
      const refused: Array<[string, Json, string]> = [
        ['an unknown provider', { provider: 'conformance:none' }, 'provider'],
        [
          'an input_schema referring to a schema by urn',
          { provider: 'builtin:echo', input_schema: { $ref: 'urn:conformance:input' } },
          'input_schema',
        ],
        [
          'an output_schema referring to another schema (it must be complete to check answers)',
          {
            provider: 'builtin:echo',
            output_schema: { $ref: 'https://schemas.example.com/conformance/out.json' },
          },
          'output_schema',
        ],
        [
          'an invalid output_schema',
          { provider: 'builtin:echo', output_schema: { type: 'nonsense' } },
          'output_schema',
        ],
        ['an invalid input_schema', { provider: 'builtin:echo', input_schema: { type: 7 } }, 'input_schema'],
        [
          'an output_schema of more than 64 KiB of JSON',
          { provider: 'builtin:echo', output_schema: { type: 'object', description: 'x'.repeat(70_000) } },
          'output_schema',
        ],
        // The reference matches schema patterns in linear time (RE2), which has no lookaround or backreference.
        [
          'an output_schema pattern with a lookahead',
          {
            provider: 'builtin:echo',
            output_schema: { type: 'object', properties: { a: { type: 'string', pattern: '^(?=a)a$' } } },
          },
          'output_schema',
        ],
        [
          // ECMA-262 reads \u as an escape of four hex digits or {hex}: followed by neither, the pattern is invalid.
          'an output_schema pattern with a \\u escape without its hex digits',
          {
            provider: 'builtin:echo',
            output_schema: { type: 'object', properties: { a: { type: 'string', pattern: '^\\uzz0041$' } } },
          },
          'output_schema',
        ],
        [
          'an output_schema pattern with a backreference',
          {
            provider: 'builtin:echo',
            output_schema: { type: 'object', properties: { a: { type: 'string', pattern: '(a)\\1' } } },
          },
          'output_schema',
        ],
        [
          'an input_schema referring to a schema by a urn that holds an http URL',
          {
            provider: 'builtin:echo',
            input_schema: { $ref: 'urn:conformance:https://schemas.example.com/conformance/in.json' },
          },
          'input_schema',
        ],
        [
          'an input_schema referring to a relative schema',
          { provider: 'builtin:echo', input_schema: { $ref: 'other.json' } },
          'input_schema',
        ],
        ['an http tool without config', { provider: 'http' }, 'config.url'],
        ['an http tool without url', { provider: 'http', config: { timeout_ms: 100 } }, 'config.url'],
        ['a builtin:delay tool without config', { provider: 'builtin:delay' }, 'config.delay_ms'],
        ['an http tool with a relative url', { provider: 'http', config: { url: '/tool' } }, 'config.url'],
        ['an ftp url', { provider: 'http', config: { url: 'ftp://tools.example.com/x' } }, 'config.url'],
        [
          'a url with credentials',
          { provider: 'http', config: { url: 'https://user:pw@tools.example.com/x' } },
          'config.url',
        ],
        [
          'a url with a user name',
          { provider: 'http', config: { url: 'https://user@tools.example.com/x' } },
          'config.url',
        ],
        ...[0, 120_001, 1.5, '100'].map((t): [string, Json, string] => [
          `timeout_ms ${JSON.stringify(t)}`,
          { provider: 'http', config: { url: 'https://tools.example.com/x', timeout_ms: t } },
          'config.timeout_ms',
        ]),
        ...[-1, 600_001, 2.5, '10', undefined].map((d): [string, Json, string] => [
          `delay_ms ${JSON.stringify(d)}`,
          { provider: 'builtin:delay', config: d === undefined ? {} : { delay_ms: d } },
          'config.delay_ms',
        ]),
      ]
      const accepted: Array<[string, Json]> = [
        ['timeout_ms 1', { provider: 'http', config: { url: 'https://tools.example.com/x', timeout_ms: 1 } }],
        [
          'timeout_ms 120000',
          { provider: 'http', config: { url: 'http://tools.example.com/x', timeout_ms: 120_000 } },
        ],
        ['delay_ms 0', { provider: 'builtin:delay', config: { delay_ms: 0 } }],
        ['delay_ms 600000', { provider: 'builtin:delay', config: { delay_ms: 600_000 } }],
        ['neither schema', { provider: 'builtin:echo', input_schema: undefined, output_schema: undefined }],
        [
          'an output_schema with a keyword of its own',
          { provider: 'builtin:echo', output_schema: { type: 'object', 'x-conformance': 'kept' } },
        ],
        [
          'an input_schema referring to an http schema',
          {
            provider: 'builtin:echo',
            input_schema: { $ref: 'http://schemas.example.com/conformance/in.json' },
          },
        ],
        [
          // {"type":"object","description":"…"}: 34 characters besides the description, 65,536 in all.
          'an output_schema of exactly 64 KiB of JSON',
          { provider: 'builtin:echo', output_schema: { type: 'object', description: 'x'.repeat(65_502) } },
        ],
      ]
      const problems: string[] = []
      await Promise.all([
        ...refused.map(async ([what, fields, field]) => {
          const { res } = await register(ctx, 'tool-refused', fields)
          const error = obj(obj(res.body).error)
          const fields_ = obj(error.detail).fields
          const issues = obj(error.detail).issues
          if (
            res.status !== 400 ||
            !Array.isArray(fields_) ||
            !fields_.includes(field) ||
            !Array.isArray(issues) ||
            !issues.some((i) => obj(i).path === field) ||
            typeof error.message !== 'string' ||
            !error.message.includes(field.split('.').at(-1)!) ||
            // An unknown provider is told the ones there are.
            (field === 'provider' && !error.message.includes('builtin:data, http'))
          )
            problems.push(`${what}: ${res.status} ${short(res.body)} (expected 400 naming ${field})`)
        }),
        ...accepted.map(async ([what, fields]) => {
          const { res } = await register(ctx, 'tool-accepted', fields)
          if (res.status >= 300)
            problems.push(`${what}: ${res.status} ${short(res.body)} (expected it registered)`)
        }),
      ])
      assert(problems.length === 0, problems.join('; '))
    },
  },
]

/** What the receiver answers a tool's call with (see WebhookReceiver.answerWith). */
interface ToolAnswer {
  status: number
  body: string
  delayMs?: number
}
