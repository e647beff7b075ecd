import { describe, expect, it } from 'vitest'
import { toCanonicalIp } from '../../../src/infra/http/nip86/moderation'
import { prefixOf } from '../../../src/protocols/reasons'

describe('the one spelling blockip stores for an address', () => {
  it.each([
    ['IPv4 as given', '203.0.113.7', '203.0.113.7'],
    ['IPv6 in lowercase', '2001:DB8::1', '2001:db8::1'],
    ['IPv6 fully written out, compressed', '2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::1'],
    ['IPv6 with the longest zero run compressed', '2001:db8:0:0:1:0:0:0', '2001:db8:0:0:1::'],
    ['IPv6 with two equal zero runs: the first compressed', '2001:0:0:1:0:0:1:1', '2001::1:0:0:1:1'],
    ['IPv6 with a single zero group left as 0', '2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
    ['the loopback', '::1', '::1'],
    ['the unspecified address', '::', '::'],
    ['an IPv4-mapped IPv6 address, as its IPv4 form (how dual-stack sockets report IPv4 peers)', '::ffff:203.0.113.7', '203.0.113.7'],
  ])('%s', (_, input, canonical) => {
    expect(toCanonicalIp(input)).toEqual({ ok: true, value: canonical })
  })

  it.each([
    ['a host name', 'relay.example'],
    ['IPv4 with a leading zero (octal in some parsers)', '203.0.113.07'],
    ['IPv4 with an octet over 255', '203.0.113.256'],
    ['a bracketed IPv6 address', '[::1]'],
    ['an address with a port', '203.0.113.7:80'],
    ['an IPv6 address with a zone', 'fe80::1%eth0'],
    ['the rate limiter key spelling', '2001-0db8-0000-0000-0000-0000-0000-0001'],
    ['a CIDR range', '203.0.113.0/24'],
  ])('refuses %s with invalid:', (_, input) => {
    const r = toCanonicalIp(input)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(prefixOf(r.error)).toBe('invalid')
  })
})
