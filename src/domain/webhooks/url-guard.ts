import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { BlockList, isIP } from 'node:net'
import { ApiError } from '../errors.js'

/** Addresses a webhook may not reach unless the operator allows it: private, loopback, link-local, unspecified. */
const NON_PUBLIC = new BlockList()
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network", includes the unspecified 0.0.0.0
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata endpoints live here
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved and broadcast
] as const) {
  NON_PUBLIC.addSubnet(net, prefix, 'ipv4')
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  NON_PUBLIC.addSubnet(net, prefix, 'ipv6')
}

/** True when the literal IP address is private, loopback, link-local, unspecified or otherwise not public. */
export function isNonPublicAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 4) return NON_PUBLIC.check(address, 'ipv4')
  if (family === 6) {
    // IPv4-mapped (::ffff:a.b.c.d) and NAT64-free embeddings are judged by their IPv4 part.
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
    if (mapped?.[1]) return NON_PUBLIC.check(mapped[1], 'ipv4')
    return NON_PUBLIC.check(address, 'ipv6')
  }
  return true
}

function invalidUrl(message: string): ApiError {
  return new ApiError('invalid_request', message, {
    issues: [{ path: 'url', message }],
    fields: ['url'],
  })
}

/**
 * The checks a subscription URL passes at creation: absolute http(s), no credentials, and (when private targets
 * are not allowed) no literal private address or `localhost`. Names are checked again at every delivery, after
 * DNS resolution, because what a name resolves to can change.
 */
export function checkWebhookUrl(raw: string, allowPrivate: boolean): URL {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw invalidUrl('url must be an absolute http or https URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalidUrl('url must use http or https')
  if (url.username !== '' || url.password !== '') throw invalidUrl('url must not carry credentials')
  if (url.hostname === '') throw invalidUrl('url must name a host')
  if (!allowPrivate) {
    const host = hostOf(url)
    if ((isIP(host) !== 0 && isNonPublicAddress(host)) || isLocalName(host))
      throw invalidUrl('url points at a private, loopback or link-local address')
  }
  return url
}

/** The hostname without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1')
}

function isLocalName(host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '')
  return h === 'localhost' || h.endsWith('.localhost')
}

export class PrivateAddressError extends Error {
  constructor(address: string) {
    super(`refused to connect to non-public address ${address}`)
    this.name = 'PrivateAddressError'
  }
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void

/**
 * A `lookup` for http.request that refuses non-public answers at connection time, so the address checked is the
 * address used (no window for DNS rebinding between a check and the connect).
 */
export function guardedLookup(
  hostname: string,
  options: { all?: boolean; family?: number | string },
  callback: LookupCallback,
): void {
  dnsLookup(hostname, { ...options, all: true } as { all: true }, (err, addresses) => {
    if (err) return callback(err, [])
    const bad = addresses.find((a) => isNonPublicAddress(a.address))
    if (bad) return callback(new PrivateAddressError(bad.address) as NodeJS.ErrnoException, [])
    if (options.all) return callback(null, addresses)
    const first = addresses[0]
    if (!first) return callback(new Error(`no address for ${hostname}`) as NodeJS.ErrnoException, [])
    callback(null, first.address, first.family)
  })
}
