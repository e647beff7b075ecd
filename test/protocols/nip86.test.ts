import { describe, expect, it } from 'vitest'
import {
  isNip86Method,
  maxBanReasonChars,
  NIP86_METHODS,
  parseBanPubkeyParams,
  parseNip86Request,
  toNip86Error,
  toNip86Result,
} from '../../src/protocols/nip86/methods'
import { prefixOf } from '../../src/protocols/reasons'
import { PUBKEY } from './fixtures'

describe('parsing a NIP-86 request body', () => {
  it.each([
    ['a method with params', '{"method":"banpubkey","params":["x","y"]}', { method: 'banpubkey', params: ['x', 'y'] }],
    ['a method with empty params', '{"method":"supportedmethods","params":[]}', { method: 'supportedmethods', params: [] }],
    ['a method without params (as [])', '{"method":"supportedmethods"}', { method: 'supportedmethods', params: [] }],
    [
      'a method nobody supports (refused later, as unsupported)',
      '{"method":"frobnicate","params":[]}',
      { method: 'frobnicate', params: [] },
    ],
  ])('accepts %s', (_, body, value) => {
    expect(parseNip86Request(body)).toEqual({ ok: true, value })
  })

  it.each([
    ['text that is not JSON', 'ban them'],
    ['an empty body', ''],
    ['a JSON array', '["banpubkey"]'],
    ['JSON null', 'null'],
    ['no method', '{"params":[]}'],
    ['a numeric method', '{"method":7,"params":[]}'],
    ['an empty method', '{"method":"","params":[]}'],
    ['a 65-character method', `{"method":"${'m'.repeat(65)}","params":[]}`],
    ['params that are an object', '{"method":"banpubkey","params":{"pubkey":"x"}}'],
  ])('refuses %s with invalid:', (_, body) => {
    const r = parseNip86Request(body)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(prefixOf(r.error)).toBe('invalid')
  })

  it('accepts a 64-character method (the limit)', () => {
    expect(parseNip86Request(`{"method":"${'m'.repeat(64)}"}`).ok).toBe(true)
  })
})

describe('the methods this relay answers', () => {
  it("are NIP-86's, then Apiary's timed ban, access policy, invite and community methods", () => {
    expect([...NIP86_METHODS]).toEqual([
      'supportedmethods',
      'banpubkey',
      'listbannedpubkeys',
      'unbanpubkey',
      'allowpubkey',
      'unallowpubkey',
      'listallowedpubkeys',
      'banevent',
      'allowevent',
      'listbannedevents',
      'changerelayname',
      'changerelaydescription',
      'changerelayicon',
      'allowkind',
      'disallowkind',
      'listallowedkinds',
      'listdisallowedkinds',
      'blockip',
      'unblockip',
      'listblockedips',
      'timeoutpubkey',
      'setcommunitypolicy',
      'setagenttier',
      'listagents',
      'setagentrole',
      'setroledomain',
      'setchannelroles',
      'listroledomains',
      'createinvite',
      'createcommunity',
      'archivecommunity',
      'listcommunities',
    ])
    expect(isNip86Method('banpubkey')).toBe(true)
    expect(isNip86Method('allowpubkey')).toBe(true)
    expect(isNip86Method('createrole')).toBe(false)
  })
})

describe('parsing banpubkey params', () => {
  it.each([
    ['a pubkey and a reason', [PUBKEY, 'spam'], { pubkey: PUBKEY, reason: 'spam' }],
    ['a pubkey alone', [PUBKEY], { pubkey: PUBKEY, reason: undefined }],
    ['a pubkey and an empty reason', [PUBKEY, ''], { pubkey: PUBKEY, reason: undefined }],
    ['a reason at the length limit', [PUBKEY, 'r'.repeat(maxBanReasonChars)], { pubkey: PUBKEY, reason: 'r'.repeat(maxBanReasonChars) }],
  ])('accepts %s', (_, params, value) => {
    expect(parseBanPubkeyParams(params)).toEqual({ ok: true, value })
  })

  it.each([
    ['no params', []],
    ['an upper-case pubkey', [PUBKEY.toUpperCase()]],
    ['a short pubkey', ['abc']],
    ['an npub', ['npub1xyz']],
    ['a numeric reason', [PUBKEY, 5]],
    ['a reason one over the length limit', [PUBKEY, 'r'.repeat(maxBanReasonChars + 1)]],
  ])('refuses %s with invalid:', (_, params) => {
    const r = parseBanPubkeyParams(params)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(prefixOf(r.error)).toBe('invalid')
  })
})

describe('building NIP-86 responses', () => {
  it('puts a value in result, and a failure in error with a null result', () => {
    expect(toNip86Result(true)).toEqual({ result: true })
    expect(toNip86Error('unsupported: method x')).toEqual({ result: null, error: 'unsupported: method x' })
  })
})
