/**
 * Spec §8: limits are per workspace, burst and sustained headers are on every response, exceeding the limit
 * yields 429. Header names, the Retry-After hint and the exact count are reference-profile decisions.
 */
import { randomBytes } from 'node:crypto'
import type { Check, CheckContext } from '../check.js'
import { settingName, tokenName } from '../config.js'
import { listPage, nextPageCursor, toolId, toolRegistration } from '../fixtures.js'
import { type HttpResponse, obj } from '../http.js'
import { retryAfter } from '../pacing.js'
import { parseLimitList, type RateWindow, rateWindows } from '../ratewindows.js'
import { assert, fail, skip } from '../types.js'
import { short, sleep } from '../wait.js'
import { envelopeProblems, expectEnvelope, expectError, isRfc3339 } from './assertions.js'
import { apiOperations, concrete } from './surface.js'

const PROBE = '/v1/tools?limit=1'

interface Search {
  responses: HttpResponse[]
  limited: HttpResponse | undefined
  /** Remaining quota the first answer announced (min over its policies), when it announced one. */
  announced: number | undefined
  limitedAt: number | undefined
  /** When the 429 arrived (Date.now()), so a search again waits only what is left of its Retry-After. */
  limitedAtMs: number | undefined
}

const searches = new WeakMap<object, Promise<Search>>()

/** Sends requests with the small-limit token until the first 429 (bounded by --rate-limit-search). */
function search(ctx: CheckContext): Promise<Search> {
  let p = searches.get(ctx.config)
  if (!p) p = remember(ctx, runSearch(ctx))
  return p
}

function remember(ctx: CheckContext, p: Promise<Search>): Promise<Search> {
  searches.set(ctx.config, p)
  p.catch(() => searches.delete(ctx.config))
  return p
}

/**
 * The search, from a fresh window: when an earlier run (or CI job) used the window up, the first answer is already
 * the 429 and nothing was counted. Waits its Retry-After out (bounded by --max-retry-after) and searches again,
 * replacing the remembered search so the later checks judge the new one.
 */
async function freshSearch(ctx: CheckContext): Promise<Search> {
  const s = await search(ctx)
  if (s.responses.filter((r) => r.status !== 429).length >= 3 || !s.limited) return s
  const busy = retryAfter(s.limited.headers)
  if (busy === undefined || busy > ctx.config.maxRetryAfterWait) return s
  await sleepPast(s, busy)
  return remember(ctx, runSearch(ctx))
}

/** Until `seconds` after the search's 429 came (its Retry-After), and 0.3 s more. */
function sleepPast(s: Search, seconds: number): Promise<void> {
  return sleep(Math.max(0, (s.limitedAtMs ?? Date.now()) + seconds * 1000 + 300 - Date.now()))
}

async function runSearch(ctx: CheckContext): Promise<Search> {
  // A count that straddles two windows (the remaining quota went up on the way: a slow machine or deployment)
  // would make the count look off; it is counted again, from a fresh window.
  let s = await countOnce(ctx)
  for (let again = 0; again < 2 && rolledOver(s.responses, ctx.config.rateLimitHeaders); again++) {
    const busy = s.limited ? retryAfter(s.limited.headers) : undefined
    if (busy !== undefined && busy > ctx.config.maxRetryAfterWait) break
    if (busy !== undefined) await sleepPast(s, busy)
    s = await countOnce(ctx)
  }
  return s
}

type Declared = CheckContext['config']['rateLimitHeaders']

/** An answer's headers that speak of rate limits, to show what a deployment sent. */
function rateHeadersOf(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([k]) => /rate-?limit|quota|retry-after/i.test(k)))
}

/** Remaining quota (min over the windows, in whichever header family) an answer announced, when it announced one. */
function remainingOf(res: HttpResponse, declared: Declared): number | undefined {
  const r = rateWindows(res.headers, declared).map((w) => w.remaining)
  return r.length > 0 ? Math.min(...r) : undefined
}

