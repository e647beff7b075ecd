import { randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { filter, firstValueFrom } from 'rxjs'
import { describe, expect, it } from 'vitest'
import type { CommunityMsg, CommunityStats } from '../../src/actors/community/messages'
import type { ConnView } from '../../src/actors/community/subscription-index'
import { ask, type SupervisionEvent, tell } from '../../src/actors/kernel'
import type { ConfigInput } from '../../src/index'
import type { CommunityStore } from '../../src/infra/store/community-store'
import type { EventStore, SaveOutcome } from '../../src/infra/store/event-store'
import { openPostgresEventStore } from '../../src/infra/store/postgres/postgres-event-store'
import { openSqliteCommunityStore } from '../../src/infra/store/sqlite/sqlite-community-store'
import type { OutboundQueue } from '../../src/infra/ws/outbound-queue'
import { makeKeys } from '../support/events'
import { eventually } from '../support/eventually'
import { openFailingSqliteStore, withFaults } from '../support/failing-event-store'
import { labelledMetric, metric } from '../support/metrics'
import { createChannel, post, putUser, removeUser } from '../support/nip29-client'
import { communityActor, type TestRelay } from '../support/relay'
import { auth, client, fresh, publish, relayUrlOf, reqEvents } from '../support/relay-client'
import { REDIS_URL, useCluster, useRelays } from '../support/relay-fixtures'

/**
 * architecture §10: a client that believes it is subscribed never silently misses an event. Where an event can't be
 * delivered, the subscription is closed with CLOSED "error: ..." and counted; where a connection vanished
 * without telling its community, the community forgets it anyway.
 */

const stats = (r: TestRelay, community = 'default'): Promise<CommunityStats> =>
  ask<CommunityMsg, CommunityStats>(communityActor(r.relay, community), (reply) => ({ type: 'Stats', reply }), 5_000)

/** A connection as a community sees it, whose socket is already gone (and whose Disconnect never came). */
function vanished(id: string, subs: string[]): ConnView {
  const queue: OutboundQueue = {
    push: () => false,
    pushControl: () => false,
    pushPage: () => false,
    pendingBytes: 0,
    closed: true,
    closeAfterFlush: () => {},
  }
  return { id, ip: '127.0.0.1', queue, authed: new Set(), owners: new Map(), subs: new Set(subs), lose: () => {} }
}

/** the real SQLite store, with saves that wait until released */
function storeHoldingSaves(dir: string) {
  const failing = openFailingSqliteStore(join(dir, 'events.sqlite'))
  let gate: Promise<void> | undefined
  let open = () => {}
  const store: EventStore = {
    ...failing.store,
    save: async (c, e, raw): Promise<SaveOutcome> => {
      await gate
      return failing.store.save(c, e, raw)
    },
  }
  return {
    store,
    failing,
    hold() {
      gate = new Promise<void>((resolve) => {
        open = resolve
      })
    },
    release() {
      gate = undefined
      open()
    },
  }
}

describe('delivery that cannot happen is never silent', () => {
  const relays = useRelays()

  it('forgets a connection whose Disconnect never arrived: its subscriptions stop counting after the sweep', async () => {
    const r = await relays.start()
    const ref = communityActor(r.relay, 'default')
    tell(ref, { type: 'Join', conn: vanished('ghost-1', ['a', 'b']) })
    tell(ref, { type: 'Subscribe', conn: vanished('ghost-1', ['a', 'b']), subId: 'a', filters: [{ kinds: [1] }] })
    expect(await stats(r)).toMatchObject({ connections: 1, subscriptions: 1 })
    tell(ref, { type: 'Sweep' })
    expect(await stats(r)).toMatchObject({ connections: 0, subscriptions: 0, presenceHolders: 0 })
  })

  it('leaves the subscription index and the presence holders empty after 10,000 connect/subscribe/close cycles', {
    timeout: 120_000,
  }, async () => {
    const r = await relays.start()
    const keys = makeKeys()
    const cycle = async (i: number) => {
      const c = await client(r)
      c.send(['REQ', `s${i}`, { kinds: [1], authors: [keys.pubkey] }])
      if (i % 100 === 0) {
        // now and then one that holds a presence too
        expect((await auth(c, keys, relayUrlOf(r))).accepted).toBe(true)
        expect((await publish(c, fresh(keys, { kind: 20001, content: 'here' }))).accepted).toBe(true)
      }
      await c.next((f) => f[0] === 'EOSE')
      if (i % 2 === 0) c.close()
      else c.ws.terminate()
      await c.closed
    }
    const lanes = 25
    await Promise.all(
      Array.from({ length: lanes }, async (_, lane) => {
        for (let i = lane; i < 10_000; i += lanes) await cycle(i)
      }),
    )
    const settled = await eventually(
      () => stats(r),
      (s) => s.connections === 0 && s.subscriptions === 0 && s.presenceHolders === 0,
      'every connection, subscription and presence holder gone',
      { intervalMs: 100 },
    )
    expect(settled).toMatchObject({ connections: 0, subscriptions: 0, presenceHolders: 0 })
  })

  it('delivers an event stored while its community was down to the live subscriber once the community is back, with OK true at once', {
    timeout: 60_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'apiary-silent-'))
    const held = storeHoldingSaves(dir)
    const node = await relays.start({}, dir, { eventStore: held.store })
    const events: SupervisionEvent[] = []
    node.relay.supervision$.subscribe((e) => events.push(e))
    const subscriber = await client(node)
    subscriber.send(['REQ', 'live', { kinds: [1] }])
    await subscriber.next((f) => f[0] === 'EOSE' && f[1] === 'live')

    // an event whose commit takes a while ...
    held.hold()
    const publisher = await client(node)
    const e = fresh(makeKeys(), { content: 'committed while its community was down' })
    publisher.send(['EVENT', e.event])
    // ... while the community gives up (six failing REQs within a minute) and is down
    const prober = await client(node)
    held.failing.failNext('query', 6)
    const gaveUp = firstValueFrom(node.relay.supervision$.pipe(filter((x) => x.type === 'gave-up' && x.path === 'community/default')))
    for (let i = 0; i < 6; i++) {
      prober.send(['REQ', `p${i}`, { kinds: [1] }])
      await prober.next((f) => f[0] === 'CLOSED' && f[1] === `p${i}`, 15_000)
    }
    await gaveUp
    held.release()

    // the commit is answered at once: it is stored
    const ok = await publisher.ok(e.event.id)
    expect(ok[2]).toBe(true)
    // and the subscription the community still holds gets it once the community is respawned: no gap, no CLOSED
    await firstValueFrom(node.relay.supervision$.pipe(filter((x) => x.type === 'restarted' && x.path === 'community/default')))
    const live = await subscriber.next(
      (f) => f[1] === 'live' && (f[0] === 'CLOSED' || (f[0] === 'EVENT' && (f[2] as { id: string }).id === e.event.id)),
      10_000,
    )
    expect(live[0]).toBe('EVENT')
    expect(await metric(node, 'apiary_subscriptions_lost_total')).toBe(0)
    expect(events.some((x) => x.type === 'gave-up')).toBe(true)
  })
})

