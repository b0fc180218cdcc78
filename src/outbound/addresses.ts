import { BlockList, isIP } from 'node:net'

/**
 * Addresses an outbound call may not reach unless the operator allows private targets: every IPv4 and IPv6
 * range of the IANA special-purpose registries that is not globally reachable (private, loopback, link-local,
 * shared/CGNAT, benchmarking, documentation, multicast, reserved), so a webhook or an `http` tool can never be
 * pointed at the server's own network or a cloud metadata endpoint.
 */
const IPV4_RANGES: readonly (readonly [string, number])[] = [
  ['0.0.0.0', 8], // "this network", includes the unspecified 0.0.0.0
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // shared address space (carrier-grade NAT)
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local; cloud metadata endpoints live here
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // TEST-NET-1
  ['192.88.99.0', 24], // 6to4 relay anycast (deprecated)
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // TEST-NET-2
  ['203.0.113.0', 24], // TEST-NET-3
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, includes broadcast 255.255.255.255
]

const IPV6_RANGES: readonly (readonly [string, number])[] = [
  ['::', 96], // unspecified, loopback and the deprecated IPv4-compatible addresses
  ['64:ff9b:1::', 48], // local-use IPv4/IPv6 translation
  ['100::', 64], // discard-only
  ['2001::', 23], // IETF protocol assignments (Teredo, ORCHIDv2, benchmarking ...)
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation (RFC 9637)
  ['5f00::', 16], // segment routing SIDs
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
]

const NON_PUBLIC = new BlockList()
for (const [net, prefix] of IPV4_RANGES) NON_PUBLIC.addSubnet(net, prefix, 'ipv4')
for (const [net, prefix] of IPV6_RANGES) NON_PUBLIC.addSubnet(net, prefix, 'ipv6')

/** The eight 16-bit groups of an IPv6 address (also with an embedded dotted IPv4 tail), or null. */
function ipv6Groups(address: string): number[] | null {
  let text = address.toLowerCase()
  const zone = text.indexOf('%')
  if (zone >= 0) text = text.slice(0, zone)
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number]
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head = '', tail] = text.split('::')
  const left = head === '' ? [] : head.split(':')
  const right = tail === undefined || tail === '' ? [] : tail.split(':')
  const fill = tail === undefined ? 0 : 8 - left.length - right.length
  const groups = [...left, ...Array<string>(fill).fill('0'), ...right].map((g) => Number.parseInt(g, 16))
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : null
}

/**
 * The IPv4 address an IPv6 address stands for, when it embeds one a connection would reach: IPv4-mapped
 * (::ffff:a.b.c.d, also written ::ffff:7f00:1), the well-known NAT64 prefix 64:ff9b::/96 and 6to4 2002::/16.
 */
function embeddedIpv4(groups: readonly number[]): string | null {
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`
  const [g0, g1, g2, g3, g4, g5, g6, g7] = groups as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ]
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0xffff) return v4(g6, g7)
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return v4(g6, g7)
  if (g0 === 0x2002) return v4(g1, g2)
  return null
}

/**
 * Addresses no outbound call may reach even when the operator lists them as a private target: link-local (every
 * cloud's instance metadata at 169.254.169.254 and fe80::/10) and the metadata endpoints outside it (Alibaba
 * Cloud's 100.100.100.200, Oracle Cloud's 192.0.0.192, AWS's IPv6 fd00:ec2::254).
 */
const NEVER = new BlockList()
NEVER.addSubnet('169.254.0.0', 16, 'ipv4')
NEVER.addAddress('100.100.100.200', 'ipv4')
NEVER.addAddress('192.0.0.192', 'ipv4')
NEVER.addSubnet('fe80::', 10, 'ipv6')
NEVER.addAddress('fd00:ec2::254', 'ipv6')

/** Whether `list` holds the literal address, in any IPv6 spelling that embeds an IPv4 one; not an IP: true. */
function listed(list: BlockList, address: string): boolean {
  const family = isIP(address)
  if (family === 4) return list.check(address, 'ipv4')
  if (family === 6) {
    const groups = ipv6Groups(address)
    if (!groups) return true
    const v4 = embeddedIpv4(groups)
    if (v4 !== null) return list.check(v4, 'ipv4')
    return list.check(address.replace(/%.*$/, ''), 'ipv6')
  }
  return true
}

/** True when the literal IP address is not publicly routable (or is not an IP address at all). */
export function isNonPublicAddress(address: string): boolean {
  return listed(NON_PUBLIC, address)
}

/** True for link-local and cloud metadata addresses, which no allow-list opens (or for what is not an IP). */
export function isNeverAllowedAddress(address: string): boolean {
  return listed(NEVER, address)
}

/** The hostname of a URL without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1')
}

/** `localhost` and its subdomains, which resolve to loopback by definition (RFC 6761). */
export function isLocalName(host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '')
  return h === 'localhost' || h.endsWith('.localhost')
}