/** Whether a window rolled over during a count: an answer announced more remaining quota than the one before. */
function rolledOver(responses: HttpResponse[], declared: Declared): boolean {
  const remaining = responses.filter((r) => r.status !== 429).map((r) => remainingOf(r, declared))
  return remaining.some((r, i) => i > 0 && r !== undefined && (remaining[i - 1] ?? Infinity) < r)
}

async function countOnce(ctx: CheckContext): Promise<Search> {
  const limited = ctx.as('rateLimited')
  const declared = ctx.config.rateLimitHeaders
  let first = await limited.get(PROBE)
  const resetIn = Math.min(...rateWindows(first.headers, declared).map((w) => w.reset))
  if (first.status !== 429 && Number.isFinite(resetIn) && resetIn < 2) {
    // A window about to roll over would make the count look off by one; start in a fresh one.
    await sleep((resetIn + 0.3) * 1000)
    first = await limited.get(PROBE)
  }
  const responses = [first]
  const announced = remainingOf(first, declared)
  let hit: HttpResponse | undefined = first.status === 429 ? first : undefined
  while (!hit && responses.length < ctx.config.rateLimitSearch) {
    const res = await limited.get(PROBE)
    responses.push(res)
    if (res.status === 429) hit = res
  }
  return {
    responses,
    limited: hit,
    announced,
    limitedAt: hit ? responses.indexOf(hit) : undefined,
    limitedAtMs: hit ? Date.now() : undefined,
  }
}

async function the429(ctx: CheckContext): Promise<HttpResponse> {
  const s = await search(ctx)
  if (!s.limited)
    fail(`no 429 within ${s.responses.length} requests of the small-limit workspace (--rate-limit-search)`)
  return s.limited
}

/** The lane of every check that uses the small-limit workspace. */
export const LIMITED_LANE = 'the small-limit workspace'

/**
 * The most operations a check of the small-limit workspace sends over a socket to see one refused: past twice 20
 * (the largest tightest window these checks expect of a small-limit key), so a window that reopens once meanwhile
 * still runs out.
 * The window need not be open first: the socket checks of the lane may find it used up by the other, whose
 * operations no answer's headers report, and then the first operation is refused, which is as much an answer.
 */
export const SOCKET_OPERATIONS_PAST_LIMIT = 2 * 20 + 2

