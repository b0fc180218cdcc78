/**
 * Checks over every answer the run has seen so far: they run last, so they judge the traffic of all the others.
 */
import type { Check, CheckContext, SeenExchange } from '../check.js'
import { eventIdOf } from '../delivery-body.js'
import { type Json, listPage, streamedFrames } from '../fixtures.js'
import { obj } from '../http.js'
import { mentionsRateLimit, rateWindows } from '../ratewindows.js'
import type { Delivery } from '../receiver.js'
import { assert, fail, notApplicable } from '../types.js'
import { short } from '../wait.js'
import { envelopeProblems, isRfc3339, timestampFields } from './assertions.js'
import { receiverUrl } from './webhooks.js'

function where(x: {
  exchange: { method: string; url: string }
  checkId: string
  response: { status: number }
}): string {
  return `${x.exchange.method} ${new URL(x.exchange.url).pathname} → ${x.response.status} (during ${x.checkId})`
}

/**
 * The served documents and health (reference profile extensions read without a token): their answers are an
 * OpenAPI document, SDL, HTML and JavaScript, not API bodies, so the statements about API answers (§1's JSON and
 * RFC 3339 timestamps) do not apply to them.
 */
export const DOCUMENT_PATHS = new Set([
  '/healthz',
  '/openapi.json',
  '/schema.graphql',
  '/docs',
  '/docs/scalar.js',
])

/** The path of an exchange relative to the deployment's base URL. */
function apiPath(ctx: CheckContext, x: SeenExchange): string {
  const base = new URL(ctx.config.baseUrl).pathname.replace(/\/$/, '')
  const path = new URL(x.exchange.url).pathname
  return path.startsWith(base) ? path.slice(base.length) : path
}

/** The exchanges that are answers of the API, relative to the deployment's base URL (never its served documents). */
function apiAnswers(ctx: CheckContext): SeenExchange[] {
  return ctx.seen.filter((x) => !DOCUMENT_PATHS.has(apiPath(ctx, x)))
}

/** The API answers of one status to requests of one method on paths of one form (relative to the base URL). */
function answersTo(ctx: CheckContext, method: string, status: number, path: RegExp): SeenExchange[] {
  return apiAnswers(ctx).filter(
    (x) => x.exchange.method === method && x.response.status === status && path.test(apiPath(ctx, x)),
  )
}

/**
 * A sweep that found nothing of its kind to judge: `partial` on a whole run (the checks that send such requests ran,
 * and the deployment gave nothing to judge), not applicable on a run that --only/--skip cut down, where those checks
 * may simply have been left out (the verdict already says the run is incomplete).
 */
function nothingToJudge(ctx: CheckContext, what: string): void {
  if (ctx.config.only.length > 0 || ctx.config.skip.length > 0)
    notApplicable(
      `${what} in this run, which --only/--skip cut down: the checks that send them may be left out`,
    )
  ctx.partial(`${what} in this run of the suite`)
}

const RUN_START = /^\/v1\/agents\/[^/]+\/runs$/
const TRACE = /^\/v1\/runs\/[^/]+\/trace$/
const INGEST = /^\/v1\/grid\/connectors\/[^/]+\/ingest$/
const RUN = /^\/v1\/runs\/[^/]+$/
/** A run's start may carry a `created_at` rounded to the second where its `started_at` is not. */
const CLOCK_GRAIN_MS = 1000

/** The kinds one run emits at most once per run (per step for the two a step causes). */
const ONCE_PER_RUN = new Set(['run.started', 'run.succeeded', 'run.failed'])
const ONCE_PER_STEP = new Set(['run.awaiting_approval', 'policy.denied'])

/** The runs this suite started (their 201 answers): a test send's made-up run is never one of them. */
function startedRuns(ctx: CheckContext): Set<string> {
  const runs = new Set<string>()
  for (const x of answersTo(ctx, 'POST', 201, RUN_START)) {
    const id = obj(x.response.body).run_id
    if (typeof id === 'string') runs.add(id)
  }
  return runs
}

/**
 * The state change a webhook delivery announces, named by its subscriber (the receiver path), kind, run and step,
 * for the changes that happen once: a run starts and ends once, and a step asks for approval or is denied once.
 * Undefined for any other delivery (another kind, a run this suite did not start, a step not named).
 */
