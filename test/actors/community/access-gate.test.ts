import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { AccessGate } from '../../../src/actors/community/access-gate'
import type { ConnView, Subscription } from '../../../src/actors/community/subscription-index'
import type { ChannelStore } from '../../../src/infra/store/channel-store'
import { type CommunityRecord, DEFAULT_SETTINGS } from '../../../src/infra/store/community-store'
import { openSqliteChannelStore } from '../../../src/infra/store/sqlite/sqlite-channel-store'
import type { NostrEvent } from '../../../src/protocols/nip01/event'
import { channelRow } from '../../support/channel-rows'

const A = 'a'.repeat(64)
const B = 'b'.repeat(64)
const ADMIN = 'c'.repeat(64)
const TTL_MS = 1_000

const conn = (id: string, ...authed: string[]): ConnView => ({
  id,
  ip: '127.0.0.1',
  authed: new Set(authed),
  owners: new Map(),
  subs: new Set(['s']),
  lose: () => {},
  queue: {} as ConnView['queue'],
})
const sub = (c: ConnView): Subscription => ({ conn: c, subId: 's', filters: [{}] })
const inChannel = (channel: string, kind = 9): NostrEvent =>
  ({ id: 'e'.repeat(64), pubkey: A, created_at: 1, kind, tags: [['h', channel]], content: '', sig: '' }) as NostrEvent

/**
 * A real SQLite channel store whose reads can be made to fail, as a database outage would, or be held once
 * answered (`afterRead`), as an answer still on its way back to a busy event loop is.
 */
function faulty(store: ChannelStore) {
  const state: { failing: boolean; reads: number; afterRead?: () => Promise<void> } = { failing: false, reads: 0 }
  const guard =
    <A extends unknown[], R>(f: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      state.reads++
      if (state.failing) throw new Error('store down')
      const answer = await f(...a)
      await state.afterRead?.()
      return answer
    }
  const wrapped: ChannelStore = {
    ...store,
    get: guard(store.get.bind(store)),
    restricted: guard(store.restricted.bind(store)),
    rolesOf: guard(store.rolesOf.bind(store)),
  }
  return { store: wrapped, state }
}

