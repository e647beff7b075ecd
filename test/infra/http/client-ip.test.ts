import { describe, expect, it } from 'vitest'
import { type AddressRange, isInRanges, parseAddressRange, parseTrustedProxies, resolveClientIp } from '../../../src/infra/http/client-ip'
import { prefixOf } from '../../../src/protocols/reasons'

const ranges = (...entries: string[]): AddressRange[] => {
  const r = parseTrustedProxies(entries)
  if (!r.ok) throw new Error(r.error)
  return r.value
}

describe('trusted proxy ranges', () => {
  it.each([
    ['an IPv4 address alone is a range of one', '10.0.0.5', '10.0.0.5', '10.0.0.6'],
    ['an IPv4 /8', '10.0.0.0/8', '10.255.3.4', '11.0.0.0'],
    ['an IPv4 /0 matches every IPv4 address', '0.0.0.0/0', '203.0.113.7', '::1'],
    ['an IPv4 /31 boundary', '192.0.2.2/31', '192.0.2.3', '192.0.2.4'],
    ['host bits under the prefix are masked off', '10.0.0.1/8', '10.9.9.9', '12.0.0.1'],
    ['an IPv6 address alone', '2001:db8::1', '2001:0db8:0:0:0:0:0:1', '2001:db8::2'],
    ['an IPv6 /32', '2001:db8::/32', '2001:db8:ffff::1', '2001:db9::1'],
    ['an IPv6 /127, in uppercase', '2001:DB8::/127', '2001:db8::1', '2001:db8::2'],
    ['an IPv6 /64 that ends mid-group', 'fd00:1:2:3::/64', 'fd00:1:2:3:ffff::9', 'fd00:1:2:4::'],
    ['the IPv6 loopback', '::1', '::1', '::2'],
    ['an IPv4-mapped range covers the IPv4 peers it maps', '::ffff:10.0.0.0/104', '10.1.2.3', '11.0.0.1'],
    ['an IPv4 range covers a dual-stack peer written ::ffff:a.b.c.d', '127.0.0.0/8', '::ffff:127.0.0.1', '::1'],
  ])('%s', (_, entry, inside, outside) => {
    const r = ranges(entry)
    expect(isInRanges(inside, r)).toBe(true)
    expect(isInRanges(outside, r)).toBe(false)
  })

  it.each([
    ['a host name', 'proxy.internal'],
    ['a prefix over 32 for IPv4', '10.0.0.0/33'],
    ['a prefix over 128 for IPv6', '2001:db8::/129'],
    ['an empty prefix', '10.0.0.0/'],
    ['a prefix with a sign', '10.0.0.0/+8'],
    ['a prefix with a leading zero', '10.0.0.0/08'],
    ['two prefixes', '10.0.0.0/8/8'],
    ['an IPv4 octet with a leading zero', '010.0.0.1'],
    ['a zone', 'fe80::1%eth0'],
    ['brackets', '[::1]'],
    ['a port', '10.0.0.1:80'],
    ['an IPv4-mapped range reaching past the mapped block', '::ffff:0.0.0.0/95'],
    ['the empty string', ''],
  ])('refuses %s with invalid:', (_, entry) => {
    const r = parseAddressRange(entry)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(prefixOf(r.error)).toBe('invalid')
  })

  it('never matches anything with no ranges, nor an unparsable address with some', () => {
    expect(isInRanges('127.0.0.1', [])).toBe(false)
    expect(isInRanges('not-an-ip', ranges('0.0.0.0/0', '::/0'))).toBe(false)
  })
})