function changeKey(d: Delivery, started: Set<string>): string | undefined {
  const b = d.body
  if (!b || typeof b.event !== 'string' || typeof b.run_id !== 'string' || !started.has(b.run_id))
    return undefined
  if (ONCE_PER_RUN.has(b.event)) return `${d.path}: run ${b.run_id}'s ${b.event}`
  if (ONCE_PER_STEP.has(b.event) && typeof b.step_id === 'string')
    return `${d.path}: run ${b.run_id}'s ${b.event} of ${b.step_id}`
  return undefined
}

/**
 * What §2 says of a frame that one listing of a trace breaks: frames in order (their times never falling, their
 * numbers rising where the deployment numbers them), each with `ts`, `step_id` and `kind`, a `tool.call` naming its
 * tool and its integer latency. undefined when the listing holds.
 */
function traceListingProblem(frames: unknown[]): string | undefined {
  let last = Number.NEGATIVE_INFINITY
  let lastSeq = Number.NEGATIVE_INFINITY
  for (const [i, frame] of frames.entries()) {
    const f = obj(frame)
    if (typeof f.kind !== 'string') return `frame ${i} has no kind: ${short(f)}`
    if (!('step_id' in f)) return `frame ${i} has no step_id: ${short(f)}`
    const at = Date.parse(String(f.ts))
    if (Number.isNaN(at)) return `frame ${i} has no time: ${short(f)}`
    if (at < last) return `frame ${i} (${String(f.ts)}) is older than the one before it`
    last = at
    if (Number.isInteger(f.seq)) {
      if ((f.seq as number) <= lastSeq) return `frame ${i} has seq ${String(f.seq)} after seq ${lastSeq}`
      lastSeq = f.seq as number
    }
    if (f.kind === 'tool.call') {
      if (typeof f.tool !== 'string' || f.tool === '')
        return `tool.call frame ${i} names no tool: ${short(f)}`
      if ('latency_ms' in f && !(Number.isInteger(f.latency_ms) && (f.latency_ms as number) >= 0))
        return `tool.call frame ${i} has latency_ms ${short(f.latency_ms)}, not a non-negative integer`
    }
  }
  return undefined
}

/**
 * The records a batch sent, when the request was a JSON body with a `records` array of distinct ids (a batch that
 * repeats an id may have it counted once or twice: its answer is not judged here).
 */
function sentRecords(x: SeenExchange): number | undefined {
  let body: unknown
  try {
    body = JSON.parse(x.exchange.requestBody ?? '')
  } catch {
    return undefined
  }
  const records = obj(body).records
  if (!Array.isArray(records)) return undefined
  const ids = records.map((r) => obj(r).id)
  return new Set(ids).size === ids.length ? records.length : undefined
}

/** One inspection of a run (GET /v1/runs/{run_id} answered 200). */
interface RunReading {
  x: SeenExchange
  run: Json
  plan: Json
}

/** What no reading of §2's run fields allows one inspection of a run to say; undefined when it holds together. */
function readingProblem(r: RunReading): string | undefined {
  const {
    steps_total: total,
    steps_completed: completed,
    steps_pending: pending,
    steps_escalated: escalated,
  } = r.plan
  const counts = [total, completed, pending, escalated]
  // The types themselves are runs.inspect-200-fields's; the relations are judged where the counts are integers.
  if (!counts.every((n) => Number.isInteger(n) && Number(n) >= 0)) return undefined
  const [t, c, p, e] = counts as number[]
  // The plan's steps counted by state: none is both completed and pending, and no state counts more steps than the
  // plan has.
  if (c! + p! > t!) return `steps_completed ${c} + steps_pending ${p} exceed steps_total ${t}`
  if (e! > t!) return `steps_escalated ${e} exceeds steps_total ${t}`
  const awaiting = Array.isArray(r.run.awaiting) ? r.run.awaiting.length : 0
  // §2 awaiting: "Pending approvals"; §3 awaiting_approval: "the run waits for an approval in one or more queues".
  if (r.run.status === 'awaiting_approval' && awaiting === 0)
    return 'status is awaiting_approval with no pending approval in awaiting'
  if (awaiting > 0 && e === 0) return `${awaiting} step(s) await approval while steps_escalated is 0`
  return undefined
}

