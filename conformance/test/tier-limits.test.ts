/**
 * `ratelimit.tier-limits` (§8: standard 1,000 requests per hour, pro 10,000) through the reference behind a proxy that
 * rewrites the answers to the tier tokens' requests into other header forms: it passes every form that states the
 * tier's quota (IETF RateLimit with its policy, X-RateLimit-* without window lengths, declared names), fails answers
 * whose quotas say another figure or that carry no readable window, is partial when no quota can be read or a tier's
 * token is missing, and skips without either token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { header, type Mutant, type ProxiedRequest, type ProxiedResponse } from '../mutants/proxy.js'
import type { SuiteConfig } from '../src/config.js'
import { rateWindows } from '../src/ratewindows.js'
import type { CheckResult } from '../src/types.js'
import { type ProxiedReference, startProxiedReference } from './proxied-reference.js'

const ID = 'ratelimit.tier-limits'

let t: ProxiedReference

beforeAll(async () => {
  t = await startProxiedReference()
}, 60_000)

afterAll(() => t?.stop())

interface Window {
  remaining: number
  reset: number
  quota: number
}

/** The burst and hourly windows of a reference answer, as the suite reads them (RateLimit and RateLimit-Policy). */
function windowsOf(res: ProxiedResponse): { burst: Window; hourly: Window } | undefined {
  const windows = rateWindows(res.headers)
  const one = (long: (length: number) => boolean): Window | undefined => {
    const w = windows.find((x) => x.length !== undefined && long(x.length))
    return w?.limit === undefined ? undefined : { remaining: w.remaining, reset: w.reset, quota: w.limit }
  }
  const hourly = one((length) => length === 3600)
  const burst = one((length) => length < 3600)
  return hourly && burst ? { burst, hourly } : undefined
}

/** Answers to the tier tokens' requests with their rate-limit headers rewritten by `form`. */
function tierAnswers(form: (w: { burst: Window; hourly: Window }) => Record<string, string>): Mutant {
  const tiers = [t.reference.tokens.standardTier, t.reference.tokens.proTier].map((x) => `Bearer ${x}`)
  return {
    id: 'tier-headers',
    description: 'the tier tokens’ answers carry rate-limit headers of another form',
    targets: [],
    response(req: ProxiedRequest, res: ProxiedResponse): ProxiedResponse {
      if (!tiers.includes(header(req, 'authorization') ?? '')) return res
      const w = windowsOf(res)
      if (!w) return res
      const { ratelimit: _r, 'ratelimit-policy': _p, ...rest } = res.headers
      return { ...res, headers: { ...rest, ...form(w) } }
    },
  }
}

const legacy = (w: { burst: Window; hourly: Window }, hourlyQuota = w.hourly.quota) => ({
  'x-ratelimit-limit': String(hourlyQuota),
  'x-ratelimit-remaining': String(w.hourly.remaining),
  'x-ratelimit-reset': String(w.hourly.reset),
  'x-ratelimit-burst-limit': String(w.burst.quota),
  'x-ratelimit-burst-remaining': String(w.burst.remaining),
  'x-ratelimit-burst-reset': String(w.burst.reset),
})

async function judged(mutant: Mutant | undefined, edit?: (c: SuiteConfig) => void): Promise<CheckResult> {
  t.proxy.mutant = mutant
  const c = t.config(['--seed', '7'])
  edit?.(c)
  const summary = await t.run(c, [ID])
  const r = summary.results.find((x) => x.id === ID)
  if (!r) throw new Error(`${ID} did not run`)
  return r
}

