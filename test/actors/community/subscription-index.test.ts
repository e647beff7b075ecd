import { describe, expect, it } from 'vitest'
import { type ConnView, SubscriptionIndex } from '../../../src/actors/community/subscription-index'
import type { NostrEvent } from '../../../src/protocols/nip01/event'

const conn = (id: string): ConnView => ({
  id,
  ip: '127.0.0.1',
  authed: new Set(),
  owners: new Map(),
  subs: new Set(),
  lose: () => {},
  queue: {} as ConnView['queue'],
})
const ev = (over: Partial<NostrEvent>): NostrEvent => ({
  id: 'e'.repeat(64),
  pubkey: 'a'.repeat(64),
  created_at: 1,
  kind: 1,
  tags: [],
  content: '',
  sig: '0'.repeat(128),
  ...over,
})

describe('the live-subscription index', () => {
  it('counts subscriptions through add, replace, remove and a closed connection', () => {
    const index = new SubscriptionIndex()
    const [a, b] = [conn('a'), conn('b')]
    index.add(a, 's1', [{ kinds: [1] }])
    index.add(a, 's2', [{ authors: ['a'.repeat(64)] }])
    index.add(b, 's1', [{}])
    expect([index.size, index.connections]).toEqual([3, 2])
    index.add(a, 's1', [{ kinds: [7] }]) // same id: replaced, not added
    expect(index.size).toBe(3)
    index.remove('a', 's2')
    index.remove('a', 'unknown')
    expect([index.size, index.connections]).toEqual([2, 2])
    index.removeConnection('b')
    index.removeConnection('b')
    expect([index.size, index.connections]).toEqual([1, 1])
    index.remove('a', 's1')
    expect([index.size, index.connections]).toEqual([0, 0])
  })

  it('finds each matching subscription once, through whichever field it is filed under', () => {
    const index = new SubscriptionIndex()
    const c = conn('c')
    index.add(c, 'by-kind', [{ kinds: [1] }, { kinds: [7] }])
    index.add(c, 'by-tag', [{ tags: { t: ['bees'] } }])
    index.add(c, 'by-author', [{ authors: ['b'.repeat(64)] }])
    index.add(c, 'everything', [{}])
    const matched = (e: NostrEvent) =>
      index
        .match(e)
        .map((s) => s.subId)
        .sort()
    expect(matched(ev({ kind: 1, tags: [['t', 'bees']] }))).toEqual(['by-kind', 'by-tag', 'everything'])
    expect(matched(ev({ kind: 7, pubkey: 'b'.repeat(64) }))).toEqual(['by-author', 'by-kind', 'everything'])
    index.remove('c', 'everything')
    expect(matched(ev({ kind: 3 }))).toEqual([])
  })
})
