import { join } from 'node:path'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { makeKeys, type SignedEvent } from '../support/events'
import { metric } from '../support/metrics'
import { authEvent, challengeOf, client, fresh, relayUrlOf } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'
import type { TestClient } from '../support/ws-client'

/**
 * One connection's frames are applied in the order they were sent, whatever order their signatures are
 * verified in. Every test writes all its frames in one burst, without awaiting any reply in between.
 */

/** writes every frame in one go (one corked TCP write), then waits for nothing */
function burst(c: TestClient, frames: unknown[]): void {
  const socket = (c.ws as unknown as { _socket: { cork(): void; uncork(): void } })._socket
  socket.cork()
  for (const f of frames) c.send(f)
  socket.uncork()
}

const okOf = async (c: TestClient, e: SignedEvent) => {
  const f = await c.ok(e.event.id)
  return { accepted: f[2] as boolean, message: f[3] as string }
}

describe('a connection that pipelines its frames', () => {
  const relays = useRelays()

  it('applies an AUTH before the protected ["-"] event sent right behind it: the event is accepted', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const login = authEvent(keys, await challengeOf(c), relayUrlOf(r))
    const mine = fresh(keys, { tags: [['-']] })
    burst(c, [
      ['AUTH', login.event],
      ['EVENT', mine.event],
    ])
    expect(await okOf(c, login)).toEqual({ accepted: true, message: '' })
    expect(await okOf(c, mine)).toEqual({ accepted: true, message: '' })
  })

  it('applies an AUTH before the REQ for kind 4 DMs sent right behind it: the REQ is served, not CLOSED', async () => {
    const r = await relays.start()
    const keys = makeKeys()
    const sender = await client(r)
    const dm = fresh(makeKeys(), { kind: 4, tags: [['p', keys.pubkey]], content: 'psst' })
    sender.send(['EVENT', dm.event])
    expect((await okOf(sender, dm)).accepted).toBe(true)
    const c = await client(r)
    const login = authEvent(keys, await challengeOf(c), relayUrlOf(r))
    burst(c, [
      ['AUTH', login.event],
      ['REQ', 'dms', { kinds: [4], '#p': [keys.pubkey] }],
    ])
    const answer = await c.next((f) => (f[0] === 'EOSE' || f[0] === 'CLOSED') && f[1] === 'dms')
    expect(answer[0]).toBe('EOSE')
    expect(c.frames.filter((f) => f[0] === 'EVENT' && f[1] === 'dms').map((f) => (f[2] as { id: string }).id)).toEqual([dm.event.id])
  })

  it('judges a REQ sent before an AUTH as unauthenticated: order is arrival order, not verification order', async () => {
    const r = await relays.start()
    const keys = makeKeys()
    const c = await client(r)
    const login = authEvent(keys, await challengeOf(c), relayUrlOf(r))
    burst(c, [
      ['REQ', 'early', { kinds: [4], '#p': [keys.pubkey] }],
      ['AUTH', login.event],
    ])
    const answer = await c.next((f) => (f[0] === 'EOSE' || f[0] === 'CLOSED') && f[1] === 'early')
    expect(answer[0]).toBe('CLOSED')
    expect(answer[2]).toMatch(/^auth-required: /)
    expect((await okOf(c, login)).accepted).toBe(true)
  })

  it('creates a channel (9007) and accepts the post to it (kind 9) sent right behind', async () => {
    const r = await relays.start()
    const c = await client(r)
    const owner = makeKeys()
    const create = fresh(owner, { kind: 9007, tags: [['h', 'fresh-room']] })
    const hello = fresh(owner, { kind: 9, tags: [['h', 'fresh-room']], content: 'first!' })
    burst(c, [
      ['EVENT', create.event],
      ['EVENT', hello.event],
    ])
    expect(await okOf(c, create)).toEqual({ accepted: true, message: '' })
    expect(await okOf(c, hello)).toEqual({ accepted: true, message: '' })
  })

  it("adds a member (9000) and accepts the new member's post sent right behind it", async () => {
    const r = await relays.start()
    const c = await client(r)
    const owner = makeKeys()
    const newcomer = makeKeys()
    const create = fresh(owner, { kind: 9007, tags: [['h', 'closed-room'], ['closed'], ['restricted']] })
    c.send(['EVENT', create.event])
    expect((await okOf(c, create)).accepted).toBe(true)
    const add = fresh(owner, {
      kind: 9000,
      tags: [
        ['h', 'closed-room'],
        ['p', newcomer.pubkey],
      ],
    })
    const hi = fresh(newcomer, { kind: 9, tags: [['h', 'closed-room']], content: 'hi all' })
    const stranger = fresh(makeKeys(), { kind: 9, tags: [['h', 'closed-room']], content: 'let me in' })
    burst(c, [
      ['EVENT', add.event],
      ['EVENT', hi.event],
      ['EVENT', stranger.event],
    ])
    expect(await okOf(c, add)).toEqual({ accepted: true, message: '' })
    expect(await okOf(c, hi)).toEqual({ accepted: true, message: '' })
    // and the rule still holds for someone nobody added
    expect((await okOf(c, stranger)).message).toMatch(/^restricted: /)
  })

  it('stops reading a socket whose frames in flight pass maxInboundBytesInFlight, and still answers every frame in order', async () => {
    const r = await relays.start({ limits: { maxInboundBytesInFlight: 65_536 } })
    const c = await client(r)
    const keys = makeKeys()
    // 60 events of ~16 KiB: about 1 MiB sent at once against a 64 KiB bound
    const events = Array.from({ length: 60 }, (_, i) => fresh(keys, { content: `${i} ${'x'.repeat(16_000)}` }))
    burst(
      c,
      events.map((e) => ['EVENT', e.event]),
    )
    const oks = await Promise.all(events.map((e) => okOf(c, e)))
    expect(oks.every((o) => o.accepted)).toBe(true)
    expect(c.frames.filter((f) => f[0] === 'OK').map((f) => f[1])).toEqual(events.map((e) => e.event.id))
    expect(await metric(r, 'apiary_inbound_pauses_total')).toBeGreaterThan(0)
  })

  it('answers all of 1,000 pipelined events, and stores them in the order they were sent', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const events = Array.from({ length: 1000 }, (_, i) => fresh(keys, { content: `n${i}` }))
    burst(
      c,
      events.map((e) => ['EVENT', e.event]),
    )
    const oks = await Promise.all(events.map((e) => okOf(c, e)))
    expect(oks.every((o) => o.accepted && o.message === '')).toBe(true)
    const okOrder = c.frames.filter((f) => f[0] === 'OK').map((f) => f[1])
    expect(okOrder).toEqual(events.map((e) => e.event.id))
    const db = new Database(join(r.dataDir, 'apiary.sqlite'), { readonly: true })
    try {
      const stored = db.prepare('SELECT id FROM events WHERE pubkey = ? ORDER BY seq').pluck().all(keys.pubkey)
      expect(stored).toEqual(events.map((e) => e.event.id))
    } finally {
      db.close()
    }
  })
})
