/** Spec §8: `Idempotency-Key` on every POST, a 24 h window, reuse with a different body yields 409. */
import { randomBytes } from 'node:crypto'
import type { Check, CheckContext } from '../check.js'
import {
  expectStatus,
  type Json,
  listPage,
  nextPageCursor,
  ownId,
  toolId,
  toolRegistration,
  unservedPart,
} from '../fixtures.js'
import { type HttpClient, type HttpResponse, obj } from '../http.js'
import { receiverAdvice } from '../receiver.js'
import { assert, fail } from '../types.js'
import { short } from '../wait.js'
import { envelopeProblems, expectEnvelope, expectError } from './assertions.js'
import { batch } from './ingest.js'
import { QUOTA_LANE } from './quotas.js'
import { receiverUrl, webhookSecret } from './webhooks.js'

/** The characters a one-character key is drawn from. */
export const ONE_CHARACTER_KEYS = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'

/** How many POSTs with one key are sent at once. */
const CONCURRENT_REPEATS = 6

const newKey = () => `conf-${randomBytes(9).toString('hex')}`

/**
 * How many agents with this name the workspace lists (walks at most 20 pages, in the page shape the deployment
 * declares with `paging`: read in another shape, only the first page was counted); undefined where the deployment
 * does not serve the agent list (a profile extension).
 */
