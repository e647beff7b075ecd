import { describe, expect, it } from 'vitest'
import { resolveClientIp } from '../../../src/infra/http/client-ip'
import { type AddressRange, parseTrustedProxies } from '../../../src/protocols/address-range'

const ranges = (...entries: string[]): AddressRange[] => {
  const r = parseTrustedProxies(entries)
  if (!r.ok) throw new Error(r.error)
  return r.value
}

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