export const sweepChecks: Check[] = [
  {
    id: 'sweep.error-envelope-everywhere',
    title: 'Every error answer of the run used the error envelope with code, message, detail and request_id',
    level: 'core',
    clauses: ['S7.1'],
    async run(ctx) {
      const errors = ctx.seen.filter((x) => x.response.status >= 400)
      assert(errors.length > 0, 'no error answers were seen')
      const bad = errors.filter((x) => envelopeProblems(x.response.body).length > 0)
      if (bad.length > 0) {
        fail(
          `${bad.length} of ${errors.length} error answers break the envelope, e.g. ${where(bad[0]!)}: ${envelopeProblems(bad[0]!.response.body).join('; ')}`,
        )
      }
    },
  },
  {
    id: 'sweep.no-5xx',
    title: 'No request of the run got a 5xx',
    level: 'core',
    clauses: ['S7.9'],
    async run(ctx) {
      const bad = ctx.seen.filter((x) => x.response.status >= 500)
      if (bad.length > 0)
        fail(`${bad.length} answers were 5xx, e.g. ${where(bad[0]!)} ${short(bad[0]!.response.body)}`)
    },
  },
  {
    id: 'sweep.json-content-type',
    title: 'Every answer with a JSON body says Content-Type: application/json',
    level: 'core',
    clauses: ['S1.10'],
    async run(ctx) {
      for (const x of apiAnswers(ctx)) {
        const type = x.response.headers['content-type'] ?? ''
        // A trace offered as a stream (§4 "either as a stream of frames or as pages") is no JSON body.
        if (
          x.response.text === '' ||
          /^(text\/event-stream|text\/html|application\/(x-)?(nd|jsonl|json-seq))/.test(type)
        )
          continue
        if (!/^application\/json\b/i.test(type)) fail(`${where(x)} answered Content-Type ${type || '(none)'}`)
        if (/charset=/i.test(type))
          assert(/charset=utf-8/i.test(type), `${where(x)} answered ${type}, not UTF-8`)
      }
    },
  },
  {
    id: 'sweep.rfc3339-timestamps',
    title: 'Every timestamp field (ts, *_at) in every JSON answer is RFC 3339',
    level: 'core',
    clauses: ['S1.11'],
    async run(ctx) {
      let count = 0
      for (const x of apiAnswers(ctx)) {
        for (const f of timestampFields(x.response.body)) {
          count++
          if (!isRfc3339(f.value)) fail(`${f.path} = ${short(f.value)} is not RFC 3339 in ${where(x)}`)
        }
      }
      assert(count > 0, 'no timestamps were seen')
    },
  },
  {
    id: 'sweep.ratelimit-headers-everywhere',
    title:
      'Every authenticated answer (2xx, 4xx and 429 alike) carries both rate-limit windows, each with remaining and reset',
    level: 'core',
    clauses: ['S8.6'],
    async run(ctx) {
      // §8 "Rate limit scope: Per workspace. Burst and sustained headers are present on every response." An answer
      // to an unauthenticated request (401) has no workspace to count against, so it is left out.
      const answers = ctx.seen.filter((x) => x.authenticated && x.response.status !== 401)
      assert(answers.length > 0, 'no authenticated answers were seen')
      const declared = ctx.config.rateLimitHeaders
      const windowsOf = (x: (typeof answers)[number]) => rateWindows(x.response.headers, declared)
      const bad = answers.filter((x) => windowsOf(x).length < 2)
      if (bad.length > 0) {
        const first = bad[0]!
        const found = windowsOf(first)
        const hint = mentionsRateLimit(first.response.headers)
          ? ` (headers seen: ${Object.keys(first.response.headers)
              .filter((k) => /rate-?limit/i.test(k))
              .join(
                ', ',
              )}; if the deployment names its windows otherwise, declare them with rateLimitHeaders in --config)`
          : ''
        fail(
          `${bad.length} of ${answers.length} answers lack a burst and a sustained window, e.g. ${where(first)} announced ${found.length === 0 ? 'none' : found.map((w) => w.name).join(', ')}${hint}`,
        )
      }
      const classes = [
        ['2xx', (s: number) => s < 300],
        ['4xx', (s: number) => s >= 400 && s < 500 && s !== 429],
      ] as const
      for (const [name, test] of classes)
        assert(
          answers.some((x) => test(x.response.status)),
          `no authenticated ${name} answer was seen, so the statement was not tried on one`,
        )
    },
  },
  {
    id: 'sweep.run-readings-consistent',
    title:
      'Every inspection of a run holds together: plan counts within steps_total, a completed step never pending again, an awaiting run escalated, started_at not before created_at',
    level: 'core',
    clauses: ['S2.1', 'S2.3', 'S2.4', 'S3.2'],
    async run(ctx) {
      const created = new Map<string, number>()
      const readings = new Map<string, RunReading[]>()
      for (const x of apiAnswers(ctx)) {
        const path = apiPath(ctx, x)
        const body = obj(x.response.body)
        if (typeof body.run_id !== 'string') continue
        if (x.exchange.method === 'POST' && x.response.status === 201 && RUN_START.test(path)) {
          const at = Date.parse(String(body.created_at))
          const before = created.get(body.run_id)
          if (!Number.isNaN(at) && (before === undefined || at < before)) created.set(body.run_id, at)
        } else if (x.exchange.method === 'GET' && x.response.status === 200 && RUN.test(path)) {
          const plan = body.plan
          if (!plan || typeof plan !== 'object' || Array.isArray(plan)) continue
          const list = readings.get(body.run_id) ?? []
          list.push({ x, run: body, plan: plan as Json })
          readings.set(body.run_id, list)
        }
      }
      if (readings.size === 0) {
        nothingToJudge(ctx, 'no inspection of a run (GET /v1/runs/{run_id} with a plan) was seen')
        return
      }
      for (const [runId, list] of readings) {
        for (const r of list) {
          const problem = readingProblem(r)
          if (problem) fail(`run ${runId}: ${problem}, in ${where(r.x)}: ${short(r.run)}`)
          // A run starts no earlier than it was created (§2: created_at at start, started_at on inspection).
          const createdAt = created.get(runId)
          const startedAt = Date.parse(String(r.run.started_at))
          if (createdAt !== undefined && !Number.isNaN(startedAt) && startedAt < createdAt - CLOCK_GRAIN_MS)
            fail(
              `run ${runId} started_at ${String(r.run.started_at)} is before its created_at ${new Date(createdAt).toISOString()}, in ${where(r.x)}`,
            )
        }
        // A step once completed stays completed: of two inspections, the second sent after the first was answered,
        // the second never counts fewer completed steps.
        for (const later of list) {
          const sent = later.x.answeredAt - later.x.exchange.durationMs - 1
          for (const earlier of list) {
            if (earlier.x.answeredAt > sent) continue
            const [was, is] = [earlier.plan.steps_completed, later.plan.steps_completed]
            if (typeof was === 'number' && typeof is === 'number' && is < was)
              fail(
                `run ${runId}: steps_completed fell from ${was} (${where(earlier.x)}) to ${is} (${where(later.x)})`,
              )
          }
        }
      }
    },
  },
  {
    id: 'sweep.trace-listings-in-order',
    title:
      'Every listing of a trace the run read (failed, cancelled and approved runs too) has its frames in order, each with ts, step_id and kind, tool.call frames naming their tool',
    level: 'core',
    clauses: ['S2.6', 'S4.6'],
    async run(ctx) {
      let listings = 0
      for (const x of answersTo(ctx, 'GET', 200, TRACE)) {
        // An event stream's frames are runs.trace-frames's to judge (its events may carry more than frames).
        if (/text\/event-stream/i.test(x.response.headers['content-type'] ?? '')) continue
        const frames = streamedFrames(x.response) ?? listPage(ctx, x.response).items
        if (!frames) continue
        listings++
        const problem = traceListingProblem(frames)
        if (problem) fail(`${problem}, in ${where(x)}`)
      }
      if (listings === 0) nothingToJudge(ctx, 'no listing of a trace (GET /v1/runs/{run_id}/trace) was seen')
    },
  },
  {
    id: 'sweep.one-event-per-change',
    title:
      'One state change is one event: the deliveries a subscription got of a run’s start, end, approval request or denied step (retries included) all carry one event id',
    level: 'core',
    clauses: ['S6.6', 'S6.2'],
    async run(ctx) {
      receiverUrl(ctx)
      const started = startedRuns(ctx)
      const ids = new Map<string, Set<string>>()
      for (const d of ctx.receiver?.deliveries ?? []) {
        const key = changeKey(d, started)
        const id = key && eventIdOf(d)
        if (!key || !id) continue
        const seen = ids.get(key) ?? new Set<string>()
        seen.add(id)
        ids.set(key, seen)
      }
      if (ids.size === 0) {
        nothingToJudge(
          ctx,
          'no delivery naming a run this suite started and carrying an event id (a body id or a webhook-id header) was seen',
        )
        return
      }
      for (const [key, seen] of ids)
        if (seen.size > 1)
          fail(
            `${key} reached its subscriber as ${seen.size} events (ids ${short([...seen])}): one change emits one event, and a retry resends it under its id`,
          )
    },
  },
  {
    id: 'sweep.ingest-answers-count-the-batch',
    title:
      'Every 202 to a batch the run sent counts it: integer accepted and rejected adding up to the records sent, and a lineage_root',
    level: 'core',
    clauses: ['S2.11', 'S4.9'],
    async run(ctx) {
      let judged = 0
      for (const x of answersTo(ctx, 'POST', 202, INGEST)) {
        const sent = sentRecords(x)
        if (sent === undefined) continue
        judged++
        const b = obj(x.response.body)
        const [accepted, rejected] = [b.accepted, b.rejected]
        if (
          !Number.isInteger(accepted) ||
          !Number.isInteger(rejected) ||
          Number(accepted) < 0 ||
          Number(rejected) < 0
        )
          fail(`accepted ${short(accepted)} and rejected ${short(rejected)} are not counts, in ${where(x)}`)
        if (Number(accepted) + Number(rejected) !== sent)
          fail(
            `accepted ${String(accepted)} + rejected ${String(rejected)} ≠ the ${sent} records sent, in ${where(x)}`,
          )
        if (typeof b.lineage_root !== 'string' || b.lineage_root === '')
          fail(`lineage_root is ${short(b.lineage_root)}, in ${where(x)}`)
      }
      if (judged === 0) nothingToJudge(ctx, 'no batch of distinct records answered 202 was seen')
    },
  },
  {
    id: 'sweep.ratelimit-header-names',
    title: 'Every authenticated answer carries RateLimit-Policy and RateLimit',
    level: 'profile',
    clauses: ['S8.6'],
    async run(ctx) {
      const answers = ctx.seen.filter((x) => x.authenticated && x.response.status !== 401)
      const bad = answers.filter(
        (x) => !x.response.headers['ratelimit-policy'] || !x.response.headers.ratelimit,
      )
      if (bad.length > 0)
        fail(
          `${bad.length} of ${answers.length} answers lack RateLimit-Policy/RateLimit, e.g. ${where(bad[0]!)}`,
        )
    },
  },
  {
    id: 'sweep.request-id-header',
    title:
      'Every answer carries X-Request-Id, equal to error.request_id on errors (a replay repeats its first answer’s)',
    level: 'profile',
    clauses: ['S7.1'],
    async run(ctx) {
      for (const x of ctx.seen) {
        const header = x.response.headers['x-request-id']
        if (!header) fail(`no X-Request-Id on ${where(x)}`)
        // A replayed refusal (Idempotent-Replayed: true) repeats the stored answer, the first request's id with it.
        if (x.response.status >= 400 && x.response.headers['idempotent-replayed'] !== 'true') {
          const rid = obj(obj(x.response.body).error).request_id
          if (rid !== header) fail(`error.request_id ${short(rid)} ≠ X-Request-Id ${header} on ${where(x)}`)
        }
      }
    },
  },
  {
    id: 'sweep.bodies-match-openapi',
    title: 'Every answer’s status and body match the OpenAPI document (Ajv 2020)',
    level: 'profile',
    clauses: ['S1.10'],
    async run(ctx) {
      if (ctx.violations.length > 0) {
        const v = ctx.violations[0]!
        fail(`${ctx.violations.length} answers break the document, e.g. ${v.message}`)
      }
    },
  },
]
