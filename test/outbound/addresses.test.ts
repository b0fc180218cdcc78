import { describe, expect, it } from 'vitest'
import { isNonPublicAddress } from '../../src/outbound/addresses.js'

/** One address inside (first, last or in between) every range the guard refuses, named by the range. */
const NON_PUBLIC: [range: string, addresses: string[]][] = [
  ['0.0.0.0/8 this network', ['0.0.0.0', '0.255.255.255']],
  ['10.0.0.0/8 private', ['10.0.0.1', '10.255.255.255']],
  ['100.64.0.0/10 shared (CGNAT)', ['100.64.0.1', '100.127.255.254']],
  ['127.0.0.0/8 loopback', ['127.0.0.1', '127.1.2.3']],
  ['169.254.0.0/16 link-local', ['169.254.169.254', '169.254.0.1']],
  ['172.16.0.0/12 private', ['172.16.0.1', '172.31.255.255']],
  ['192.0.0.0/24 IETF assignments', ['192.0.0.8']],
  ['192.0.2.0/24 TEST-NET-1', ['192.0.2.1']],
  ['192.88.99.0/24 6to4 relay', ['192.88.99.1']],
  ['192.168.0.0/16 private', ['192.168.1.1']],
  ['198.18.0.0/15 benchmarking', ['198.18.0.1', '198.19.255.255']],
  ['198.51.100.0/24 TEST-NET-2', ['198.51.100.7']],
  ['203.0.113.0/24 TEST-NET-3', ['203.0.113.9']],
  ['224.0.0.0/4 multicast', ['224.0.0.1', '239.255.255.255']],
  ['240.0.0.0/4 reserved and broadcast', ['240.0.0.1', '255.255.255.255']],
  ['::/128 unspecified', ['::']],
  ['::1/128 loopback', ['::1', '0:0:0:0:0:0:0:1']],
  ['::ffff:0:0/96 IPv4-mapped, dotted', ['::ffff:127.0.0.1', '::ffff:10.0.0.1', '::FFFF:169.254.169.254']],
  ['::ffff:0:0/96 IPv4-mapped, hex (as URL parsing writes it)', ['::ffff:7f00:1', '::ffff:a9fe:a9fe']],
  ['::/96 IPv4-compatible (deprecated)', ['::127.0.0.1', '::8.8.8.8']],
  ['64:ff9b::/96 NAT64 of a private address', ['64:ff9b::10.0.0.1', '64:ff9b::7f00:1']],
  ['64:ff9b:1::/48 local-use translation', ['64:ff9b:1::1']],
  ['100::/64 discard', ['100::1']],
  ['2001::/23 IETF assignments (Teredo ...)', ['2001::1', '2001:2::1']],
  ['2001:db8::/32 documentation', ['2001:db8::1']],
  ['2002::/16 6to4 of a private address', ['2002:7f00:1::1', '2002:0a00:0001::']],
  ['3fff::/20 documentation', ['3fff::1']],
  ['5f00::/16 segment routing', ['5f00::1']],
  ['fc00::/7 unique local', ['fc00::1', 'fd12:3456::1']],
  ['fe80::/10 link-local', ['fe80::1', 'fe80::1%eth0', 'febf::1']],
  ['fec0::/10 site-local', ['fec0::1']],
  ['ff00::/8 multicast', ['ff02::1']],
  ['not an address', ['example.com', '', '1.2.3', '::g']],
]

const PUBLIC = [
  '8.8.8.8',
  '93.184.216.34',
  '1.1.1.1',
  '100.63.255.255', // just below 100.64.0.0/10
  '100.128.0.0', // just above it
  '172.32.0.1', // just above 172.16.0.0/12
  '198.17.255.255', // just below 198.18.0.0/15
  '198.20.0.0', // just above it
  '2606:4700::1111',
  '2a00:1450:4001::200e',
  '::ffff:8.8.8.8', // mapped, judged by its IPv4 part
  '64:ff9b::808:808', // NAT64 of 8.8.8.8
  '2002:808:808::1', // 6to4 of 8.8.8.8
]

describe('non-public address ranges', () => {
  it.each(NON_PUBLIC)('refuses %s', (_range, addresses) => {
    for (const a of addresses) expect(isNonPublicAddress(a), a).toBe(true)
  })

  it.each(PUBLIC)('lets the public %s through', (address) => {
    expect(isNonPublicAddress(address)).toBe(false)
  })
})
