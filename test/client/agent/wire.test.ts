import { describe, expect, it } from 'vitest'
import { announcementTemplate, capabilitiesOf, toDiscovered } from '../../../src/client/agent/registry-wire'
import { leaseSecondsOf, toHttpUrl, toProbe } from '../../../src/client/agent/relay-info'
import { reqFiltersOf } from '../../../src/client/agent/subscriptions'
import type { NostrEvent } from '../../../src/protocols/nip01/event'

const NOW_MS = 1_800_000_000_000
const NOW = NOW_MS / 1000
let n = 0
const ev = (pubkey: string, kind: number, created_at: number, content = '', tags: string[][] = []): NostrEvent => ({
  id: (++n).toString(16).padStart(64, '0'),
  pubkey,
  created_at,
  kind,
  tags,
  content,
  sig: '0'.repeat(128),
})
const announce = (pubkey: string, created_at = NOW - 100, extra: string[][] = []) =>
  ev(pubkey, 31990, created_at, JSON.stringify({ capabilities: [{ name: 'translate', kinds: [5002] }] }), [
    ['d', 'apiary-agent'],
    ['c', 'translate'],
    ['k', '5002'],
    ...extra,
  ])

describe('the capabilities announcement', () => {
  it('carries d, one c per capability, one k per handled kind (the union), version and load with two decimals', () => {
    const t = announcementTemplate(
      [
        { name: 'translate', kinds: [5002, 5003], description: 'to English' },
        { name: 'summarize', kinds: [5003] },
      ],
      '1.0.0',
      0.333,
    )
    expect(t.kind).toBe(31990)
    expect(t.tags).toEqual([
      ['d', 'apiary-agent'],
      ['c', 'translate'],
      ['c', 'summarize'],
      ['k', '5002'],
      ['k', '5003'],
      ['version', '1.0.0'],
      ['load', '0.33'],
    ])
    expect(JSON.parse(t.content)).toEqual({
      capabilities: [
        { name: 'translate', kinds: [5002, 5003], description: 'to English' },
        { name: 'summarize', kinds: [5003] },
      ],
    })
    expect(announcementTemplate([], undefined, 7).tags).toContainEqual(['load', '1.00'])
    expect(announcementTemplate([]).tags).toEqual([['d', 'apiary-agent']])
  })

  it('says how many jobs of each capability it serves the agent runs at once', () => {
    const caps = [
      { name: 'echo', kinds: [] },
      { name: 'shout', kinds: [] },
    ]
    expect(announcementTemplate(caps, undefined, undefined, { echo: 3, shout: 1 }).tags).toEqual([
      ['d', 'apiary-agent'],
      ['c', 'echo'],
      ['c', 'shout'],
      ['concurrency', '3', 'echo'],
      ['concurrency', '1', 'shout'],
    ])
  })

  it('reads capabilities from the tags when the content is not ours', () => {
    const e = ev('a'.repeat(64), 31990, NOW, 'hand-written', [
      ['c', 'echo'],
      ['k', '1'],
      ['k', 'x'],
    ])
    expect(capabilitiesOf(e)).toEqual([{ name: 'echo', kinds: [1] }])
  })
})

describe('mapping announcements and heartbeats to discovered agents', () => {
  const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((x) => x.repeat(64)) as [string, string, string, string]

  it('keeps agents with a live "online" heartbeat, with leaseExpiresAt = (heartbeat created_at + lease) × 1000', () => {
    const found = toDiscovered(
      [
        announce(a, NOW - 100, [
          ['version', '2'],
          ['load', '0.50'],
        ]),
        announce(b),
        announce(c),
        announce(d),
      ],
      [ev(a, 20001, NOW - 10, 'online'), ev(b, 20001, NOW - 45, 'online'), ev(c, 20001, NOW - 1, 'offline')],
      45,
      NOW_MS,
    )
    // b's lease ended exactly now; c said goodbye; d never sent a heartbeat
    expect(found).toEqual([
      { pubkey: a, capabilities: [{ name: 'translate', kinds: [5002] }], version: '2', load: 0.5, leaseExpiresAt: (NOW - 10 + 45) * 1000 },
    ])
  })

  it('uses the newest announcement and the newest heartbeat of each author', () => {
    const older = announce(a, NOW - 200, [['version', '1']])
    const newer = announce(a, NOW - 100, [['version', '2']])
    const found = toDiscovered([newer, older], [ev(a, 20001, NOW - 5, 'online'), ev(a, 20001, NOW - 50, 'online')], 45, NOW_MS)
    expect(found).toHaveLength(1)
    expect(found[0]).toMatchObject({ version: '2', leaseExpiresAt: (NOW - 5 + 45) * 1000 })
  })
})

describe('the NIP-11 probe', () => {
  it.each([
    [{ apiary: { presence: { lease_seconds: 30, heartbeat_seconds: 5 } } }, 30],
    [{ apiary: { presence: { heartbeat_seconds: 5 } } }, 15],
    [{ apiary: {} }, 45],
    [{}, 45],
  ])('takes the lease from %j: %i s', (doc, lease) => {
    expect(leaseSecondsOf(doc)).toBe(lease)
  })

  it('refuses a relay without NIP-01 or NIP-42, naming what is missing', () => {
    expect(() => toProbe('ws://r', { supported_nips: [1, 11] })).toThrow(/NIP-42/)
    expect(() => toProbe('ws://r', {})).toThrow(/NIP-1, NIP-42/)
    expect(toProbe('ws://r', { supported_nips: [1, 42] })).toEqual({ url: 'ws://r', supportedNips: [1, 42], leaseSeconds: 45 })
  })

  it("keeps NIP-11 `self` (the community's key) when it is 64 hex characters", () => {
    const self = 'ab'.repeat(32)
    expect(toProbe('ws://r', { supported_nips: [1, 42], self }).self).toBe(self)
    expect(toProbe('ws://r', { supported_nips: [1, 42], self: 'not a key' })).not.toHaveProperty('self')
  })

  it('asks http(s) for ws(s)', () => {
    expect(toHttpUrl('ws://127.0.0.1:7777')).toBe('http://127.0.0.1:7777')
    expect(toHttpUrl('wss://relay.example/path')).toBe('https://relay.example/path')
  })
})

describe('a resumed subscription', () => {
  const base = { subId: 's', onEvent: () => {}, newestSeconds: undefined, liveSinceSeconds: undefined, errorsInRow: 0, reqRun: 0 }

  it('is sent as given the first time, then from the newest delivered minus the overlap, without limit', () => {
    const filters = [
      { kinds: [1], limit: 10 },
      { kinds: [7], since: NOW - 10 },
    ]
    expect(reqFiltersOf({ ...base, filters }, 60)).toEqual(filters)
    expect(reqFiltersOf({ ...base, filters, newestSeconds: NOW }, 60)).toEqual([
      { kinds: [1], since: NOW - 60 },
      { kinds: [7], since: NOW - 10 },
    ])
    // no event yet, but live since its EOSE
    expect(reqFiltersOf({ ...base, filters, liveSinceSeconds: NOW }, 60)[0]).toEqual({ kinds: [1], since: NOW - 60 })
  })
})
