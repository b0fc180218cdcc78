/**
 * Spec §5.6: a resource that does not exist, or is out of scope for the calling identity, yields 404. Every kind
 * of resource is read from a second workspace and compared with a read of an id that names nothing.
 */
import { sameJson } from '../canonical.js'
import type { Check, CheckContext } from '../check.js'
import { declaredAbsent } from '../config.js'
import {
  approvalUrl,
  expectStatus,
  missingIdLike,
  nextPageCursor,
  notServed,
  runBody,
  unservedPart,
} from '../fixtures.js'
import { type HttpClient, type HttpResponse, obj } from '../http.js'
import { assert, fail, skip } from '../types.js'
import { short } from '../wait.js'
import { expectError } from './assertions.js'
import { ensureWebhook } from './webhooks.js'

interface Kind {
  kind: string
  level: 'core' | 'profile'
  clauses: string[]
  /** Creates (or reuses) a resource of the primary workspace and returns its path and the id in it. */
  make(ctx: CheckContext): Promise<{ path: string; id: string }>
}

const KINDS: Kind[] = [
  {
    kind: 'agent',
    level: 'core',
    clauses: ['S1.3', 'S5.6', 'S7.6'],
    async make(ctx) {
      const id = await ctx.fx.agent()
      return { path: `/v1/agents/${id}`, id }
    },
  },
  {
    kind: 'task',
    level: 'core',
    clauses: ['S5.6'],
    async make(ctx) {
      const agent = await ctx.fx.agent()
      const res = await ctx.http.post(`/v1/agents/${agent}/tasks`, {
        description: ctx.name('task'),
        priority: 2,
      })
      expectStatus(res, [200, 201, 202], 'assigning a task')
      const id = obj(res.body).task_id ?? obj(res.body).id
      if (typeof id !== 'string') fail(`task assignment answered no task_id: ${short(res.body)}`)
      return { path: `/v1/tasks/${id}`, id }
    },
  },
  {
    kind: 'run',
    level: 'core',
    clauses: ['S5.6', 'S7.6'],
    async make(ctx) {
      const run = await ctx.fx.completedRun()
      return { path: `/v1/runs/${run.runId}`, id: run.runId }
    },
  },
  {
    kind: 'trace',
    level: 'core',
    clauses: ['S5.6'],
    async make(ctx) {
      const run = await ctx.fx.completedRun()
      return { path: `/v1/runs/${run.runId}/trace`, id: run.runId }
    },
  },
  {
    kind: 'tool',
    level: 'core',
    clauses: ['S5.6'],
    async make(ctx) {
      const tool = await ctx.fx.tool('succeed')
      return { path: `/v1/tools/${tool.id}`, id: tool.id }
    },
  },
  {
    kind: 'webhook',
    level: 'profile',
    clauses: ['S5.6'],
    async make(ctx) {
      const hook = await ensureWebhook(ctx)
      return { path: `/v1/webhooks/${hook.id}`, id: hook.id }
    },
  },
  {
    kind: 'connector-records',
    level: 'profile',
    clauses: ['S5.6'],
    async make(ctx) {
      const connector = ctx.name('conn-scope')
      const res = await ctx.http.post(`/v1/grid/connectors/${connector}/ingest`, {
        records: [
          {
            id: 'r1',
            ts: new Date().toISOString(),
            source: 'conformance',
            policy_class: ctx.config.profile.policyClass,
            body: { n: 1 },
          },
        ],
      })
      expectStatus(res, 202, 'ingesting one record')
      return { path: `/v1/grid/connectors/${connector}/records`, id: connector }
    },
  },
]

/** "an agent", "a task": the article of a noun, by its first letter's sound (good enough for resource names). */
export function article(noun: string): 'a' | 'an' {
  return /^[aeio]/i.test(noun) ? 'an' : 'a'
}

const capitalize = (s: string) => `${s.slice(0, 1).toUpperCase()}${s.slice(1)}`

function withoutVolatile(res: HttpResponse, id: string, missing: string): string {
  const error = { ...obj(obj(res.body).error) }
  delete error.request_id
  return idsMasked(JSON.stringify(error), id, missing)
}

/** `text` with each of `ids` written `<id>`: two answers about different ids compared for everything else. */
function idsMasked(text: string, ...ids: string[]): string {
  return ids.reduce((t, id) => t.split(id).join('<id>'), text)
}

