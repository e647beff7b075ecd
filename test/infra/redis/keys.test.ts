import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  cacheInvalidationChannel,
  connControlChannel,
  consoleAgentsKey,
  consoleNodeKey,
  consoleNodesKey,
  consoleWatchAgentsKey,
  eventsChannel,
  ipApiKey,
  ipAuthKey,
  ipConnKey,
  ipOpenKey,
  meshReadyKey,
  nip98Key,
  type ParsedChannel,
  parseChannel,
  presenceKey,
  rateLimitKey,
  sessionGenerationKey,
  sessionLeaseKey,
} from '../../../src/infra/redis/keys'
import { parseIpSegment } from '../../../src/protocols/ip-address'
import { isChannelId } from '../../../src/protocols/nip29'
import { prefixOf } from '../../../src/protocols/reasons'

const PK = 'ab'.repeat(32)
const ID = '0f'.repeat(32)
const LOOPBACK6 = '0000-0000-0000-0000-0000-0000-0000-0001'

describe('Redis key and channel names', () => {
  it.each([
    [rateLimitKey('acme', PK, 'events'), `apiary:{acme}:rl:${PK}:events`],
    [rateLimitKey('acme', PK, 'reqs'), `apiary:{acme}:rl:${PK}:reqs`],
    [rateLimitKey('acme', 'ip:203.0.113.7', 'api'), 'apiary:{acme}:rl:ip:203.0.113.7:api'],
    [rateLimitKey('acme', 'ip:::1', 'api'), `apiary:{acme}:rl:ip:${LOOPBACK6}:api`],
    [ipConnKey('203.0.113.7'), 'apiary:ip:203.0.113.7:conn'],
    [ipConnKey('2001:DB8::1'), 'apiary:ip:2001-0db8-0000-0000-0000-0000-0000-0001:conn'],
    [ipOpenKey('::ffff:203.0.113.7'), 'apiary:ip:203.0.113.7:open'],
    [ipOpenKey('2001:DB8::1'), 'apiary:ip:2001-0db8-0000-0000-0000-0000-0000-0001:open'],
    [ipApiKey('203.0.113.7'), 'apiary:ip:203.0.113.7:api'],
    [ipApiKey('::1'), `apiary:ip:${LOOPBACK6}:api`],
    [ipAuthKey('::ffff:203.0.113.7'), 'apiary:ip:203.0.113.7:auth'],
    [nip98Key('acme', ID), `apiary:{acme}:nip98:${ID}`],
    [presenceKey('a-1', PK), `apiary:{a-1}:presence:${PK}`],
    [eventsChannel('acme'), 'apiary:{acme}:ev:global'],
    [eventsChannel('acme', 'dev_ops-2'), 'apiary:{acme}:ev:dev_ops-2'],
    [eventsChannel('acme', 'aB3xY9kLm2Qp'), 'apiary:{acme}:ev:a%423x%599k%4cm2%51p'],
    [eventsChannel('acme', 'a:b'), 'apiary:{acme}:ev:a%3ab'],
    [eventsChannel('acme', '{x}*'), 'apiary:{acme}:ev:%7bx%7d%2a'],
    [eventsChannel('acme', '%41'), 'apiary:{acme}:ev:%2541'],
    [eventsChannel('acme', 'café'), 'apiary:{acme}:ev:caf%c3%a9'],
    [connControlChannel('acme'), 'apiary:{acme}:conn-control'],
    [cacheInvalidationChannel('acme'), 'apiary:{acme}:cache-invalidation'],
    [sessionLeaseKey('acme', 'channel:dev_ops-2'), 'apiary:{acme}:session:channel:dev_ops-2:lease'],
    [sessionGenerationKey('acme', 'channel:general'), 'apiary:{acme}:session:channel:general:generation'],
    [meshReadyKey(PK), `apiary:mesh:ready:${PK}`],
    [consoleNodeKey(PK, 'a1b2-c3'), `apiary:console:{${PK}}:node:a1b2-c3`],
    [consoleAgentsKey(PK, 'a1b2-c3'), `apiary:console:{${PK}}:agents:a1b2-c3`],
    [consoleNodesKey(PK), `apiary:console:{${PK}}:nodes`],
    [consoleWatchAgentsKey(PK), `apiary:console:{${PK}}:watch-agents`],
  ])('formats %s', (got, want) => {
    expect(got).toBe(want)
  })

  it('gives one IP a single budget whatever spelling it arrives in', () => {
    const spellings = ['::ffff:203.0.113.7', '::FFFF:cb00:7107', '0:0:0:0:0:ffff:203.0.113.7', '203.0.113.7']
    for (const s of spellings) expect(ipConnKey(s)).toBe('apiary:ip:203.0.113.7:conn')
    for (const s of ['::1', '0:0:0:0:0:0:0:1', '0000::0001', '::0:1']) expect(ipConnKey(s)).toBe(`apiary:ip:${LOOPBACK6}:conn`)
    expect(ipConnKey('fe80::1%eth0')).toBe(ipConnKey('FE80::1'))
    expect(parseIpSegment(LOOPBACK6)).toEqual({ ok: true, value: LOOPBACK6 })
  })

  it.each([
    ['an uppercase community', () => eventsChannel('Acme')],
    ['a community with a colon', () => connControlChannel('a:b')],
    ['a community with a brace', () => connControlChannel('a}b')],
    ['a community starting with a dash', () => connControlChannel('-a')],
    ['an empty community', () => presenceKey('', PK)],
    ['a 64-character community (limit 63)', () => presenceKey(`a${'b'.repeat(63)}`, PK)],
    ['an uppercase pubkey', () => rateLimitKey('acme', PK.toUpperCase(), 'events')],
    ['a 63-digit pubkey', () => presenceKey('acme', PK.slice(1))],
    ['an uppercase event id', () => nip98Key('acme', ID.toUpperCase())],
    ['an unknown principal kind', () => rateLimitKey('acme', 'npub1xyz', 'events')],
    ['an uppercase IP principal tag', () => rateLimitKey('acme', 'IP:1.2.3.4', 'events')],
    ['an unknown limit type', () => rateLimitKey('acme', PK, 'connections' as 'events')],
    ['a channel named global (reserved)', () => eventsChannel('acme', 'global')],
    ['a channel id with a space', () => eventsChannel('acme', 'a b')],
    ['a channel id with a control character', () => eventsChannel('acme', 'a\u0085')],
    ['a 65-character channel id (limit 64)', () => eventsChannel('acme', 'c'.repeat(65))],
    ['a socket with no address', () => ipConnKey('unknown')],
    ['a name as an open-socket count address', () => ipOpenKey('relay.example')],
    ['an address with a port as an api budget address', () => ipApiKey('203.0.113.7:80')],
    ['a session of an unknown kind', () => sessionLeaseKey('acme', 'room:general')],
    ['a session id with an uppercase channel', () => sessionGenerationKey('acme', 'channel:Dev')],
    ['a session id with a brace', () => sessionLeaseKey('acme', 'channel:a}b')],
    ['a 65-character session channel id (limit 64)', () => sessionLeaseKey('acme', `channel:${'c'.repeat(65)}`)],
    ['an uppercase runtime id', () => meshReadyKey(PK.toUpperCase())],
  ])('refuses to format a key from %s (a bug, so RangeError)', (_what, format) => {
    expect(format).toThrow(RangeError)
  })

  it('refuses a console node id that is not lowercase, or a cluster that is not a key', () => {
    expect(() => consoleNodeKey(PK, 'Node-A')).toThrow(RangeError)
    expect(() => consoleNodeKey(PK, 'a:b')).toThrow(RangeError)
    expect(() => consoleNodesKey('acme')).toThrow(RangeError)
  })

  it('accepts a channel id of exactly 64 characters', () => {
    expect(eventsChannel('acme', 'c'.repeat(64))).toBe(`apiary:{acme}:ev:${'c'.repeat(64)}`)
    expect(eventsChannel('acme', '_')).toBe('apiary:{acme}:ev:_')
  })
})