/** The 429 search and what it shows. */
const searchChecks: Check[] = [
  {
    id: 'ratelimit.429-at-limit',
    lane: LIMITED_LANE,
    needs: ['rateLimited'],
    title: 'Exceeding the workspace’s rate limit answers 429 with the error envelope',
    level: 'core',
    clauses: ['S7.8', 'S8.9'],
    async run(ctx) {
      const res = await the429(ctx)
      expectError(res, 429, 'over the limit')
    },
  },
  {
    id: 'ratelimit.per-workspace',
    lane: LIMITED_LANE,
    title: 'A throttled workspace throttles all its keys and no other workspace',
    level: 'core',
    clauses: ['S8.5'],
    async run(ctx) {
      const s = await search(ctx)
      if (!s.limited)
        fail(
          `no 429 within ${s.responses.length} requests of the small-limit workspace (--rate-limit-search)`,
        )
      // The remembered 429 may be a while old: ask the other workspace while the window is closed for sure, right
      // after a 429 of its own (kept as the newest 429).
      const now = await ctx.as('rateLimited').get(PROBE)
      if (now.status === 429) remember(ctx, Promise.resolve({ ...s, limited: now, limitedAtMs: Date.now() }))
      else if (!(await remember(ctx, runSearch(ctx))).limited)
        fail(
          'the small-limit workspace’s window reopened and no 429 came back within --rate-limit-search requests',
        )
      // Its first answer is the one that counts: a 429 retried after Retry-After would hide the throttling.
      const other = await ctx.http.get(PROBE, { retry429: false })
      assert(other.status !== 429, 'the primary workspace is throttled by another workspace’s traffic')
      if (!ctx.config.tokens.rateLimitedPeer) skip(`no ${tokenName('rateLimitedPeer')} given`)
      const peer = ctx.as('rateLimitedPeer')
      const limited = ctx.as('rateLimited')
      // The 429 may be a while old (a loaded machine, a proxy): the window can have reopened before the other key
      // asks. Only an answer bracketed by 429s to the first key, before and after it, proves the window was closed.
      for (let round = 1; round <= 3; round++) {
        const answer = await peer.get(PROBE)
        if (answer.status === 429) return
        const after = await limited.get(PROBE)
        assert(
          after.status !== 429,
          `another key of the throttled workspace answered ${answer.status} while the first key was refused 429 before and after it: the limit is not per workspace`,
        )
        // The window reopened: close it again from a fresh search.
        const s = await remember(ctx, runSearch(ctx))
        if (!s.limited)
          fail(
            `no 429 within ${s.responses.length} requests of the small-limit workspace (--rate-limit-search)`,
          )
      }
      fail(
        'the small-limit workspace’s window reopened between each 429 and the other key’s request, 3 times: the per-workspace limit could not be observed (a window shorter than a round trip of this machine)',
      )
    },
  },
  {
    id: 'ratelimit.remaining-counts-down',
    lane: LIMITED_LANE,
    needs: ['rateLimited'],
    title:
      'Inside a window each counted request lowers remaining by one (never more), both windows count, and reset lies within the window',
    level: 'core',
    clauses: ['S8.6', 'S8.9'],
    async run(ctx) {
      // §8 "Burst and sustained headers are present on every response": a header announcing what is left of a
      // window says something true only if it falls as requests are counted. A window that rolls over (remaining
      // rises, or reset moves later) starts a new count; a token bucket that refills may hold a value once.
      const s = await freshSearch(ctx)
      const declared = ctx.config.rateLimitHeaders
      const answers = s.responses.filter((r) => r.status !== 429)
      if (answers.length < 3)
        skip(`only ${answers.length} answers before the 429 of the small-limit workspace: nothing to count`)
      const series = answers.map((r) => rateWindows(r.headers, declared))
      const names = [...new Set(series.flatMap((ws) => ws.map((w) => w.name)))]
      const declare =
        'if the deployment names its headers otherwise, declare them as rateLimitHeaders in --config (burst and sustained: remaining, reset)'
      assert(
        names.length >= 2,
        `the small-limit workspace's answers announce ${names.length} window(s) the suite can read${names.length > 0 ? `: ${names.join(', ')}` : ''} (headers: ${Object.keys(
          answers[0]?.headers ?? {},
        )
          .filter((h) => /rate|limit|quota/i.test(h))
          .join(', ')}); ${declare}`,
      )
      for (const name of names) {
        let fellByOne = 0
        for (let i = 1; i < series.length; i++) {
          const prev = series[i - 1]!.find((w) => w.name === name)
          const next = series[i]!.find((w) => w.name === name)
          if (!prev || !next)
            fail(
              `window ${name} is missing from answer ${prev ? i + 1 : i} of the small-limit workspace; ${declare}`,
            )
          if (next.length !== undefined)
            assert(
              next.reset >= 0 && next.reset <= next.length,
              `window ${name} announces reset ${next.reset} s, outside its ${next.length} s window`,
            )
          const rolled = next.remaining > prev.remaining || next.reset > prev.reset + 1
          if (rolled) continue
          assert(
            prev.remaining - next.remaining <= 1,
            `window ${name}'s remaining fell from ${prev.remaining} to ${next.remaining} on one request`,
          )
          if (prev.remaining - next.remaining === 1) fellByOne++
        }
        assert(
          fellByOne > 0,
          `window ${name}'s remaining never fell by one over ${series.length} counted requests (${series.map((ws) => ws.find((w) => w.name === name)?.remaining).join(', ')})`,
        )
      }
    },
  },
  {
    id: 'ratelimit.exact-limit',
    lane: LIMITED_LANE,
    needs: ['rateLimited'],
    title:
      'The 429 comes exactly after the remaining quota the rate-limit headers announced (the least of their windows)',
    level: 'profile',
    clauses: ['S8.9'],
    async run(ctx) {
      const s = await search(ctx)
      if (!s.limited) fail('no 429 was reached')
      if (s.announced === undefined)
        fail(
          `the first answer announced no remaining quota the suite can read: ${short(rateHeadersOf(s.responses[0]?.headers ?? {}))}`,
        )
      assert(
        s.limitedAt === s.announced + 1,
        `the rate-limit headers announced ${s.announced} remaining after the first request, so request ${s.announced + 2} should be the first 429; it was request ${(s.limitedAt ?? 0) + 1}`,
      )
    },
  },
  {
    id: 'ratelimit.retry-hint',
    lane: LIMITED_LANE,
    needs: ['rateLimited'],
    title:
      '429 carries Retry-After seconds, code rate_limited and detail {window, limit, reset_at, retry_after_seconds} that agree with it',
    level: 'profile',
    clauses: ['S8.9'],
    async run(ctx) {
      const res = await the429(ctx)
      const retryAfter = res.headers['retry-after']
      assert(retryAfter !== undefined && /^\d+$/.test(retryAfter), `Retry-After is ${String(retryAfter)}`)
      const error = expectEnvelope(res, '429')
      assert(error.code === 'rate_limited', `error.code is ${String(error.code)}`)
      const detail = (error.detail ?? {}) as Record<string, unknown>
      for (const f of ['window', 'limit', 'reset_at', 'retry_after_seconds'])
        assert(f in detail, `detail.${f} is missing`)
      // The figures agree with each other: retry_after_seconds is the Retry-After header, and reset_at is that many
      // seconds after the answer's Date (which has whole seconds; 2 s of slack for the rounding both ways).
      assert(
        detail.retry_after_seconds === Number(retryAfter),
        `detail.retry_after_seconds ${short(detail.retry_after_seconds)} is not Retry-After ${retryAfter}`,
      )
      assert(isRfc3339(detail.reset_at), `detail.reset_at is not RFC 3339: ${short(detail.reset_at)}`)
      const sent = Date.parse(res.headers.date ?? '')
      if (Number.isFinite(sent)) {
        const off = Date.parse(String(detail.reset_at)) - (sent + Number(retryAfter) * 1000)
        assert(
          Math.abs(off) <= 2000,
          `detail.reset_at ${String(detail.reset_at)} is not Retry-After ${retryAfter} s after the answer's Date ${res.headers.date} (off by ${Math.round(off / 1000)} s)`,
        )
      }
      assert(
        res.headers.ratelimit !== undefined && res.headers['ratelimit-policy'] !== undefined,
        '429 lacks RateLimit headers',
      )
    },
  },
  {
    id: 'ratelimit.header-format',
    lane: LIMITED_LANE,
    title:
      'RateLimit-Policy names "burst" (w=10) and "hourly" (w=3600) quotas; RateLimit gives r and t for each',
    level: 'profile',
    clauses: ['S8.6'],
    async run(ctx) {
      const res = await ctx.http.get(PROBE)
      const policy = parseLimitList(res.headers['ratelimit-policy'])
      const state = parseLimitList(res.headers.ratelimit)
      for (const [name, w] of [
        ['burst', 10],
        ['hourly', 3600],
      ] as const) {
        const p = policy.find((i) => i.name === name)
        assert(
          p && p.params.q! > 0 && p.params.w === w,
          `RateLimit-Policy lacks "${name}";q=..;w=${w}: ${res.headers['ratelimit-policy']}`,
        )
        const s = state.find((i) => i.name === name)
        assert(
          s && s.params.r! >= 0 && s.params.t! >= 0,
          `RateLimit lacks "${name}";r=..;t=..: ${res.headers.ratelimit}`,
        )
        assert(
          s.params.r! < p.params.q!,
          `remaining ${s.params.r} is not below the quota ${p.params.q} after a request`,
        )
      }
    },
  },
  {
    id: 'ratelimit.429-every-operation',
    lane: LIMITED_LANE,
    needs: ['rateLimited'],
    title:
      'While the workspace is over its limit every operation answers 429 with the envelope, before it judges ids or bodies',
    level: 'profile',
    // §8 "Rate limit scope: per workspace" and "Exceeding the rate limit yields 429": every request of the
    // workspace is counted. That the limit is judged before the route, the ids and the body (so an unknown id
    // answers 429, not 404) is the reference's order, hence profile.
    clauses: ['S8.5', 'S8.9'],
    async run(ctx) {
      await the429(ctx)
      const wrong = await everyOperationRefused(ctx)
      assert(
        wrong.length === 0,
        `over its limit, the small-limit workspace was not refused 429 in three rounds by: ${short(wrong.join('; '), 1500)}`,
      )
    },
  },
]

