import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseIpSegment, toCanonicalIp, toIpPrincipal } from '../../src/protocols/ip-address'
import { prefixOf } from '../../src/protocols/reasons'

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

describe('IP segments', () => {
  it.each([
    '01.2.3.4',
    '256.1.1.1',
    '1.2.3',
    '1.2.3.4.5',
    '1.2.3.4:80',
    '[::1]',
    '1::2::3',
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7:8::',
    ':::',
    '::1.2.3.4.5',
    'g::1',
    '12345::',
    '1.2.3.4::',
    ':1::',
    '',
    'unknown',
    ' 1.2.3.4',
  ])('refuses %j as "invalid:"', (text) => {
    const r = parseIpSegment(text)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(prefixOf(r.error)).toBe('invalid')
  })

  it('encodes every text form of an IPv6 address alike, and encoding is idempotent (property)', () => {
    const u16 = fc.integer({ min: 0, max: 0xffff })
    fc.assert(
      fc.property(fc.array(u16, { minLength: 8, maxLength: 8 }), fc.boolean(), (groups, upper) => {
        const full = groups.map((g) => g.toString(16).padStart(4, '0')).join(':')
        const compressed = new URL(`http://[${full}]/`).hostname.slice(1, -1) // WHATWG: RFC 5952 form
        const mapped = groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff
        const want = mapped
          ? [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join('.')
          : groups.map((g) => g.toString(16).padStart(4, '0')).join('-')
        for (const text of [full, compressed, upper ? compressed.toUpperCase() : groups.map((g) => g.toString(16)).join(':')]) {
          expect(parseIpSegment(text)).toEqual({ ok: true, value: want })
        }
        expect(parseIpSegment(want)).toEqual({ ok: true, value: want })
      }),
      { numRuns: 300 },
    )
  })

  it('keeps IPv4 dotted and maps ::ffff:a.b.c.d onto it (property)', () => {
    fc.assert(
      fc.property(fc.ipV4(), (ip) => {
        expect(parseIpSegment(ip)).toEqual({ ok: true, value: ip })
        expect(parseIpSegment(`::ffff:${ip}`)).toEqual({ ok: true, value: ip })
      }),
    )
  })
})

describe('the principal an address is charged as', () => {
  const principal = (ip: string, bits = 64) => {
    const p = toIpPrincipal(ip, bits)
    return p.ok ? p.value : p.error
  }

  it('keys every address of one IPv6 /64 on the network, in any spelling', () => {
    expect(principal('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::')
    expect(principal('2001:DB8:1:2:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::')
    expect(principal('2001:db8:1:3::1')).toBe('2001:db8:1:3::')
  })

  it('keeps IPv4 (and IPv4-mapped IPv6) per address', () => {
    expect(principal('203.0.113.7')).toBe('203.0.113.7')
    expect(principal('::ffff:203.0.113.7')).toBe('203.0.113.7')
  })

  it('takes the prefix length from the setting: 128 is per address, a shorter one masks mid-group', () => {
    expect(principal('2001:db8::7', 128)).toBe('2001:db8::7')
    expect(principal('2001:db8:abcd:12ff::1', 56)).toBe('2001:db8:abcd:1200::')
    expect(principal('2001:db8:abcd:12ff::1', 48)).toBe('2001:db8:abcd::')
  })

  it('refuses what is not an address with invalid:', () => {
    const p = toIpPrincipal('example.org', 64)
    expect(p.ok ? 'ok' : prefixOf(p.error)).toBe('invalid')
  })
})