describe('parsing channel names', () => {
  it.each<[string, ParsedChannel]>([
    ['apiary:{acme}:ev:global', { community: 'acme', kind: 'events' }],
    ['apiary:{acme}:ev:dev_ops-2', { community: 'acme', kind: 'events', channelId: 'dev_ops-2' }],
    ['apiary:{acme}:ev:a%3ab', { community: 'acme', kind: 'events', channelId: 'a:b' }],
    ['apiary:{acme}:ev:%44ev', { community: 'acme', kind: 'events', channelId: 'Dev' }],
    ['apiary:{0}:conn-control', { community: '0', kind: 'conn-control' }],
    ['apiary:{a-b}:cache-invalidation', { community: 'a-b', kind: 'cache-invalidation' }],
  ])('reads %s', (name, want) => {
    expect(parseChannel(name)).toEqual({ ok: true, value: want })
  })

  it.each([
    'other:{acme}:conn-control',
    'Apiary:{acme}:conn-control',
    'apiary:acme:conn-control',
    'apiary:{acme:conn-control',
    'apiary:{Acme}:conn-control',
    'apiary:{-acme}:conn-control',
    'apiary:{}:conn-control',
    'apiary:{{acme}}:conn-control',
    'apiary:{acme}}:conn-control',
    'apiary:{acme}:conn-control:x',
    'apiary:{acme}:CONN-CONTROL',
    'apiary:{acme}:ev',
    'apiary:{acme}:ev:',
    'apiary:{acme}:ev:a:b',
    'apiary:{acme}:ev:Global',
    'apiary:{acme}:EV:global',
    'apiary:{acme}:conn-control\n',
    ' apiary:{acme}:conn-control',
    `apiary:{acme}:rl:${PK}:events`,
    'apiary:ip:1.2.3.4:conn',
    `apiary:{acme}:ev:${'c'.repeat(65)}`,
    'apiary:{acme}:ev:%61',
    'apiary:{acme}:ev:%3A',
    'apiary:{acme}:ev:%67lobal',
    'apiary:{acme}:ev:a%20b',
    'apiary:{acme}:ev:%ff',
    'apiary:{acme}:ev:%ed%a0%80',
    'apiary:{acme}:ev:%4',
    '',
  ])('refuses %j as "invalid:"', (name) => {
    const r = parseChannel(name)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(prefixOf(r.error)).toBe('invalid')
  })

  const community = fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,62}$/)
  const channelId = fc
    .oneof(fc.stringMatching(/^[a-z0-9_-]{1,64}$/), fc.string({ unit: 'binary', minLength: 1, maxLength: 64 }))
    .filter((id) => isChannelId(id) && id !== 'global')
  const channel = fc.oneof(
    fc.record({ community, kind: fc.constant('events' as const) }),
    fc.record({ community, kind: fc.constant('events' as const), channelId }),
    fc.record({ community, kind: fc.constantFrom('conn-control' as const, 'cache-invalidation' as const) }),
  )
  const format = (c: ParsedChannel): string =>
    c.kind === 'events'
      ? eventsChannel(c.community, c.channelId)
      : c.kind === 'conn-control'
        ? connControlChannel(c.community)
        : cacheInvalidationChannel(c.community)

  it('reads back every channel it formats (property)', () => {
    fc.assert(
      fc.property(channel, (c) => {
        expect(parseChannel(format(c))).toEqual({ ok: true, value: c })
      }),
      { numRuns: 500 },
    )
  })

  it('accepts only names a formatter produces, byte for byte (property)', () => {
    const nearMiss = fc.oneof(
      fc.string(),
      channel
        .map(format)
        .chain((n) => fc.tuple(fc.nat(n.length), fc.string({ maxLength: 3 })).map(([i, s]) => n.slice(0, i) + s + n.slice(i + s.length))),
    )
    fc.assert(
      fc.property(nearMiss, (name) => {
        const r = parseChannel(name)
        if (r.ok) expect(format(r.value)).toBe(name)
      }),
      { numRuns: 1000 },
    )
  })
})