describe('the client address behind proxies', () => {
  const proxies = ranges('127.0.0.1', '10.0.0.0/8', 'fd00::/8')

  it.each<[string, string | undefined, string | string[] | undefined, string]>([
    // an untrusted peer: the header is ignored, whatever it says
    ['an untrusted peer without a header is itself', '203.0.113.9', undefined, '203.0.113.9'],
    ['an untrusted peer with a spoofed header is still itself', '203.0.113.9', '198.51.100.1', '203.0.113.9'],
    ['an untrusted peer is written canonically', '::ffff:203.0.113.9', '198.51.100.1', '203.0.113.9'],
    ['an untrusted IPv6 peer is compressed and lowercase', '2001:DB8:0:0:0:0:0:9', undefined, '2001:db8::9'],
    // a trusted peer: walk from the right
    ['a trusted peer without a header is itself', '127.0.0.1', undefined, '127.0.0.1'],
    ['a trusted peer with an empty header is itself', '127.0.0.1', '', '127.0.0.1'],
    ['one hop', '127.0.0.1', '198.51.100.1', '198.51.100.1'],
    ['a dual-stack trusted peer', '::ffff:127.0.0.1', '198.51.100.1', '198.51.100.1'],
    ['the right-most untrusted hop, not what the client wrote to its left', '127.0.0.1', '6.6.6.6, 198.51.100.1', '198.51.100.1'],
    ['trusted hops on the right are skipped', '127.0.0.1', '6.6.6.6, 198.51.100.1, 10.1.1.1, 10.2.2.2', '198.51.100.1'],
    ['all hops trusted: the left-most', '127.0.0.1', '10.3.3.3, 10.1.1.1', '10.3.3.3'],
    ['spaces and tabs around hops', '127.0.0.1', ' 6.6.6.6 ,\t198.51.100.1  ', '198.51.100.1'],
    ['no spaces at all', '127.0.0.1', '6.6.6.6,198.51.100.1,10.0.0.2', '198.51.100.1'],
    ['empty list elements are skipped (RFC 9110 §5.6.1)', '127.0.0.1', '198.51.100.1,, ,10.0.0.2,', '198.51.100.1'],
    ['several header lines read as one list, in order', '127.0.0.1', ['6.6.6.6, 198.51.100.1', '10.0.0.2'], '198.51.100.1'],
    ['the last header line holds the right-most hop', '127.0.0.1', ['198.51.100.1', '198.51.100.2'], '198.51.100.2'],
    ['an IPv6 hop, canonical', '127.0.0.1', '2001:0DB8::0001', '2001:db8::1'],
    ['an IPv4-mapped hop, as IPv4', '127.0.0.1', '::ffff:198.51.100.1', '198.51.100.1'],
    ['an IPv6 trusted range is skipped too', 'fd00::1', '2001:db8::7, fd12::3', '2001:db8::7'],
    // garbage where the walk reads: the peer
    ['a name where the client should be', '127.0.0.1', 'client.example', '127.0.0.1'],
    ['an address with a port', '127.0.0.1', '198.51.100.1:4711', '127.0.0.1'],
    ['a bracketed IPv6 address', '127.0.0.1', '[2001:db8::1]', '127.0.0.1'],
    ['"unknown", as some proxies write', '127.0.0.1', 'unknown', '127.0.0.1'],
    ['a zone', '127.0.0.1', 'fe80::1%eth0', '127.0.0.1'],
    ['an obfuscated IPv4', '127.0.0.1', '0x7f.1', '127.0.0.1'],
    ['garbage behind a trusted hop', '127.0.0.1', 'junk, 10.0.0.2', '127.0.0.1'],
    // garbage the walk never reaches does not matter
    ['garbage left of the client', '127.0.0.1', 'junk, 198.51.100.1', '198.51.100.1'],
    // a socket with no address (already gone)
    ['a peer with no address', undefined, '198.51.100.1', '0.0.0.0'],
  ])('%s', (_, peer, header, client) => {
    expect(resolveClientIp(peer, header, proxies)).toBe(client)
  })

  it('ignores the header entirely when no proxy is trusted', () => {
    expect(resolveClientIp('127.0.0.1', '198.51.100.1', [])).toBe('127.0.0.1')
  })
})