async function countAgentsNamed(ctx: CheckContext, name: string): Promise<number | undefined> {
  let count = 0
  let cursor: string | null | undefined
  for (let i = 0; i < 20; i++) {
    const res = await ctx.http.get(
      `/v1/agents?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    )
    if (
      i === 0 &&
      unservedPart(ctx, res, 'GET /v1/agents', `the "created once" part (counting agents named ${name})`)
    )
      return undefined
    expectStatus(res, 200, 'listing agents')
    // Read with the declared page shape (paging in --config): an undeclared cursor field would stop at page one.
    const items = listPage(ctx, res).items ?? []
    count += items.filter((a) => obj(a).name === name).length
    cursor = nextPageCursor(ctx, res, 200, 'listing agents')
    if (!cursor || items.length === 0) break
  }
  return count
}

async function createWithKey(ctx: CheckContext, http: HttpClient, key: string, name: string) {
  const res = await http.post(
    '/v1/agents',
    { name, behavior: 'autonomous' },
    { headers: { 'idempotency-key': key } },
  )
  if (res.status < 400) {
    const id = ownId(res.body, 'agent')
    if (typeof id === 'string')
      ctx.cleanup(`delete agent ${id}`, (cleanup) => cleanup.withToken(http.token).delete(`/v1/agents/${id}`))
  }
  return res
}

/** CONCURRENT_REPEATS creates of an agent named `name`, sent at once under one fresh key. */
function concurrentCreates(ctx: CheckContext, name: string): Promise<HttpResponse[]> {
  const key = newKey()
  return Promise.all(
    Array.from({ length: CONCURRENT_REPEATS }, () => createWithKey(ctx, ctx.http, key, name)),
  )
}

interface KeyedPost {
  what: string
  path: string
  first: Json
  second: Json
  /** What to say when the deployment refuses the first request (a setting of the suite's, not the deployment). */
  advice?: (answer: string) => string
  /** Undoes what the first request made, given its answer. */
  undo?: (created: unknown) => Promise<unknown> | undefined
}

/**
 * One keyed POST of each kind the spec lists besides agent creation (checked above), with two bodies that differ
 * in one field the spec names: a subscription's `events`, a run's `inputs`, a batch's `records`, a task's
 * `description`.
 */
async function keyedPosts(ctx: CheckContext): Promise<KeyedPost[]> {
  const agent = await ctx.fx.agent()
  const connector = ctx.name('conn-idem')
  const run = (period: string) => ({ inputs: { period }, mode: 'live', trace_level: 'detailed' })
  const posts: KeyedPost[] = []
  // A subscription needs a URL the deployment accepts: the suite's receiver, when it has one.
  if (ctx.receiver && ctx.config.receiver.url) {
    const hookUrl = `${receiverUrl(ctx)}/${ctx.name('idem-hook')}`
    const secret = webhookSecret()
    posts.push({
      what: 'POST /v1/webhooks',
      path: '/v1/webhooks',
      // One kind nobody else causes, so the subscription receives next to nothing before it is deleted.
      first: { url: hookUrl, events: ['policy.denied'], secret },
      second: { url: hookUrl, events: ['run.succeeded'], secret },
      advice: (answer) => receiverAdvice(hookUrl, `the deployment refused it (${answer})`),
      undo: (created) => {
        const id = ownId(created, 'webhook')
        return id ? ctx.http.delete(`/v1/webhooks/${id}`) : undefined
      },
    })
  }
  return [
    ...posts,
    {
      what: 'POST /v1/agents/{id}/runs',
      path: `/v1/agents/${agent}/runs`,
      first: run('2026-Q1'),
      second: run('2026-Q2'),
    },
    {
      what: 'POST /v1/grid/connectors/{id}/ingest',
      path: `/v1/grid/connectors/${connector}/ingest`,
      first: { records: batch(ctx, 1) },
      second: { records: batch(ctx, 1) },
    },
    {
      what: 'POST /v1/agents/{id}/tasks',
      path: `/v1/agents/${agent}/tasks`,
      first: { description: 'idempotency: first body' },
      second: { description: 'idempotency: second body' },
    },
  ]
}

export const idempotencyChecks: Check[] = [
  {
    id: 'idempotency.replay-same-response',
    title: 'Repeating a POST with the same key and body returns the same resource and creates nothing new',
    level: 'core',
    clauses: ['S4.2', 'S8.3'],
    async run(ctx) {
      const key = newKey()
      const name = ctx.name('idem')
      const first = await createWithKey(ctx, ctx.http, key, name)
      expectStatus(first, [200, 201], 'first POST')
      const second = await createWithKey(ctx, ctx.http, key, name)
      // The replay's code is not shown (a replay may say 200: nothing new was made), as for every other POST
      // (idempotency.replay-every-post); the same bytes and code are the reference profile's
      // (idempotency.replay-byte-identical).
      assert(
        second.status >= 200 && second.status < 300,
        `the repeat answered ${second.status} ${short(second.body)}, the first ${first.status}`,
      )
      assert(
        ownId(second.body, 'agent') === ownId(first.body, 'agent'),
        `the repeat names another agent: ${short(second.body)} vs ${short(first.body)}`,
      )
      const count = await countAgentsNamed(ctx, name)
      assert(
        count === undefined || count === 1,
        `${count} agents named ${name} exist after two requests with one key`,
      )
    },
  },
  {
    id: 'idempotency.replay-every-post',
    title:
      'On every creating POST the spec lists (a subscription, a tool, a task), the same key and body sent again name the resource the first made, not a new one',
    level: 'core',
    clauses: ['S4.2', 'S8.3'],
    async run(ctx) {
      // §4 "Every POST accepts an Idempotency-Key header", §8 "Idempotency-Key header on all POST requests": a repeat
      // is the first request's answer again, whichever resource it makes (agents and run starts have checks of
      // their own). The replay's status is not shown (a replay may say 200: nothing new was made).
      const agent = await ctx.fx.agent()
      const posts: {
        what: string
        path: string
        body: Json
        id: (b: unknown) => string | undefined
        undo: (id: string, http: HttpClient) => Promise<unknown>
      }[] = [
        {
          what: 'POST /v1/tools',
          path: '/v1/tools',
          body: toolRegistration(ctx, 'succeed', ctx.name('idem-tool')),
          id: toolId,
          undo: (id, http) => http.delete(`/v1/tools/${id}`),
        },
        {
          what: 'POST /v1/agents/{id}/tasks',
          path: `/v1/agents/${agent}/tasks`,
          body: { description: `idempotency: one task ${ctx.name('idem-task')}`, priority: 2 },
          id: (b) => ownId(b, 'task'),
          undo: async () => undefined,
        },
      ]
      if (ctx.receiver && ctx.config.receiver.url)
        posts.push({
          what: 'POST /v1/webhooks',
          path: '/v1/webhooks',
          // One kind nobody else causes, so the subscription receives next to nothing before it is deleted.
          body: {
            url: `${receiverUrl(ctx)}/${ctx.name('idem-replay-hook')}`,
            events: ['policy.denied'],
            secret: webhookSecret(),
          },
          id: (b) => ownId(b, 'webhook'),
          undo: (id, http) => http.delete(`/v1/webhooks/${id}`),
        })
      const wrong: string[] = []
      const unread: string[] = []
      for (const p of posts) {
        const headers = { 'idempotency-key': newKey() }
        const first = await ctx.http.post(p.path, p.body, { headers })
        expectStatus(first, [200, 201, 202], `${p.what} with a key`)
        const second = await ctx.http.post(p.path, p.body, { headers })
        const ids = [p.id(first.body), p.id(second.body)]
        for (const id of new Set(ids)) if (id) ctx.cleanup(`delete ${id}`, (http) => p.undo(id, http))
        if (second.status < 200 || second.status >= 300) {
          wrong.push(
            `${p.what}: the same key and body again answered ${second.status} ${short(second.body, 200)}`,
          )
          continue
        }
        if (ids[0] === undefined) {
          unread.push(p.what)
          continue
        }
        if (ids[1] !== ids[0])
          wrong.push(`${p.what}: the same key and body made ${ids[0]}, then ${short(ids[1])}`)
      }
      assert(wrong.length === 0, wrong.join('; '))
      if (unread.length > 0)
        ctx.partial(`no id could be read from the answer of ${unread.join(', ')} (neither <kind>_id nor id)`)
    },
  },
  {
    id: 'idempotency.run-start-replay',
    title:
      'Starting a run twice with one Idempotency-Key yields one run; the same start under a fresh key starts another',
    level: 'core',
    clauses: ['S4.2', 'S8.3'],
    async run(ctx) {
      const agent = await ctx.fx.agent()
      const key = newKey()
      const body = { inputs: { period: '2026-Q3' }, mode: 'live', trace_level: 'detailed' }
      const start = (k: string) =>
        ctx.http.post(`/v1/agents/${agent}/runs`, body, { headers: { 'idempotency-key': k } })
      const a = await start(key)
      const b = await start(key)
      expectStatus(a, 201, 'first start')
      // §4 fixes 201 for a start; the replay's code is not shown (a replay may say 200: nothing new was made).
      expectStatus(b, [200, 201], 'repeated start')
      assert(
        obj(a.body).run_id === obj(b.body).run_id,
        `two runs were started: ${String(obj(a.body).run_id)} and ${String(obj(b.body).run_id)}`,
      )
      // Without this, a server that answers every start with the same run would pass.
      const c = await start(newKey())
      expectStatus(c, 201, 'the same start under a fresh key')
      assert(
        typeof obj(c.body).run_id === 'string' && obj(c.body).run_id !== obj(a.body).run_id,
        `a fresh key did not start a new run: it answered run ${String(obj(c.body).run_id)} again`,
      )
    },
  },
  {
    id: 'idempotency.replay-byte-identical',
    title:
      'A replay repeats the stored answer, its status and its bytes, and says so with Idempotent-Replayed: true',
    level: 'profile',
    clauses: ['S8.3'],
    async run(ctx) {
      const key = newKey()
      const name = ctx.name('idem-bytes')
      const first = await createWithKey(ctx, ctx.http, key, name)
      const second = await createWithKey(ctx, ctx.http, key, name)
      assert(
        second.status === first.status,
        `the repeat answered ${second.status}, the first ${first.status}`,
      )
      assert(second.text === first.text, `bodies differ:\n${short(first.text)}\n${short(second.text)}`)
      assert(second.headers['idempotent-replayed'] === 'true', 'no Idempotent-Replayed: true on the replay')
      assert(first.headers['idempotent-replayed'] === undefined, 'the first answer claims to be a replay')
    },
  },
  {
    id: 'idempotency.different-body-409',
    title: 'Reusing a key with a different body answers 409 with the error envelope',
    level: 'core',
    clauses: ['S7.7', 'S8.4'],
    async run(ctx) {
      const key = newKey()
      expectStatus(await createWithKey(ctx, ctx.http, key, ctx.name('idem-a')), [200, 201], 'first POST')
      const res = await createWithKey(ctx, ctx.http, key, ctx.name('idem-b'))
      expectError(res, 409, 'same key, different body')
    },
  },
  {
    id: 'idempotency.different-body-409-every-post',
    title:
      'Reusing a key with a different body answers 409 with the envelope on every POST the spec lists: subscriptions, run starts, ingest batches, tasks',
    level: 'core',
    // §8 "Idempotency: `Idempotency-Key` header on all POST requests. [...] Reuse with a different body yields
    // 409." and §4 "Every POST accepts an `Idempotency-Key` header": not only agent creation.
    clauses: ['S4.2', 'S7.7', 'S8.4'],
    async run(ctx) {
      const posts = await keyedPosts(ctx)
      const wrong: string[] = []
      await Promise.all(
        posts.map(async (p) => {
          const headers = { 'idempotency-key': newKey() }
          const first = await ctx.http.post(p.path, p.first, { headers })
          if (first.status >= 300) {
            const answer = `${first.status} ${short(first.body, 200)}`
            // A refused subscription is most likely the receiver's URL, which the deployment may not accept.
            wrong.push(
              p.advice && first.status < 500 && first.status !== 429
                ? `${p.what}: ${p.advice(answer)}`
                : `${p.what}: the first request answered ${answer}`,
            )
            return
          }
          const second = await ctx.http.post(p.path, p.second, { headers })
          await p.undo?.(first.body)
          if (second.status !== 409) {
            wrong.push(`${p.what}: the same key with another body answered ${second.status}, not 409`)
            return
          }
          const problems = envelopeProblems(second.body)
          if (problems.length > 0) wrong.push(`${p.what}: the 409 lacks the error envelope (${problems[0]})`)
        }),
      )
      assert(wrong.length === 0, wrong.join('; '))
    },
  },
  {
    id: 'idempotency.conflict-codes',
    title: 'Key reuse answers idempotency_key_reused; a bad key answers 400 invalid_idempotency_key',
    level: 'profile',
    clauses: ['S7.7'],
    async run(ctx) {
      const key = newKey()
      await createWithKey(ctx, ctx.http, key, ctx.name('idem-c'))
      expectError(
        await createWithKey(ctx, ctx.http, key, ctx.name('idem-d')),
        409,
        'reuse',
        'idempotency_key_reused',
      )
      const long = await ctx.http.post(
        '/v1/agents',
        { name: ctx.name('idem-e'), behavior: 'autonomous' },
        { headers: { 'idempotency-key': 'k'.repeat(256) } },
      )
      expectError(long, 400, '256-character key', 'invalid_idempotency_key')
    },
  },
  {
    id: 'idempotency.key-form',
    title:
      'A key of 1 to 255 printable ASCII characters is taken; a longer one, or one with a space or a character past ASCII anywhere, is refused 400 invalid_idempotency_key naming the header',
    level: 'profile',
    clauses: ['S8.3'],
    async run(ctx) {
      // The reference's choice (IETF Idempotency-Key draft: a key is an opaque string; §8 leaves its form open).
      const post = (key: string, label: string) =>
        ctx.http.post(
          '/v1/agents',
          { name: ctx.name(`idem-form-${label}`), behavior: 'autonomous' },
          { headers: { 'idempotency-key': key } },
        )
      const suffix = randomBytes(4).toString('hex')
      const taken = (res: HttpResponse) => {
        const id = ownId(res.body, 'agent')
        if (typeof id === 'string')
          ctx.cleanup(`delete agent ${id}`, (http) => http.delete(`/v1/agents/${id}`))
      }
      // A one-character key has few values, so an earlier run against this deployment may have stored one: a key
      // answered 409 idempotency_key_reused was taken then, and another character is tried; if every one tried was
      // taken before, that answer itself shows the form is accepted.
      const reused = (res: HttpResponse) =>
        res.status === 409 && obj(obj(res.body).error).code === 'idempotency_key_reused'
      let one: HttpResponse | undefined
      for (const b of randomBytes(8)) {
        one = await post(ONE_CHARACTER_KEYS.charAt(b % ONE_CHARACTER_KEYS.length), 'one-character')
        if (!reused(one)) break
      }
      if (one && !reused(one)) {
        expectStatus(one, [200, 201], 'a one-character key')
        taken(one)
      }
      const long = await post(`${suffix}${'k'.repeat(247)}`, '255-character')
      expectStatus(long, [200, 201], 'a 255-character key')
      taken(long)
      for (const [label, key] of [
        ['256-character', `${suffix}${'k'.repeat(248)}`],
        ['space inside', `conf ${suffix}`],
        ['non-ASCII first', `\u00e9${suffix}`],
        ['non-ASCII last', `${suffix}\u00e9`],
      ] as const) {
        const error = expectError(
          await post(key, 'refused'),
          400,
          `a key with ${label}`,
          'invalid_idempotency_key',
        )
        const detail = obj(error.detail)
        assert(
          String(detail.header).toLowerCase() === 'idempotency-key',
          `a key with ${label}: error.detail.header is ${JSON.stringify(detail.header)}, not "Idempotency-Key"`,
        )
      }
    },
  },
  {
    id: 'idempotency.refusal-stored',
    title:
      'A keyed POST refused 400 is the key’s answer: repeated with the same key and body it is replayed (Idempotent-Replayed: true), never a 5xx',
    level: 'profile',
    clauses: ['S8.3', 'S7.4'],
    async run(ctx) {
      // The reference's choice (Stripe's): a refusal is stored like any answer; §8 leaves what a key keeps open.
      const key = newKey()
      const body = { name: ctx.name('idem-refused'), behavior: 'not-a-behavior' }
      const post = () => ctx.http.post('/v1/agents', body, { headers: { 'idempotency-key': key } })
      const first = await post()
      expectError(first, 400, 'a keyed POST with a behavior the spec does not list')
      assert(first.headers['idempotent-replayed'] === undefined, 'the first refusal claims to be a replay')
      const second = await post()
      expectError(second, 400, 'the same keyed POST again')
      assert(
        second.headers['idempotent-replayed'] === 'true',
        'the repeated refusal is not marked Idempotent-Replayed: true (the key did not keep it)',
      )
      assert(
        second.text === first.text,
        `the replayed refusal differs:\n${short(first.text)}\n${short(second.text)}`,
      )
    },
  },
  {
    id: 'idempotency.quota-refusals',
    lane: QUOTA_LANE,
    title:
      'Under a workspace’s quotas a key keeps no refusal for want of room (the same key runs the request once there is room); a keyed write whose answer the key cannot keep is refused 403 quota_exceeded with nothing done (one exactly at a limit is kept); a keyed 4xx it cannot keep is answered as it is, unstored',
    level: 'profile',
    clauses: ['S8.3'],
    async run(ctx) {
      // The reference's choices (its quotas: agents, idempotency_keys, idempotency_answer_bytes, and which answers a key
      // keeps; §8 names neither). The quota-limited identity's workspace is its own: the check deletes its agents.
      const http = ctx.as('quotaLimited')
      const created = new Set<string>()
      const body = (label: string, capabilities?: string[]): Json => ({
        name: ctx.name(`idem-quota-${label}`),
        behavior: 'autonomous',
        ...(capabilities ? { capabilities } : {}),
      })
      const post = async (b: Json, key?: string) => {
        const res = await http.post('/v1/agents', b, key ? { headers: { 'idempotency-key': key } } : {})
        const id = res.status < 300 ? ownId(res.body, 'agent') : undefined
        if (id && !created.has(id)) {
          created.add(id)
          // Left to the cleanup only when the check ends before it deletes the agent itself.
          ctx.cleanup(`delete agent ${id}`, async (cleanup) =>
            created.has(id) ? cleanup.withToken(http.token).delete(`/v1/agents/${id}`) : undefined,
          )
        }
        return res
      }
      const remove = async (id: string | undefined) => {
        if (!id) return
        expectStatus(
          await http.delete(`/v1/agents/${id}`),
          [200, 204],
          'deleting an agent of the quota-limited workspace',
        )
        created.delete(id)
      }
      const agents = async (): Promise<Json[]> => {
        const out: Json[] = []
        let cursor: string | null | undefined
        for (let i = 0; i < 5; i++) {
          const res = await http.get(
            `/v1/agents?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
          )
          expectStatus(res, 200, 'listing the quota-limited workspace’s agents')
          const items = listPage(ctx, res).items ?? []
          out.push(...items.map(obj))
          cursor = nextPageCursor(ctx, res, 200, 'listing agents')
          if (!cursor || items.length === 0) break
        }
        return out
      }
      const named = async (b: Json) => (await agents()).filter((a) => a.name === b.name).length
      const quotaRefusal = (res: HttpResponse, what: string, quota: string): Json => {
        const detail = obj(expectError(res, 403, what, 'quota_exceeded').detail)
        assert(
          detail.quota === quota,
          `${what}: error.detail.quota is ${JSON.stringify(detail.quota)}, not "${quota}"`,
        )
        return detail
      }
      const unreplayed = (res: HttpResponse, what: string) =>
        assert(
          res.headers['idempotent-replayed'] === undefined,
          `${what} was replayed (Idempotent-Replayed: true): the key kept an answer it must not keep`,
        )
      const fresh = () => newKey()

      // Room first: what an earlier run left (an agent) is deleted.
      for (const a of await agents())
        await remove(typeof a.agent_id === 'string' ? a.agent_id : ownId(a, 'agent'))

      // 1. A refusal for want of room (the agents quota) is not the key's answer: once an agent is deleted, the same
      // key and body create the agent.
      let full = false
      for (let i = 0; i < 5 && !full; i++) {
        const res = await post(body(`fill-${i}`))
        if (res.status === 403) {
          quotaRefusal(res, 'an agent past the workspace’s agents quota', 'agents')
          full = true
        } else expectStatus(res, 201, 'an agent of the quota-limited workspace')
      }
      assert(full, 'the quota-limited workspace took 5 agents: its agents quota must be small (1)')
      const k1 = fresh()
      const b1 = body('after-room')
      const refused = await post(b1, k1)
      quotaRefusal(refused, 'a keyed create past the agents quota', 'agents')
      unreplayed(refused, 'the first keyed create past the agents quota')
      for (const id of [...created]) await remove(id)
      const retried = await post(b1, k1)
      // Earlier runs with this identity may have filled its stored answers (they stay 24 hours): a keyed create that
      // needs room for its answer is then refused for that, and the part that needs it cannot be judged.
      const storedAnswersFull = (res: HttpResponse, part: string) => {
        const full = res.status === 403 && obj(obj(obj(res.body).error).detail).quota === 'idempotency_keys'
        if (full)
          ctx.partial(
            `${part} was not judged: the quota-limited workspace's stored answers are full from an earlier run (they stay 24 h)`,
          )
        return full
      }
      const keysFull = storedAnswersFull(retried, 'the keyed create repeated once there is room')
      if (!keysFull) {
        expectStatus(
          retried,
          201,
          'the keyed create refused for the agents quota, repeated with its key once there is room',
        )
        unreplayed(retried, 'the keyed create repeated once there is room')
        await remove(ownId(retried.body, 'agent'))
      }

      // 2. An answer larger than the workspace keeps for one key (idempotency_answer_bytes): a write is refused and
      // undone, a refusal (4xx) is answered unstored.
      const longNames = (n: number) =>
        Array.from({ length: 100 }, (_, i) => `${String(i).padStart(3, '0')}${'c'.repeat(n - 3)}`)
      const b2 = body('large-answer', longNames(100))
      const k2 = fresh()
      const large = await post(b2, k2)
      const detail = quotaRefusal(
        large,
        'a keyed create whose answer is larger than the key may keep',
        'idempotency_answer_bytes',
      )
      assert(
        Number(detail.used) > Number(detail.limit),
        `the idempotency_answer_bytes refusal's detail gives used ${String(detail.used)}, not above its limit ${String(detail.limit)}`,
      )
      assert(
        (await named(b2)) === 0,
        'the keyed create refused for its answer’s size created the agent anyway',
      )
      const largeAgain = await post(b2, k2)
      quotaRefusal(largeAgain, 'the same keyed create again', 'idempotency_answer_bytes')
      unreplayed(largeAgain, 'the keyed create refused for its answer’s size, repeated,')
      // The limit itself is room: an answer exactly that large (the refusal's own count, less what the capabilities'
      // characters add, each a byte) is kept and replayed.
      if (!keysFull) {
        let excess = Number(detail.used) - Number(detail.limit)
        const fitting = longNames(100)
        while (excess >= 103 && fitting.length > 2) {
          fitting.pop() // a name of 100 characters, its quotes and its comma
          excess -= 103
        }
        for (let i = 0; excess > 0 && i < fitting.length; i++) {
          const cut = Math.min(excess, 90)
          fitting[i] = (fitting[i] ?? '').slice(0, 100 - cut)
          excess -= cut
        }
        const kExact = fresh()
        const exact = { ...b2, capabilities: fitting }
        const atLimit = await post(exact, kExact)
        if (
          !storedAnswersFull(atLimit, 'the keyed create whose answer is exactly idempotency_answer_bytes')
        ) {
          expectStatus(
            atLimit,
            201,
            `a keyed create whose answer is exactly idempotency_answer_bytes (${String(detail.limit)} bytes, counted as its refusal counted ${String(detail.used)})`,
          )
          const atLimitAgain = await post(exact, kExact)
          assert(
            atLimitAgain.headers['idempotent-replayed'] === 'true' && atLimitAgain.text === atLimit.text,
            'the keyed create whose answer is exactly idempotency_answer_bytes was not kept: repeated, it was not replayed',
          )
          await remove(ownId(atLimit.body, 'agent'))
        }
      }
      const unkeyed = await post(b2)
      expectStatus(unkeyed, 201, 'the same create without a key (its answer is not kept)')
      await remove(ownId(unkeyed.body, 'agent'))
      const k3 = fresh()
      const b3 = body('large-refusal', longNames(101))
      const largeRefusal = await post(b3, k3)
      expectError(largeRefusal, 400, 'a keyed create with 100 over-long capabilities')
      const largeRefusalAgain = await post(b3, k3)
      expectError(largeRefusalAgain, 400, 'the same keyed create again')
      unreplayed(largeRefusalAgain, 'a keyed 400 larger than the key may keep, repeated,')

      // 3. The stored answers full (idempotency_keys): a keyed write is refused and undone, a keyed 4xx answered unstored.
      let kFull = ''
      let bFull: Json = {}
      for (let i = 0; i < 8 && !kFull; i++) {
        const k = fresh()
        const b = body(`keyed-${i}`)
        const res = await post(b, k)
        if (res.status === 403) {
          quotaRefusal(res, 'a keyed create past the stored answers’ quota', 'idempotency_keys')
          kFull = k
          bFull = b
        } else {
          expectStatus(res, 201, 'a keyed create of the quota-limited workspace')
          await remove(ownId(res.body, 'agent'))
        }
      }
      assert(
        kFull !== '',
        'the quota-limited workspace kept 8 keyed answers: its idempotency_keys quota must be small (3)',
      )
      assert(
        (await named(bFull)) === 0,
        'the keyed create refused for the stored answers’ quota created the agent anyway',
      )
      // Every keyed POST is bounded alike: a task's, as an agent's.
      const holder = await post(body('task-holder'))
      expectStatus(holder, 201, 'an agent for a task, the stored answers full')
      const task = await http.post(
        `/v1/agents/${ownId(holder.body, 'agent')}/tasks`,
        { description: 'idempotency: past the stored answers' },
        { headers: { 'idempotency-key': fresh() } },
      )
      quotaRefusal(task, 'a keyed task past the stored answers’ quota', 'idempotency_keys')
      await remove(ownId(holder.body, 'agent'))
      const fullAgain = await post(bFull, kFull)
      quotaRefusal(fullAgain, 'the same keyed create again', 'idempotency_keys')
      unreplayed(fullAgain, 'the keyed create refused for the stored answers’ quota, repeated,')
      const unkeyedFull = await post(bFull)
      expectStatus(unkeyedFull, 201, 'the same create without a key, the stored answers full')
      await remove(ownId(unkeyedFull.body, 'agent'))
      const k4 = fresh()
      const b4 = { ...body('refusal-full'), behavior: 'not-a-behavior' }
      const refusal = await post(b4, k4)
      expectError(
        refusal,
        400,
        'a keyed create with a behavior the spec does not list, the stored answers full',
      )
      const refusalAgain = await post(b4, k4)
      expectError(refusalAgain, 400, 'the same keyed 400 again, the stored answers full')
      unreplayed(refusalAgain, 'a keyed 400 the stored answers had no room for, repeated,')
    },
  },
  {
    id: 'idempotency.concurrent-use',
    title:
      'Concurrent POSTs with one key and one body do the work once: no two successful answers name different agents, and one agent of that name exists',
    level: 'core',
    clauses: ['S8.3'],
    async run(ctx) {
      // A key's repeat does not do the work again (§8; ingest.idempotent-replay holds it for a repeat after the
      // answer): a repeat sent while the first is still running is a repeat too. How the others are answered (a
      // replay, a 409, a wait) is the deployment's choice: idempotency.concurrent-answers holds the reference's.
      const name = ctx.name('idem-race')
      const answers = await concurrentCreates(ctx, name)
      const created = answers.filter((res) => res.status >= 200 && res.status < 300)
      const ids = new Set(created.map((res) => String(ownId(res.body, 'agent'))))
      assert(
        ids.size <= 1,
        `${CONCURRENT_REPEATS} concurrent POSTs with one key and body created ${ids.size} different agents: ${[...ids].join(', ')}`,
      )
      const count = await countAgentsNamed(ctx, name)
      if (count !== undefined)
        assert(
          count <= 1,
          `${count} agents named ${name} exist after ${CONCURRENT_REPEATS} concurrent POSTs with one key`,
        )
      if (created.length === 0)
        ctx.partial(
          `none of the ${CONCURRENT_REPEATS} concurrent POSTs succeeded (${[...new Set(answers.map((r) => r.status))].join(', ')}): nothing was created to count`,
        )
    },
  },
  {
    id: 'idempotency.concurrent-answers',
    title:
      'Of concurrent POSTs with one key, one creates the agent and each other one replays that answer or is refused 409 with the envelope',
    level: 'profile',
    clauses: ['S8.3'],
    async run(ctx) {
      // The reference's choice (the IETF Idempotency-Key draft's 409 for a request still in progress, or the
      // answer once it is there); §8 names neither.
      const answers = await concurrentCreates(ctx, ctx.name('idem-race-answers'))
      const ids = new Set<string>()
      for (const res of answers) {
        if (res.status === 409) {
          expectEnvelope(res, 'concurrent 409')
          continue
        }
        // §4 shows no success status for creating an agent (the reference answers 201; 200 is as legal).
        expectStatus(res, [200, 201], 'concurrent POST')
        ids.add(String(ownId(res.body, 'agent')))
      }
      assert(ids.size === 1, `the concurrent requests created ${ids.size} different agents`)
    },
  },
  {
    id: 'idempotency.keys-scoped-per-workspace',
    title: 'The same key in another workspace never replays or blocks on the first workspace’s request',
    level: 'core',
    clauses: ['S8.5'],
    async run(ctx) {
      const other = ctx.as('secondWorkspace')
      const key = newKey()
      const mine = await createWithKey(ctx, ctx.http, key, ctx.name('idem-ws-a'))
      expectStatus(mine, [200, 201], 'first workspace')
      const theirs = await createWithKey(ctx, other, key, ctx.name('idem-ws-b'))
      if (theirs.status === 409) fail('the second workspace got 409: keys leak across workspaces')
      expectStatus(theirs, [200, 201], 'second workspace, same key')
      assert(
        ownId(theirs.body, 'agent') !== ownId(mine.body, 'agent'),
        'the second workspace received the first workspace’s stored answer',
      )
    },
  },
]
