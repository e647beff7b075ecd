import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  adminsTemplate,
  audienceOf,
  authorize,
  type ChannelAction,
  type ChannelFacts,
  channelOf,
  isChannelId,
  membersTemplate,
  metadataTemplate,
  parseChannelAction,
  readChannelOf,
  rolesTemplate,
} from '../../src/protocols/nip29'
import { MAX_INVITE_CODE_CHARS, MAX_INVITE_USES } from '../../src/protocols/nip29-invites'
import { MAX_MEMBER_ROLES, MAX_ROLE_NAME_CHARS } from '../../src/protocols/nip29-roles'
import { prefixOf } from '../../src/protocols/reasons'
import { OTHER_PUBKEY, shapeEvent } from './fixtures'

const h = (id: string) => ['h', id]

describe('reading the channel an event is addressed to', () => {
  it.each([
    { name: 'no h tag', tags: [['t', 'x']], want: undefined },
    { name: 'one h tag', tags: [h('general')], want: 'general' },
    { name: 'an id of 64 characters', tags: [h('a'.repeat(64))], want: 'a'.repeat(64) },
    { name: 'a mixed-case random id as NDK makes them', tags: [h('aB3xY9kLm2Qp')], want: 'aB3xY9kLm2Qp' },
    { name: 'an id with punctuation', tags: [h('a:b/{c}*%')], want: 'a:b/{c}*%' },
    { name: 'an id of 32 emoji (64 UTF-16 code units)', tags: [h('🐝'.repeat(32))], want: '🐝'.repeat(32) },
  ])('reads $name', ({ tags, want }) => {
    const r = channelOf({ tags })
    expect(r.ok).toBe(true)
    expect(r.ok && r.value).toBe(want)
  })

  it.each([
    { name: 'two h tags', tags: [h('a'), h('b')] },
    { name: 'an id of 65 characters', tags: [h('a'.repeat(65))] },
    { name: 'an id of 33 emoji (66 UTF-16 code units)', tags: [h('🐝'.repeat(33))] },
    { name: 'a space', tags: [h('general chat')] },
    { name: 'a no-break space', tags: [h('general\u00a0chat')] },
    { name: 'a line separator', tags: [h('a\u2028b')] },
    { name: 'a NUL', tags: [h('a\u0000')] },
    { name: 'a newline', tags: [h('a\nb')] },
    { name: 'DEL', tags: [h('a\u007f')] },
    { name: 'a C1 control character', tags: [h('a\u0085')] },
    { name: 'a lone high surrogate', tags: [h('a\ud83d')] },
    { name: 'a lone low surrogate', tags: [h('\udc1d')] },
    { name: 'an empty id', tags: [h('')] },
    { name: 'no value', tags: [['h']] },
  ])('refuses $name as invalid', ({ tags }) => {
    const r = channelOf({ tags })
    expect(!r.ok && prefixOf(r.error)).toBe('invalid')
    // the rule the h tag's reason states is the one that holds now
    expect(!r.ok && r.error).not.toMatch(/a-z/)
  })

  /** The rule spelled out code unit by code unit: the reference the validator is checked against. */
  const referenceIsChannelId = (id: string) => {
    if (id.length < 1 || id.length > 64) return false
    for (let i = 0; i < id.length; i++) {
      const c = id.charCodeAt(i)
      if (c <= 0x1f || (c >= 0x7f && c <= 0x9f)) return false
      if (/\s/.test(id[i] as string)) return false
      const high = c >= 0xd800 && c <= 0xdbff
      const low = c >= 0xdc00 && c <= 0xdfff
      const next = id.charCodeAt(i + 1)
      if (high && !(next >= 0xdc00 && next <= 0xdfff)) return false
      if (low && !(i > 0 && id.charCodeAt(i - 1) >= 0xd800 && id.charCodeAt(i - 1) <= 0xdbff)) return false
      if (high) i++
    }
    return true
  }

  it('accepts exactly the ids the rule allows: 1 to 64 code units, no control, whitespace or lone surrogate (property)', () => {
    const odd = fc.constantFrom(
      '\u0000',
      '\u001f',
      ' ',
      '\t',
      '\u007f',
      '\u0085',
      '\u00a0',
      '\u2028',
      '\u3000',
      '\ufeff',
      '\ud800',
      '\udfff',
    )
    const id = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 70 }),
      fc.string({ unit: 'grapheme', maxLength: 40 }),
      fc.tuple(fc.string({ maxLength: 40 }), odd, fc.string({ maxLength: 20 })).map(([a, b, c]) => a + b + c),
    )
    fc.assert(
      fc.property(id, (value) => {
        expect(isChannelId(value)).toBe(referenceIsChannelId(value))
        const r = channelOf({ tags: [h(value)] })
        expect(r.ok).toBe(referenceIsChannelId(value))
      }),
      { numRuns: 2_000 },
    )
  })
})

