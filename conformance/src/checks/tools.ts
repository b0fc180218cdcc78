/** Spec §2, §4 tools: registration, inspection, listing, retirement that keeps historical traces intact. */
import { sameJson } from '../canonical.js'
import type { Check } from '../check.js'
import { expectStatus, getTrace, nextPageCursor, pageItems, toolId, traceFrames } from '../fixtures.js'
import { obj } from '../http.js'
import { assert } from '../types.js'
import { short } from '../wait.js'
import { isRfc3339 } from './assertions.js'

export const toolChecks: Check[] = [
  {
    id: 'tools.register-inspect-list',
    title: 'A registered tool can be inspected by its id and appears in the list',
    level: 'core',
    clauses: ['S1.1', 'S1.5', 'S2.7', 'S4.7'],
    async run(ctx) {
      const tool = await ctx.fx.tool('succeed')
      const one = await ctx.http.get(`/v1/tools/${tool.id}`)
      expectStatus(one, 200, 'GET /v1/tools/{tool_id}')
      assert(obj(one.body).name === tool.name, `the inspected tool is named ${short(obj(one.body).name)}`)
      let found = false
      let cursor: string | null | undefined
      for (let i = 0; i < 10 && !found; i++) {
        const res = await ctx.http.get(
          `/v1/tools?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        )
        expectStatus(res, 200, 'GET /v1/tools')
        found = (pageItems(res.body) ?? []).some((t) => toolId(t) === tool.id)
        cursor = nextPageCursor(ctx, res, 200, 'GET /v1/tools?limit=200')
        if (!cursor) break
      }
      assert(found, `tool ${tool.id} is not in GET /v1/tools`)
    },
  },
  {
    id: 'tools.registration-shape',
    title: 'Registration answers 201 with tool_id, the policy binding and status active',
    level: 'profile',
    clauses: ['S1.5', 'S2.7', 'S5.4'],
    async run(ctx) {
      const name = ctx.name('tool-shape')
      const res = await ctx.http.post('/v1/tools', {
        name,
        provider: ctx.config.profile.tools.succeed.provider,
        input_schema: { type: 'object', properties: { query: { type: 'string' } } },
        output_schema: { type: 'string' },
        policy_binding: { envelope: 'default', required_scopes: ['tools:read'] },
        idempotent: false,
      })
      expectStatus(res, 201, 'POST /v1/tools')
      const b = obj(res.body)
      const id = toolId(b)
      if (id) ctx.cleanup(`retire tool ${name}`, (http) => http.delete(`/v1/tools/${id}`))
      assert(typeof b.tool_id === 'string', 'no tool_id')
      assert(
        b.status === 'active' && b.retired_at === null,
        `status ${short(b.status)}, retired_at ${short(b.retired_at)}`,
      )
      const binding = obj(b.policy_binding)
      assert(
        binding.envelope === 'default' && JSON.stringify(binding.required_scopes) === '["tools:read"]',
        `policy_binding ${short(binding)}`,
      )
      const dup = await ctx.http.post('/v1/tools', {
        name,
        provider: ctx.config.profile.tools.succeed.provider,
        policy_binding: { envelope: 'default', required_scopes: [] },
      })
      assert(dup.status === 409, `registering an active name twice answered ${dup.status}`)
    },
  },
  {
    id: 'tools.input-schema-reference',
    title: 'A tool whose input_schema is a reference to a schema ({"$ref": URI}) is registered',
    level: 'core',
    clauses: ['S2.7'],
    async run(ctx) {
      const name = ctx.name('tool-ref')
      const res = await ctx.http.post('/v1/tools', {
        name,
        provider: ctx.config.profile.tools.succeed.provider,
        input_schema: { $ref: 'https://schemas.example.com/conformance/input.json' },
        output_schema: { type: 'string' },
        policy_binding: { envelope: 'default', required_scopes: [] },
        idempotent: true,
      })
      const id = toolId(res.body)
      if (id) ctx.cleanup(`retire tool ${name}`, (http) => http.delete(`/v1/tools/${id}`))
      expectStatus(res, [200, 201], 'registering a tool with input_schema {"$ref": ...}')
    },
  },
  {
    id: 'tools.schema-ids-stand-alone',
    title:
      'Tools may carry the same JSON Schema $id, with the very same schema or another: each registration stands alone',
    level: 'core',
    clauses: ['S2.7'],
    async run(ctx) {
      // §2: input_schema is "A JSON schema": one with an $id is one, and a second tool with the very same schema
      // (no ambiguity: same $id, same content) is as valid as the first. A validator that keeps every $id it
      // compiled across registrations refuses it. A third tool's schema says something else under the same $id: a
      // schema's $id names it within its own document, and one tool's schema is no part of another's.
      const $id = `https://schemas.example.com/conformance/${ctx.name('shared')}.json`
      const same = { $id, type: 'object', properties: { q: { type: 'string' } } }
      const other = { $id, type: 'object', properties: { q: { type: 'number' } } }
      // The same holds for an $id deeper in a schema (a part under $defs), which a validator may keep apart from
      // the schema it came with.
      const partId = `https://schemas.example.com/conformance/${ctx.name('part')}.json`
      const withPart = (type: string) => ({
        type: 'object',
        properties: { q: { $ref: partId } },
        $defs: { part: { $id: partId, type } },
      })
      for (const [which, schema, holding] of [
        ['first', same, `$id ${$id}`],
        ['second', same, `$id ${$id}`],
        ['third', other, `$id ${$id} (another schema under it)`],
        ['fourth', withPart('string'), `$defs holding $id ${partId}`],
        ['fifth', withPart('number'), `$defs holding $id ${partId} (another schema under it)`],
      ] as const) {
        const name = ctx.name(`tool-sid-${which}`)
        const res = await ctx.http.post('/v1/tools', {
          name,
          provider: ctx.config.profile.tools.succeed.provider,
          input_schema: schema,
          policy_binding: { envelope: 'default', required_scopes: [] },
          idempotent: true,
        })
        const id = toolId(res.body)
        if (id) ctx.cleanup(`retire tool ${name}`, (http) => http.delete(`/v1/tools/${id}`))
        expectStatus(res, [200, 201], `registering the ${which} tool with input_schema ${holding}`)
      }
    },
  },
  {
    id: 'tools.retire-keeps-traces',
    title: 'Retiring a tool leaves its historical runs intact; their traces still reference it by id',
    level: 'core',
    clauses: ['S4.8'],
    // Mostly waiting for its run, with a tool and an agent of its own: runs alongside the next checks.
    overlap: true,
    async run(ctx) {
      const tool = await ctx.fx.newTool('succeed')
      const run = await ctx.fx.startRun(await ctx.fx.newToolAgent([tool]))
      await ctx.fx.waitForStatus(run.runId, (s) => ctx.fx.statuses.terminal(s), 'terminal')
      const before = await getTrace(ctx.http, `/v1/runs/${run.runId}/trace?limit=200`)
      expectStatus(before, 200, 'trace before retirement')
      assert(before.text.includes(tool.id), `the trace never references tool ${tool.id}`)
      const retired = await ctx.http.delete(`/v1/tools/${tool.id}`)
      expectStatus(retired, [200, 202, 204], 'DELETE /v1/tools/{tool_id}')
      expectStatus(await ctx.http.get(`/v1/runs/${run.runId}`), 200, 'the run after retirement')
      const after = await getTrace(ctx.http, `/v1/runs/${run.runId}/trace?limit=200`)
      expectStatus(after, 200, 'the trace after retirement')
      assert(after.text.includes(tool.id), `the trace no longer references tool ${tool.id} after retirement`)
      assert(
        sameJson(traceFrames(ctx, after), traceFrames(ctx, before)),
        'the trace changed when the tool was retired',
      )
    },
  },
  {
    id: 'tools.retired-stays-readable',
    title: 'A retired tool stays readable by id (status retired, retired_at) and leaves the default list',
    level: 'profile',
    clauses: ['S4.8'],
    async run(ctx) {
      const tool = await ctx.fx.newTool('succeed')
      const res = await ctx.http.delete(`/v1/tools/${tool.id}`)
      expectStatus(res, 200, 'retire')
      const again = await ctx.http.delete(`/v1/tools/${tool.id}`)
      expectStatus(again, 200, 'retiring again')
      const one = obj((await ctx.http.get(`/v1/tools/${tool.id}`)).body)
      assert(one.status === 'retired' && isRfc3339(one.retired_at), `retired tool reads ${short(one)}`)
      // A long-lived workspace holds many retired tools: walk every page (bounded) rather than read the first.
      let found = false
      let cursor: string | null | undefined
      for (let i = 0; i < 100 && !found; i++) {
        const q = cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''
        const list = await ctx.http.get(`/v1/tools?limit=200&include_retired=true${q}`)
        expectStatus(list, 200, 'GET /v1/tools?include_retired=true')
        found = (pageItems(list.body) ?? []).some((t) => toolId(t) === tool.id)
        cursor = nextPageCursor(ctx, list, 200, 'GET /v1/tools?limit=200&include_retired=true')
        if (!cursor) break
      }
      assert(found, 'include_retired=true does not list the retired tool on any page')
    },
  },
]