/**
 * While the small-limit workspace is refused, one request to every operation that documents 429, with unknown ids
 * and a `{}` body: the reference counts a request before it judges the route, the ids or the body. Rounds: an
 * operation that was answered otherwise is asked again after the window is closed again (a window that rolled over
 * mid-round lets a few through), and fails only when it never answered 429 in three rounds.
 */
async function everyOperationRefused(ctx: CheckContext): Promise<string[]> {
  const limited = ctx.as('rateLimited')
  let pending = apiOperations(ctx).filter((op) => op.responses['429'] !== undefined)
  let wrong: string[] = []
  for (let round = 1; round <= 3 && pending.length > 0; round++) {
    // Close the window first: a fresh search when it has reopened (remembered, as the newest 429).
    if ((await limited.get(PROBE)).status !== 429 && !(await remember(ctx, runSearch(ctx))).limited)
      fail(
        'the small-limit workspace’s window reopened and no 429 came back within --rate-limit-search requests',
      )
    const answers = await Promise.all(
      pending.map(async (op) => {
        const body = op.requestSchemaPointer
          ? { rawBody: '{}', headers: { 'content-type': 'application/json' } }
          : {}
        return { op, res: await limited.request(op.method.toUpperCase(), concrete(op), body) }
      }),
    )
    wrong = []
    const again = []
    for (const { op, res } of answers) {
      const name = `${op.method.toUpperCase()} ${op.template}`
      if (res.status !== 429) {
        again.push(op)
        wrong.push(`${name} answered ${res.status}`)
      } else if (envelopeProblems(res.body).length > 0)
        // A 429 without the envelope is wrong whatever the window did: no second round changes that.
        fail(`${name} answered 429 without the error envelope: ${envelopeProblems(res.body)[0]}`)
    }
    pending = again
  }
  return wrong
}