describe('parsing what a channel event asks for', () => {
  const off = { private: false, restricted: false, hidden: false, closed: false, supportedKinds: null }

  it.each([
    {
      kind: 9007,
      tags: [h('c'), ['name', 'C'], ['private'], ['closed']],
      want: { type: 'create', metadata: { ...off, name: 'C', private: true, closed: true } },
    },
    { kind: 9007, tags: [h('c')], want: { type: 'create', metadata: off } },
    {
      kind: 9007,
      tags: [h('c'), ['restricted'], ['supported_kinds', '9', '11'], ['banner', 'https://x.test/b.png']],
      want: { type: 'create', metadata: { ...off, restricted: true, supportedKinds: [9, 11], banner: 'https://x.test/b.png' } },
    },
    { kind: 9002, tags: [h('c'), ['about', 'x']], want: { type: 'edit-metadata', metadata: { about: 'x' } } },
    { kind: 9002, tags: [h('c'), ['public'], ['open']], want: { type: 'edit-metadata', metadata: off } },
    { kind: 9002, tags: [h('c'), ['hidden']], want: { type: 'edit-metadata', metadata: { ...off, hidden: true } } },
    { kind: 9002, tags: [h('c'), ['visible']], want: { type: 'edit-metadata', metadata: off } },
    { kind: 9002, tags: [h('c'), ['unrestricted'], ['name', 'N']], want: { type: 'edit-metadata', metadata: { ...off, name: 'N' } } },
    {
      kind: 9002,
      tags: [h('c'), ['restricted'], ['private'], ['supported_kinds', '9']],
      want: { type: 'edit-metadata', metadata: { ...off, restricted: true, private: true, supportedKinds: [9] } },
    },
    { kind: 9002, tags: [h('c'), ['supported_kinds', '9', '9']], want: { type: 'edit-metadata', metadata: { supportedKinds: [9] } } },
    { kind: 9002, tags: [h('c'), ['supported_kinds']], want: { type: 'edit-metadata', metadata: { supportedKinds: [] } } },
    {
      kind: 9007,
      tags: [h('c'), ['hidden'], ['private']],
      want: { type: 'create', metadata: { ...off, hidden: true, private: true } },
    },
    { kind: 9000, tags: [h('c'), ['p', OTHER_PUBKEY, 'admin']], want: { type: 'put-user', pubkey: OTHER_PUBKEY, roles: ['admin'] } },
    { kind: 9000, tags: [h('c'), ['p', OTHER_PUBKEY]], want: { type: 'put-user', pubkey: OTHER_PUBKEY, roles: [] } },
    {
      kind: 9000,
      tags: [h('c'), ['p', OTHER_PUBKEY, 'gardener', '', 'moderator', 'gardener']],
      want: { type: 'put-user', pubkey: OTHER_PUBKEY, roles: ['gardener', 'moderator'] },
    },
    {
      kind: 9009,
      tags: [h('c'), ['code', 'abc-123']],
      want: { type: 'create-invite', code: 'abc-123', maxUses: 1 },
    },
    {
      kind: 9009,
      tags: [h('c'), ['code', 'team'], ['uses', '25'], ['expiration', '1700003600']],
      want: { type: 'create-invite', code: 'team', maxUses: 25, expiresAt: 1_700_003_600 },
    },
    { kind: 9021, tags: [h('c'), ['code', 'abc-123']], want: { type: 'join', code: 'abc-123' } },
    { kind: 9001, tags: [h('c'), ['p', OTHER_PUBKEY]], want: { type: 'remove-user', pubkey: OTHER_PUBKEY } },
    { kind: 9005, tags: [h('c'), ['e', 'e'.repeat(64)]], want: { type: 'delete-event', ids: ['e'.repeat(64)] } },
    { kind: 9008, tags: [h('c')], want: { type: 'delete-group' } },
    { kind: 9021, tags: [h('c')], want: { type: 'join' } },
    { kind: 9022, tags: [h('c')], want: { type: 'leave' } },
    { kind: 9010, tags: [h('c'), ['e', 'e'.repeat(64)]], want: { type: 'update-pins', pins: [['e', 'e'.repeat(64)]] } },
    { kind: 9, tags: [h('c')], want: { type: 'post', kind: 9 } },
  ])('reads kind $kind with $tags.length tags as $want.type', ({ kind, tags, want }) => {
    const r = parseChannelAction(shapeEvent({ kind, tags }))
    expect(r.ok && r.value).toEqual({ channel: 'c', ...want })
  })

  it('changes only the fields a 9002 without flag tags carries, as NDK setMetadata sends it', () => {
    const ndk = [h('c'), ['name', 'Pizza'], ['about', 'a group for pizza'], ['picture', 'https://x.test/p.png']]
    const r = parseChannelAction(shapeEvent({ kind: 9002, tags: ndk }))
    expect(r.ok && r.value).toEqual({
      type: 'edit-metadata',
      channel: 'c',
      metadata: { name: 'Pizza', about: 'a group for pizza', picture: 'https://x.test/p.png' },
    })
  })

  it('leaves an event without an h tag alone', () => {
    const r = parseChannelAction(shapeEvent({ kind: 1 }))
    expect(r.ok && r.value).toBeUndefined()
  })

  it.each([
    { name: 'a moderation kind without an h tag', kind: 9000, tags: [['p', OTHER_PUBKEY]] },
    { name: 'put-user without a p tag', kind: 9000, tags: [h('c')] },
    { name: 'put-user with a short pubkey', kind: 9000, tags: [h('c'), ['p', 'abc']] },
    { name: 'delete-event without an e tag', kind: 9005, tags: [h('c')] },
    { name: 'update-pins without an h tag', kind: 9010, tags: [['e', 'e'.repeat(64)]] },
    { name: 'update-pins with a malformed pin', kind: 9010, tags: [h('c'), ['e', 'abc']] },
    { name: 'a name of 129 characters', kind: 9002, tags: [h('c'), ['name', 'n'.repeat(129)]] },
    {
      name: `${MAX_MEMBER_ROLES + 1} roles`,
      kind: 9000,
      tags: [h('c'), ['p', OTHER_PUBKEY, ...Array.from({ length: MAX_MEMBER_ROLES + 1 }, (_, i) => `r${i}`)]],
    },
    { name: 'a role name too long', kind: 9000, tags: [h('c'), ['p', OTHER_PUBKEY, 'r'.repeat(MAX_ROLE_NAME_CHARS + 1)]] },
    { name: 'a role name with a blank', kind: 9000, tags: [h('c'), ['p', OTHER_PUBKEY, 'head gardener']] },
    { name: 'a role name with a NUL', kind: 9000, tags: [h('c'), ['p', OTHER_PUBKEY, 'a\u0000b']] },
    { name: 'a 9009 without a code', kind: 9009, tags: [h('c')] },
    { name: 'a 9009 with two codes', kind: 9009, tags: [h('c'), ['code', 'a'], ['code', 'b']] },
    { name: 'an empty code', kind: 9009, tags: [h('c'), ['code', '']] },
    { name: 'a code too long', kind: 9009, tags: [h('c'), ['code', 'k'.repeat(MAX_INVITE_CODE_CHARS + 1)]] },
    { name: 'a code with a lone surrogate', kind: 9009, tags: [h('c'), ['code', 'a\ud800']] },
    { name: 'uses of 0', kind: 9009, tags: [h('c'), ['code', 'k'], ['uses', '0']] },
    { name: 'uses past the bound', kind: 9009, tags: [h('c'), ['code', 'k'], ['uses', String(MAX_INVITE_USES + 1)]] },
    { name: 'uses that are no number', kind: 9009, tags: [h('c'), ['code', 'k'], ['uses', 'many']] },
    { name: 'an expiration that is no number', kind: 9009, tags: [h('c'), ['code', 'k'], ['expiration', 'soon']] },
    { name: 'a 9009 without an h tag', kind: 9009, tags: [['code', 'k']] },
    { name: 'a join with a code too long', kind: 9021, tags: [h('c'), ['code', 'k'.repeat(MAX_INVITE_CODE_CHARS + 1)]] },
    { name: 'a join with two codes', kind: 9021, tags: [h('c'), ['code', 'a'], ['code', 'b']] },
    { name: 'a banner of 1,001 characters', kind: 9002, tags: [h('c'), ['banner', 'b'.repeat(1_001)]] },
    { name: 'a name holding NUL', kind: 9007, tags: [h('c'), ['name', 'a\u0000b']] },
    { name: 'private with public', kind: 9002, tags: [h('c'), ['private'], ['public']] },
    { name: 'restricted with unrestricted', kind: 9007, tags: [h('c'), ['unrestricted'], ['restricted']] },
    { name: '65 supported kinds', kind: 9002, tags: [h('c'), ['supported_kinds', ...Array.from({ length: 65 }, (_, i) => String(i))]] },
    { name: 'kind 65536 among the supported', kind: 9002, tags: [h('c'), ['supported_kinds', '9', '65536']] },
    { name: 'a negative supported kind', kind: 9002, tags: [h('c'), ['supported_kinds', '-1']] },
    { name: 'a supported kind that is no decimal integer', kind: 9002, tags: [h('c'), ['supported_kinds', '9.0']] },
    { name: 'a supported kind with a leading zero', kind: 9002, tags: [h('c'), ['supported_kinds', '09']] },
    { name: 'an empty supported kind', kind: 9002, tags: [h('c'), ['supported_kinds', '']] },
    { name: 'two supported_kinds tags', kind: 9002, tags: [h('c'), ['supported_kinds', '9'], ['supported_kinds', '11']] },
  ])('refuses $name as invalid', ({ kind, tags }) => {
    const r = parseChannelAction(shapeEvent({ kind, tags }))
    expect(!r.ok && prefixOf(r.error)).toBe('invalid')
  })

  it('accepts a name of exactly 128 characters, a banner of 1,000, 64 supported kinds and kind 65535', () => {
    expect(parseChannelAction(shapeEvent({ kind: 9002, tags: [h('c'), ['name', 'n'.repeat(128)]] })).ok).toBe(true)
    expect(parseChannelAction(shapeEvent({ kind: 9002, tags: [h('c'), ['banner', 'b'.repeat(1_000)]] })).ok).toBe(true)
    const kinds = Array.from({ length: 64 }, (_, i) => String(i))
    expect(parseChannelAction(shapeEvent({ kind: 9002, tags: [h('c'), ['supported_kinds', ...kinds]] })).ok).toBe(true)
    expect(parseChannelAction(shapeEvent({ kind: 9002, tags: [h('c'), ['supported_kinds', '0', '65535']] })).ok).toBe(true)
  })

  it(`accepts ${MAX_MEMBER_ROLES} roles of ${MAX_ROLE_NAME_CHARS} characters, a code of ${MAX_INVITE_CODE_CHARS} and ${MAX_INVITE_USES} uses`, () => {
    const roles = Array.from({ length: MAX_MEMBER_ROLES }, (_, i) => `${i}`.padEnd(MAX_ROLE_NAME_CHARS, 'r'))
    const put = parseChannelAction(shapeEvent({ kind: 9000, tags: [h('c'), ['p', OTHER_PUBKEY, ...roles]] }))
    expect(put.ok && put.value).toMatchObject({ roles })
    const code = 'é'.repeat(MAX_INVITE_CODE_CHARS)
    const invite = parseChannelAction(shapeEvent({ kind: 9009, tags: [h('c'), ['code', code], ['uses', String(MAX_INVITE_USES)]] }))
    expect(invite.ok && invite.value).toMatchObject({ code, maxUses: MAX_INVITE_USES })
  })
})

