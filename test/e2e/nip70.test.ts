import { describe, expect, it } from 'vitest'
import { makeKeys } from '../support/events'
import { auth, client, fresh, idsOf, publish, relayUrlOf, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'

describe('protected events (NIP-70)', () => {
  const relays = useRelays()

  it('refuses an event tagged ["-"] from an unauthenticated connection with "auth-required:"', async () => {
    const r = await relays.start()
    const c = await client(r)
    const e = fresh(makeKeys(), { tags: [['-']] })
    expect(await publish(c, e)).toMatchObject({ accepted: false, prefix: 'auth-required' })
    expect(await reqEvents(c, [{ ids: [e.event.id] }])).toEqual([])
  })

  it('accepts it after AUTH as its author and serves it', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const e = fresh(keys, { tags: [['-']] })
    expect(await publish(c, e)).toMatchObject({ accepted: false })
    expect((await auth(c, keys, relayUrlOf(r))).accepted).toBe(true)
    expect(await publish(c, e)).toMatchObject({ accepted: true, message: '' })
    expect(idsOf(await reqEvents(await client(r), [{ ids: [e.event.id] }]))).toEqual([e.event.id])
  })

  it('refuses it after AUTH as someone else', async () => {
    const r = await relays.start()
    const c = await client(r)
    await auth(c, makeKeys(), relayUrlOf(r))
    const ok = await publish(c, fresh(makeKeys(), { tags: [['-']] }))
    expect(ok.accepted).toBe(false)
    expect(ok.prefix).toBe('auth-required')
  })

  it('treats only the exact tag ["-"] as the marker', async () => {
    const r = await relays.start()
    const c = await client(r)
    expect((await publish(c, fresh(makeKeys(), { tags: [['-', 'x']] }))).accepted).toBe(true)
  })
})
