import { describe, expect, it } from 'vitest'
import { makeKeys } from '../support/events'
import { eventually } from '../support/eventually'
import { client, count, fresh, idsOf, nowSeconds, publish, publishNew, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'

describe('expiring events (NIP-40)', () => {
  const relays = useRelays()

  it('refuses an event that has already expired with "invalid:"', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const e = fresh(keys, { tags: [['expiration', String(nowSeconds() - 1)]] })
    expect(await publish(c, e)).toMatchObject({ accepted: false, prefix: 'invalid' })
    expect(await reqEvents(c, [{ ids: [e.event.id] }])).toEqual([])
  })

  it('serves an event until its expiration, then neither REQ nor COUNT sees it', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const expiresAt = nowSeconds() + 2
    const e = await publishNew(c, keys, { tags: [['expiration', String(expiresAt)]] })
    const forever = await publishNew(c, keys)
    expect(idsOf(await reqEvents(c, [{ ids: [e.event.id] }]))).toEqual([e.event.id])
    // No clock injection in createRelay: poll (bounded) until the relay's clock passes the expiration.
    const served = await eventually(
      () => reqEvents(c, [{ authors: [keys.pubkey] }]),
      (events) => !idsOf(events).includes(e.event.id),
      'the expired event no longer served',
      { timeoutMs: 5_000, intervalMs: 100 },
    )
    expect(idsOf(served)).toEqual([forever.event.id])
    expect(nowSeconds()).toBeGreaterThanOrEqual(expiresAt)
    expect(await count(c, [{ authors: [keys.pubkey] }])).toBe(1)
  })

  it('ignores an expiration tag that is not an integer', async () => {
    const r = await relays.start()
    const c = await client(r)
    const e = await publishNew(c, makeKeys(), { tags: [['expiration', 'soon']] })
    expect(idsOf(await reqEvents(c, [{ ids: [e.event.id] }]))).toEqual([e.event.id])
  })
})