describe('deciding who may do what in a channel', () => {
  const open = { restricted: false, closed: false, deleted: false, supportedKinds: null }
  const restricted = { ...open, restricted: true }
  const closed = { ...open, closed: true }
  const chat = { ...open, supportedKinds: [9, 11] }
  const silent = { ...open, supportedKinds: [] }
  const act = (type: string, kind = 9): ChannelAction =>
    ({ type, channel: 'c', pubkey: OTHER_PUBKEY, roles: [], metadata: {}, ids: [], kind }) as ChannelAction
  const decide = (type: string, f: ChannelFacts, kind?: number) => {
    const r = authorize(act(type, kind), f)
    return r.ok ? r.value.effect : prefixOf(r.error)
  }
  const join = (code: string | undefined, f: ChannelFacts) =>
    authorize({ type: 'join', channel: 'c', ...(code !== undefined && { code }) }, f)

  it.each([
    { what: 'anyone creates a new channel', type: 'create', f: { moderator: false }, want: 'apply' },
    { what: 'creating an existing channel', type: 'create', f: { channel: open, moderator: false }, want: 'duplicate' },
    {
      what: 'creating over a deleted channel',
      type: 'create',
      f: { channel: { ...open, deleted: true }, moderator: true },
      want: 'blocked',
    },
    { what: 'a member posts', type: 'post', f: { channel: restricted, role: 'member', moderator: false }, want: 'none' },
    { what: 'a non-member posts to a restricted channel', type: 'post', f: { channel: restricted, moderator: false }, want: 'restricted' },
    { what: 'a non-member posts to an unrestricted channel', type: 'post', f: { channel: open, moderator: false }, want: 'none' },
    { what: 'a community admin posts without joining', type: 'post', f: { channel: restricted, moderator: true }, want: 'none' },
    { what: 'posting to an unknown channel', type: 'post', f: { moderator: true }, want: 'restricted' },
    {
      what: 'posting to a deleted channel',
      type: 'post',
      f: { channel: { ...open, deleted: true }, role: 'admin', moderator: true },
      want: 'restricted',
    },
    { what: 'joining an open channel', type: 'join', f: { channel: open, moderator: false }, want: 'apply' },
    { what: 'joining a closed channel', type: 'join', f: { channel: closed, moderator: false }, want: 'queue' },
    { what: 'a member joining again', type: 'join', f: { channel: open, role: 'member', moderator: false }, want: 'duplicate' },
    { what: 'a member leaving', type: 'leave', f: { channel: open, role: 'member', moderator: false }, want: 'apply' },
    { what: 'a non-member leaving', type: 'leave', f: { channel: open, moderator: false }, want: 'restricted' },
    { what: 'a channel admin adding a user', type: 'put-user', f: { channel: open, role: 'admin', moderator: false }, want: 'apply' },
    { what: 'a member adding a user', type: 'put-user', f: { channel: open, role: 'member', moderator: false }, want: 'restricted' },
    { what: 'a community admin removing a user', type: 'remove-user', f: { channel: open, moderator: true }, want: 'apply' },
    {
      what: 'a member editing metadata',
      type: 'edit-metadata',
      f: { channel: open, role: 'member', moderator: false },
      want: 'restricted',
    },
    {
      what: 'a member deleting the channel',
      type: 'delete-group',
      f: { channel: open, role: 'member', moderator: false },
      want: 'restricted',
    },
    {
      what: 'a channel admin deleting an event',
      type: 'delete-event',
      f: { channel: open, role: 'admin', moderator: false },
      want: 'apply',
    },
    {
      what: 'a moderator deleting an event',
      type: 'delete-event',
      f: { channel: open, role: 'moderator', moderator: false },
      want: 'apply',
    },
    {
      what: 'a moderator removing a plain member',
      type: 'remove-user',
      f: { channel: open, role: 'moderator', target: 'member', moderator: false },
      want: 'apply',
    },
    {
      what: 'a moderator removing an admin',
      type: 'remove-user',
      f: { channel: open, role: 'moderator', target: 'admin', moderator: false },
      want: 'restricted',
    },
    {
      what: 'a moderator removing a moderator',
      type: 'remove-user',
      f: { channel: open, role: 'moderator', target: 'moderator', moderator: false },
      want: 'restricted',
    },
    {
      what: 'a channel admin removing a moderator',
      type: 'remove-user',
      f: { channel: open, role: 'admin', target: 'moderator', moderator: false },
      want: 'apply',
    },
    {
      what: 'a moderator putting a user in',
      type: 'put-user',
      f: { channel: open, role: 'moderator', moderator: false },
      want: 'restricted',
    },
    {
      what: 'a moderator editing metadata',
      type: 'edit-metadata',
      f: { channel: open, role: 'moderator', moderator: false },
      want: 'restricted',
    },
    {
      what: 'a moderator deleting the channel',
      type: 'delete-group',
      f: { channel: open, role: 'moderator', moderator: false },
      want: 'restricted',
    },
    { what: 'a moderator posting', type: 'post', f: { channel: open, role: 'moderator', moderator: false }, want: 'none' },
    {
      what: 'a channel admin creating an invite',
      type: 'create-invite',
      f: { channel: open, role: 'admin', moderator: false },
      want: 'command',
    },
    { what: 'a community admin creating an invite', type: 'create-invite', f: { channel: open, moderator: true }, want: 'command' },
    {
      what: 'a moderator creating an invite',
      type: 'create-invite',
      f: { channel: open, role: 'moderator', moderator: false },
      want: 'restricted',
    },
    {
      what: 'a member creating an invite',
      type: 'create-invite',
      f: { channel: open, role: 'member', moderator: false },
      want: 'restricted',
    },
    {
      what: 'creating an invite to a deleted channel',
      type: 'create-invite',
      f: { channel: { ...open, deleted: true }, moderator: true },
      want: 'restricted',
    },
    {
      what: 'a channel admin updating the pins',
      type: 'update-pins',
      f: { channel: open, role: 'admin', moderator: false },
      want: 'apply',
    },
    { what: 'a member updating the pins', type: 'update-pins', f: { channel: open, role: 'member', moderator: false }, want: 'restricted' },
  ])('$what: $want', ({ type, f, want }) => {
    expect(decide(type, f as ChannelFacts)).toBe(want)
  })

  it('spares the events of admins and moderators only in a moderator’s 9005', () => {
    expect(authorize(act('delete-event'), { channel: open, role: 'moderator', moderator: false })).toEqual({
      ok: true,
      value: { effect: 'apply', spareStaff: true },
    })
    expect(authorize(act('delete-event'), { channel: open, role: 'admin', moderator: false })).toEqual({
      ok: true,
      value: { effect: 'apply' },
    })
  })

  it('acts on a join carrying a code without storing it, redeeming the code only in a closed channel', () => {
    expect(join('k', { channel: closed, moderator: false })).toEqual({ ok: true, value: { effect: 'command', redeem: true } })
    expect(join('k', { channel: open, moderator: false })).toEqual({ ok: true, value: { effect: 'command', redeem: false } })
    expect(join(undefined, { channel: closed, moderator: false })).toMatchObject({ ok: true, value: { effect: 'queue' } })
    const again = join('k', { channel: closed, role: 'member', moderator: false })
    expect(!again.ok && prefixOf(again.error)).toBe('duplicate')
  })

  it.each([
    { what: 'a listed kind', channel: chat, kind: 11, want: 'none' },
    { what: 'a kind not listed, from an admin', channel: chat, kind: 1, want: 'blocked' },
    { what: 'any kind to a channel that lists none', channel: silent, kind: 9, want: 'blocked' },
    { what: 'a NIP-29 management kind not listed (9009)', channel: silent, kind: 9009, want: 'none' },
    { what: 'the last management kind (9022)', channel: chat, kind: 9022, want: 'none' },
    { what: 'the kind right after them (9023)', channel: chat, kind: 9023, want: 'blocked' },
    { what: 'any kind to a channel that names no supported kinds', channel: open, kind: 30_023, want: 'none' },
  ])('supported kinds: $what is $want', ({ channel, kind, want }) => {
    expect(decide('post', { channel, role: 'admin', moderator: true }, kind)).toBe(want)
  })

  it('stores a join to a closed channel yet answers it "restricted:", saying it is pending', () => {
    const r = authorize(act('join'), { channel: closed, moderator: false })
    expect(r.ok && r.value.effect).toBe('queue')
    const answer = r.ok && r.value.effect === 'queue' ? r.value.answer : ''
    expect(prefixOf(answer)).toBe('restricted')
    expect(answer).toMatch(/pending/)
  })
})

