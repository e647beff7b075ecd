import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ChannelReads, type LatestIds, latestIdsOf } from '../../../src/actors/community/channel-reads'
import type { ChannelInit, ChannelStore } from '../../../src/infra/store/channel-store'
import { type EventStore, StoreError } from '../../../src/infra/store/event-store'
import { openSqliteChannelStore } from '../../../src/infra/store/sqlite/sqlite-channel-store'
import { channelRow } from '../../support/channel-rows'

const community = 'c'
const pubkey = (c: string) => c.repeat(64)
const channel = (id: string): ChannelInit => channelRow(id, { restricted: true })

/** Latest ids that count their calls: per channel, ids made of one repeated character. */
function latestIds(byChannel: Record<string, string[] | undefined> = {}) {
  const calls: string[] = []
  const read: LatestIds = async (ch) => {
    calls.push(ch)
    return ch in byChannel ? byChannel[ch] : []
  }
  return { calls, read }
}

/** The real SQLite channel store, counting the reads that reach it (and failing them on demand). */
function counting(store: ChannelStore) {
  const calls = { get: [] as string[][], rolesOf: [] as string[][] }
  let failing = false
  return {
    calls,
    fail: (on: boolean) => {
      failing = on
    },
    store: {
      get: (c: string, ids: readonly string[]) => {
        calls.get.push([...ids])
        return failing ? Promise.reject(new Error('store down')) : store.get(c, ids)
      },
      rolesOf: (c: string, ch: string, pubkeys: readonly string[]) => {
        calls.rolesOf.push([ch, ...pubkeys])
        return failing ? Promise.reject(new Error('store down')) : store.rolesOf(c, ch, pubkeys)
      },
    },
  }
}

describe('ChannelReads: the fresh reads channel writes are decided on, batched per turn', () => {
  const dir = mkdtempSync(join(tmpdir(), 'apiary-channel-reads-'))
  let store: ChannelStore
  beforeAll(async () => {
    store = openSqliteChannelStore(join(dir, 'apiary.sqlite'))
    await store.create(community, channel('open'), pubkey('a'))
    await store.putMember(community, 'open', pubkey('b'), [])
    await store.create(community, channel('gone'), pubkey('a'))
    await store.remove(community, 'gone')
  })
  afterAll(async () => {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('answers the reads asked in one turn with one get and one rolesOf per channel, each read its own answer', async () => {
    const c = counting(store)
    const reads = new ChannelReads(c.store, community, latestIds().read)
    const [a, b, x, again, unknown, gone] = await Promise.all([
      reads.read('open', pubkey('a')),
      reads.read('open', pubkey('b')),
      reads.read('open', pubkey('x')),
      reads.read('open', pubkey('b')),
      reads.read('nope', pubkey('a')),
      reads.read('gone', pubkey('a')),
    ])
    expect([a!.role, b!.role, x!.role, again!.role]).toEqual(['admin', 'member', undefined, 'member'])
    expect(a!.channel?.id).toBe('open')
    expect(unknown).toEqual({ channel: undefined, role: undefined })
    // a deleted channel is present, flagged, and nobody has a role in it
    expect(gone!.channel?.deleted).toBe(true)
    expect(gone!.role).toBeUndefined()
    expect(c.calls.get.sort()).toEqual([['gone'], ['nope'], ['open']])
    expect(c.calls.rolesOf.find((r) => r[0] === 'open')).toEqual(['open', pubkey('a'), pubkey('b'), pubkey('x')])
    expect(c.calls.rolesOf).toHaveLength(3)
  })

  it('answers what a member’s roles let it do: admin before moderator, and member for any other roles or none', async () => {
    const reads = new ChannelReads(store, community, latestIds().read)
    await store.putMember(community, 'open', pubkey('e'), ['gardener', 'moderator'])
    await store.putMember(community, 'open', pubkey('f'), ['moderator', 'admin'])
    await store.putMember(community, 'open', pubkey('9'), ['gardener'])
    const rows = await Promise.all(['e', 'f', '9', 'b'].map((p) => reads.read('open', pubkey(p))))
    expect(rows.map((r) => r.role)).toEqual(['moderator', 'admin', 'member', 'member'])
  })

  it('never answers with a read older than the question: a read asked after a removal sees it', async () => {
    const c = counting(store)
    const reads = new ChannelReads(c.store, community, latestIds().read)
    await store.putMember(community, 'open', pubkey('d'), [])
    const before = reads.read('open', pubkey('d'))
    // let the first batch go out, then remove the member while it may still be on its way
    await Promise.resolve()
    expect(c.calls.get).toHaveLength(1)
    await store.removeMember(community, 'open', pubkey('d'))
    const after = await reads.read('open', pubkey('d'))
    expect((await before).role).toBe('member')
    expect(after.role).toBeUndefined()
    expect(c.calls.get).toHaveLength(2)
  })

  it('fails every read of a batch whose store read failed, and the next batch reads again', async () => {
    const c = counting(store)
    const reads = new ChannelReads(c.store, community, latestIds().read)
    c.fail(true)
    const failed = await Promise.allSettled([reads.read('open', pubkey('a')), reads.read('open', pubkey('b'))])
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected'])
    c.fail(false)
    expect((await reads.read('open', pubkey('a'))).role).toBe('admin')
  })

  it('reads the latest ids once per channel per turn, only when a write asked for them, and answers with their first 8 characters', async () => {
    const c = counting(store)
    const latest = latestIds({ open: ['a'.repeat(64), 'b'.repeat(64)], gone: ['c'.repeat(64)] })
    const reads = new ChannelReads(c.store, community, latest.read)
    const [plain, first, second] = await Promise.all([
      reads.read('open', pubkey('a')),
      reads.read('open', pubkey('b'), true),
      reads.read('open', pubkey('x'), true),
    ])
    expect(latest.calls).toEqual(['open'])
    expect(plain!.recent).toBeUndefined()
    expect([...(first!.recent ?? [])].sort()).toEqual(['aaaaaaaa', 'bbbbbbbb'])
    expect(second!.recent).toBe(first!.recent)
    expect(second!.role).toBeUndefined()
    // a turn whose writes carry no references reads no ids
    await Promise.all([reads.read('open', pubkey('a')), reads.read('gone', pubkey('a'))])
    expect(latest.calls).toEqual(['open'])
  })

  it('answers without `recent`, failing no read, when the store refused the latest ids for their cost', async () => {
    const reads = new ChannelReads(counting(store).store, community, latestIds({ open: undefined }).read)
    const rows = await reads.read('open', pubkey('a'), true)
    expect(rows.role).toBe('admin')
    expect(rows.recent).toBeUndefined()
  })

  it('reads the latest ids through the event store, turning a refusal for cost into no answer and letting an outage through', async () => {
    const answering = (error?: StoreError): Pick<EventStore, 'query'> => ({
      query: async (_c, filters) => {
        if (error) throw error
        expect(filters).toEqual([{ tags: { h: ['open'] }, limit: 50 }])
        return []
      },
    })
    expect(await latestIdsOf(answering(), community, 50, () => 1)('open')).toEqual([])
    const overloaded = new StoreError('too many reads waiting', { overloaded: true })
    expect(await latestIdsOf(answering(overloaded), community, 50, () => 1)('open')).toBeUndefined()
    await expect(latestIdsOf(answering(new StoreError('disk gone')), community, 50, () => 1)('open')).rejects.toThrow('disk gone')
  })
})
