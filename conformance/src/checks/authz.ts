/** Spec §1, §7: the policy gate refuses with 403 policy_denied and names its reasons in `detail`. */
import type { Check } from '../check.js'
import { type Json, ownId, SETTLED } from '../fixtures.js'
import { obj } from '../http.js'
import { assert, fail } from '../types.js'
import { short } from '../wait.js'
import { expectError } from './assertions.js'
import { ensureWebhook, eventOf, receiverUrl, toHook } from './webhooks.js'

/** The five `detail` fields §7 names for `policy_denied`. */
const DENIED_DETAIL = ['envelope', 'violation', 'observed', 'limit', 'escalation_queue']

/**
 * The scope the suite's tool requires in `authz.tool-required-scopes`: a name of the suite's own, so that no key but
 * one holding every scope holds it, whatever a deployment calls its scopes.
 */
export const TOOL_ONLY_SCOPE = 'conformance:tool-call'

export const authzChecks: Check[] = [
  {
    id: 'authz.policy-denied-403',
    title:
      'A token without the needed scope is refused 403 policy_denied with envelope, violation, observed, limit, escalation_queue',
    level: 'core',
    clauses: ['S1.3', 'S7.2', 'S7.5'],
    async run(ctx) {
      const narrow = ctx.as('narrowScope')
      const { method, path, body } = ctx.config.profile.narrowDenied
      const res = await narrow.request(method, path, body === undefined ? {} : { body })
      if (res.status < 300) {
        const id = ownId(res.body, 'agent')
        if (typeof id === 'string')
          ctx.cleanup(`delete agent ${id}`, () => ctx.http.delete(`/v1/agents/${id}`))
        fail(`the narrow-scope token was allowed ${method} ${path}`)
      }
      const error = expectError(res, 403, `${method} ${path} with the narrow token`, 'policy_denied')
      const detail = obj(error.detail)
      for (const f of DENIED_DETAIL) {
        assert(f in detail, `detail.${f} is missing: ${short(detail)}`)
      }
    },
  },
  {
    id: 'authz.tool-required-scopes',
    title:
      'A run started by a key that lacks a tool’s required_scopes never calls that tool: the gate refuses the start (403 policy_denied) or the call (policy.denied delivered)',
    level: 'core',
    clauses: ['S1.3', 'S1.5', 'S5.4', 'S6.3', 'S7.2', 'S7.5'],
    async run(ctx) {
      // §1: "Each tool is registered with a policy binding: what it does, who may call it and under which
      // envelope"; §5: "A tool declares `required_scopes` in its policy binding"; §1: "Every call is scoped by an
      // agent identity and is checked by a policy gate. The gate can refuse an action (HTTP 403, code
      // `policy_denied`)"; §6: "policy.denied | The policy gate refused an action". A key without the tool's
      // required scope is not who may call it. When the gate refuses is the deployment's: at the run's start (a 403
      // with §7's five detail fields) or at the call, which the run's trace then never lists as a `tool.call`
      // ("The trace lists every step, tool call, policy decision and approval") and a policy.denied subscriber is
      // told of. The key that runs (tokens.runsOnly) may start runs; the scope the tool requires is the suite's own.
      const runsOnly = ctx.as('runsOnly')
      receiverUrl(ctx)
      const hook = await ensureWebhook(ctx)
      const tool = await ctx.fx.newTool('succeed', { requiredScopes: [TOOL_ONLY_SCOPE] })
      const agent = await ctx.fx.newToolAgent([tool])
      const start = await ctx.fx.sendRunStart(agent, {}, runsOnly)
      if (start.status === 403) {
        const detail = obj(expectError(start, 403, 'the run start', 'policy_denied').detail)
        for (const f of DENIED_DETAIL) assert(f in detail, `detail.${f} is missing: ${short(detail)}`)
        return
      }
      assert(
        start.status < 300,
        `starting a run with the runs-only token answered ${start.status} ${short(start.body)} (the token must be allowed to start runs of the primary workspace's agents)`,
      )
      const runId = obj(start.body).run_id
      if (typeof runId !== 'string') fail(`run start answered no run_id: ${short(start.body)}`)
      const settled = await ctx.fx.waitForStatus(runId, (s) => SETTLED.has(s), 'settled')
      const trace = await ctx.fx.readTrace(runId)
      const calls = trace.frames.filter(
        (f: Json) => f.kind === 'tool.call' && (f.tool === tool.name || JSON.stringify(f).includes(tool.id)),
      )
      assert(
        calls.length === 0,
        `the run's key lacks ${TOOL_ONLY_SCOPE}, which tool ${tool.name} requires, yet the trace lists its call: ${short(calls[0])}`,
      )
      const denied = await ctx.receiver!.waitFor(
        (d) => toHook(d, hook) && eventOf(d) === 'policy.denied' && d.raw.includes(runId),
        ctx.config.waitMs,
      )
      assert(
        denied,
        `run ${runId} (status ${short(settled.status)}) was not refused at its start, and no policy.denied delivery naming it reached the subscriber within ${ctx.config.waitMs} ms: the gate must refuse the call of a tool whose required_scopes the run's key lacks`,
      )
    },
  },
  {
    id: 'authz.scope-detail-values',
    title:
      'A missing scope names envelope api_key, violation missing_scope, the key’s scopes and the required scope',
    level: 'profile',
    clauses: ['S7.2'],
    async run(ctx) {
      const narrow = ctx.as('narrowScope')
      const { method, path, body } = ctx.config.profile.narrowDenied
      const res = await narrow.request(method, path, body === undefined ? {} : { body })
      const detail = obj(expectError(res, 403, 'narrow token', 'policy_denied').detail)
      assert(detail.envelope === 'api_key' && detail.violation === 'missing_scope', `detail ${short(detail)}`)
      assert(
        Array.isArray(detail.observed) && Array.isArray(detail.limit),
        `observed/limit are not scope lists: ${short(detail)}`,
      )
      assert(typeof detail.escalation_queue === 'string', 'escalation_queue is not named')
    },
  },
  {
    id: 'authz.narrow-scope-still-reads',
    title: 'The narrow token is an authenticated identity: what its scopes allow answers 200',
    level: 'profile',
    clauses: ['S5.1'],
    async run(ctx) {
      const res = await ctx.as('narrowScope').get('/v1/agents?limit=1')
      assert(res.status === 200, `GET /v1/agents with agents:read answered ${res.status}`)
    },
  },
]
