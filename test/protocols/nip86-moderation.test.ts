import { describe, expect, it } from 'vitest'
import { maxBanReasonChars } from '../../src/protocols/nip86/methods'
import {
  maxIconUrlChars,
  maxIpChars,
  maxKind,
  maxRelayDescriptionChars,
  maxRelayNameChars,
  maxTimeoutSeconds,
  minTimeoutSeconds,
  parseCommunityPolicyParams,
  parseEventIdParams,
  parseIpParams,
  parseKindParam,
  parseRelayDescriptionParam,
  parseRelayIconParam,
  parseRelayNameParam,
  parseTimeoutPubkeyParams,
} from '../../src/protocols/nip86/moderation-params'
import { prefixOf } from '../../src/protocols/reasons'
import type { Result } from '../../src/protocols/result'
import { ID, PUBKEY } from './fixtures'

const expectInvalid = (r: Result<unknown>) => {
  expect(r.ok).toBe(false)
  if (!r.ok) expect(prefixOf(r.error)).toBe('invalid')
}

/** An http URL exactly `length` characters long. */
const urlOfLength = (length: number) => {
  const head = 'https://icons.example/'
  return head + 'a'.repeat(length - head.length)
}

describe('parsing banevent and allowevent params', () => {
  it.each([
    ['an id and a reason', [ID, 'spam'], { value: ID, reason: 'spam' }],
    ['an id alone', [ID], { value: ID, reason: undefined }],
    ['an id and an empty reason', [ID, ''], { value: ID, reason: undefined }],
    ['an id and a null reason', [ID, null], { value: ID, reason: undefined }],
    ['a reason at the length limit', [ID, 'r'.repeat(maxBanReasonChars)], { value: ID, reason: 'r'.repeat(maxBanReasonChars) }],
  ])('accepts %s', (_, params, value) => {
    expect(parseEventIdParams(params)).toEqual({ ok: true, value })
  })

  it.each([
    ['no params', []],
    ['an upper-case id', [ID.toUpperCase()]],
    ['a 63-character id', [ID.slice(1)]],
    ['a numeric id', [42]],
    ['a numeric reason', [ID, 5]],
    ['a reason one over the length limit', [ID, 'r'.repeat(maxBanReasonChars + 1)]],
  ])('refuses %s with invalid:', (_, params) => {
    expectInvalid(parseEventIdParams(params))
  })
})

describe('parsing blockip and unblockip params', () => {
  it.each([
    ['an IPv4 address and a reason', ['203.0.113.7', 'scraper'], { value: '203.0.113.7', reason: 'scraper' }],
    ['an IPv6 address alone', ['2001:db8::1'], { value: '2001:db8::1', reason: undefined }],
    ['an address at the length limit', ['a'.repeat(maxIpChars)], { value: 'a'.repeat(maxIpChars), reason: undefined }],
  ])('accepts the shape of %s', (_, params, value) => {
    expect(parseIpParams(params)).toEqual({ ok: true, value })
  })

  it.each([
    ['no params', []],
    ['an empty address', ['']],
    ['an address one over the length limit', ['a'.repeat(maxIpChars + 1)]],
    ['a numeric address', [3_405_803_783]],
    ['a reason one over the length limit', ['203.0.113.7', 'r'.repeat(maxBanReasonChars + 1)]],
  ])('refuses %s with invalid:', (_, params) => {
    expectInvalid(parseIpParams(params))
  })
})

describe('parsing timeoutpubkey params', () => {
  it.each([
    ['the shortest timeout', [PUBKEY, minTimeoutSeconds], { pubkey: PUBKEY, seconds: minTimeoutSeconds, reason: undefined }],
    ['the longest timeout (30 days)', [PUBKEY, maxTimeoutSeconds], { pubkey: PUBKEY, seconds: maxTimeoutSeconds, reason: undefined }],
    ['a timeout with a reason', [PUBKEY, 600, 'cool off'], { pubkey: PUBKEY, seconds: 600, reason: 'cool off' }],
  ])('accepts %s', (_, params, value) => {
    expect(parseTimeoutPubkeyParams(params)).toEqual({ ok: true, value })
  })

  it.each([
    ['no seconds', [PUBKEY]],
    ['zero seconds', [PUBKEY, minTimeoutSeconds - 1]],
    ['one second over 30 days', [PUBKEY, maxTimeoutSeconds + 1]],
    ['fractional seconds', [PUBKEY, 1.5]],
    ['seconds as a string', [PUBKEY, '60']],
    ['a bad pubkey', ['npub1xyz', 60]],
    ['a reason one over the length limit', [PUBKEY, 60, 'r'.repeat(maxBanReasonChars + 1)]],
  ])('refuses %s with invalid:', (_, params) => {
    expectInvalid(parseTimeoutPubkeyParams(params))
  })
})

