/**
 * Reads the rate-limit windows an answer announces. Spec §8: "Burst and sustained headers are present on every
 * response" and "Names of the rate-limit headers: not shown", so the suite reads the header families people use
 * and whatever a deployment declares (`rateLimitHeaders` in --config):
 *
 * - IETF structured `RateLimit: "burst";r=4;t=7, "hourly";r=990;t=2040` with `RateLimit-Policy` (q, w), or the
 *   earlier drafts' one window `RateLimit: limit=100, remaining=25, reset=5`;
 * - one set per window with the window in the name: `X-RateLimit-Burst-Remaining`, `RateLimit-Hourly-Reset`,
 *   `X-RateLimit-Remaining-Minute` (Kong style);
 * - a single unnamed set (`X-RateLimit-Remaining`/`-Reset`, `RateLimit-Remaining`/`-Reset`) is one window;
 * - a reset in delta seconds, as a Unix time, or as a date (RFC 3339 or an HTTP-date);
 * - each of these also written `Rate-Limit` (`X-Rate-Limit-Burst-Remaining`).
 */
import type { WindowHeaders } from './config.js'

export interface RateWindow {
  name: string
  remaining: number
  /** Seconds until the window resets (a Unix time is turned into seconds from now). */
  reset: number
  /** The window's quota, when announced. */
  limit?: number
  /** The window's length in seconds, when announced. */
  length?: number
}

function number(value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  const n = Number(value.trim())
  return Number.isFinite(n) ? n : undefined
}

/** A reset far beyond any window is a Unix time, not a delta. */
function seconds(reset: number, nowMs: number): number {
  return reset > 1_000_000_000 ? Math.max(0, reset - nowMs / 1000) : reset
}

/**
 * A reset header's seconds from now: delta seconds, a Unix time, or a date (RFC 3339 or an HTTP-date, as some
 * deployments write when the window resets).
 */
function resetIn(value: string | undefined, nowMs: number): number | undefined {
  const n = number(value)
  if (n !== undefined) return seconds(n, nowMs)
  const at = value === undefined || !/\d{4}/.test(value) ? Number.NaN : Date.parse(value.trim())
  return Number.isNaN(at) ? undefined : Math.max(0, (at - nowMs) / 1000)
}

/** One item of a structured-field list: its name and its numeric parameters. */
export interface LimitItem {
  name: string
  params: Record<string, number>
}

/** Parses structured-field lists like `"burst";r=99;t=7, "hourly";r=998;t=2040` (items without parameters left out). */
export function parseLimitList(value: string | undefined): LimitItem[] {
  if (!value) return []
  return value.split(/,(?=\s*"|\s*[A-Za-z][\w-]*;)/).flatMap((part) => {
    const [rawName, ...params] = part.trim().split(';')
    const name = (rawName ?? '').trim().replace(/^"|"$/g, '')
    if (name === '' || params.length === 0) return []
    return [
      {
        name,
        params: Object.fromEntries(
          params.map((p) => {
            const [k, v] = p.split('=')
            return [(k ?? '').trim(), Number(v)]
          }),
        ),
      },
    ]
  })
}

const NAMED =
  /^(?:x-)?rate-?limit-(?:([a-z0-9]+)-(remaining|reset|limit)|(remaining|reset|limit)-([a-z0-9]+))$/
const UNNAMED = /^(?:x-)?rate-?limit-(remaining|reset|limit)$/

/** Every window the headers announce, each with its remaining count and reset. */
export function rateWindows(
  headers: Record<string, string>,
  declared?: { burst: WindowHeaders; sustained: WindowHeaders },
  nowMs = Date.now(),
): RateWindow[] {
  const h = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]))
  if (declared) {
    return (['burst', 'sustained'] as const).flatMap((name) => {
      const d = declared[name]
      const remaining = number(h[d.remaining])
      const reset = resetIn(h[d.reset], nowMs)
      if (remaining === undefined || reset === undefined) return []
      const limit = d.limit ? number(h[d.limit]) : undefined
      return [{ name, remaining, reset, ...(limit !== undefined ? { limit } : {}) }]
    })
  }
  const out: RateWindow[] = []
  const policy = parseLimitList(h['ratelimit-policy'])
  for (const item of parseLimitList(h.ratelimit)) {
    const { r, t } = item.params
    if (r === undefined || t === undefined || !Number.isFinite(r) || !Number.isFinite(t)) continue
    const p = policy.find((x) => x.name === item.name)?.params
    out.push({
      name: item.name,
      remaining: r,
      reset: seconds(t, nowMs),
      ...(p?.q !== undefined && Number.isFinite(p.q) ? { limit: p.q } : {}),
      ...(p?.w !== undefined && Number.isFinite(p.w) ? { length: p.w } : {}),
    })
  }
  if (out.length > 0) return out
  // The earlier drafts' one dictionary, one window: `RateLimit: limit=100, remaining=25, reset=5`.
  const dictionary = dictionaryWindow(h.ratelimit, nowMs)
  if (dictionary) out.push(dictionary)
  const named = new Map<string, Record<string, number>>()
  for (const [key, value] of Object.entries(h)) {
    const m = NAMED.exec(key)
    if (!m) continue
    const window = (m[1] ?? m[4])!
    const field = (m[2] ?? m[3])!
    const n = field === 'reset' ? resetIn(value, nowMs) : number(value)
    if (n !== undefined) named.set(window, { ...named.get(window), [field]: n })
  }
  for (const [name, f] of named) {
    if (f.remaining === undefined || f.reset === undefined) continue
    out.push({
      name,
      remaining: f.remaining,
      reset: f.reset,
      ...(f.limit !== undefined ? { limit: f.limit } : {}),
    })
  }
  const single: Record<string, number> = {}
  for (const [key, value] of Object.entries(h)) {
    const m = UNNAMED.exec(key)
    if (!m) continue
    const n = m[1] === 'reset' ? resetIn(value, nowMs) : number(value)
    if (n !== undefined) single[m[1]!] = n
  }
  if (single.remaining !== undefined && single.reset !== undefined)
    out.push({
      name: 'unnamed',
      remaining: single.remaining,
      reset: single.reset,
      ...(single.limit !== undefined ? { limit: single.limit } : {}),
    })
  return out
}

/** `limit=100, remaining=25, reset=5` (draft-ietf-httpapi-ratelimit-headers up to -07): one unnamed window. */
function dictionaryWindow(value: string | undefined, nowMs: number): RateWindow | undefined {
  if (!value) return undefined
  const field = (key: string) => number(new RegExp(`(?:^|[,;\\s])${key}=([^,;\\s]+)`).exec(value)?.[1])
  const remaining = field('remaining')
  const reset = field('reset')
  if (remaining === undefined || reset === undefined) return undefined
  const limit = field('limit')
  return {
    name: 'unnamed',
    remaining,
    reset: seconds(reset, nowMs),
    ...(limit !== undefined ? { limit } : {}),
  }
}

/** Whether the headers mention rate limiting at all (to tell "other names" from "no headers"). */
export function mentionsRateLimit(headers: Record<string, string>): boolean {
  return Object.keys(headers).some((k) => /rate-?limit/i.test(k))
}
