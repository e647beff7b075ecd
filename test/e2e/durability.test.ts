import { describe, expect, it } from 'vitest'
import { makeKeys, type SignedEvent } from '../support/events'
import { client, fresh, idsOf, publish, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'

describe('durability across restarts', () => {
  const relays = useRelays()

  it('serves every event that got OK true after a graceful restart on the same data directory', async () => {
    const first = await relays.start()
    const c = await client(first)
    const keys = makeKeys()
    // one clock reading: distinct created_at values, so the expected order is newest first with no ties
    const now = Math.floor(Date.now() / 1000)
    const events = Array.from({ length: 60 }, (_, i) => fresh(keys, { created_at: now - i }))
    for (const e of events) expect((await publish(c, e)).accepted).toBe(true)
    relays.forget(first)
    await first.close({ keepData: true })

    const second = await relays.start({}, first.dataDir)
    expect(second.relay.pubkey).toBe(first.relay.pubkey)
    const got = await reqEvents(await client(second), [{ authors: [keys.pubkey], limit: 100 }])
    expect(idsOf(got)).toEqual(idsOf(events.map((e) => e.event)))
  })

  it('loses no OK-true event when the relay closes with events in flight', async () => {
    const first = await relays.start()
    const c = await client(first)
    const keys = makeKeys()
    const events: SignedEvent[] = Array.from({ length: 200 }, () => fresh(keys))
    // pipelined: no waiting for OKs
    for (const e of events) c.sendRaw(`["EVENT",${e.raw}]`)
    await c.next((f) => f[0] === 'OK')
    relays.forget(first)
    const closing = first.close({ keepData: true })
    expect((await c.closed).code).toBe(1001)
    await closing
    const acknowledged = c.frames.filter((f) => f[0] === 'OK' && f[2] === true).map((f) => f[1] as string)
    expect(acknowledged.length).toBeGreaterThan(0)

    const second = await relays.start({}, first.dataDir)
    const stored = new Set(idsOf(await reqEvents(await client(second), [{ authors: [keys.pubkey], limit: 500 }])))
    expect(acknowledged.filter((id) => !stored.has(id))).toEqual([])
  })
})

describe('graceful close', () => {
  const relays = useRelays()

  it('says goodbye to every client with close code 1001', async () => {
    const r = await relays.start({ communities: [{ id: 'beta', hosts: ['beta.test'] }] })
    const a = await client(r)
    const b = await client(r, 'beta.test')
    await reqEvents(a, [{ kinds: [1] }])
    relays.forget(r)
    await r.close()
    expect((await a.closed).code).toBe(1001)
    expect((await b.closed).code).toBe(1001)
  })

  it('refuses new connections once closed', async () => {
    const r = await relays.start()
    relays.forget(r)
    await r.close()
    await expect(client(r)).rejects.toThrow()
  })
})
