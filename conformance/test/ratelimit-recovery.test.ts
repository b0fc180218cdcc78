/**
 * `ratelimit.recovers-after-retry-after` against a long-lived deployment: when, after the wait, another of the
 * workspace's windows has run out (its hourly quota, used up by earlier runs), the check cannot tell whether the
 * window that refused reopened, and says so (skip) instead of failing a deployment that did nothing wrong. A
 * deployment whose refusing window stays shut still fails (mutant `ratelimit-block-never-lifts` in
 * mutants/families/paging.ts). A Retry-After given as an HTTP-date is waited out as seconds are. And the 429 search
 * the rate-limit checks share counts again when its count straddled two windows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { retryAfterAsDate } from '../mutants/dialects.js'
import { header, type Mutant, type ProxiedResponse } from '../mutants/proxy.js'
import type { Check } from '../src/check.js'
import { ALL_CHECKS } from '../src/checks/index.js'
import { LIMITED_LANE } from '../src/checks/ratelimit.js'
import { runChecks, selectChecks } from '../src/runner.js'
import { type ProxiedReference, startProxiedReference } from './proxied-reference.js'

let t: ProxiedReference

beforeAll(async () => {
  t = await startProxiedReference()
}, 60_000)

afterAll(() => t?.stop())

/** The checks run through the proxied reference, in order, as a run would. */
function run(config: ReturnType<ProxiedReference['config']>, checks: Check[]) {
  return runChecks({ config, checks, contract: t.contract, receiver: t.receiver })
}

/** The suite's own checks of these ids, in the suite's order. */
const only = (...ids: string[]) => selectChecks(ALL_CHECKS, ids)

/**
 * Once the small-limit workspace got its 429, its next answer that would have been served is a 429 of its hourly
 * window instead: that window had room at the first 429 and has none now.
 */
function hourlyRunsOutAfterThe429(rateLimitedToken: string): Mutant {
  let refused = false
  return {
    id: 'hourly-runs-out-meanwhile',
    description: "the workspace's hourly window runs out between its 429 and the recovery probe",
    targets: [],
    response(req, res): ProxiedResponse {
      if (header(req, 'authorization') !== `Bearer ${rateLimitedToken}`) return res
      if (res.status === 429) {
        refused = true
        return res
      }
      if (!refused || res.status !== 200) return res
      const policy = res.headers['ratelimit-policy'] ?? ''
      return {
        status: 429,
        headers: {
          'content-type': 'application/json',
          'ratelimit-policy': policy,
          ratelimit: '"burst";r=4;t=9, "hourly";r=0;t=1800',
          'retry-after': '1800',
        },
        body: '{"error":{"code":"rate_limited","message":"Hourly limit reached","detail":{},"request_id":"req_h"}}',
      }
    },
  }
}

/** `ratelimit.recovers-after-retry-after` alone through the proxy playing `mutant`: its result. */
async function recoveryThrough(config: ReturnType<ProxiedReference['config']>, mutant: Mutant) {
  t.proxy.mutant = mutant
  try {
    const summary = await run(config, only('ratelimit.recovers-after-retry-after'))
    return summary.results.find((r) => r.id === 'ratelimit.recovers-after-retry-after')
  } finally {
    t.proxy.mutant = undefined
  }
}

