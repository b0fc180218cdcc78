/**
 * Spec §8: "Standard tier: 1,000 requests per hour. Pro tier: 10,000 requests per hour. Enterprise tier: custom
 * limits." Which tier a workspace is on is the operator's doing, so the suite is told: a key of a workspace on each
 * tier, with the tier's own limits (`tokens.standardTier`, `tokens.proTier`). What it judges is what the answers
 * announce of their hourly window (§8: "Burst and sustained headers are present on every response"), a request each:
 * counting 10,000 requests would take the run minutes.
 */
import type { Check, CheckContext } from '../check.js'
import { tokenName } from '../config.js'
import type { HttpResponse } from '../http.js'
import { mentionsRateLimit, type RateWindow, rateWindows } from '../ratewindows.js'
import { assert, fail, skip } from '../types.js'

const PROBE = '/v1/tools?limit=1'
const HOUR_SECONDS = 3600

interface Tier {
  role: 'standardTier' | 'proTier'
  name: string
  /** Requests an hour §8 gives the tier. */
  quota: number
}

const TIERS: readonly Tier[] = [
  { role: 'standardTier', name: 'standard', quota: 1_000 },
  { role: 'proTier', name: 'pro', quota: 10_000 },
]

function describe(windows: readonly RateWindow[]): string {
  return windows
    .map((w) => {
      const facts = [
        `remaining ${w.remaining}`,
        ...(w.limit !== undefined ? [`quota ${w.limit}`] : []),
        ...(w.length !== undefined ? [`${w.length} s long`] : []),
      ]
      return `${w.name} (${facts.join(', ')})`
    })
    .join('; ')
}

/**
 * The hourly window among those an answer announced, when the answer says which it is: a window declared
 * `sustained` in `rateLimitHeaders`, or one whose length is an hour (RateLimit-Policy's `w`).
 */
function hourlyWindows(ctx: CheckContext, windows: readonly RateWindow[]): RateWindow[] {
  if (ctx.config.rateLimitHeaders) return windows.filter((w) => w.name === 'sustained')
  return windows.filter((w) => w.length === HOUR_SECONDS)
}

/** Judges one tier's answer; records a partial when its headers do not say enough. */
function judgeTier(ctx: CheckContext, tier: Tier, res: HttpResponse): void {
  const windows = rateWindows(res.headers, ctx.config.rateLimitHeaders)
  const label = `the ${tier.name} tier (${tier.quota.toLocaleString('en-US')} requests per hour)`
  // §8: "Burst and sustained headers are present on every response" (as ratelimit.remaining-counts-down judges it:
  // headers the suite cannot read fail there too, until they are declared).
  if (windows.length === 0)
    fail(
      mentionsRateLimit(res.headers)
        ? `${label}: its answer announces no rate-limit window the suite can read (headers: ${Object.keys(res.headers).join(', ')}); if the deployment names its headers otherwise, declare them as rateLimitHeaders in --config`
        : `${label}: its answer carries no rate-limit header (headers: ${Object.keys(res.headers).join(', ')})`,
    )
  const announced = `${tier.name}-tier answer's windows: ${describe(windows)}`
  const hourly = hourlyWindows(ctx, windows)
  // No window of the hour has more left than the tier allows, whatever it counts (one stating a larger quota of its
  // own, another bound beside the tier's, is not the tier's window).
  for (const w of hourly.filter((x) => x.limit === undefined || x.limit === tier.quota))
    assert(
      w.remaining <= tier.quota,
      `${label}: its hourly window ${w.name} announces ${w.remaining} requests remaining (${announced})`,
    )
  // A window known to be an hour long states a quota: one such states the tier's.
  const hourlyQuotas = hourly.filter((w) => w.limit !== undefined)
  if (hourlyQuotas.length > 0) {
    assert(
      hourlyQuotas.some((w) => w.limit === tier.quota),
      `${label}: its hourly ${hourlyQuotas.length === 1 ? 'window announces a quota' : 'windows announce quotas'} of ${hourlyQuotas.map((w) => `${w.limit} (${w.name})`).join(', ')} (${announced})`,
    )
    return
  }
  // Otherwise a window stating the tier's quota is its hourly one.
  const quoted = windows.filter((w) => w.limit !== undefined)
  if (quoted.some((w) => w.limit === tier.quota)) return
  // Every window states its quota, and none is the hour's: the sustained headers §8 asks for say another figure.
  if (quoted.length === windows.length)
    fail(`${label}: no window announces a quota of ${tier.quota} (${announced})`)
  const judged =
    hourly.length > 0
      ? 'was judged by what its hourly window has left only'
      : 'was not judged: no window says it is the hourly one (by its length or a declared name)'
  ctx.partial(
    `${label} ${judged}, and no window's quota says ${tier.quota} (${announced}); if the deployment announces the sustained window's quota under another name, declare rateLimitHeaders.sustained.limit in --config; a deployment that announces no quota leaves this part unjudged (counting an hour's requests would take the run minutes)`,
  )
}

export const tierChecks: Check[] = [
  {
    id: 'ratelimit.tier-limits',
    title:
      "A workspace on the standard tier announces 1,000 requests an hour, one on the pro tier 10,000 (the tier's own limits)",
    level: 'core',
    clauses: ['S8.7', 'S8.6'],
    async run(ctx) {
      const given = TIERS.filter((t) => ctx.config.tokens[t.role])
      if (given.length === 0)
        skip(
          `no ${tokenName('standardTier')} and no ${tokenName('proTier')} given: no workspace of a known tier`,
        )
      for (const tier of TIERS) {
        if (!ctx.config.tokens[tier.role]) {
          ctx.partial(`the ${tier.name} tier was not judged: no ${tokenName(tier.role)} given`)
          continue
        }
        const res = await ctx.as(tier.role).get(PROBE)
        assert(
          res.status === 200 || res.status === 429,
          `GET ${PROBE} with the ${tokenName(tier.role)} answered ${res.status}, not 200 (or 429)`,
        )
        judgeTier(ctx, tier, res)
      }
    },
  },
]
