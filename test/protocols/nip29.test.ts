import { describe, expect, it } from 'vitest'
import {
  adminsTemplate,
  audienceOf,
  authorize,
  type ChannelAction,
  type ChannelFacts,
  channelOf,
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
  ])('reads $name', ({ tags, want }) => {
    const r = channelOf({ tags })
    expect(r.ok).toBe(true)
    expect(r.ok && r.value).toBe(want)
  })

  it.each([
    { name: 'two h tags', tags: [h('a'), h('b')] },
    { name: 'an id of 65 characters', tags: [h('a'.repeat(65))] },
    { name: 'upper case', tags: [h('General')] },
    { name: 'an empty id', tags: [h('')] },
    { name: 'no value', tags: [['h']] },
  ])('refuses $name as invalid', ({ tags }) => {
    const r = channelOf({ tags })
    expect(!r.ok && prefixOf(r.error)).toBe('invalid')
  })
})

describe('parsing what a channel event asks for', () => {
  it.each([
    {
      kind: 9007,
      tags: [h('c'), ['name', 'C'], ['private'], ['closed']],
      want: { type: 'create', metadata: { name: 'C', private: true, closed: true } },
    },
    { kind: 9002, tags: [h('c'), ['about', 'x']], want: { type: 'edit-metadata', metadata: { about: 'x' } } },
    { kind: 9002, tags: [h('c'), ['public'], ['open']], want: { type: 'edit-metadata', metadata: { private: false, closed: false } } },
    { kind: 9002, tags: [h('c'), ['hidden']], want: { type: 'edit-metadata', metadata: { hidden: true } } },
    { kind: 9002, tags: [h('c'), ['visible']], want: { type: 'edit-metadata', metadata: { hidden: false } } },
    { kind: 9007, tags: [h('c'), ['hidden'], ['private']], want: { type: 'create', metadata: { hidden: true, private: true } } },
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
    { kind: 9, tags: [h('c')], want: { type: 'post' } },
  ])('reads kind $kind as $want.type', ({ kind, tags, want }) => {
    const r = parseChannelAction(shapeEvent({ kind, tags }))
    expect(r.ok && r.value).toEqual({ channel: 'c', ...want })
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
  ])('refuses $name as invalid', ({ kind, tags }) => {
    const r = parseChannelAction(shapeEvent({ kind, tags }))
    expect(!r.ok && prefixOf(r.error)).toBe('invalid')
  })

  it('accepts a name of exactly 128 characters', () => {
    expect(parseChannelAction(shapeEvent({ kind: 9002, tags: [h('c'), ['name', 'n'.repeat(128)]] })).ok).toBe(true)
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
  const open = { private: false, closed: false, deleted: false }
  const closed = { ...open, closed: true }
  const act = (type: string): ChannelAction =>
    ({ type, channel: 'c', pubkey: OTHER_PUBKEY, roles: [], metadata: {}, ids: [] }) as ChannelAction
  const decide = (type: string, f: ChannelFacts) => {
    const r = authorize(act(type), f)
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
    { what: 'a member posts', type: 'post', f: { channel: open, role: 'member', moderator: false }, want: 'none' },
    { what: 'a non-member posts', type: 'post', f: { channel: open, moderator: false }, want: 'restricted' },
    { what: 'a community admin posts without joining', type: 'post', f: { channel: open, moderator: true }, want: 'none' },
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
    expect(join(undefined, { channel: closed, moderator: false })).toEqual({ ok: true, value: { effect: 'queue' } })
    const again = join('k', { channel: closed, role: 'member', moderator: false })
    expect(!again.ok && prefixOf(again.error)).toBe('duplicate')
  })
})

describe('describing a channel in relay-signed events', () => {
  const members = [
    { pubkey: 'a'.repeat(64), roles: ['admin'] },
    { pubkey: 'c'.repeat(64), roles: ['gardener', 'moderator'] },
    { pubkey: 'e'.repeat(64), roles: ['gardener'] },
    { pubkey: 'b'.repeat(64), roles: [] },
  ]

  it('lists both flag spellings and the d tag in kind 39000', () => {
    const t = metadataTemplate({ id: 'c', name: 'C', about: '', picture: '', private: true, closed: false, hidden: false })
    expect(t.kind).toBe(39000)
    expect(t.tags).toEqual([['d', 'c'], ['name', 'C'], ['private'], ['open']])
  })

  it('adds `hidden` to kind 39000 for a hidden channel, and no tag at all for one that is not', () => {
    const t = metadataTemplate({ id: 'c', name: 'C', about: '', picture: '', private: false, closed: true, hidden: true })
    expect(t.tags).toEqual([['d', 'c'], ['name', 'C'], ['public'], ['closed'], ['hidden']])
  })

  it('lists the members holding a privileged role, with all their roles, in kind 39001, and everyone in kind 39002', () => {
    expect(adminsTemplate('c', members).tags).toEqual([
      ['d', 'c'],
      ['p', 'a'.repeat(64), 'admin'],
      ['p', 'c'.repeat(64), 'gardener', 'moderator'],
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
  ] as const)('kind $kind of $channel (publicMemberLists $lists): $want', ({ kind, channel, lists, want }) => {
    expect(audienceOf(kind, channel, lists)).toBe(want)
  })
})
