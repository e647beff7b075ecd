import { describe, expect, it } from 'vitest'
import {
  maxHostsPerCommunity,
  maxInviteSeconds,
  maxInviteUses,
  minInviteSeconds,
  parseCommunityIdParam,
  parseCreateCommunityParams,
  parseCreateInviteParams,
  parseSetAgentTierParams,
} from '../../src/protocols/nip86/community-params'
import { prefixOf } from '../../src/protocols/reasons'

const PUBKEY = 'ab'.repeat(32)
const refusal = (r: { ok: boolean; error?: string }) => (r.ok ? undefined : prefixOf(r.error ?? ''))

describe('parsing setagenttier params', () => {
  it.each(['standard', 'elevated', 'platform', 'none'])('accepts the tier %s', (tier) => {
    expect(parseSetAgentTierParams([PUBKEY, tier])).toEqual({ ok: true, value: { pubkey: PUBKEY, tier } })
  })

  it.each([
    ['an unknown tier', [PUBKEY, 'admin']],
    ['a missing tier', [PUBKEY]],
    ['an npub', ['npub1xyz', 'standard']],
    ['uppercase hex', [PUBKEY.toUpperCase(), 'standard']],
  ])('refuses %s with invalid:', (_, params) => {
    expect(refusal(parseSetAgentTierParams(params))).toBe('invalid')
  })
})

describe('parsing createcommunity params', () => {
  it('takes an id and hosts, lowercases and de-duplicates the hosts, and defaults name and admins', () => {
    expect(parseCreateCommunityParams(['hive', ['Hive.Example', 'hive.example', 'hive.example:8443']])).toEqual({
      ok: true,
      value: { id: 'hive', hosts: ['hive.example', 'hive.example:8443'], name: undefined, admins: [] },
    })
  })

  it('keeps a name and admins', () => {
    expect(parseCreateCommunityParams(['hive', ['h.example'], 'The Hive', [PUBKEY]])).toMatchObject({
      ok: true,
      value: { name: 'The Hive', admins: [PUBKEY] },
    })
  })

  it.each([
    ['an id with capitals', ['Hive', ['h.example']]],
    ['an id with a slash', ['a/b', ['h.example']]],
    ['no hosts', ['hive', []]],
    ['hosts that are not a list', ['hive', 'h.example']],
    ['a host with a path', ['hive', ['h.example/x']]],
    ['too many hosts', ['hive', Array.from({ length: maxHostsPerCommunity + 1 }, (_, i) => `h${i}.example`)]],
    ['a name that is not a string', ['hive', ['h.example'], 42]],
    ['an admin that is not a pubkey', ['hive', ['h.example'], 'Hive', ['npub1xyz']]],
  ])('refuses %s with invalid:', (_, params) => {
    expect(refusal(parseCreateCommunityParams(params as unknown[]))).toBe('invalid')
  })
})

describe('parsing archivecommunity params', () => {
  it('takes a community id', () => {
    expect(parseCommunityIdParam(['hive'])).toEqual({ ok: true, value: 'hive' })
    expect(refusal(parseCommunityIdParam([]))).toBe('invalid')
    expect(refusal(parseCommunityIdParam(['../x']))).toBe('invalid')
  })
})

describe('parsing createinvite params', () => {
  it('defaults to one use for a day, and keeps what is given within the bounds', () => {
    expect(parseCreateInviteParams([])).toEqual({ ok: true, value: { seconds: 86_400, uses: 1 } })
    expect(parseCreateInviteParams([minInviteSeconds, maxInviteUses])).toEqual({
      ok: true,
      value: { seconds: minInviteSeconds, uses: maxInviteUses },
    })
    expect(parseCreateInviteParams([maxInviteSeconds])).toEqual({ ok: true, value: { seconds: maxInviteSeconds, uses: 1 } })
  })

  it.each([
    ['seconds one under the least', [minInviteSeconds - 1]],
    ['seconds one over the most', [maxInviteSeconds + 1]],
    ['uses one over the most', [3600, maxInviteUses + 1]],
    ['no use at all', [3600, 0]],
    ['a fraction of a second', [90.5]],
    ['seconds as a string', ['3600']],
  ])('refuses %s with invalid:', (_, params) => {
    expect(refusal(parseCreateInviteParams(params))).toBe('invalid')
  })
})
