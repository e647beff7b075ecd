import { describe, expect, it } from 'vitest'
import { makeKeys, signEvent, toRaw } from '../support/events'
import { client, idsOf, nowSeconds, publish, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'

describe('publishing an event (NIP-01)', () => {
  const relays = useRelays()

  it('answers OK true with an empty message and stores the event', async () => {
    const r = await relays.start()
    const c = await client(r)
    const e = signEvent(makeKeys(), { content: 'hello' })
    expect(await publish(c, e)).toEqual({ accepted: true, message: '', prefix: undefined })
    expect(idsOf(await reqEvents(c, [{ ids: [e.event.id] }]))).toEqual([e.event.id])
  })

  it('answers a resent event OK true "duplicate:" and stores it once', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const e = signEvent(keys)
    await publish(c, e)
    const again = await publish(c, e)
    expect(again.accepted).toBe(true)
    expect(again.prefix).toBe('duplicate')
    expect(await reqEvents(c, [{ authors: [keys.pubkey] }])).toHaveLength(1)
  })

  it('answers a resent event "duplicate:" from another connection too', async () => {
    const r = await relays.start()
    const e = signEvent(makeKeys())
    await publish(await client(r), e)
    const ok = await publish(await client(r), e)
    expect(ok).toMatchObject({ accepted: true, prefix: 'duplicate' })
  })

  it('refuses a bad signature with OK false "invalid:" and does not store it', async () => {
    const r = await relays.start()
    const c = await client(r)
    const { event } = signEvent(makeKeys(), { content: 'signed' })
    const flipped = (event.sig[0] === '0' ? '1' : '0') + event.sig.slice(1)
    const ok = await publish(c, { ...event, sig: flipped })
    expect(ok).toMatchObject({ accepted: false, prefix: 'invalid' })
    expect(await reqEvents(c, [{ ids: [event.id] }])).toEqual([])
  })

  it('refuses an id that does not hash the content with OK false "invalid:"', async () => {
    const r = await relays.start()
    const c = await client(r)
    const { event } = signEvent(makeKeys(), { content: 'original' })
    const ok = await publish(c, { ...event, content: 'tampered' })
    expect(ok).toMatchObject({ accepted: false, prefix: 'invalid' })
    expect(await reqEvents(c, [{ ids: [event.id] }])).toEqual([])
  })

  it('refuses a created_at too far in the future with "invalid:"', async () => {
    const r = await relays.start()
    const c = await client(r)
    const e = signEvent(makeKeys(), { created_at: nowSeconds() + 900 + 60 })
    expect(await publish(c, e)).toMatchObject({ accepted: false, prefix: 'invalid' })
  })

  it('refuses a created_at too far in the past with "invalid:"', async () => {
    const r = await relays.start()
    const c = await client(r)
    const e = signEvent(makeKeys(), { created_at: nowSeconds() - 31_536_000 - 60 })
    expect(await publish(c, e)).toMatchObject({ accepted: false, prefix: 'invalid' })
  })

  it('serves the event exactly as the seven NIP-01 fields, without client extras', async () => {
    const r = await relays.start()
    const c = await client(r)
    const { event } = signEvent(makeKeys(), { content: 'extras' })
    c.sendRaw(`["EVENT",${JSON.stringify({ ...event, extra: 'dropped', seen_on: ['x'] })}]`)
    expect((await c.ok(event.id))[2]).toBe(true)
    c.send(['REQ', 'raw', { ids: [event.id] }])
    await c.next((f) => f[0] === 'EOSE' && f[1] === 'raw')
    const served = c.frames.find((f) => f[0] === 'EVENT' && f[1] === 'raw')!
    expect(served[2]).toEqual(JSON.parse(toRaw(event)))
  })

  it('delivers an accepted event to a live subscriber on another connection', async () => {
    const r = await relays.start()
    const sub = await client(r)
    const pub = await client(r)
    const keys = makeKeys()
    await reqEvents(sub, [{ authors: [keys.pubkey] }], 'live')
    const e = signEvent(keys, { content: 'live one' })
    await publish(pub, e)
    const f = await sub.next((x) => x[0] === 'EVENT' && x[1] === 'live')
    expect((f[2] as { id: string }).id).toBe(e.event.id)
  })

  it('stores and fans out an event sent at once from two connections only once', async () => {
    const r = await relays.start()
    const sub = await client(r)
    const keys = makeKeys()
    await reqEvents(sub, [{ authors: [keys.pubkey] }], 'once')
    const e = signEvent(keys, { content: 'raced' })
    const [a, b] = [await client(r), await client(r)]
    const oks = await Promise.all([publish(a, e), publish(b, e)])
    expect(oks.map((o) => o.accepted)).toEqual([true, true])
    expect(oks.filter((o) => o.prefix === 'duplicate')).toHaveLength(1)
    const marker = signEvent(keys, { content: 'marker' })
    await publish(a, marker)
    await sub.next((f) => f[0] === 'EVENT' && f[1] === 'once' && (f[2] as { id: string }).id === marker.event.id)
    expect(sub.frames.filter((f) => f[0] === 'EVENT' && (f[2] as { id: string }).id === e.event.id)).toHaveLength(1)
  })
})