describe('describing a channel in relay-signed events', () => {
  const members = [
    { pubkey: 'a'.repeat(64), roles: ['admin'] },
    { pubkey: 'c'.repeat(64), roles: ['gardener', 'moderator'] },
    { pubkey: 'e'.repeat(64), roles: ['gardener'] },
    { pubkey: 'b'.repeat(64), roles: [] },
  ]

  const view = { id: 'c', name: 'C', about: '', picture: '', banner: '', supportedKinds: null }
  const off = { private: false, restricted: false, hidden: false, closed: false }

  it('lists in kind 39000 exactly the flags that are on, and no tag for one that is off', () => {
    const t = metadataTemplate({ ...view, ...off, private: true })
    expect(t.kind).toBe(39000)
    expect(t.tags).toEqual([['d', 'c'], ['name', 'C'], ['private']])
    expect(metadataTemplate({ ...view, ...off }).tags).toEqual([
      ['d', 'c'],
      ['name', 'C'],
    ])
    const all = metadataTemplate({ ...view, private: true, restricted: true, hidden: true, closed: true })
    expect(all.tags).toEqual([['d', 'c'], ['name', 'C'], ['private'], ['restricted'], ['hidden'], ['closed']])
  })

  it('shows banner and supported_kinds in kind 39000 when set, an empty supported_kinds tag for no kind', () => {
    const t = metadataTemplate({ ...view, ...off, banner: 'https://x.test/b.png', supportedKinds: [9, 11] })
    expect(t.tags).toEqual([
      ['d', 'c'],
      ['name', 'C'],
      ['banner', 'https://x.test/b.png'],
      ['supported_kinds', '9', '11'],
    ])
    expect(metadataTemplate({ ...view, ...off, supportedKinds: [] }).tags).toContainEqual(['supported_kinds'])
  })

  it('lists the members holding a privileged role, with the strongest, in kind 39001, and everyone with all their roles in kind 39002', () => {
    expect(adminsTemplate('c', members).tags).toEqual([
      ['d', 'c'],
      ['p', 'a'.repeat(64), 'admin'],
      ['p', 'c'.repeat(64), 'moderator'],
    ])
    expect(membersTemplate('c', members).tags).toEqual([
      ['d', 'c'],
      ['p', 'a'.repeat(64), 'admin'],
      ['p', 'c'.repeat(64), 'gardener', 'moderator'],
      ['p', 'e'.repeat(64), 'gardener'],
      ['p', 'b'.repeat(64)],
    ])
  })

  it('advertises admin and moderator, each with what it may do, in kind 39003', () => {
    const t = rolesTemplate('c')
    expect(t.kind).toBe(39003)
    expect(t.tags?.[0]).toEqual(['d', 'c'])
    expect(t.tags?.slice(1).map((x) => [x[0], x[1]])).toEqual([
      ['role', 'admin'],
      ['role', 'moderator'],
    ])
    expect(t.tags?.slice(1).every((x) => (x[2] ?? '').length > 0)).toBe(true)
  })
})

