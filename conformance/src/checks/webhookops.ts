/**
 * The reference profile's webhook subscriptions past what spec §5.5 and §6 show: which subscription bodies it
 * refuses, what answer of the receiver counts as delivered (its delivery log), and how a secret rotation signs.
 * The spec leaves each open ("What response from the receiver counts as success: not shown", "Webhook subscription
 * response fields: not shown", no rotation endpoint), so every check here is profile.
 */
import { isIP } from 'node:net'
import type { Check, CheckContext } from '../check.js'
import { fieldOf } from '../delivery-body.js'
import { expectStatus, notServed, ownId, pageItems, unwantedHookUrl } from '../fixtures.js'
import { type HttpResponse, obj } from '../http.js'
import type { Delivery } from '../receiver.js'
import { parseSignature, verifySignature } from '../signature.js'
import { assert, fail, skip } from '../types.js'
import { short } from '../wait.js'
import { isRfc3339 } from './assertions.js'
import { deletedThenGoneProbes, type Probe, runProbes } from './extensions.js'
import { hookId, type OwnHook, ownHook, receiverUrl, webhookSecret } from './webhooks.js'

type Json = Record<string, unknown>

/** The delivery of a fresh agent's agent.created at `hook`: each step of a check gets its own event. */
async function agentCreatedAt(ctx: CheckContext, hook: OwnHook, what: string): Promise<Delivery> {
  const agent = await ctx.fx.newAgent()
  const got = await ctx.receiver!.waitFor(
    (d) => hook.mine(d) && fieldOf(d, 'agent_id') === agent,
    ctx.config.waitMs,
  )
  if (!got?.body) fail(`no agent.created delivery for agent ${agent} reached ${hook.tag} ${what}`)
  return got
}

/** Reads of a delivery log per question: the outcome is written as the receiver answers, so a few do. */
const LOG_READS = 20
const LOG_READ_GAP_MS = 200

/**
 * The log entry of `eventId` at `hookId`, read until `done` holds, at most LOG_READS times or, given `deadline` (ms
 * since the epoch), until then (the last one seen): asked once the receiver has had the attempt, and bounded so a
 * log of another shape costs few requests.
 */
async function logEntry(
  ctx: CheckContext,
  hookId: string,
  eventId: unknown,
  done: (entry: Json) => boolean,
  deadline?: number,
): Promise<Json | undefined> {
  let last: Json | undefined
  for (let i = 0; deadline === undefined ? i < LOG_READS : true; i++) {
    const res = await ctx.http.get(`/v1/webhooks/${hookId}/deliveries?limit=200`)
    if (notServed(res))
      skip(
        `no delivery log (GET /v1/webhooks/{id}/deliveries answered ${res.status}) to read the outcome from`,
      )
    expectStatus(res, 200, 'GET /v1/webhooks/{id}/deliveries')
    last = (pageItems(res.body) ?? []).map(obj).find((e) => e.event_id === eventId) ?? last
    if ((last && done(last)) || (deadline !== undefined && Date.now() >= deadline)) break
    await new Promise((r) => setTimeout(r, LOG_READ_GAP_MS))
  }
  return last
}

/** The 400 invalid_request a refused subscription body gets names the field at fault in detail.fields and issues. */
const namesField = (field: string) => (res: HttpResponse) => {
  const error = obj(obj(res.body).error)
  const detail = obj(error.detail)
  if (error.code !== 'invalid_request') return `error.code is ${short(error.code)}, not invalid_request`
  const fields = Array.isArray(detail.fields) ? detail.fields : []
  const issues = Array.isArray(detail.issues) ? detail.issues.map(obj) : []
  const at = (f: unknown) => f === field || String(f).startsWith(`${field}.`)
  if (!fields.some(at)) return `detail.fields ${short(detail.fields)} does not name ${field}`
  if (!issues.some((i) => at(i.path))) return `detail.issues ${short(detail.issues)} has no issue at ${field}`
  return undefined
}

/**
 * The suite's receiver's address with another port, when that address is a literal loopback or private one (the
 * reference lets in the exact host:port its operator lists, never the host's other ports); none otherwise.
 */
function otherPortOfReceiver(ctx: CheckContext): string[] {
  const at = ctx.config.receiver.url
  if (!at) return []
  let url: URL
  try {
    url = new URL(at)
  } catch {
    return []
  }
  const host = url.hostname.replace(/^\[|\]$/g, '')
  const isPrivate =
    isIP(host) === 4
      ? /^(127\.|10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.)/.test(host)
      : isIP(host) === 6 && (host === '::1' || /^f[cd]/i.test(host))
  if (!isPrivate) return []
  const other = url.port === '1' ? '2' : '1'
  return [`${url.protocol}//${url.host.replace(/:\d+$/, '')}:${other}/hook`]
}

