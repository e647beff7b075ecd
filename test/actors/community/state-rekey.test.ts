import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { ChannelReads, latestIdsOf } from '../../../src/actors/community/channel-reads'
import { type ChannelDeps, publishState, type RelayEvent } from '../../../src/actors/community/community-channels'
import { rekeyChannelState } from '../../../src/actors/community/state-rekey'
import { createLogger } from '../../../src/infra/log'
import type { ChannelStore } from '../../../src/infra/store/channel-store'
import type { EventStore } from '../../../src/infra/store/event-store'
import { openPostgresChannelStore } from '../../../src/infra/store/postgres/postgres-channel-store'
import { openPostgresEventStore } from '../../../src/infra/store/postgres/postgres-event-store'
import { openSqliteChannelStore } from '../../../src/infra/store/sqlite/sqlite-channel-store'
import { openSqliteEventStore } from '../../../src/infra/store/sqlite/sqlite-event-store'
import { dTagOf } from '../../../src/protocols/nip01/kinds'
import { type SigningKey, signTemplate } from '../../../src/protocols/nip01/sign'
import { channelRow } from '../../support/channel-rows'
import { makeKeys } from '../../support/events'
import { createTestDatabase, type TestDatabase } from '../../support/postgres'

const COMMUNITY = 'hive'
const STATE_KINDS = [39000, 39001, 39002, 39003]
const nowSeconds = () => Math.floor(Date.now() / 1000)

interface Stores {
  events: EventStore
  channels: ChannelStore
}

const dir = mkdtempSync(join(tmpdir(), 'apiary-rekey-'))
let db: TestDatabase | undefined
let files = 0
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => {
  await db?.drop()
  rmSync(dir, { recursive: true, force: true })
})

const backends: [string, () => Promise<Stores>][] = [
  [
    'SQLite',
    async () => {
      const file = join(dir, `rekey-${++files}.db`)
      return {
        events: openSqliteEventStore({ file, groupCommitMaxEvents: 64, groupCommitMaxDelayMs: 0 }),
        channels: openSqliteChannelStore(file),
      }
    },
  ],
  [
    'PostgreSQL',
    async () => {
      const url = (db as TestDatabase).url
      return {
        events: await openPostgresEventStore({ url, groupCommitMaxEvents: 64, groupCommitMaxDelayMs: 0 }),
        channels: await openPostgresChannelStore({ url }),
      }
    },
  ],
]

describe.each(backends)('channel state a former key signed (%s)', (_, open) => {
  const opened: Stores[] = []
  afterEach(async () => {
    for (const s of opened.splice(0)) await Promise.all([s.events.close(), s.channels.close()])
  })
  const former = makeKeys()
  const own = makeKeys()

  async function setup() {
    const stores = await open()
    opened.push(stores)
    // each test its own community: the PostgreSQL database is shared by the tests of this file
    const community = `${COMMUNITY}-${Math.random().toString(36).slice(2, 8)}`
    const depsFor = (key: SigningKey): ChannelDeps => ({
      community,
      channels: stores.channels,
      reads: new ChannelReads(stores.channels, community, latestIdsOf(stores.events, community, 50, nowSeconds)),
      events: stores.events,
      relayPubkey: key.pubkey,
      isModerator: () => false,
      sign: (t, createdAt) => signTemplate(key, t, createdAt),
      defer: () => {},
      invalidate: async () => {},
      nowSeconds,
      log: createLogger('silent'),
      latePublication: { maxModerationAgeSeconds: 60, maxPostAgeSeconds: 3600 },
    })
    const before = depsFor(former)
    const after = depsFor(own)
    const state = async (author: string, ids: string[]) =>
      (await stores.events.query(community, [{ kinds: STATE_KINDS, authors: [author], tags: { d: ids } }], { now: nowSeconds() })).map(
        (s) => s.event,
      )
    async function channel(id: string, members: string[]) {
      await stores.channels.create(
        community,
        channelRow(id, { name: `Room ${id}`, restricted: true, createdAt: nowSeconds() }),
        members[0] as string,
      )
      for (const m of members.slice(1)) await stores.channels.putMember(community, id, m, [])
    }
    const inflight = { effects: 0 }
    const announced: RelayEvent[][] = []
    const rekey = () =>
      rekeyChannelState(after, [former.pubkey], { inflight }, (events) => {
        announced.push(events)
        inflight.effects--
      })
    return { stores, community, before, after, state, channel, rekey, announced, inflight }
  }

  it('signs each live channel’s state again with the community’s own key, page after page, and deletes the former versions', async () => {
    const t = await setup()
    const admin = makeKeys().pubkey
    const member = makeKeys().pubkey
    const ids = Array.from({ length: 40 }, (_, i) => `room-${i}`)
    for (const id of ids) {
      await t.channel(id, [admin, member])
      await publishState(t.before, id, [], { metadata: true, members: true })
    }
    expect(await t.state(former.pubkey, ids)).toHaveLength(ids.length * 4)

    expect(await t.rekey()).toBe(ids.length * 4)
    expect(await t.state(former.pubkey, ids)).toEqual([])
    const resigned = await t.state(own.pubkey, ids)
    expect(resigned).toHaveLength(ids.length * 4)
    for (const e of resigned.filter((x) => x.kind === 39000)) expect(e.tags).toContainEqual(['name', `Room ${dTagOf(e)}`])
    for (const e of resigned.filter((x) => x.kind === 39002))
      expect(
        e.tags
          .filter((x) => x[0] === 'p')
          .map((x) => x[1])
          .sort(),
      ).toEqual([admin, member].sort())
    // more than one page, every stored version announced once, and every page's effect settled
    expect(t.announced.length).toBeGreaterThan(1)
    expect(
      t.announced
        .flat()
        .map((r) => r.event.id)
        .sort(),
    ).toEqual(resigned.map((e) => e.id).sort())
    expect(t.inflight.effects).toBe(0)
  })

  it('only deletes the former versions of state its own key has signed already (another node got there first)', async () => {
    const t = await setup()
    await t.channel('done', [makeKeys().pubkey])
    await publishState(t.before, 'done', [], { metadata: true, members: true })
    const current: RelayEvent[] = []
    await publishState(t.after, 'done', current, { metadata: true, members: true })

    expect(await t.rekey()).toBe(4)
    expect(t.announced.flat()).toEqual([])
    expect(await t.state(former.pubkey, ['done'])).toEqual([])
    expect((await t.state(own.pubkey, ['done'])).map((e) => e.id).sort()).toEqual(current.map((r) => r.event.id).sort())
  })

  it('deletes a deleted channel’s former state and signs none for it', async () => {
    const t = await setup()
    await t.channel('gone', [makeKeys().pubkey])
    await publishState(t.before, 'gone', [], { metadata: true, members: true })
    await t.stores.channels.remove(t.community, 'gone')

    await t.rekey()
    expect(await t.state(former.pubkey, ['gone'])).toEqual([])
    expect(await t.state(own.pubkey, ['gone'])).toEqual([])
  })

  it('finds nothing to do where no former key signed anything', async () => {
    const t = await setup()
    await t.channel('new', [makeKeys().pubkey])
    await publishState(t.after, 'new', [], { metadata: true, members: true })
    expect(await t.rekey()).toBe(0)
    expect([t.announced, t.inflight.effects]).toEqual([[], 0])
  })
})
