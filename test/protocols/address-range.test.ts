import { describe, expect, it } from 'vitest'
import { type AddressRange, isInRanges, parseAddressRange, parseTrustedProxies } from '../../src/protocols/address-range'
import { prefixOf } from '../../src/protocols/reasons'

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