describe('ratelimit.recovers-after-retry-after', () => {
  it('skips, naming the window, when another window ran out between the 429 and the probe', async () => {
    const config = t.config(['--seed', '11'])
    const recovery = await recoveryThrough(
      config,
      hourlyRunsOutAfterThe429(String(config.tokens.rateLimited)),
    )
    expect(recovery?.outcome, recovery?.message).toBe('skip')
    expect(recovery?.message).toMatch(
      /from its hourly window, which still had room at the first 429 and ran out meanwhile/,
    )
  }, 60_000)

  it("times its wait from a 429 of its own: requests counted after the search's 429 (the next window used up as it opened) do not fail it", async () => {
    t.proxy.mutant = undefined
    const config = t.config(['--seed', '12'])
    // Between the search and the recovery, the workspace's next window is used up the moment it opens, by requests
    // that are all let in: what a check asking every operation while refused can do when the window rolls over.
    const usesUpTheNextWindow: Check = {
      id: 'probe.uses-up-the-next-window',
      title: 'uses up the next window',
      level: 'profile',
      clauses: [],
      lane: LIMITED_LANE,
      async run(ctx) {
        const limited = ctx.as('rateLimited')
        let res = await limited.get('/v1/tools?limit=1')
        for (let i = 0; i < 5 && res.status === 429; i++) {
          await new Promise((r) => setTimeout(r, Number(res.headers['retry-after'] ?? 1) * 1000 + 100))
          res = await limited.get('/v1/tools?limit=1')
        }
        expect(res.status).toBe(200)
        const left = Number(/"burst";r=(\d+)/.exec(res.headers.ratelimit ?? '')?.[1])
        expect(left).toBeGreaterThan(0)
        for (let i = 0; i < left; i++) expect((await limited.get('/v1/tools?limit=1')).status).toBe(200)
      },
    }
    const summary = await run(config, [
      ...only('ratelimit.429-at-limit'),
      usesUpTheNextWindow,
      ...only('ratelimit.recovers-after-retry-after'),
    ])
    expect(summary.results.map((r) => [r.id, r.outcome, r.message])).toEqual([
      ['ratelimit.429-at-limit', 'pass', undefined],
      ['probe.uses-up-the-next-window', 'pass', undefined],
      ['ratelimit.recovers-after-retry-after', 'pass', undefined],
    ])
  }, 60_000)
})

describe('ratelimit.recovers-after-retry-after, a Retry-After given as an HTTP-date', () => {
  it('waits it out as it waits out seconds (RFC 9110 allows either)', async () => {
    const recovery = await recoveryThrough(t.config(['--seed', '15']), {
      id: 'retry-after-as-date',
      description: 'Retry-After as the HTTP-date the wait ends at',
      targets: [],
      response: (_req, res): ProxiedResponse => ({ ...res, headers: retryAfterAsDate(res.headers) }),
    })
    expect(recovery?.outcome, recovery?.message).toBe('pass')
  }, 60_000)
})

describe('ratelimit.recovers-after-retry-after, the other windows', () => {
  it('fails a window that announced at the 429 a reset that had not come by the probe (the hourly one said 1 s)', async () => {
    const recovery = await recoveryThrough(t.config(['--seed', '14']), {
      id: 'hourly-reset-too-soon',
      description: 'the hourly window announces its reset 1 s away',
      targets: [],
      response(_req, res): ProxiedResponse {
        const value = res.headers.ratelimit
        if (!value) return res
        return {
          ...res,
          headers: { ...res.headers, ratelimit: value.replace(/("hourly";r=\d+);t=\d+/, '$1;t=1') },
        }
      },
    })
    expect(recovery?.outcome, recovery?.message).toBe('fail')
    expect(recovery?.message).toMatch(
      /the hourly window announced at the 429 that it resets in 1 s, but [0-9.]+ s later its remaining went from \d+ to \d+: it had not reset/,
    )
  }, 60_000)
})

describe("the 429 search (ratelimit.exact-limit's count)", () => {
  it('counts again from a fresh window when its count straddled two (the remaining quota went up on the way)', async () => {
    const config = t.config(['--seed', '13'])
    // The first 429 of the count becomes what a window rolling over at that moment answers: a 200 with the new
    // window's quota less this request. The next request meets the real, still shut window: one more request than
    // announced was served, which is no fault of the deployment.
    let rolled = false
    t.proxy.mutant = {
      id: 'window-rolls-over-mid-count',
      description: 'the burst window rolls over in the middle of the count',
      targets: [],
      response(req, res): ProxiedResponse {
        if (rolled || res.status !== 429) return res
        if (header(req, 'authorization') !== `Bearer ${String(config.tokens.rateLimited)}`) return res
        rolled = true
        const { 'retry-after': _, ...headers } = res.headers
        return {
          status: 200,
          headers: { ...headers, 'content-type': 'application/json', ratelimit: '"burst";r=4;t=3' },
          body: '{"data":[],"next_cursor":null}',
        }
      },
    }
    const summary = await run(config, only('ratelimit.exact-limit'))
    t.proxy.mutant = undefined
    expect(rolled).toBe(true)
    expect(summary.results.map((r) => [r.id, r.outcome, r.message])).toEqual([
      ['ratelimit.exact-limit', 'pass', undefined],
    ])
  }, 60_000)
})