/**
 * A negative check proves its path first: the owner's same request must not answer 404 (or 405/501), or another
 * workspace's 404 proves nothing. Skips, saying so, when the owner is refused too.
 */
export function provePath(own: HttpResponse, what: string): void {
  if (notServed(own))
    skip(
      `${what} answered ${own.status} as well, so another workspace's 404 on the same request proves nothing`,
    )
}

/** Sends an approval of a step the way the deployment declares it (`approval` in --config). */
export function sendApproval(ctx: CheckContext, client: HttpClient, runId: string, stepId: string) {
  const { method, body } = ctx.config.approval
  return client.request(method, approvalUrl(ctx, runId, stepId), body === undefined ? {} : { body })
}

export const scopingChecks: Check[] = [
  ...KINDS.map(
    (k): Check => ({
      id: `scoping.${k.kind}-404`,
      title: `${capitalize(article(k.kind))} ${k.kind} of another workspace answers 404 like ${article(k.kind)} ${k.kind} that does not exist`,
      level: k.level,
      clauses: k.clauses,
      async run(ctx) {
        const other = ctx.as('secondWorkspace')
        const { path, id } = await k.make(ctx)
        const own = await ctx.http.get(path)
        expectStatus(own, 200, `the owner reading ${path}`)
        const foreign = await other.get(path)
        const foreignError = expectError(foreign, 404, `another workspace reading its ${k.kind}`)
        const missing = missingIdLike(id)
        const absent = await ctx.http.get(path.replace(id, missing))
        const absentError = expectError(
          absent,
          404,
          `reading ${article(k.kind)} ${k.kind} that does not exist`,
        )
        assert(
          foreignError.code === absentError.code,
          `the two 404s differ in error.code ("${String(foreignError.code)}" vs "${String(absentError.code)}"), which tells a caller the ${k.kind} exists`,
        )
      },
    }),
  ),
  {
    id: 'scoping.foreign-404-tells-nothing-more',
    title:
      'An agent of another workspace answers the 404 of a missing one: the same error.code and error.message (the ids aside)',
    level: 'core',
    clauses: ['S5.6', 'S7.1'],
    async run(ctx) {
      const other = ctx.as('secondWorkspace')
      const agent = await ctx.fx.agent()
      const missing = missingIdLike(agent)
      const foreign = expectError(await other.get(`/v1/agents/${agent}`), 404, 'foreign agent')
      const absent = expectError(await other.get(`/v1/agents/${missing}`), 404, 'missing agent')
      // §5.6 answers both with one status so a caller cannot tell "exists elsewhere" from "missing": a code or a
      // message that tells them apart undoes it. The rest of the body (detail, its order) is the profile's to judge.
      const [a, b] = [foreign, absent].map((e) =>
        idsMasked(JSON.stringify([e.code, e.message]), agent, missing),
      )
      assert(
        a === b,
        `the foreign agent's code and message ${a} differ from a missing agent's ${b}: they tell the caller it exists`,
      )
    },
  },
  {
    id: 'scoping.identical-404-bodies',
    title: 'Out-of-scope and missing resources answer byte-identical error bodies (request_id and id aside)',
    level: 'profile',
    clauses: ['S5.6'],
    async run(ctx) {
      const other = ctx.as('secondWorkspace')
      const agent = await ctx.fx.agent()
      const missing = missingIdLike(agent)
      const foreign = await other.get(`/v1/agents/${agent}`)
      const absent = await other.get(`/v1/agents/${missing}`)
      // The code is the deployment's own (§7 "Error codes other than `policy_denied`: not shown"): the two bodies are
      // compared with each other, not with the reference's `not_found`.
      expectError(foreign, 404, 'foreign agent')
      expectError(absent, 404, 'missing agent')
      const a = withoutVolatile(foreign, agent, missing)
      const b = withoutVolatile(absent, agent, missing)
      assert(a === b, `the bodies differ: ${a} vs ${b}`)
    },
  },
  {
    id: 'scoping.cross-workspace-writes-404',
    title: 'Writes aimed at another workspace’s agent (delete, task, run) answer 404 and change nothing',
    level: 'core',
    clauses: ['S5.6'],
    async run(ctx) {
      // §5.6 "A resource that does not exist, or is out of scope for the calling identity, yields 404".
      const other = ctx.as('secondWorkspace')
      const agent = await ctx.fx.newAgent()
      const writes = [
        [
          'assigning a task',
          (c: HttpClient) => c.post(`/v1/agents/${agent}/tasks`, { description: 'cross-workspace' }),
        ],
        ['starting a run', (c: HttpClient) => c.post(`/v1/agents/${agent}/runs`, runBody())],
        ['deleting the agent', (c: HttpClient) => c.delete(`/v1/agents/${agent}`)],
      ] as const
      for (const [what, send] of writes) expectError(await send(other), 404, `another workspace ${what}`)
      expectStatus(await ctx.http.get(`/v1/agents/${agent}`), 200, 'the owner reading the agent afterwards')
      // The same writes by the owner reach the agent (no vacuous 404 from a path the deployment does not serve).
      for (const [what, send] of writes) await provePath(await send(ctx.http), `the owner ${what}`)
    },
  },
  {
    id: 'scoping.cross-workspace-controls-404',
    title:
      'Pause, resume, cancel and an approval sent with another workspace’s token answer 404 and leave the run as it was',
    level: 'core',
    clauses: ['S5.6', 'S7.6', 'S4.5'],
    async run(ctx) {
      const other = ctx.as('secondWorkspace')
      const { runId, waiting } = await ctx.fx.awaitingRun()
      const step = String(obj((waiting.awaiting as unknown[])[0]).step_id)
      for (const action of ['pause', 'resume', 'cancel']) {
        expectError(
          await other.post(`/v1/runs/${runId}/${action}`),
          404,
          `another workspace sending ${action}`,
        )
      }
      // The approval endpoint is the reference profile's (or the one declared as approval in --config).
      const approve = (c: HttpClient) => sendApproval(ctx, c, runId, step)
      const foreignApproval = await approve(other)
      expectError(foreignApproval, 404, 'another workspace approving the awaiting step')
      const after = await ctx.fx.inspect(runId)
      assert(
        after.status === 'awaiting_approval' && sameJson(after.awaiting, waiting.awaiting),
        `the run changed under another workspace's controls: status ${short(after.status)}, awaiting ${short(after.awaiting)}`,
      )
      // The owner's same requests reach the run: pause and resume (spec controls) and the approval, when served.
      const ownApproval = await approve(ctx.http)
      const { method, path } = ctx.config.approval
      if (notServed(ownApproval) && !declaredAbsent(ctx.config, `${method} ${path}`))
        ctx.partial(
          `the approval part did not run: the owner's own approval answered ${ownApproval.status} too, so another workspace's 404 proves nothing (declare approval in --config, or list "${method} ${path}" in notServed in --config)`,
        )
      for (const action of ['pause', 'resume', 'cancel'])
        await provePath(await ctx.http.post(`/v1/runs/${runId}/${action}`), `the owner sending ${action}`)
    },
  },
  {
    id: 'scoping.lists-stay-in-workspace',
    title: 'Lists never show another workspace’s resources',
    level: 'core',
    clauses: ['S5.6'],
    async run(ctx) {
      const other = ctx.as('secondWorkspace')
      const agent = await ctx.fx.agent()
      const tool = await ctx.fx.tool('succeed')
      for (const [path, id] of [
        ['/v1/agents?limit=200', agent],
        ['/v1/tools?limit=200', tool.id],
      ] as const) {
        // Every page (bounded): a leak may sit on any of them, wherever the list's order puts the new resource.
        let cursor: string | null = null
        for (let page = 0; page < 50; page++) {
          const res = await other.get(`${path}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
          // The agent list is a profile extension: where it is not served, that part did not run.
          if (
            path.startsWith('/v1/agents') &&
            page === 0 &&
            unservedPart(ctx, res, 'GET /v1/agents', 'the agent-list part (another workspace listing agents)')
          )
            break
          expectStatus(res, 200, `another workspace listing ${path}`)
          assert(!res.text.includes(id), `${path} of another workspace shows ${id} (page ${page + 1})`)
          cursor = nextPageCursor(ctx, res, 200, `another workspace's ${path}`)
          if (!cursor) break
        }
      }
    },
  },
]
