/**
 * The connect-time half of the guard that keeps outbound calls off private networks: a socket `lookup` that checks
 * every address a name resolves to, and the per-host verdict on a literal address. With addresses.ts and
 * private-targets.ts (which ranges are refused, which targets an operator lists) it is the reference's own safety and
 * outside the mutation run (conformance/stryker/scope.mjs OUT_OF_SCOPE): no spec sentence says where a webhook may
 * point, and what a suite can reach of it is the creation-time refusal (`OutboundHttp.refusal`, in http.ts) and a
 * listed name's delivery, never a name that resolves to a private address.
 */
import { promises as dns, type LookupAddress } from 'node:dns'
import { isIP, type LookupFunction } from 'node:net'

/** Resolves a host name to every address it has (the system resolver unless a test gives another). */
export type Resolve = (hostname: string) => Promise<LookupAddress[]>

export const systemResolve: Resolve = (hostname) => dns.lookup(hostname, { all: true, verbatim: true })

export class PrivateAddressError extends Error {
  readonly code = 'EPRIVATEADDRESS'
  constructor(address: string) {
    super(`refused to connect to non-public address ${address}`)
    this.name = 'PrivateAddressError'
  }
}

/**
 * The socket's own `lookup`: the name is resolved once, every answer is checked, and the socket connects to the
 * checked answers only. There is no separate resolution before the connect, so no DNS-rebinding window.
 */
export function guardedLookup(resolve: Resolve, blocks: (address: string) => boolean): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (found) => {
        const family = options.family === 4 || options.family === 6 ? options.family : 0
        const addresses = family === 0 ? found : found.filter((a) => a.family === family)
        const bad = addresses.find((a) => blocks(a.address))
        if (bad) return callback(new PrivateAddressError(bad.address), [])
        const first = addresses[0]
        if (!first) {
          const err: NodeJS.ErrnoException = new Error(`no address for ${hostname}`)
          err.code = 'ENOTFOUND'
          return callback(err, [])
        }
        if (options.all) return callback(null, addresses)
        callback(null, first.address, first.family)
      },
      (err: NodeJS.ErrnoException) => callback(err, []),
    )
  }
}

/** How many hosts' verdicts a client remembers; past that it starts over (a bound, not a cache policy). */
const REMEMBERED_HOSTS = 1_024

/**
 * Whether a URL's host is a literal address the guard refuses, remembered per host: the check builds a socket
 * address for the block list on every call, and a client calls the same few hosts over and over. The verdict on a
 * literal address never changes; a name is checked on each new connection by the guarded lookup, not here.
 */
export function literalRefusal(blocks: (address: string) => boolean): (host: string) => boolean {
  const known = new Map<string, boolean>()
  return (host) => {
    let refused = known.get(host)
    if (refused === undefined) {
      refused = isIP(host) !== 0 && blocks(host)
      if (known.size >= REMEMBERED_HOSTS) known.clear()
      known.set(host, refused)
    }
    return refused
  }
}