describe('ratelimit.tier-limits', () => {
  it('passes the reference, whose hourly policy states each tier’s quota', async () => {
    const r = await judged(undefined)
    expect(r.outcome, r.message).toBe('pass')
  })

  it('passes X-RateLimit-* headers that state the quotas without window lengths', async () => {
    const r = await judged(tierAnswers((w) => legacy(w)))
    expect(r.outcome, r.message).toBe('pass')
  })

  it('fails a standard workspace whose hourly policy states the pro quota', async () => {
    const r = await judged(
      tierAnswers((w) => ({
        ratelimit: `"burst";r=${w.burst.remaining};t=${w.burst.reset}, "hour";r=${w.hourly.remaining};t=${w.hourly.reset}`,
        'ratelimit-policy': `"burst";q=${w.burst.quota};w=10, "hour";q=${w.hourly.quota === 1000 ? 10_000 : w.hourly.quota};w=3600`,
      })),
    )
    expect(r.outcome).toBe('fail')
    expect(r.message).toMatch(/standard tier .*hourly window announces a quota of 10000 \(hour\)/)
  })

  it('passes a second hourly bound beside the tier’s (a larger quota of its own)', async () => {
    const r = await judged(
      tierAnswers((w) => ({
        ratelimit: `"burst";r=${w.burst.remaining};t=${w.burst.reset}, "hour";r=${w.hourly.remaining};t=${w.hourly.reset}, "hour-all";r=49999;t=${w.hourly.reset}`,
        'ratelimit-policy': `"burst";q=${w.burst.quota};w=10, "hour";q=${w.hourly.quota};w=3600, "hour-all";q=50000;w=3600`,
      })),
    )
    expect(r.outcome, r.message).toBe('pass')
  })

  it('fails answers whose every window states a quota and none the tier’s', async () => {
    const r = await judged(tierAnswers((w) => legacy(w, w.hourly.quota * 3)))
    expect(r.outcome).toBe('fail')
    expect(r.message).toMatch(/no window announces a quota of 1000/)
  })

  it('is partial when no quota can be read, naming the setting that would read it', async () => {
    const r = await judged(
      tierAnswers((w) => {
        const { 'x-ratelimit-limit': _l, 'x-ratelimit-burst-limit': _b, ...rest } = legacy(w)
        return rest
      }),
    )
    expect(r.outcome).toBe('partial')
    expect(r.message).toMatch(/rateLimitHeaders\.sustained\.limit in --config/)
  })

  it('fails answers without any rate-limit header, or with ones it cannot read, naming the declaration', async () => {
    const none = await judged(tierAnswers(() => ({})))
    expect(none.outcome).toBe('fail')
    expect(none.message).toMatch(/standard tier .*carries no rate-limit header/)
    const unread = await judged(tierAnswers(() => ({ 'x-ratelimit-policy': 'hourly 1000' })))
    expect(unread.outcome).toBe('fail')
    expect(unread.message).toMatch(/no rate-limit window the suite can read.*rateLimitHeaders in --config/)
  })

  it('judges a declared sustained window, its quota under a declared name', async () => {
    const declared = (quota: (w: Window) => number) =>
      tierAnswers((w) => ({
        'quota-short-left': String(w.burst.remaining),
        'quota-short-renews-in': String(w.burst.reset),
        'quota-long-left': String(w.hourly.remaining),
        'quota-long-renews-in': String(w.hourly.reset),
        'quota-long-size': String(quota(w.hourly)),
      }))
    const declare = (c: SuiteConfig) => {
      c.rateLimitHeaders = {
        burst: { remaining: 'quota-short-left', reset: 'quota-short-renews-in' },
        sustained: { remaining: 'quota-long-left', reset: 'quota-long-renews-in', limit: 'quota-long-size' },
      }
    }
    const right = await judged(
      declared((w) => w.quota),
      declare,
    )
    expect(right.outcome, right.message).toBe('pass')
    const wrong = await judged(
      declared((w) => w.quota + 1),
      declare,
    )
    expect(wrong.outcome).toBe('fail')
    expect(wrong.message).toMatch(/hourly window announces a quota of 1001 \(sustained\)/)
  })

  it('is partial with one tier’s token, and skipped with neither, naming the flags', async () => {
    const one = await judged(undefined, (c) => {
      delete c.tokens.proTier
    })
    expect(one.outcome).toBe('partial')
    expect(one.message).toMatch(/pro tier was not judged: no pro-tier token \(--pro-tier-token/)
    const none = await judged(undefined, (c) => {
      delete c.tokens.proTier
      delete c.tokens.standardTier
    })
    expect(none.outcome).toBe('skip')
    expect(none.message).toMatch(/--standard-tier-token.*--pro-tier-token/)
  })
})
