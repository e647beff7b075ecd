import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { filter, firstValueFrom } from 'rxjs'
import { describe, expect, it } from 'vitest'
import type { CommunityMsg, CommunityStats } from '../../src/actors/community/messages'
import type { ConnView } from '../../src/actors/community/subscription-index'
import { ask, type SupervisionEvent, tell } from '../../src/actors/kernel'
import type { CommunityStore } from '../../src/infra/store/community-store'
import type { EventStore, SaveOutcome } from '../../src/infra/store/event-store'
import { openSqliteCommunityStore } from '../../src/infra/store/sqlite-community-store'
import type { OutboundQueue } from '../../src/infra/ws/outbound-queue'
import { makeKeys } from '../support/events'
import { openFailingSqliteStore } from '../support/failing-event-store'
import type { TestRelay } from '../support/relay'
import { auth, client, eventually, fresh, metric, publish, relayUrlOf, reqEvents, useRelays } from './helpers'

/**
 * DESIGN §5: a client that believes it is subscribed never silently misses an event. Where an event can't be
 * delivered, the subscription is closed with CLOSED "error: ..." and counted; where a connection vanished
 * without telling its community, the community forgets it anyway.
 */

const stats = (r: TestRelay, community = 'default'): Promise<CommunityStats> =>
  ask<CommunityMsg, CommunityStats>(r.relay.community(community)!, (reply) => ({ type: 'Stats', reply }), 5_000)

/** A connection as a community sees it, whose socket is already gone (and whose Disconnect never came). */
function vanished(id: string, subs: string[]): ConnView {
  const queue: OutboundQueue = { push: () => false, pushControl: () => false, pendingBytes: 0, closed: true, closeAfterFlush: () => {} }
  return { id, queue, authed: new Set(), owners: new Map(), subs: new Set(subs), lose: () => {} }
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
    const ref = r.relay.community('default')!
    tell(ref, { type: 'Join', conn: vanished('ghost-1', ['a', 'b']) })
    tell(ref, { type: 'Subscribe', conn: vanished('ghost-1', ['a', 'b']), subId: 'a', filters: [{ kinds: [1] }] })
    expect(await stats(r)).toMatchObject({ connections: 1, subscriptions: 1 })
    tell(ref, { type: 'Sweep' })
    expect(await stats(r)).toMatchObject({ connections: 0, subscriptions: 0, presenceHolders: 0 })
  })

  it('leaves the subscription index and the presence holders empty after 10,000 connect/subscribe/close cycles', { timeout: 120_000 }, async () => {
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
    )
    expect(settled).toMatchObject({ connections: 0, subscriptions: 0, presenceHolders: 0 })
  })

  it('closes with CLOSED "error:" a subscription an accepted event could not reach (its community went down meanwhile), and serves the event after', { timeout: 60_000 }, async () => {
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

    const ok = await publisher.ok(e.event.id)
    expect(ok[2]).toBe(true)
    const lost = await subscriber.next((f) => f[0] === 'CLOSED' && f[1] === 'live')
    expect(String(lost[2])).toMatch(/^error: /)
    expect(await metric(node, 'apiary_subscriptions_lost_total')).toBe(1)
    expect(events.some((x) => x.type === 'lagged' && x.path === 'community/default')).toBe(true)

    // once it is back, the event is there for whoever subscribes again
    await firstValueFrom(node.relay.supervision$.pipe(filter((x) => x.type === 'restarted' && x.path === 'community/default')))
    expect((await reqEvents(subscriber, [{ ids: [e.event.id] }])).map((x) => x.id)).toEqual([e.event.id])
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
