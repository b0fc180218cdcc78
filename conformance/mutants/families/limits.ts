/**
 * Rate-limit headers that are present but say nothing true (spec §8: "Burst and sustained headers are present on
 * every response"): one window only, none on errors, a remaining count that never moves, a reset beyond its window or
 * announced too soon.
 */
import {
  errorAnswer,
  header,
  type Mutant,
  type ProxiedRequest,
  type ProxiedResponse,
  pathOnly,
} from '../proxy.js'

/** Drops the structured items (and policies) of the given window name from RateLimit and RateLimit-Policy. */
function withoutWindow(res: ProxiedResponse, name: string): ProxiedResponse {
  const drop = (v: string | undefined) =>
    v
      ?.split(/,\s*(?=")/)
      .filter((item) => !item.startsWith(`"${name}"`))
      .join(', ')
  const headers = { ...res.headers }
  for (const key of ['ratelimit', 'ratelimit-policy']) {
    const kept = drop(headers[key])
    if (kept !== undefined) headers[key] = kept
  }
  return { ...res, headers }
}

/** Rewrites every `;r=N` / `;t=N` parameter of the RateLimit header. */
function editState(res: ProxiedResponse, edit: (param: 'r' | 't', n: number) => number): ProxiedResponse {
  const value = res.headers.ratelimit
  if (!value) return res
  const next = value.replace(/;([rt])=(\d+)/g, (_m, p: 'r' | 't', n: string) => `;${p}=${edit(p, Number(n))}`)
  return { ...res, headers: { ...res.headers, ratelimit: next } }
}

/** The traffic the sweep needs to judge: 2xx and 4xx answers of authenticated requests. */
const SWEEP_TRAFFIC = [
  'auth',
  'tools.register-inspect-list',
  'pagination.bad-cursor',
  'ratelimit.429-at-limit',
]

function withoutRateLimitHeaders(res: ProxiedResponse): ProxiedResponse {
  const headers = Object.fromEntries(Object.entries(res.headers).filter(([k]) => !/rate-?limit/i.test(k)))
  return { ...res, headers }
}

export function limitMutants(): Mutant[] {
  return [
    {
      id: 'ratelimit-sustained-window-only',
      description: 'Answers announce the hourly window only: no burst headers',
      targets: ['sweep.ratelimit-headers-everywhere', 'ratelimit.remaining-counts-down'],
      run: [...SWEEP_TRAFFIC, 'ratelimit.remaining-counts-down', 'sweep.ratelimit-headers-everywhere'],
      response: (_req, res) => withoutWindow(res, 'burst'),
    },
    {
      id: 'ratelimit-headers-on-success-only',
      description: 'Rate-limit headers are set on 2xx answers only, not on 4xx or 429',
      targets: ['sweep.ratelimit-headers-everywhere'],
      run: [...SWEEP_TRAFFIC, 'sweep.ratelimit-headers-everywhere'],
      response: (_req, res) => (res.status < 400 ? res : withoutRateLimitHeaders(res)),
    },
    {
      id: 'ratelimit-headers-not-on-stream-get',
      description:
        "An authenticated plain GET of the stream is refused without the rate-limit headers (the stream's path skips the count)",
      targets: ['sweep.ratelimit-headers-everywhere'],
      run: [...SWEEP_TRAFFIC, 'stream.plain-get-refused', 'sweep.ratelimit-headers-everywhere'],
      response(req, res) {
        if (req.method !== 'GET' || pathOnly(req.path) !== '/v1/stream') return res
        return withoutRateLimitHeaders(res)
      },
    },
    {
      id: 'ratelimit-refused-write-performed',
      description:
        'Every third tool registration is performed and then answered 429 (the count judged after the work, as a write counted alongside it would be)',
      targets: ['ratelimit.refused-write-has-no-effect'],
      run: ['ratelimit.refused-write-has-no-effect'],
      response: (() => {
        let registrations = 0
        return (req: ProxiedRequest, res: ProxiedResponse): ProxiedResponse => {
          if (req.method !== 'POST' || pathOnly(req.path) !== '/v1/tools' || res.status >= 300) return res
          if (++registrations % 3 !== 0) return res
          const refusal = errorAnswer(429, 'rate_limited', 'Rate limit exceeded')
          return { ...refusal, headers: { ...res.headers, ...refusal.headers, 'retry-after': '1' } }
        }
      })(),
    },
    {
      id: 'ratelimit-remaining-frozen',
      description: 'remaining is a constant (the quota less one) whatever was used',
      targets: ['ratelimit.remaining-counts-down'],
      response: (_req, res) => editState(res, (p, n) => (p === 'r' ? 3 : n)),
    },
    {
      id: 'ratelimit-counts-twice',
      description: 'Each request is counted twice in the burst window, so remaining falls by two',
      targets: ['ratelimit.remaining-counts-down'],
      response(_req, res) {
        const value = res.headers.ratelimit
        if (!value) return res
        const limit = /"burst";q=(\d+)/.exec(res.headers['ratelimit-policy'] ?? '')?.[1]
        const next = value.replace(/"burst";r=(\d+)/, (_m, r: string) => {
          const used = Number(limit ?? 0) - Number(r)
          return `"burst";r=${Math.max(0, Number(limit ?? 0) - 2 * used)}`
        })
        return { ...res, headers: { ...res.headers, ratelimit: next } }
      },
    },
    {
      id: 'ratelimit-reset-beyond-window',
      description: 'reset is announced past the end of the window it belongs to',
      targets: ['ratelimit.remaining-counts-down'],
      response: (_req, res) => editState(res, (p, n) => (p === 't' ? n + 4000 : n)),
    },
    {
      // A reset computed as at most a second away (Stryker's Math.max → Math.min on the reference's resetSeconds):
      // the refusing window may happen to reopen within that second; the hourly one never does.
      id: 'ratelimit-reset-announced-too-soon',
      description: 'every window announces its reset 1 s away, and a 429 says Retry-After: 1',
      targets: ['ratelimit.recovers-after-retry-after'],
      response: (_req, res) => {
        const edited = editState(res, (p, n) => (p === 't' ? 1 : n))
        return res.status === 429 ? { ...edited, headers: { ...edited.headers, 'retry-after': '1' } } : edited
      },
    },
    tierGiven(
      'standardTier',
      10_000,
      'A standard-tier workspace gets the pro tier’s 10,000 requests an hour',
    ),
    tierGiven('proTier', 1_000, 'A pro-tier workspace gets the standard tier’s 1,000 requests an hour'),
    retiredToolsKeepRoom(),
  ]
}

/**
 * The workspace of one tier's key on another hourly quota (a tier's defaults mixed up, or an operator's figure
 * applied to a tier that has its own): its answers' hourly window, the one an hour long, announces that quota and
 * what is left of it.
 */
function tierGiven(role: 'standardTier' | 'proTier', quota: number, description: string): Mutant {
  return {
    id: `ratelimit-${role === 'standardTier' ? 'standard' : 'pro'}-tier-quota`,
    description,
    targets: ['ratelimit.tier-limits'],
    response(req, res, ctx) {
      const token = ctx.tokens[role]
      if (!token || header(req, 'authorization') !== `Bearer ${token}`) return res
      const policy = res.headers['ratelimit-policy'] ?? ''
      const hourly = /"([^"]+)";q=(\d+);w=3600\b/.exec(policy)
      if (!hourly) return res
      const [, name, was] = hourly
      const ratelimit = (res.headers.ratelimit ?? '').replace(
        new RegExp(`"${name}";r=(\\d+)`),
        (_m, r: string) => `"${name}";r=${Math.max(0, Number(r) + quota - Number(was))}`,
      )
      return {
        ...res,
        headers: {
          ...res.headers,
          ratelimit,
          'ratelimit-policy': policy.replace(`"${name}";q=${was}`, `"${name}";q=${quota}`),
        },
      }
    },
  }
}

/**
 * A retired tool still counted against its workspace's tools quota (Stryker's mutant of the quota release on
 * retirement): once a key has retired a tool, its workspace's next registration is refused as over the quota.
 */
function retiredToolsKeepRoom(): Mutant {
  const retiredBy = new Set<string>()
  const TOOL = /^\/v1\/tools\/[^/]+$/
  return {
    id: 'quota-retired-tool-keeps-room',
    description: 'A retired tool still counts against the workspace’s tools quota: the room never comes back',
    targets: ['quotas.room-returns'],
    request(req) {
      const key = req.headers.authorization ?? ''
      if (req.method === 'DELETE' && TOOL.test(pathOnly(req.path))) retiredBy.add(key)
      if (req.method === 'POST' && pathOnly(req.path) === '/v1/tools' && retiredBy.has(key))
        return errorAnswer(403, 'quota_exceeded', 'The active tools quota is 1 and 1 is used', {
          quota: 'tools',
          limit: 1,
          used: 1,
        })
      return req
    },
  }
}
