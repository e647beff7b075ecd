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
} from '../../src/protocols/nip29'
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
    { kind: 9000, tags: [h('c'), ['p', OTHER_PUBKEY, 'admin']], want: { type: 'put-user', pubkey: OTHER_PUBKEY, role: 'admin' } },
    { kind: 9000, tags: [h('c'), ['p', OTHER_PUBKEY, 'gardener']], want: { type: 'put-user', pubkey: OTHER_PUBKEY, role: 'member' } },
    { kind: 9001, tags: [h('c'), ['p', OTHER_PUBKEY]], want: { type: 'remove-user', pubkey: OTHER_PUBKEY } },
    { kind: 9005, tags: [h('c'), ['e', 'e'.repeat(64)]], want: { type: 'delete-event', ids: ['e'.repeat(64)] } },
    { kind: 9008, tags: [h('c')], want: { type: 'delete-group' } },
    { kind: 9021, tags: [h('c')], want: { type: 'join' } },
    { kind: 9022, tags: [h('c')], want: { type: 'leave' } },
    { kind: 9010, tags: [h('c'), ['e', 'e'.repeat(64)]], want: { type: 'update-pins', pins: [['e', 'e'.repeat(64)]] } },
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
    { name: 'update-pins without an h tag', kind: 9010, tags: [['e', 'e'.repeat(64)]] },
    { name: 'update-pins with a malformed pin', kind: 9010, tags: [h('c'), ['e', 'abc']] },
    { name: 'a name of 129 characters', kind: 9002, tags: [h('c'), ['name', 'n'.repeat(129)]] },
  ])('refuses $name as invalid', ({ kind, tags }) => {
    const r = parseChannelAction(shapeEvent({ kind, tags }))
    expect(!r.ok && prefixOf(r.error)).toBe('invalid')
  })

  it('accepts a name of exactly 128 characters', () => {
    expect(parseChannelAction(shapeEvent({ kind: 9002, tags: [h('c'), ['name', 'n'.repeat(128)]] })).ok).toBe(true)
  })
})

describe('deciding who may do what in a channel', () => {
  const open = { private: false, closed: false, deleted: false }
  const closed = { ...open, closed: true }
  const act = (type: string): ChannelAction =>
    ({ type, channel: 'c', pubkey: OTHER_PUBKEY, role: 'member', metadata: {}, ids: [] }) as ChannelAction
  const decide = (type: string, f: ChannelFacts) => {
    const r = authorize(act(type), f)
    return r.ok ? r.value.effect : prefixOf(r.error)
  }

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
      what: 'a channel admin updating the pins',
      type: 'update-pins',
      f: { channel: open, role: 'admin', moderator: false },
      want: 'apply',
    },
    { what: 'a member updating the pins', type: 'update-pins', f: { channel: open, role: 'member', moderator: false }, want: 'restricted' },
  ])('$what: $want', ({ type, f, want }) => {
    expect(decide(type, f as ChannelFacts)).toBe(want)
  })
})

describe('describing a channel in relay-signed events', () => {
  const members = [
    { pubkey: 'a'.repeat(64), role: 'admin' as const },
    { pubkey: 'b'.repeat(64), role: 'member' as const },
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

  it('lists only admins in kind 39001 and everyone in kind 39002', () => {
    expect(adminsTemplate('c', members).tags).toEqual([
      ['d', 'c'],
      ['p', 'a'.repeat(64), 'admin'],
    ])
    expect(membersTemplate('c', members).tags).toEqual([
      ['d', 'c'],
      ['p', 'a'.repeat(64)],
      ['p', 'b'.repeat(64)],
    ])
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
