/** Spec §1, §7: the policy gate refuses with 403 policy_denied and names its reasons in `detail`. */
import { isDeepStrictEqual } from 'node:util'
import type { Check, CheckContext } from '../check.js'
import { eventOf } from '../delivery-body.js'
import { type Json, ownId, type ToolAgent, unservedPart } from '../fixtures.js'
import { type HttpClient, obj } from '../http.js'
import { assert, fail } from '../types.js'
import { short } from '../wait.js'
import { decidesOtherThanAllow, expectError } from './assertions.js'
import { ensureWebhook, receiverUrl, toHook } from './webhooks.js'

/** The five `detail` fields §7 names for `policy_denied`. */
const DENIED_DETAIL = ['envelope', 'violation', 'observed', 'limit', 'escalation_queue']

/**
 * The scope the suite's tool requires in `authz.tool-required-scopes`: a name of the suite's own, so that no key but
 * one holding every scope holds it, whatever a deployment calls its scopes.
 */
export const TOOL_ONLY_SCOPE = 'conformance:tool-call'

/** A run of `agent` (started by `client`, with `extra` spec fields) once settled, and its trace. */
async function settledRun(ctx: CheckContext, agent: ToolAgent, extra: Json = {}, client?: HttpClient) {
  const { runId } = await ctx.fx.startRun(agent, extra, client)
  const run = await ctx.fx.waitForStatus(runId, (s) => ctx.fx.statuses.settled(s), 'settled')
  const { frames } = await ctx.fx.readTrace(runId)
  return { runId, run, frames }
}