/** They wait on the small-limit workspace's clock (a Retry-After, a window's reset), in the same lane. */
const waitingChecks: Check[] = [
  {
    id: 'ratelimit.recovers-after-retry-after',
    lane: LIMITED_LANE,
    title:
      'After waiting Retry-After seconds the workspace is served again, and every window the 429 announced would reset by then has reset',
    level: 'profile',
    clauses: ['S8.9'],
    async run(ctx) {
      // A 429 of its own, with nothing else of the run in the workspace since (the lane): the search's would do only
      // if nothing had been counted after it, and the checks between (every operation asked while refused) may have
      // been let into the next window as it opened, using it up before this check's probe.
      const own = await runSearch(ctx)
      if (!own.limited)
        fail(
          `no 429 within ${own.responses.length} requests of the small-limit workspace (--rate-limit-search)`,
        )
      const res = own.limited
      const hitAt = own.limitedAtMs ?? Date.now()
      // Delay-seconds or an HTTP-date (RFC 9110 §10.2.3), counted from when the 429 came.
      const wait = retryAfter(res.headers, hitAt)
      if (wait === undefined)
        fail(
          `no Retry-After to wait for (${res.headers['retry-after'] === undefined ? 'absent' : `"${res.headers['retry-after']}" is neither seconds nor an HTTP-date`})`,
        )
      if (wait > ctx.config.maxRetryAfterWait)
        skip(
          `Retry-After ${wait.toFixed(1)} s is longer than ${settingName('max-retry-after')} = ${ctx.config.maxRetryAfterWait}`,
        )
      // In its lane, alongside the other families: the wait costs the run nothing.
      await sleep(Math.max(0, hitAt + wait * 1000 + 250 - Date.now()))
      const again = await ctx.as('rateLimited').get(PROBE)
      if (again.status === 429) {
        // A window that still had room at the 429 and has none now ran out meanwhile (the workspace's hourly quota,
        // used up by earlier runs against a long-lived deployment): its refusal says nothing about whether the
        // window that refused reopened when its Retry-After said.
        const declared = ctx.config.rateLimitHeaders
        const hadRoom = new Set(
          rateWindows(res.headers, declared)
            .filter((w) => w.remaining > 0)
            .map((w) => w.name),
        )
        const ranOut = rateWindows(again.headers, declared).filter(
          (w) => w.remaining <= 0 && hadRoom.has(w.name),
        )
        if (ranOut.length > 0)
          skip(
            `after ${wait.toFixed(1)} s the workspace answers 429 again, but from its ${ranOut.map((w) => w.name).join(', ')} window, which still had room at the first 429 and ran out meanwhile (Retry-After ${again.headers['retry-after'] ?? 'absent'}): whether the first window reopened cannot be told`,
          )
      }
      assert(again.status === 200, `after ${wait.toFixed(1)} s the workspace still answers ${again.status}`)
      // Every other window the 429 announced would reset by now has reset too: served again, its remaining is back
      // up (the probe is the only request counted since, in this lane). A reset announced too soon (RateLimit's
      // `t`) tells a client to come back before the window will let it, whichever window refused.
      const elapsed = (Date.now() - hitAt) / 1000
      const after = new Map(rateWindows(again.headers, ctx.config.rateLimitHeaders).map((w) => [w.name, w]))
      // Read as at the 429 (a reset given as a Unix time is turned into seconds from then).
      const early = rateWindows(res.headers, ctx.config.rateLimitHeaders, hitAt).filter((w) => {
        const later = after.get(w.name)
        return (
          w.limit !== undefined &&
          w.remaining < w.limit &&
          w.reset + 0.25 <= elapsed &&
          later !== undefined &&
          later.remaining < w.remaining
        )
      })
      assert(
        early.length === 0,
        early
          .map(
            (w) =>
              `the ${w.name} window announced at the 429 that it resets in ${w.reset} s, but ${elapsed.toFixed(1)} s later its remaining went from ${w.remaining} to ${after.get(w.name)?.remaining}: it had not reset`,
          )
          .join('; '),
      )
    },
  },
  {
    id: 'ratelimit.refused-write-has-no-effect',
    lane: LIMITED_LANE,
    needs: ['rateLimited'],
    title:
      'A write refused 429 took no effect: of a burst of keyed tool registrations past the limit, exactly those answered 2xx are listed, and a refused one sent again with its key once the window reopened is done, not answered its 429 again',
    level: 'core',
    // §7 "429 | The rate limit is exceeded. | Retry with exponential backoff.": a client told to retry a refused
    // write would make it twice if the refusal had done the work, and could never make it if its key kept the 429
    // (§8: every POST takes an Idempotency-Key, so a careful client retries with the same one). §4 "GET /v1/tools |
    // Lists tools."
    clauses: ['S7.8', 'S8.9', 'S8.3'],
    async run(ctx) {
      const limited = ctx.as('rateLimited')
      const declared = ctx.config.rateLimitHeaders
      let probe = await getWhenOpen(ctx, PROBE)
      let windows = rateWindows(probe.headers, declared)
      // A window nearly used up (by the checks before) would refuse the whole burst, which judges nothing, and one
      // about to roll over would split the burst between two windows: its reset is waited out first, within
      // --max-retry-after.
      const spent = windows.filter((w) => w.remaining < 3 || w.reset < 2)
      if (spent.length > 0) {
        const reset = Math.max(...spent.map((w) => w.reset))
        if (reset <= ctx.config.maxRetryAfterWait) {
          await sleep(reset * 1000 + 300)
          probe = await getWhenOpen(ctx, PROBE)
          windows = rateWindows(probe.headers, declared)
        }
      }
      const binding = windows.reduce<RateWindow | undefined>(
        (least, w) => (least === undefined || w.remaining < least.remaining ? w : least),
        undefined,
      )
      // Sent at once, past what the workspace has left and past one more window's worth (a burst that still straddles
      // a roll-over has the next window's quota too; unnamed, it is at least what is left now and the probe): some
      // are counted in, the rest refused.
      const size = binding
        ? Math.min(
            binding.remaining + (binding.limit ?? binding.remaining + 1) + 3,
            ctx.config.rateLimitSearch,
          )
        : ctx.config.rateLimitSearch
      const burst = await Promise.all(
        Array.from({ length: size }, async (_, i) => {
          const name = ctx.name(`burst-${i}`)
          const body = toolRegistration(ctx, 'succeed', name)
          const key = `conf-burst-${randomBytes(9).toString('hex')}`
          const res = await limited.post('/v1/tools', body, { headers: { 'idempotency-key': key } })
          return { name, body, key, res }
        }),
      )
      const created = burst.filter((b) => b.res.status >= 200 && b.res.status < 300)
      for (const { name, res } of created) {
        const id = toolId(res.body)
        if (id)
          ctx.cleanup(`retire tool ${name}`, (http) =>
            http.withToken(limited.token).delete(`/v1/tools/${id}`),
          )
      }
      const refused = burst.filter((b) => b.res.status === 429)
      const other = burst.find((b) => b.res.status !== 429 && (b.res.status < 200 || b.res.status >= 300))
      if (other)
        skip(
          `a registration of the burst answered ${other.res.status} ${short(other.res.body)}, neither 2xx nor 429: the ${tokenName('rateLimited')} identity cannot register tools`,
        )
      if (refused.length === 0) skip(`none of a burst of ${size} registrations was refused 429`)
      if (created.length === 0) skip(`every one of a burst of ${size} registrations was refused 429`)
      // Read once the window has reopened (Retry-After of a refusal, bounded by --max-retry-after).
      await getWhenOpen(ctx, PROBE, refused[0]!.res)
      const listed = await listedToolNames(ctx)
      const lost = created.filter((b) => !listed.has(b.name)).map((b) => b.name)
      const done = refused.filter((b) => listed.has(b.name)).map((b) => b.name)
      assert(
        done.length === 0,
        `${done.length} of ${refused.length} registrations answered 429 were registered all the same (listed by GET /v1/tools): ${short(done.join(', '))}`,
      )
      assert(
        lost.length === 0,
        `${lost.length} of ${created.length} registrations answered 2xx are not listed by GET /v1/tools: ${short(lost.join(', '))}`,
      )
      await retriedWithItsKey(ctx, refused[0]!)
    },
  },
]