describe('deciding who reads an event of a channel', () => {
  const flags = (over: Partial<{ private: boolean; hidden: boolean; deleted: boolean }> = {}) => ({
    private: false,
    hidden: false,
    deleted: false,
    ...over,
  })

  it('names the channel by `h`, and by `d` for the relay-signed state', () => {
    expect(readChannelOf({ kind: 9, tags: [h('c')] })).toBe('c')
    expect(readChannelOf({ kind: 39002, tags: [['d', 'c']] })).toBe('c')
    expect(readChannelOf({ kind: 39005, tags: [['d', 'c']] })).toBe('c')
    expect(readChannelOf({ kind: 30023, tags: [['d', 'c']] })).toBeUndefined()
  })

  it.each([
    { kind: 9, channel: undefined, lists: false, want: 'all' },
    { kind: 9, channel: flags({ private: true }), lists: false, want: 'members' },
    { kind: 9, channel: flags({ hidden: true }), lists: false, want: 'all' },
    { kind: 9000, channel: flags({ hidden: true }), lists: false, want: 'members' },
    { kind: 9007, channel: flags({ hidden: true }), lists: true, want: 'members' },
    { kind: 9000, channel: flags(), lists: false, want: 'all' },
    { kind: 9, channel: flags({ deleted: true }), lists: false, want: 'none' },
    { kind: 39000, channel: flags({ private: true }), lists: false, want: 'all' },
    { kind: 39001, channel: flags({ private: true }), lists: false, want: 'members' },
    { kind: 39002, channel: flags({ private: true }), lists: false, want: 'members' },
    { kind: 39002, channel: flags({ private: true }), lists: true, want: 'all' },
    { kind: 39002, channel: flags(), lists: false, want: 'all' },
    { kind: 39000, channel: flags({ hidden: true }), lists: true, want: 'members' },
    { kind: 39003, channel: flags({ hidden: true }), lists: false, want: 'members' },
    { kind: 39004, channel: flags({ hidden: true }), lists: false, want: 'members' },
    { kind: 39005, channel: flags({ hidden: true }), lists: true, want: 'members' },
    { kind: 39005, channel: flags({ private: true }), lists: false, want: 'all' },
  ] as const)('kind $kind of $channel (publicMemberLists $lists): $want', ({ kind, channel, lists, want }) => {
    expect(audienceOf(kind, channel, lists)).toBe(want)
  })
})