describe('banned event ids before the first write', () => {
  const relays = useRelays()

  /** the community store, with listBannedEvents held until released, and failing the first `fail` times */
  function holdingBannedList(fail: number) {
    let open = () => {}
    const gate = new Promise<void>((resolve) => {
      open = resolve
    })
    let calls = 0
    const wrap = (store: CommunityStore): CommunityStore =>
      Object.assign(Object.create(store) as CommunityStore, {
        listBannedEvents: async (community: string) => {
          await gate
          if (++calls <= fail) throw new Error('community store unreachable')
          return store.listBannedEvents(community)
        },
      })
    return { wrap, release: () => open() }
  }

  it('judges no write before the banned ids are loaded: a banned event sent at once is refused "blocked:"', async () => {
    const first = await relays.start()
    const banned = fresh(makeKeys(), { content: 'banned before it ever arrived' })
    const store = openSqliteCommunityStore(join(first.dataDir, 'apiary.sqlite'))
    await store.banEvent('default', banned.event.id, 'known spam')
    await store.close()
    await first.close({ keepData: true })
    relays.forget(first)

    const held = holdingBannedList(0)
    const r = await relays.start({}, first.dataDir, { wrapCommunityStore: held.wrap })
    const c = await client(r)
    c.send(['EVENT', banned.event])
    const early = await c.next((f) => f[0] === 'OK' && f[1] === banned.event.id, 300).catch(() => undefined)
    expect(early).toBeUndefined()
    held.release()
    const ok = await c.ok(banned.event.id)
    expect(ok[2]).toBe(false)
    expect(String(ok[3])).toMatch(/^blocked: /)
  })

  it('answers the writes that waited "error:" when the first load fails, crashes so supervision retries, and then refuses the banned event', async () => {
    const first = await relays.start()
    const banned = fresh(makeKeys(), { content: 'still banned after a failed load' })
    const store = openSqliteCommunityStore(join(first.dataDir, 'apiary.sqlite'))
    await store.banEvent('default', banned.event.id, 'known spam')
    await store.close()
    await first.close({ keepData: true })
    relays.forget(first)

    const held = holdingBannedList(1)
    const r = await relays.start({}, first.dataDir, { wrapCommunityStore: held.wrap })
    const restarted = firstValueFrom(r.relay.supervision$.pipe(filter((e) => e.type === 'restarted' && e.path === 'community/default')))
    const c = await client(r)
    c.send(['EVENT', banned.event])
    // held, unanswered, while the list is on its way
    expect(await c.next((f) => f[0] === 'OK' && f[1] === banned.event.id, 300).catch(() => undefined)).toBeUndefined()
    held.release()
    const ok = await c.ok(banned.event.id)
    expect(ok[2]).toBe(false)
    expect(String(ok[3])).toMatch(/^error: /)
    await restarted
    expect((await publish(c, banned)).message).toMatch(/^blocked: /)
  })
})