/**
 * A keyed write refused 429, sent again with its key and body once the window has reopened: done (2xx), or refused
 * 429 again only while the window is closed. Refused twice while the same write without a key, sent right after, was
 * served, its key kept the 429.
 */
async function retriedWithItsKey(
  ctx: CheckContext,
  refused: { name: string; body: unknown; key: string; res: HttpResponse },
): Promise<void> {
  const limited = ctx.as('rateLimited')
  let closed: HttpResponse | undefined
  let keptWhileOpen = 0
  for (let attempt = 0; attempt < 3; attempt++) {
    await getWhenOpen(ctx, PROBE, closed)
    const again = await limited.post('/v1/tools', refused.body, {
      headers: { 'idempotency-key': refused.key },
    })
    if (again.status >= 200 && again.status < 300) {
      const id = toolId(again.body)
      if (id)
        ctx.cleanup(`retire tool ${refused.name}`, (http) =>
          http.withToken(limited.token).delete(`/v1/tools/${id}`),
        )
      return
    }
    if (again.status !== 429)
      fail(
        `registration ${refused.name}, refused 429 and sent again with its Idempotency-Key once the window reopened, answered ${again.status} ${short(again.body)}`,
      )
    // The same operation without a key, at once: served, it shows the window had room for the keyed one too (a
    // deployment may bound writes apart from reads, so a read would not show it).
    const name = ctx.name('burst-after')
    const after = await limited.post('/v1/tools', toolRegistration(ctx, 'succeed', name))
    if (after.status === 429) {
      closed = after
      continue
    }
    if (after.status < 200 || after.status >= 300)
      fail(`a registration without a key after the keyed one answered ${after.status} ${short(after.body)}`)
    const id = toolId(after.body)
    if (id)
      ctx.cleanup(`retire tool ${name}`, (http) => http.withToken(limited.token).delete(`/v1/tools/${id}`))
    keptWhileOpen++
    assert(
      keptWhileOpen < 2,
      `registration ${refused.name}, refused 429 and sent again with its Idempotency-Key, was answered 429 twice while a registration without a key sent right after it was served: its key kept the 429, so the retry §7 asks for can never succeed`,
    )
  }
  ctx.partial(
    `registration ${refused.name}, refused 429, met a closed window each of three times it was sent again with its key`,
  )
}