describe('the access gate deciding who receives a channel event', () => {
  let channels: ChannelStore
  let fault: ReturnType<typeof faulty>
  let now: number
  let record: CommunityRecord
  let gate: AccessGate

  beforeEach(async () => {
    channels = openSqliteChannelStore(join(mkdtempSync(join(tmpdir(), 'gate-')), 'c.sqlite'))
    fault = faulty(channels)
    now = 1_000_000
    record = {
      id: 'c1',
      name: 'c1',
      hosts: [],
      agents: [],
      admins: [ADMIN],
      settings: { ...DEFAULT_SETTINGS },
      kinds: { allowed: [], disallowed: [] },
    }
    gate = new AccessGate({
      community: 'c1',
      channels: fault.store,
      record: () => record,
      allowedAmong: async (pubkeys) => new Set(pubkeys.filter((p) => p === B)),
      ttlMs: TTL_MS,
      nowMs: () => now,
    })
    const base = {
      name: '',
      about: '',
      picture: '',
      banner: '',
      restricted: true,
      supportedKinds: null,
      closed: false,
      hidden: false,
      createdAt: 1,
    }
    await channels.create('c1', { ...base, id: 'secret', private: true }, A)
    await channels.create('c1', { ...base, id: 'lobby', private: false }, A)
  })
  afterEach(() => channels.close())

  const receivers = async (channel: string, ...conns: ConnView[]) =>
    (await gate.deliverable(inChannel(channel), conns.map(sub))).map((s) => s.conn.id)

  it('delivers a private channel only to members and community admins, never to the unauthenticated', async () => {
    expect(await receivers('secret', conn('member', A), conn('outsider', B), conn('admin', ADMIN), conn('anon'))).toEqual([
      'member',
      'admin',
    ])
  })

  it('delivers a public channel to everyone the community lets read', async () => {
    expect(await receivers('lobby', conn('outsider', B), conn('anon'))).toEqual(['outsider', 'anon'])
  })

  it('keeps delivering from its cache until told, then stops at once on InvalidateMembership', async () => {
    expect(await receivers('secret', conn('member', A))).toEqual(['member'])
    await channels.removeMember('c1', 'secret', A)
    expect(await receivers('secret', conn('member', A))).toEqual(['member'])
    gate.invalidate({ op: 'InvalidateMembership', channel: 'secret', pubkey: A })
    expect(await receivers('secret', conn('member', A))).toEqual([])
  })

  it('stops delivering to a removed member once the TTL has passed, with no broadcast at all', async () => {
    expect(await receivers('secret', conn('member', A))).toEqual(['member'])
    await channels.removeMember('c1', 'secret', A)
    now += TTL_MS - 1
    expect(await receivers('secret', conn('member', A))).toEqual(['member'])
    now += 1
    expect(await receivers('secret', conn('member', A))).toEqual([])
  })

  // fan-out reads no row per event (issue "Actors never wait on storage"): a public answer is cached too, and
  // the edit that makes a channel private drops it at once here (InvalidateVisibility, also broadcast); a lost
  // broadcast is bounded by the TTL
  it('caches a public answer until InvalidateVisibility, or the TTL when the broadcast is lost', async () => {
    expect(await receivers('lobby', conn('outsider', B))).toEqual(['outsider'])
    await channels.update('c1', 'lobby', { private: true })
    expect(await receivers('lobby', conn('outsider', B))).toEqual(['outsider'])
    gate.invalidate({ op: 'InvalidateVisibility', channel: 'lobby' })
    expect(await receivers('lobby', conn('outsider', B))).toEqual([])
    await channels.update('c1', 'lobby', { private: false })
    now += TTL_MS
    expect(await receivers('lobby', conn('outsider', B))).toEqual(['outsider'])
  })

  it('never caches a public answer read before the channel was made private and invalidated', async () => {
    let answered!: () => void
    const read = new Promise<void>((resolve) => {
      answered = resolve
    })
    let release!: () => void
    fault.state.afterRead = () => {
      answered()
      return new Promise<void>((resolve) => {
        release = resolve
      })
    }
    const inFlight = receivers('lobby', conn('outsider', B))
    await read
    fault.state.afterRead = undefined
    await channels.update('c1', 'lobby', { private: true })
    gate.invalidate({ op: 'InvalidateVisibility', channel: 'lobby' })
    release()
    // the event it decided for was public when read; the next one must see the channel as it is now
    expect(await inFlight).toEqual(['outsider'])
    expect(await receivers('lobby', conn('outsider', B))).toEqual([])
  })

  it('decides from its caches alone when it can (deliverableNow), and says when a lookup is needed', async () => {
    const subs = [sub(conn('member', A)), sub(conn('outsider', B))]
    expect(gate.deliverableNow(inChannel('secret'), subs)).toBeUndefined()
    const reads = fault.state.reads
    expect((await gate.deliverable(inChannel('secret'), subs)).map((s) => s.conn.id)).toEqual(['member'])
    expect(gate.deliverableNow(inChannel('secret'), subs)?.map((s) => s.conn.id)).toEqual(['member'])
    expect(fault.state.reads).toBeGreaterThan(reads)
    const after = fault.state.reads
    gate.deliverableNow(inChannel('secret'), subs)
    expect(fault.state.reads).toBe(after)
    now += TTL_MS
    expect(gate.deliverableNow(inChannel('secret'), subs)).toBeUndefined()
  })

  it('delivers nothing when a lookup fails (fail closed)', async () => {
    fault.state.failing = true
    await expect(gate.deliverable(inChannel('secret'), [sub(conn('member', A))])).rejects.toThrow('store down')
  })

  it('hides private channels a reader is not in, and deleted ones from everyone, inside the store query', async () => {
    await channels.create(
      'c1',
      {
        name: '',
        about: '',
        picture: '',
        banner: '',
        restricted: true,
        supportedKinds: null,
        closed: false,
        hidden: false,
        createdAt: 1,
        id: 'gone',
        private: false,
      },
      A,
    )
    await channels.remove('c1', 'gone')
    expect((await gate.readOptions(conn('member', A), 1)).hiddenChannels).toEqual(['gone'])
    expect([...((await gate.readOptions(conn('outsider', B), 1)).hiddenChannels ?? [])].sort()).toEqual(['gone', 'secret'])
    expect([...((await gate.readOptions(conn('anon'), 1)).hiddenChannels ?? [])].sort()).toEqual(['gone', 'secret'])
  })

  it('keeps a hidden channel’s state and a private channel’s member lists from non-members, inside the store query', async () => {
    const base = channelRow('', { name: '', restricted: true })
    await channels.create('c1', { ...base, id: 'den', hidden: true }, A)
    const rules = async (c: ConnView) => (await gate.readOptions(c, 1)).hiddenChannelState
    expect(await rules(conn('member', A))).toEqual([])
    expect(await rules(conn('admin', ADMIN))).toEqual([])
    const management = Array.from({ length: 23 }, (_, i) => 9000 + i)
    const outside = [
      { tag: 'd', kinds: [39000, 39001, 39002, 39003, 39004, 39005], channels: ['den'] },
      { tag: 'h', kinds: management, channels: ['den'] },
      { tag: 'd', kinds: [39001, 39002], channels: ['secret'] },
    ]
    expect(await rules(conn('outsider', B))).toEqual(outside)
    expect(await rules(conn('anon'))).toEqual(outside)
    // a hidden channel that is public keeps its messages readable: only its state is hidden
    expect((await gate.readOptions(conn('anon'), 1)).hiddenChannels).toEqual(['secret'])
    record = { ...record, settings: { ...record.settings, publicMemberLists: true } }
    expect(await rules(conn('anon'))).toEqual(outside.slice(0, 2))
  })

  it('delivers a hidden channel’s state live to its members and community admins only', async () => {
    const base = channelRow('', { name: '', restricted: true })
    await channels.create('c1', { ...base, id: 'den', hidden: true }, A)
    const state = { ...inChannel('x', 39000), tags: [['d', 'den']] }
    const readers = [sub(conn('member', A)), sub(conn('admin', ADMIN)), sub(conn('outsider', B)), sub(conn('anon'))]
    const got = await gate.deliverable(state, readers)
    expect(got.map((s) => s.conn.id)).toEqual(['member', 'admin'])
    // decided again from the caches alone, without a store read
    const reads = fault.state.reads
    expect(gate.deliverableNow(state, readers)?.map((s) => s.conn.id)).toEqual(['member', 'admin'])
    expect(fault.state.reads).toBe(reads)
  })

  it('applies the community read policy: members only lets admins and allowed pubkeys in', async () => {
    record = { ...record, settings: { ...record.settings, readPolicy: 'members' } }
    expect(await gate.checkRead(conn('anon'))).toMatch(/^auth-required:/)
    expect(await gate.checkRead(conn('stranger', A))).toMatch(/^restricted:/)
    expect(await gate.checkRead(conn('allowed', B))).toBeNull()
    expect(await receivers('lobby', conn('stranger', A), conn('allowed', B), conn('admin', ADMIN))).toEqual(['allowed', 'admin'])
  })
})
