/**
 * The origin a client reached this server at, for documents that name their own server (`/openapi.json`, so the
 * docs page's "Test request" and code samples target the server that served them, whatever its port or proxy).
 *
 * Read from the first hop's `Forwarded` (RFC 7239) or `X-Forwarded-Proto`/`X-Forwarded-Host`, else the request's
 * own scheme and `Host`. Every value is checked against a strict grammar (a scheme of `http` or `https`; a host
 * name, IPv4 or bracketed IPv6 address with an optional port, nothing else), so a header can never smuggle a path,
 * credentials or markup into the document; a value that fails falls back to the next source. Answers that depend
 * on these headers must say so with `Vary` (ORIGIN_VARY) so a shared cache never serves one client's origin to
 * another.
 */
const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]{0,252})(?::\d{1,5})?$/
const SCHEMES = new Set(['http', 'https'])

export const ORIGIN_VARY = 'Host, Forwarded, X-Forwarded-Host, X-Forwarded-Proto'

type HeaderReader = (name: string) => string | undefined

function firstValue(value: string | undefined): string | undefined {
  const first = value?.split(',')[0]?.trim()
  return first ? first : undefined
}

/** `proto` and `host` of the first element of an RFC 7239 `Forwarded` header (quoted or not). */
function forwardedPairs(value: string | undefined): { proto?: string; host?: string } {
  const element = firstValue(value)
  if (!element) return {}
  const out: { proto?: string; host?: string } = {}
  for (const pair of element.split(';')) {
    const eq = pair.indexOf('=')
    if (eq < 0) continue
    const name = pair.slice(0, eq).trim().toLowerCase()
    const raw = pair.slice(eq + 1).trim()
    const unquoted = raw.startsWith('"') && raw.endsWith('"') && raw.length >= 2 ? raw.slice(1, -1) : raw
    if (name === 'proto') out.proto = unquoted
    else if (name === 'host') out.host = unquoted
  }
  return out
}

const validScheme = (s: string | undefined): string | undefined => {
  const lower = s?.toLowerCase()
  return lower && SCHEMES.has(lower) ? lower : undefined
}
const validHost = (h: string | undefined): string | undefined => (h && HOST.test(h) ? h : undefined)

/** The origin (`scheme://host[:port]`) the request was addressed to; `requestUrl` is the server's own view. */
export function requestOrigin(requestUrl: string, header: HeaderReader): string {
  const own = new URL(requestUrl)
  const forwarded = forwardedPairs(header('forwarded'))
  const scheme =
    validScheme(forwarded.proto) ??
    validScheme(firstValue(header('x-forwarded-proto'))) ??
    own.protocol.slice(0, -1)
  const host =
    validHost(forwarded.host) ??
    validHost(firstValue(header('x-forwarded-host'))) ??
    validHost(header('host')) ??
    own.host
  try {
    return new URL(`${scheme}://${host}`).origin
  } catch {
    // A syntactically valid but impossible host (a port over 65535): the server's own view is always a URL.
    return own.origin
  }
}