/** The first `policy.decision` frame that denied, its detail, and what the run's outcome says. */
function denial(run: Json, frames: Json[]) {
  const frame = frames.find((f) => f.kind === 'policy.decision' && f.policy === 'deny')
  return { frame, detail: obj(frame?.detail), error: obj(obj(run.outcome).error) }
}

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
          ctx.cleanup(`delete agent ${id}`, (http) => http.delete(`/v1/agents/${id}`))
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
      'A run started by a key that lacks a tool’s required_scopes never calls that tool: the gate refuses the start (403 policy_denied) or the call (policy.denied delivered, the refusal listed in the trace)',
    level: 'core',
    clauses: ['S1.3', 'S1.5', 'S2.13', 'S5.4', 'S6.3', 'S7.2', 'S7.5'],
    async run(ctx) {
      // §1: "Each tool is registered with a policy binding: what it does, who may call it and under which
      // envelope"; §5: "A tool declares `required_scopes` in its policy binding"; §1: "Every call is scoped by an
      // agent identity and is checked by a policy gate. The gate can refuse an action (HTTP 403, code
      // `policy_denied`)"; §6: "policy.denied | The policy gate refused an action". A key without the tool's
      // required scope is not who may call it. When the gate refuses is the deployment's: at the run's start (a 403
      // with §7's five detail fields) or at the call, which the run's trace then never lists as a `tool.call`
      // ("The trace lists every step, tool call, policy decision and approval") and a policy.denied subscriber is
      // told of, and whose trace lists the refusal among its policy decisions. The key that runs (tokens.runsOnly) may start runs; the scope the tool requires is the suite's own.
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
      const settled = await ctx.fx.waitForStatus(runId, (s) => ctx.fx.statuses.settled(s), 'settled')
      // The refusal is a policy decision, which the trace lists too (decidesOtherThanAllow); read once it shows.
      const frames = await ctx.fx.traceShowing(runId, "the gate's refusal", (fs) =>
        fs.some(decidesOtherThanAllow),
      )
      const calls = frames.filter(
        (f: Json) => f.kind === 'tool.call' && (f.tool === tool.name || JSON.stringify(f).includes(tool.id)),
      )
      assert(
        calls.length === 0,
        `the run's key lacks ${TOOL_ONLY_SCOPE}, which tool ${tool.name} requires, yet the trace lists its call: ${short(calls[0])}`,
      )
      assert(
        frames.some(decidesOtherThanAllow),
        `the gate refused run ${runId}'s call of tool ${tool.name}, yet no frame of its trace records a policy decision other than allow: ${short(frames)}`,
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
    id: 'authz.gate-decisions-recorded',
    title:
      'The gate as the reference decides: a missing tool scope and a fourth call under `restricted` denied with their detail in the trace and outcome; the `gated` envelope, a tool bound to it, a supervised agent and a hybrid agent’s non-idempotent tool wait in their queues',
    level: 'profile',
    clauses: ['S1.3', 'S1.4', 'S5.4', 'S7.2'],
    async run(ctx) {
      // Profile: §3 names a "policy envelope" and no envelope, figure or queue; §7 names the fields of a
      // policy_denied detail, not their values; which calls need approval is not shown. The reference's built-in
      // envelopes (default, gated, restricted), its escalation rules and what its trace records are its own.
      const runsOnly = ctx.as('runsOnly')
      const ok = await ctx.fx.tool('succeed')
      const problems: string[] = []
      const expect = (holds: boolean, problem: string) => {
        if (!holds) problems.push(problem)
      }
      /** A run of one tool that settles awaiting approval in `queue`, for a reason that names `mentions`. */
      const escalated = async (
        what: string,
        agent: ToolAgent,
        extra: Json,
        queue: string,
        mentions: string,
      ) => {
        const { run } = await settledRun(ctx, agent, extra)
        const item = obj((run.awaiting as unknown[] | undefined)?.[0])
        expect(
          run.status === 'awaiting_approval' &&
            item.queue === queue &&
            typeof item.reason === 'string' &&
            item.reason.includes(mentions),
          `${what}: ${short(run.status)}, awaiting ${short(run.awaiting)} (expected queue ${queue}, a reason naming ${mentions})`,
        )
      }
      await Promise.all([
        (async () => {
          const tool = await ctx.fx.newTool('succeed', { requiredScopes: [TOOL_ONLY_SCOPE] })
          const { run, frames } = await settledRun(ctx, await ctx.fx.newToolAgent([tool]), {}, runsOnly)
          const { frame, detail, error } = denial(run, frames)
          const expected = {
            envelope: 'default',
            violation: 'missing_scope',
            observed: [TOOL_ONLY_SCOPE],
            limit: [TOOL_ONLY_SCOPE],
            escalation_queue: 'ops-review',
          }
          const { reason, ...rest } = detail
          expect(
            isDeepStrictEqual(rest, expected) && typeof reason === 'string' && reason.includes(tool.name),
            `a missing tool scope: the deny frame reads ${short(frame)}, expected ${short(expected)} and a reason naming the tool`,
          )
          expect(
            ctx.fx.statuses.is(run.status, 'failed') &&
              error.code === 'policy_denied' &&
              isDeepStrictEqual(error.detail, expected) &&
              String(error.message).includes(tool.name),
            `a missing tool scope: the run ended ${short(run.status)} with ${short(run.outcome)}`,
          )
          expect(
            frames.at(-2)?.kind === 'step.failed' && frames.at(-1)?.kind === 'run.failed',
            `a missing tool scope: the trace ends ${frames.map((f) => f.kind).join(', ')}`,
          )
        })(),
        (async () => {
          const agent = await ctx.fx.newToolAgent([ok, ok, ok, ok])
          const { run, frames } = await settledRun(ctx, agent, { policy_envelope: 'restricted' })
          const { detail } = denial(run, frames)
          const calls = frames.filter((f) => f.kind === 'tool.call').length
          expect(
            calls === 3 &&
              ctx.fx.statuses.is(run.status, 'failed') &&
              detail.envelope === 'restricted' &&
              detail.violation === 'max_tool_calls' &&
              detail.observed === 4 &&
              detail.limit === 3 &&
              detail.escalation_queue === 'security-review' &&
              String(detail.reason).includes('3'),
            `four calls under restricted: ${calls} tool.call frames, run ${short(run.status)}, deny detail ${short(detail)}`,
          )
        })(),
        // Each part makes its own agent: an await while the array is built would leave the parts started before it
        // with no handler, so one of them failing meanwhile would be an unhandled rejection.
        (async () =>
          escalated(
            'the gated envelope',
            await ctx.fx.newToolAgent([ok]),
            { policy_envelope: 'gated' },
            'human-review',
            'gated',
          ))(),
        (async () => {
          const bound = await ctx.fx.newTool('succeed', { envelope: 'gated' })
          await escalated(
            'a tool bound to gated',
            await ctx.fx.newToolAgent([bound]),
            {},
            'human-review',
            bound.name,
          )
        })(),
        (async () =>
          escalated(
            'a supervised agent',
            await ctx.fx.newToolAgent([ok], 'supervised'),
            {},
            'ops-review',
            'supervised',
          ))(),
        (async () => {
          const once = await ctx.fx.newTool('succeed', { idempotent: false })
          await escalated(
            'a hybrid agent, a tool that is not idempotent',
            await ctx.fx.newToolAgent([once], 'hybrid'),
            {},
            'ops-review',
            once.name,
          )
        })(),
        (async () => {
          // The key with every scope holds the one the tool requires; an autonomous agent calls a tool that is not
          // idempotent unasked.
          const scoped = await ctx.fx.newTool('succeed', {
            requiredScopes: [TOOL_ONLY_SCOPE],
            idempotent: false,
          })
          const { run, frames } = await settledRun(ctx, await ctx.fx.newToolAgent([scoped]))
          expect(
            ctx.fx.statuses.is(run.status, 'succeeded') && frames.some((f) => f.kind === 'tool.call'),
            `the primary key's run of a tool requiring ${TOOL_ONLY_SCOPE} (not idempotent, autonomous agent) ended ${short(run.status)}`,
          )
        })(),
        (async () => {
          // An idempotent tool runs unasked for a hybrid agent; a binding to an envelope the server does not know
          // adds no approval.
          const unknown = await ctx.fx.newTool('succeed', { envelope: ctx.name('no-such-envelope') })
          const { runId } = await ctx.fx.startRun(await ctx.fx.newToolAgent([ok, unknown], 'hybrid'))
          const run = await ctx.fx.waitForStatus(runId, (s) => ctx.fx.statuses.settled(s), 'settled')
          expect(
            ctx.fx.statuses.is(run.status, 'succeeded'),
            `a hybrid agent's idempotent tools (one bound to an unknown envelope) ended ${short(run.status)}, awaiting ${short(run.awaiting)}`,
          )
        })(),
      ])
      assert(problems.length === 0, problems.join('; '))
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
      // The agent list is the reference profile's extension: where it is not served, nothing here could run.
      if (unservedPart(ctx, res, 'GET /v1/agents', 'the read with the narrow token (listing agents)')) return
      assert(res.status === 200, `GET /v1/agents with agents:read answered ${res.status}`)
    },
  },
]
