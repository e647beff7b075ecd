import { describe, expect, it } from 'vitest'
import {
  asksForInvite,
  asksOnlyForInvite,
  CLAIM_WINDOW_SECONDS,
  checkLeaveRequest,
  inviteTemplate,
  isPlausibleClaim,
  listedMembers,
  listedMembersCap,
  listedMembersOf,
  mayAskForMemberLists,
  memberChangeTemplate,
  memberListTemplate,
  parseJoinRequest,
} from '../../src/protocols/nip43'
import { prefixOf } from '../../src/protocols/reasons'

const NOW = 1_700_000_000
const p = (c: string) => c.repeat(64)
const refusal = (r: { ok: boolean; error?: string }) => (r.ok ? undefined : prefixOf(r.error ?? ''))

describe('a join request (28934)', () => {
  it.each([
    ['now', NOW],
    ['the window’s past edge', NOW - CLAIM_WINDOW_SECONDS],
    ['the window’s future edge', NOW + CLAIM_WINDOW_SECONDS],
  ])('gives its claim when dated %s', (_, created_at) => {
    expect(parseJoinRequest({ created_at, tags: [['-'], ['claim', 'abc']] }, NOW)).toEqual({ ok: true, value: 'abc' })
  })

  it.each([
    ['one second before the window', NOW - CLAIM_WINDOW_SECONDS - 1, [['claim', 'abc']]],
    ['one second after the window', NOW + CLAIM_WINDOW_SECONDS + 1, [['claim', 'abc']]],
    ['without a claim tag', NOW, [['-']]],
    ['with a claim tag that has no value', NOW, [['claim']]],
  ])('refuses one %s with invalid:', (_, created_at, tags) => {
    expect(refusal(parseJoinRequest({ created_at, tags }, NOW))).toBe('invalid')
  })

  it('takes an empty claim for a code (refused later as unknown), and the first claim of several', () => {
    expect(parseJoinRequest({ created_at: NOW, tags: [['claim', '']] }, NOW)).toEqual({ ok: true, value: '' })
    expect(
      parseJoinRequest(
        {
          created_at: NOW,
          tags: [
            ['claim', 'a'],
            ['claim', 'b'],
          ],
        },
        NOW,
      ),
    ).toEqual({ ok: true, value: 'a' })
  })

  it('looks a code up only if it could be one this relay made', () => {
    expect(isPlausibleClaim('AbC-_09'.repeat(3))).toBe(true)
    expect(isPlausibleClaim('a'.repeat(64))).toBe(true)
    expect(isPlausibleClaim('a'.repeat(65))).toBe(false)
    expect(isPlausibleClaim('')).toBe(false)
    expect(isPlausibleClaim('with space')).toBe(false)
  })
})

describe('a leave request (28936)', () => {
  it('is accepted within the window and refused one second outside it with invalid:', () => {
    expect(checkLeaveRequest({ created_at: NOW - CLAIM_WINDOW_SECONDS }, NOW).ok).toBe(true)
    expect(refusal(checkLeaveRequest({ created_at: NOW - CLAIM_WINDOW_SECONDS - 1 }, NOW))).toBe('invalid')
  })
})

describe('the relay’s NIP-43 events', () => {
  it('are protected (NIP-70) and carry a member tag per member, a p tag per change, a claim per invite', () => {
    expect(memberListTemplate([p('a'), p('b')])).toEqual({
      kind: 13534,
      tags: [['-'], ['member', p('a')], ['member', p('b')]],
      content: '',
    })
    expect(memberChangeTemplate(p('a'), true)).toEqual({ kind: 8000, tags: [['-'], ['p', p('a')]], content: '' })
    expect(memberChangeTemplate(p('a'), false)).toEqual({ kind: 8001, tags: [['-'], ['p', p('a')]], content: '' })
    expect(inviteTemplate('code', p('c'))).toEqual({ kind: 28935, tags: [['-'], ['claim', 'code'], ['p', p('c')]], content: '' })
    expect(listedMembersOf({ tags: memberListTemplate([p('a')]).tags ?? [] })).toEqual([p('a')])
  })

  it('name admins first, then agents, then the allowed list, each once, up to the cap', () => {
    expect(listedMembers([p('c')], [p('b'), p('c')], [p('a'), p('b'), p('d')], 10)).toEqual([p('c'), p('b'), p('a'), p('d')])
    expect(listedMembers([p('c')], [p('b')], [p('a')], 2)).toEqual([p('c'), p('b')])
  })

  it('cap the list at what the relay accepts from a client: tags, then bytes', () => {
    expect(listedMembersCap({ maxEventTags: 2_500, maxEventBytes: 131_072 })).toBe(1_675)
    expect(listedMembersCap({ maxEventTags: 4, maxEventBytes: 131_072 })).toBe(3)
    // the cap's list serialized stays within maxEventBytes, with room for the envelope
    const cap = listedMembersCap({ maxEventTags: 2_500, maxEventBytes: 131_072 })
    const tags = JSON.stringify(memberListTemplate(Array.from({ length: cap }, () => p('f'))).tags)
    expect(tags.length + 400).toBeLessThanOrEqual(131_072)
  })
})

describe('which REQs concern NIP-43', () => {
  it('mint an invite only for a filter naming kind 28935; close only when every filter asks for nothing else', () => {
    expect(asksForInvite([{ kinds: [1] }, { kinds: [28935, 1] }])).toBe(true)
    expect(asksForInvite([{}])).toBe(false)
    expect(asksOnlyForInvite([{ kinds: [28935] }, { kinds: [28935] }])).toBe(true)
    expect(asksOnlyForInvite([{ kinds: [28935, 1] }])).toBe(false)
    expect(asksOnlyForInvite([{}])).toBe(false)
    expect(asksOnlyForInvite([])).toBe(false)
  })

  it('need the reader’s membership only when a filter may match 13534, 8000 or 8001', () => {
    expect(mayAskForMemberLists([{ kinds: [1, 7] }])).toBe(false)
    expect(mayAskForMemberLists([{ kinds: [1] }, { kinds: [8001] }])).toBe(true)
    expect(mayAskForMemberLists([{}])).toBe(true)
  })
})