/**
 * A GET of the small-limit workspace answered inside an open window: after `refusal` (or an answer 429), its
 * Retry-After is waited out when it is within --max-retry-after (the check skips otherwise), three times at most. A
 * burst whose last requests arrive after its window rolled over uses up the next window too, so a read after the wait
 * may meet one more refusal.
 */
async function getWhenOpen(ctx: CheckContext, path: string, refusal?: HttpResponse): Promise<HttpResponse> {
  const limited = ctx.as('rateLimited')
  let closed = refusal
  for (let attempt = 0; attempt < 3; attempt++) {
    if (closed) {
      const wait = retryAfter(closed.headers)
      if (wait === undefined) skip('a 429 named no Retry-After to wait for')
      if (wait > ctx.config.maxRetryAfterWait)
        skip(
          `Retry-After ${wait} s is longer than ${settingName('max-retry-after')} = ${ctx.config.maxRetryAfterWait}`,
        )
      await sleep(wait * 1000 + 300)
    }
    const res = await limited.get(path)
    if (res.status !== 429) return res
    closed = res
  }
  skip(`GET ${path} of the small-limit workspace stayed refused 429 after three waits of its Retry-After`)
}

/** The names of every tool the small-limit workspace lists (GET /v1/tools, page by page, bounded). */
async function listedToolNames(ctx: CheckContext): Promise<Set<string>> {
  const names = new Set<string>()
  const limit = 100
  let cursor: string | null = null
  for (let page = 0; page < 50; page++) {
    const query: string =
      cursor === null ? `?limit=${limit}` : `?limit=${limit}&cursor=${encodeURIComponent(cursor)}`
    const res = await getWhenOpen(ctx, `/v1/tools${query}`)
    if (res.status !== 200) fail(`listing the tools answered ${res.status} ${short(res.body)}`)
    const items = listPage(ctx, res).items ?? []
    for (const item of items) {
      const name = obj(item).name
      if (typeof name === 'string') names.add(name)
    }
    cursor = nextPageCursor(ctx, res, limit, 'GET /v1/tools')
    if (cursor === null || items.length === 0) return names
  }
  fail('GET /v1/tools named a next page 50 times')
}

/**
 * In this order, one after another in the small-limit workspace's lane: no other family uses that workspace, so the
 * lane runs alongside the rest of the run and its windows' waits cost the run nothing, while one check's requests
 * never count in another's window.
 */
export const rateLimitChecks: Check[] = [...searchChecks, ...waitingChecks]