/**
 * Two nodes of one cluster sharing a community; B's store can be made to fail, so that its community gives up
 * (six failing REQs) and stays down for its respawn delay while A goes on.
 */
function useTwoNodes() {
  const relays = useRelays()
  const cluster = useCluster(relays)
  return async (extra: ConfigInput = {}) => {
    const community = `c-${randomBytes(5).toString('hex')}`
    const host = `${community}.test`
    const config = {
      ...extra,
      redisUrl: REDIS_URL,
      databaseUrl: cluster.databaseUrl(),
      relaySecretKey: cluster.relaySecretKey,
      communities: [{ id: community, hosts: [host] }],
    }
    const a = await relays.start(config)
    const pg = withFaults(await openPostgresEventStore({ url: cluster.databaseUrl(), groupCommitMaxEvents: 100, groupCommitMaxDelayMs: 0 }))
    const b = await relays.start(config, undefined, { eventStore: pg.store })
    const takeDownOnB = async () => {
      const gaveUp = firstValueFrom(b.relay.supervision$.pipe(filter((x) => x.type === 'gave-up' && x.path === `community/${community}`)))
      // every read fails until the community gives up: its own reads beside the actor (the NIP-43 member list
      // at spawn) may take some of the failures, so no fixed number of REQs is enough
      pg.failNext('query', 1_000)
      let down = false
      void gaveUp.then(() => {
        down = true
      })
      const prober = await client(b, host)
      for (let i = 0; !down && i < 100; i++) {
        prober.send(['REQ', `p${i}`, { kinds: [1] }])
        await prober.next((f) => f[0] === 'CLOSED' && f[1] === `p${i}`, 15_000)
      }
      await gaveUp
      pg.failNext('query', 0)
    }
    return { community, host, a, b, takeDownOnB }
  }
}

describe('a remote event a community cannot take', () => {
  const twoNodes = useTwoNodes()

  it('closes, with CLOSED "error:", the subscriptions on this node it would have reached, and counts it in apiary_fanout_lag_total', {
    timeout: 60_000,
  }, async () => {
    const { host, a, b, takeDownOnB } = await twoNodes()
    const onB = await client(b, host)
    await reqEvents(onB, [{ kinds: [1] }], 'live')
    await takeDownOnB()
    // ... while A accepts an event B's subscriber was waiting for
    expect((await publish(await client(a, host), fresh(makeKeys()))).accepted).toBe(true)
    const lost = await onB.next((f) => f[0] === 'CLOSED' && f[1] === 'live', 10_000)
    expect(String(lost[2])).toMatch(/^error: an event from another node could not be delivered/)
    expect(await metric(b, 'apiary_fanout_lag_total')).toBeGreaterThanOrEqual(1)
    expect(await metric(b, 'apiary_subscriptions_lost_total')).toBeGreaterThanOrEqual(1)
  })
})

