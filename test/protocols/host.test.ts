import { describe, expect, it } from 'vitest'
import { type HostScheme, normalizeHost } from '../../src/protocols/host'

describe('normalizing the Host header that picks the community', () => {
  const table: { header: string | undefined; scheme: HostScheme; out: string | undefined }[] = [
    { header: 'bees.example.com', scheme: 'wss', out: 'bees.example.com' },
    { header: 'Bees.Example.COM', scheme: 'https', out: 'bees.example.com' },
    { header: 'bees.example.com.', scheme: 'wss', out: 'bees.example.com' },
    { header: 'bees.example.com:443', scheme: 'wss', out: 'bees.example.com' },
    { header: 'bees.example.com:443', scheme: 'https', out: 'bees.example.com' },
    { header: 'bees.example.com:80', scheme: 'ws', out: 'bees.example.com' },
    { header: 'bees.example.com:80', scheme: 'http', out: 'bees.example.com' },
    { header: 'bees.example.com:443', scheme: 'ws', out: 'bees.example.com:443' },
    { header: 'bees.example.com:80', scheme: 'wss', out: 'bees.example.com:80' },
    { header: 'localhost:7777', scheme: 'ws', out: 'localhost:7777' },
    { header: 'localhost.:7777', scheme: 'ws', out: 'localhost:7777' },
    { header: '127.0.0.1:7777', scheme: 'ws', out: '127.0.0.1:7777' },
    { header: '[::1]:7777', scheme: 'ws', out: '[::1]:7777' },
    { header: '[::1]', scheme: 'ws', out: '[::1]' },
    { header: '[::1]:80', scheme: 'ws', out: '[::1]' },
    { header: '[FE80::1]:443', scheme: 'wss', out: '[fe80::1]' },
    { header: 'host:65535', scheme: 'ws', out: 'host:65535' },
    { header: undefined, scheme: 'ws', out: undefined },
    { header: '', scheme: 'ws', out: undefined },
    { header: '.', scheme: 'ws', out: undefined },
    { header: 'bees example.com', scheme: 'ws', out: undefined },
    { header: ' bees.example.com', scheme: 'ws', out: undefined },
    { header: 'user@bees.example.com', scheme: 'ws', out: undefined },
    { header: 'bees.example.com/path', scheme: 'ws', out: undefined },
    { header: 'a:b:c', scheme: 'ws', out: undefined },
    { header: '::1', scheme: 'ws', out: undefined },
    { header: 'host:', scheme: 'ws', out: undefined },
    { header: 'host:0', scheme: 'ws', out: undefined },
    { header: 'host:65536', scheme: 'ws', out: undefined },
    { header: 'host:http', scheme: 'ws', out: undefined },
    { header: '[::1', scheme: 'ws', out: undefined },
    { header: '[::1]x', scheme: 'ws', out: undefined },
    { header: '[]', scheme: 'ws', out: undefined },
    { header: '[bees]', scheme: 'ws', out: undefined },
    { header: 'bees..example.com', scheme: 'ws', out: undefined },
    { header: '-bees.example.com', scheme: 'ws', out: undefined },
    { header: 'bées.example.com', scheme: 'ws', out: undefined },
    { header: `${'a'.repeat(64)}.example.com`, scheme: 'ws', out: undefined },
  ]

  it.each(table)('maps $header over $scheme to $out', ({ header, scheme, out }) => {
    expect(normalizeHost(header, scheme)).toBe(out)
  })
})