export const webhookOperationChecks: Check[] = [
  {
    id: 'webhooks.listed-name-resolved',
    title:
      "A receiver let in by a listed host name (the receiver's loopback address named localhost) gets its deliveries: the name is resolved at the attempt and its address connected to, logged delivered",
    level: 'profile',
    clauses: ['S6.3'],
    async run(ctx) {
      const base = new URL(receiverUrl(ctx))
      if (base.hostname !== '127.0.0.1')
        skip(`the receiver is at ${base.hostname}, not 127.0.0.1: no name is known to resolve to it`)
      base.hostname = 'localhost'
      const tag = ctx.name('byname')
      const url = `${base.href.replace(/\/$/, '')}/${tag}`
      const res = await ctx.http.post('/v1/webhooks', {
        url,
        events: ['agent.created'],
        secret: webhookSecret(),
      })
      if (res.status === 400)
        skip(
          `the deployment does not let in the receiver by the name localhost (${short(res.body, 200)}); the reference does when its operator lists localhost:PORT, as --reference does`,
        )
      expectStatus(res, [200, 201], 'subscribing a receiver by the name localhost')
      const id = ownId(res.body, 'webhook')
      assert(id, `the subscription answer has no webhook_id: ${short(res.body)}`)
      try {
        const agent = await ctx.fx.newAgent()
        const got = await ctx.receiver!.waitFor(
          (d) => (d.path.split('?')[0] ?? '').endsWith(`/${tag}`) && fieldOf(d, 'agent_id') === agent,
          ctx.config.waitMs,
        )
        if (!got) {
          const log = await ctx.http.get(`/v1/webhooks/${id}/deliveries`)
          fail(
            `agent ${agent}'s agent.created never reached the receiver at ${url} within ${ctx.config.waitMs} ms; the delivery log: ${short(log.body, 300)}`,
          )
        }
      } finally {
        // Deleted here: no other check's event goes to it.
        await ctx.http.delete(`/v1/webhooks/${id}`)
      }
    },
  },
  {
    id: 'webhooks.subscription-refusals',
    title:
      "A subscription whose url is not an http(s) URL without credentials off this machine (a private or metadata address, another port of the receiver's own listed address), or whose secret is a malformed whsec_, is refused 400 naming the field; an http and an https url and an 8-character secret are taken; a deleted subscription is 404 to read, list deliveries of and delete",
    level: 'profile',
    clauses: ['S2.12', 'S4.11', 'S6.3'],
    async run(ctx) {
      // Every probe points where a subscription kept by mistake calls nothing but the suite (its receiver, when
      // declared): only the part a probe is about differs.
      const unwanted = unwantedHookUrl(ctx)
      const withCredentials = (username: string, password: string) => {
        const url = new URL(unwanted)
        url.username = username
        url.password = password
        return url.href
      }
      const body = (change: Json) => ({
        url: unwanted,
        events: ['policy.denied'],
        secret: webhookSecret(),
        ...change,
      })
      const refused = (what: string, field: string, change: Json): Probe => ({
        what: `POST /v1/webhooks with ${what}`,
        expect: 400,
        send: () => ctx.http.post('/v1/webhooks', body(change)),
        judge: namesField(field),
      })
      const probes: Probe[] = [
        refused('an ftp: url', 'url', { url: unwanted.replace(/^https?:/, 'ftp:') }),
        refused('a url with credentials', 'url', { url: withCredentials('user', 'pw') }),
        refused('a url with a user name only', 'url', { url: withCredentials('user', '') }),
        refused('a url with a password only', 'url', { url: withCredentials('', 'pw') }),
        // The reference never calls this machine's own names unless its operator lists the host and port (a local
        // receiver); were one taken, its deliveries would still only reach loopback.
        refused('a url naming localhost', 'url', { url: 'https://localhost:1/hook' }),
        // The profile's "Receivers must be outside the service": a literal private address is refused at creation,
        // and a link-local one (where every cloud serves instance metadata) whatever the operator lists.
        refused('a url at a private address', 'url', { url: 'https://10.0.0.1/hook' }),
        refused('a url at the cloud metadata address', 'url', {
          url: 'http://169.254.169.254/latest/meta-data',
        }),
        ...otherPortOfReceiver(ctx).map((url) =>
          refused("a url at another port of the receiver's private address", 'url', { url }),
        ),
        refused('a whsec_ secret that is not base64', 'secret', { secret: 'whsec_not base64!' }),
        refused('a whsec_ secret whose base64 follows junk', 'secret', { secret: 'whsec_!!whsec_Y29uZg' }),
      ]
      const wrong = await runProbes(probes)
      // The shortest secret taken is 8 characters; a whsec_ one is taken when base64 follows. (An empty or unknown
      // events list and a shorter secret are the contract's own refusals, which validation.* judges.)
      const taken: string[] = []
      for (const secret of ['eight-ch', 'whsec_Y29uZm9ybWFuY2Vz']) {
        const ok = await ctx.http.post('/v1/webhooks', body({ secret }))
        const okId = ownId(ok.body, 'webhook')
        if (ok.status !== 201 || !okId)
          wrong.push(`a subscription with the secret ${secret} answered ${ok.status}, not 201`)
        else {
          taken.push(okId)
          ctx.cleanup(`delete webhook ${okId}`, (http) => http.delete(`/v1/webhooks/${okId}`))
        }
      }
      // Both schemes are taken: the same url under the other one (deleted at once, like the second below: the
      // receiver speaks one of them).
      const otherScheme = unwanted.startsWith('https:')
        ? unwanted.replace(/^https:/, 'http:')
        : unwanted.replace(/^http:/, 'https:')
      const schemeTaken = await ctx.http.post('/v1/webhooks', body({ url: otherScheme }))
      const schemeId = ownId(schemeTaken.body, 'webhook')
      if (schemeTaken.status !== 201 || !schemeId)
        wrong.push(`a subscription to ${otherScheme} answered ${schemeTaken.status}, not 201`)
      else {
        ctx.cleanup(`delete webhook ${schemeId}`, (http) => http.delete(`/v1/webhooks/${schemeId}`))
        await ctx.http.delete(`/v1/webhooks/${schemeId}`)
      }
      // A deleted subscription is gone: its read, its log and a second delete are 404. (Neither is left to wait for
      // the end: every policy.denied would be sent to them meanwhile.)
      const [id, other] = taken
      if (other) await ctx.http.delete(`/v1/webhooks/${other}`)
      if (id)
        wrong.push(
          ...(await runProbes([
            { what: 'GET /v1/webhooks/{id}', expect: 200, send: () => ctx.http.get(`/v1/webhooks/${id}`) },
            ...deletedThenGoneProbes(ctx, '/v1/webhooks/{id}', `/v1/webhooks/${id}`),
          ])),
        )
      assert(wrong.length === 0, wrong.join('; '))
    },
  },
  {
    id: 'webhooks.receiver-answer-judged',
    title:
      'A delivery the receiver answers 200 is logged delivered after one attempt; one it answers 300 is not delivered but logged with that status and a next attempt; one it drops without an answer is not delivered but logged with no status code, an error and a next attempt',
    level: 'profile',
    clauses: ['S6.2'],
    async run(ctx) {
      receiverUrl(ctx)
      const ok = await ownHook(ctx, 'judged-200', ['agent.created'])
      const moved = await ownHook(ctx, 'judged-300', ['agent.created'])
      const dropped = await ownHook(ctx, 'judged-hang-up', ['agent.created'])
      ctx.receiver!.answerWith((path) => moved.mine({ path }), { status: 300, body: '' })
      ctx.receiver!.answerWith((path) => dropped.mine({ path }), { status: 0, body: '', hangUp: true })
      const got = await agentCreatedAt(ctx, ok, 'answered 200')
      const eventId = got.body!.id
      const wrong: string[] = []
      const delivered = await logEntry(ctx, hookId(ok), eventId, (e) => e.status !== 'pending')
      if (!delivered) wrong.push(`the delivery log of ${ok.id} lists no delivery of event ${short(eventId)}`)
      else {
        if (
          delivered.status !== 'delivered' ||
          delivered.attempts !== 1 ||
          delivered.last_status_code !== 200
        )
          wrong.push(
            `a delivery answered 200 is logged ${short(delivered)}, not delivered after 1 attempt with 200`,
          )
        if (!isRfc3339(delivered.delivered_at) || delivered.next_attempt_at !== null)
          wrong.push(
            `a delivered entry has delivered_at ${short(delivered.delivered_at)}, next_attempt_at ${short(delivered.next_attempt_at)}`,
          )
      }
      const attempted = await ctx.receiver!.waitFor(
        (d) => moved.mine(d) && d.body?.id === eventId,
        ctx.config.waitMs,
      )
      if (!attempted) wrong.push(`no delivery of event ${short(eventId)} reached ${moved.tag}`)
      const attemptedOnce = (e: Json) => typeof e.attempts === 'number' && e.attempts >= 1
      const redirected = await logEntry(ctx, hookId(moved), eventId, attemptedOnce)
      const reachedDropped = await ctx.receiver!.waitFor(
        (d) => dropped.mine(d) && d.body?.id === eventId,
        ctx.config.waitMs,
      )
      if (!reachedDropped) wrong.push(`no delivery of event ${short(eventId)} reached ${dropped.tag}`)
      const unanswered = await logEntry(ctx, hookId(dropped), eventId, attemptedOnce)
      // None of the subscriptions waits for the end of the run: each gets every agent.created meanwhile.
      await Promise.all([
        ctx.http.delete(`/v1/webhooks/${moved.id}`),
        ctx.http.delete(`/v1/webhooks/${ok.id}`),
        ctx.http.delete(`/v1/webhooks/${dropped.id}`),
      ])
      if (!unanswered)
        wrong.push(`the delivery log of ${dropped.id} lists no delivery of event ${short(eventId)}`)
      else if (
        unanswered.status === 'delivered' ||
        !attemptedOnce(unanswered) ||
        unanswered.last_status_code !== null ||
        typeof unanswered.last_error !== 'string' ||
        unanswered.last_error === '' ||
        // The error says what happened (the connection closed), not a status it never got.
        /\b(undefined|null|NaN)\b/.test(unanswered.last_error) ||
        (unanswered.status === 'pending' && !isRfc3339(unanswered.next_attempt_at))
      )
        wrong.push(
          `a delivery the receiver dropped without an answer is logged ${short(unanswered)}: no answer is no delivery, logged with no status code, an error that says what happened and a next attempt`,
        )
      if (!redirected)
        wrong.push(`the delivery log of ${moved.id} lists no delivery of event ${short(eventId)}`)
      else if (
        redirected.status === 'delivered' ||
        redirected.last_status_code !== 300 ||
        typeof redirected.last_error !== 'string' ||
        redirected.last_error === '' ||
        (redirected.status === 'pending' && !isRfc3339(redirected.next_attempt_at))
      )
        wrong.push(
          `a delivery answered 300 is logged ${short(redirected)}: a 3xx is no delivery (redirects are not followed)`,
        )
      const copies = ctx.receiver!.deliveries.filter((d) => ok.mine(d) && d.body?.id === eventId)
      if (copies.length !== 1)
        wrong.push(`the delivery answered 200 reached the receiver ${copies.length} times`)
      assert(wrong.length === 0, wrong.join('; '))
    },
  },
  {
    id: 'webhooks.secret-rotation',
    title:
      'After POST /v1/webhooks/{id}/rotate-secret each delivery carries one v1 per secret still signing: the old one through overlap_seconds (a day when omitted), none after overlap 0, a secret rotated to itself once, none once its overlap ran out',
    level: 'profile',
    clauses: ['S5.5', 'S6.1'],
    // It waits for an overlap to run out; its own subscription and agents, judged by their own deliveries.
    overlap: true,
    async run(ctx) {
      receiverUrl(ctx)
      const s1 = webhookSecret()
      const hook = await ownHook(ctx, 'rotation', ['agent.created'], { secret: s1 })
      const rotate = async (secret: string, overlap: number | undefined) => {
        const res = await ctx.http.post(`/v1/webhooks/${hook.id}/rotate-secret`, {
          secret,
          ...(overlap === undefined ? {} : { overlap_seconds: overlap }),
        })
        if (notServed(res))
          skip(`no secret rotation (POST /v1/webhooks/{id}/rotate-secret answered ${res.status})`)
        expectStatus(res, 200, 'POST /v1/webhooks/{id}/rotate-secret')
        assert(!res.text.includes(secret), 'the rotation answer shows the new secret')
        assert(
          isRfc3339(obj(res.body).secret_rotated_at),
          `the rotation answer's secret_rotated_at is ${short(obj(res.body).secret_rotated_at)}`,
        )
      }
      /** The next delivery's v1 entries: exactly one per secret of `signing`, and none of `retired`. */
      const signs = async (step: string, signing: string[], retired: string[]) => {
        const d = await agentCreatedAt(ctx, hook, step)
        const body = d.body!
        const now = Math.floor(Date.now() / 1000)
        const v1 = parseSignature(body.signature)?.v1 ?? []
        const problems: string[] = []
        if (v1.length !== signing.length) problems.push(`${v1.length} v1 entries, not ${signing.length}`)
        signing.forEach((s, i) => {
          if (!verifySignature(body, s, now, 3600).ok)
            problems.push(`no v1 verifies under secret ${i + 1} of ${signing.length}`)
        })
        if (retired.some((s) => verifySignature(body, s, now, 3600).ok))
          problems.push('a retired secret still signs')
        const header = String(d.headers['webhook-signature'] ?? '')
          .split(' ')
          .filter(Boolean)
        if (header.length !== signing.length)
          problems.push(`webhook-signature has ${header.length} entries, not ${signing.length}`)
        assert(
          problems.length === 0,
          `the delivery ${step}: ${problems.join('; ')} (${short(body.signature)})`,
        )
      }
      const [s2, s3, s4] = [webhookSecret(), webhookSecret(), webhookSecret()]
      await rotate(s2, 3600)
      await signs('after a rotation with an hour of overlap', [s2, s1], [])
      await rotate(s3, 0)
      await signs('after a rotation with no overlap', [s3], [s1, s2])
      await rotate(s3, 3600)
      await signs('after a rotation to the current secret', [s3], [s1, s2])
      await rotate(s4, undefined)
      await signs('after a rotation without overlap_seconds', [s4, s3], [s1, s2])
      // An overlap runs out: a second's overlap signs with the old secrets at once and no longer a little later,
      // and a rotation inside it never lengthens what is left of it.
      const [s5, s6] = [webhookSecret(), webhookSecret()]
      await rotate(s5, 1)
      await rotate(s6, 3600)
      await new Promise((r) => setTimeout(r, 1500))
      await signs(
        '1.5 s after a rotation with a second of overlap and another rotation',
        [s6, s5],
        [s1, s2, s3, s4],
      )
      await ctx.http.delete(`/v1/webhooks/${hook.id}`)
    },
  },
  {
    id: 'webhooks.gives-up-after-max-attempts',
    title:
      'A delivery its receiver fails every time gets exactly the declared number of attempts (webhooks.maxAttempts), each of the same event, and is then logged failed with no next attempt',
    level: 'profile',
    clauses: ['S6.2'],
    // It waits out the deployment's backoff: alongside the checks after it.
    overlap: true,
    async run(ctx) {
      const max = ctx.config.webhookMaxAttempts
      if (max === undefined)
        skip(
          'the attempts a delivery gets are not declared: set webhooks.maxAttempts in the config file (§6 "Retry count and backoff timing: not shown")',
        )
      receiverUrl(ctx)
      // tool.retired: a kind the checks alongside seldom cause, so few other deliveries are failed (and retried).
      const hook = await ownHook(ctx, 'gives-up', ['tool.retired'])
      ctx.receiver!.answerWith((path) => hook.mine({ path }), { status: 500, body: '' })
      const tool = await ctx.fx.newTool('succeed')
      expectStatus(await ctx.http.delete(`/v1/tools/${tool.id}`), [200, 204], 'retiring a tool')
      const first = await ctx.receiver!.waitFor(
        (d) => hook.mine(d) && fieldOf(d, 'tool_id') === tool.id,
        ctx.config.waitMs,
      )
      if (!first?.body) fail(`no tool.retired delivery for tool ${tool.id} reached ${hook.tag}`)
      const eventId = first.body.id
      const id = hookId(hook)
      const attempts = () =>
        ctx.receiver!.deliveries.filter((d) => hook.mine(d) && d.body?.id === eventId).length
      // Every attempt of one delivery, then its outcome written: bounded by the run's wait from the first attempt.
      const entry = await logEntry(
        ctx,
        id,
        eventId,
        (e) => e.status !== 'pending',
        Date.now() + ctx.config.waitMs,
      )
      await ctx.http.delete(`/v1/webhooks/${id}`)
      const made = attempts()
      assert(
        entry !== undefined && entry.status !== 'pending',
        `event ${short(eventId)} was attempted ${made} times (its receiver failing each), and its delivery is still ${short(entry?.status ?? 'not logged')} after ${ctx.config.waitMs} ms: with webhooks.maxAttempts ${max} declared, it should have been given up (raise --wait-ms if this deployment backs off longer)`,
      )
      const wrong: string[] = []
      if (entry.status !== 'failed') wrong.push(`logged ${short(entry.status)}, not failed`)
      if (entry.attempts !== max) wrong.push(`logged after ${short(entry.attempts)} attempts, not ${max}`)
      if (made !== max) wrong.push(`its receiver was sent ${made} attempts, not ${max}`)
      if (entry.next_attempt_at !== null && entry.next_attempt_at !== undefined)
        wrong.push(`a next attempt is still set (${short(entry.next_attempt_at)})`)
      assert(
        wrong.length === 0,
        `a delivery of event ${short(eventId)} whose receiver answered 500 every time: ${wrong.join('; ')} (webhooks.maxAttempts declares ${max})`,
      )
    },
  },
]