describe('a disconnect order a community cannot take', () => {
  const twoNodes = useTwoNodes()

  it("closes the banned pubkey's socket on this node once the community is back, and counts the lost order", {
    timeout: 60_000,
  }, async () => {
    const { community, host, a, b, takeDownOnB } = await twoNodes()
    const eve = makeKeys()
    const eveOnB = await client(b, host)
    expect((await auth(eveOnB, eve, relayUrlOf(b, host))).accepted).toBe(true)
    await takeDownOnB()
    // ... while A bans Eve: B's community cannot take the order when it arrives
    await a.relay.banPubkey(community, eve.pubkey, 'spam')
    const notice = await eveOnB.next((f) => f[0] === 'NOTICE', 20_000)
    expect(String(notice[1])).toMatch(/^blocked: /)
    expect((await eveOnB.closed).code).toBe(1008)
    expect(await metric(b, 'apiary_conn_control_lag_total')).toBeGreaterThanOrEqual(1)
  })
})

describe('a cache invalidation a community cannot take', () => {
  const twoNodes = useTwoNodes()

  it('drops the access caches once the community is back: a member removed meanwhile gets no more of the private channel', {
    timeout: 60_000,
  }, async () => {
    // caches that would otherwise hold for the longest TTL allowed: only the lost invalidation's Lagged drops them in time
    const { host, a, b, takeDownOnB } = await twoNodes({ accessCacheTtlMs: 60_000 })
    const alice = makeKeys()
    const bob = makeKeys()
    const marker = makeKeys()
    const aliceOnA = await client(a, host)
    expect((await auth(aliceOnA, alice, relayUrlOf(a, host))).accepted).toBe(true)
    expect((await createChannel(aliceOnA, alice, 'board', { flags: ['private', 'closed'] })).ok.accepted).toBe(true)
    expect((await putUser(aliceOnA, alice, 'board', bob.pubkey)).ok.accepted).toBe(true)
    const bobOnB = await client(b, host)
    expect((await auth(bobOnB, bob, relayUrlOf(b, host))).accepted).toBe(true)
    await reqEvents(
      bobOnB,
      [
        { kinds: [9], '#h': ['board'] },
        { kinds: [1], authors: [marker.pubkey] },
      ],
      'live',
    )
    // B decides Bob may read the channel, and caches it
    const first = await post(aliceOnA, alice, 'board')
    await bobOnB.next((f) => f[0] === 'EVENT' && f[1] === 'live' && (f[2] as { id: string }).id === first.event.id, 10_000)
    await takeDownOnB()
    // ... while A removes Bob: B's community cannot take the invalidation when it arrives
    expect((await removeUser(aliceOnA, alice, 'board', bob.pubkey)).ok.accepted).toBe(true)
    await eventually(
      () => metric(b, 'apiary_cache_invalidation_lag_total'),
      (n) => n >= 1,
      'the lost invalidation counted',
    )
    // the community is back and has heard of the loss
    await eventually(
      () => labelledMetric(b, 'apiary_lags_acted_on_total', { stream: 'cache-invalidation' }),
      (n) => n >= 1,
      'the lost invalidation acted on',
      { timeoutMs: 30_000, intervalMs: 100 },
    )
    // a post to the channel, then a public marker: the subscription sees events in order, so the marker
    // arriving alone shows the post was not delivered
    const second = await post(aliceOnA, alice, 'board')
    const shown = await publish(aliceOnA, fresh(marker, { kind: 1 }))
    expect(shown.accepted).toBe(true)
    const next = await bobOnB.next((f) => f[0] === 'EVENT' && f[1] === 'live', 10_000)
    expect((next[2] as { id: string }).id).not.toBe(second.event.id)
    expect((next[2] as { pubkey: string }).pubkey).toBe(marker.pubkey)
  })
})
