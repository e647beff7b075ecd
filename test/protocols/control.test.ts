import { describe, expect, it } from 'vitest'
import { KIND_CONTROL, parseControlEvent, toControlTemplate } from '../../src/protocols/control'
import type { NostrEvent } from '../../src/protocols/nip01/event'

const RELAY = 'a'.repeat(64)
const NOW = 1_700_000_000
const expect0 = { relayPubkey: RELAY, community: 'hive', channel: 'conn-control' as const, nowSeconds: NOW, maxAgeSeconds: 60 }
const asEvent = (t: { kind: number; tags: string[][]; content: string }, over: Partial<NostrEvent> = {}): NostrEvent => ({
  id: '0'.repeat(64),
  pubkey: RELAY,
  created_at: NOW,
  sig: '0'.repeat(128),
  ...t,
  ...over,
})
const disconnect = { op: 'DisconnectPubkey' as const, pubkey: 'b'.repeat(64), eventId: 'c'.repeat(64), reason: 'banned' }

describe('cluster control payloads', () => {
  it('round-trips a disconnect and a cache invalidation through their own channels', () => {
    expect(parseControlEvent(asEvent(toControlTemplate('hive', 'conn-control', disconnect)), expect0)).toEqual({
      ok: true,
      value: disconnect,
    })
    const inv = { op: 'InvalidateMembership' as const, channel: 'general', pubkey: 'd'.repeat(64) }
    const parsed = parseControlEvent(asEvent(toControlTemplate('hive', 'cache-invalidation', inv)), {
      ...expect0,
      channel: 'cache-invalidation',
    })
    expect(parsed).toEqual({ ok: true, value: inv })
  })

  it('round-trips the block list invalidation on the cache channel, and refuses it on conn-control', () => {
    const op = { op: 'InvalidateBlockedIps' as const }
    const onCache = { ...expect0, channel: 'cache-invalidation' as const }
    expect(parseControlEvent(asEvent(toControlTemplate('hive', 'cache-invalidation', op)), onCache)).toEqual({ ok: true, value: op })
    expect(parseControlEvent(asEvent(toControlTemplate('hive', 'conn-control', op)), expect0)).toEqual({
      ok: false,
      error: 'unknown or malformed op',
    })
  })

  const refusals: [string, NostrEvent, string][] = [
    ['a foreign signer', asEvent(toControlTemplate('hive', 'conn-control', disconnect), { pubkey: 'e'.repeat(64) }), 'foreign signer'],
    ['another community', asEvent(toControlTemplate('other', 'conn-control', disconnect)), 'wrong community or channel'],
    [
      'a cache op on the conn-control channel',
      asEvent(toControlTemplate('hive', 'conn-control', { op: 'InvalidateAll' })),
      'unknown or malformed op',
    ],
    [
      'a disconnect sent on the cache channel',
      asEvent(toControlTemplate('hive', 'cache-invalidation', disconnect)),
      'wrong community or channel',
    ],
    ['a stale payload', asEvent(toControlTemplate('hive', 'conn-control', disconnect), { created_at: NOW - 61 }), 'stale'],
    [
      'an unknown op',
      asEvent({ kind: KIND_CONTROL, tags: [['c', 'hive', 'conn-control']], content: '{"op":"Reboot"}' }),
      'unknown or malformed op',
    ],
    ['non-JSON content', asEvent({ kind: KIND_CONTROL, tags: [['c', 'hive', 'conn-control']], content: 'kick' }), 'content is not JSON'],
    [
      'a bad pubkey in the op',
      asEvent(toControlTemplate('hive', 'conn-control', { ...disconnect, pubkey: 'XYZ' })),
      'unknown or malformed op',
    ],
    [
      'another kind',
      asEvent({ kind: 1, tags: [['c', 'hive', 'conn-control']], content: JSON.stringify(disconnect) }),
      'not a control event',
    ],
  ]
  for (const [what, e, why] of refusals) {
    it(`refuses ${what}`, () => {
      expect(parseControlEvent(e, expect0)).toEqual({ ok: false, error: why })
    })
  }

  it('accepts a payload at the edge of the age window and refuses one past it', () => {
    const at = (created_at: number) =>
      parseControlEvent(asEvent(toControlTemplate('hive', 'conn-control', disconnect), { created_at }), expect0).ok
    expect([at(NOW - 60), at(NOW + 60), at(NOW - 61), at(NOW + 61)]).toEqual([true, true, false, false])
  })
})