describe('parsing changerelayname, changerelaydescription and changerelayicon params', () => {
  it('accepts a name at the length limit and refuses one character more', () => {
    expect(parseRelayNameParam(['n'.repeat(maxRelayNameChars)])).toEqual({ ok: true, value: 'n'.repeat(maxRelayNameChars) })
    expectInvalid(parseRelayNameParam(['n'.repeat(maxRelayNameChars + 1)]))
  })

  it.each([
    ['no name', []],
    ['an empty name', ['']],
    ['a name of spaces', ['   ']],
    ['a numeric name', [7]],
  ])('refuses %s with invalid:', (_, params) => {
    expectInvalid(parseRelayNameParam(params))
  })

  it('accepts a description at the length limit, and an empty one (the relay-wide one shows again)', () => {
    const text = 'd'.repeat(maxRelayDescriptionChars)
    expect(parseRelayDescriptionParam([text])).toEqual({ ok: true, value: text })
    expect(parseRelayDescriptionParam([''])).toEqual({ ok: true, value: '' })
  })

  it.each([
    ['no description', []],
    ['a description one over the length limit', ['d'.repeat(maxRelayDescriptionChars + 1)]],
    ['a description that is a list', [['a']]],
  ])('refuses %s with invalid:', (_, params) => {
    expectInvalid(parseRelayDescriptionParam(params))
  })

  it.each([
    ['an https URL', 'https://icons.example/hive.png'],
    ['an http URL', 'http://icons.example/hive.png'],
    ['a URL at the length limit', urlOfLength(maxIconUrlChars)],
    ['an empty string (no icon)', ''],
  ])('accepts as icon %s', (_, url) => {
    expect(parseRelayIconParam([url])).toEqual({ ok: true, value: url })
  })

  it.each([
    ['a URL one over the length limit', [urlOfLength(maxIconUrlChars + 1)]],
    ['a data: URL', ['data:image/png;base64,AAAA']],
    ['a javascript: URL', ['javascript:alert(1)']],
    ['a relative path', ['/hive.png']],
    ['no URL', []],
    ['a number', [1]],
  ])('refuses as icon %s with invalid:', (_, params) => {
    expectInvalid(parseRelayIconParam(params))
  })
})

describe('parsing allowkind and disallowkind params', () => {
  it.each([
    ['kind 0', 0],
    ['kind 1', 1],
    ['the largest kind', maxKind],
  ])('accepts %s', (_, kind) => {
    expect(parseKindParam([kind])).toEqual({ ok: true, value: kind })
  })

  it.each([
    ['one over the largest kind', [maxKind + 1]],
    ['a negative kind', [-1]],
    ['a fractional kind', [1.5]],
    ['a kind as a string', ['1']],
    ['no kind', []],
  ])('refuses %s with invalid:', (_, params) => {
    expectInvalid(parseKindParam(params))
  })
})

describe('parsing setcommunitypolicy params', () => {
  it.each([
    ['every field', { readPolicy: 'members', writePolicy: 'authenticated', authRequired: true }],
    ['a read policy alone', { readPolicy: 'public' }],
    ['a write policy alone', { writePolicy: 'members' }],
    ['authRequired false alone', { authRequired: false }],
    ['the two member-list flags', { publicMemberLists: true, membersInvite: false }],
  ])('accepts %s', (_, patch) => {
    expect(parseCommunityPolicyParams([patch])).toEqual({ ok: true, value: patch })
  })

  it.each([
    ['no params', []],
    ['an empty object', [{}]],
    ['a list instead of an object', [['public']]],
    ['an unknown policy', [{ readPolicy: 'friends' }]],
    ['a capitalised policy', [{ writePolicy: 'Public' }]],
    ['authRequired as a string', [{ authRequired: 'true' }]],
    ['membersInvite as a number', [{ membersInvite: 1 }]],
    ['an unknown field', [{ readPolicy: 'public', paid: true }]],
    ['null', [null]],
  ])('refuses %s with invalid:', (_, params) => {
    expectInvalid(parseCommunityPolicyParams(params))
  })
})
