import { describe, expect, it } from 'vitest'
import { makeKeys, signEvent, toRaw } from '../support/events'
import { labelledMetric } from '../support/metrics'
import { client, fresh, idsOf, inOneSecond, publish, publishNew, reqAnswer, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'

/** A REQ frame of exactly `bytes` bytes (ASCII), padded in an ignored filter key. */
function reqOfSize(subId: string, bytes: number): string {
  const base = JSON.stringify(['REQ', subId, { kinds: [1], limit: 1, pad: '' }])
  return JSON.stringify(['REQ', subId, { kinds: [1], limit: 1, pad: 'x'.repeat(bytes - base.length) }])
}

describe('per-connection limits, at the limit and one past it', () => {
  const relays = useRelays()

  it('maxMessageBytes: serves a frame of exactly the limit and closes with 1009 one byte past it', async () => {
    const r = await relays.start({ limits: { maxMessageBytes: 4096 } })
    const c = await client(r)
    const atLimit = reqOfSize('at', 4096)
    expect(Buffer.byteLength(atLimit)).toBe(4096)
    c.sendRaw(atLimit)
    await c.next((f) => f[0] === 'EOSE' && f[1] === 'at')
    c.sendRaw(reqOfSize('over', 4097))
    expect((await c.closed).code).toBe(1009)
  })

  it('maxSubscriptions: opens the n-th, refuses the n+1-th with CLOSED, allows reusing an open id', async () => {
    const r = await relays.start({ limits: { maxSubscriptions: 3 } })
    const c = await client(r)
    for (const id of ['s1', 's2', 's3']) expect((await reqAnswer(c, id, [{ kinds: [1] }]))[0]).toBe('EOSE')
    const over = await reqAnswer(c, 's4', [{ kinds: [1] }])
    expect(over[0]).toBe('CLOSED')
    expect(over[2]).toMatch(/^blocked: /)
    // replacing an open subscription does not count as a new one
    expect((await reqAnswer(c, 's2', [{ kinds: [7] }]))[0]).toBe('EOSE')
    // closing one makes room
    c.send(['CLOSE', 's1'])
    expect((await reqAnswer(c, 's5', [{ kinds: [1] }]))[0]).toBe('EOSE')
  })

  it('maxSubscriptions: counts per connection, not per relay', async () => {
    const r = await relays.start({ limits: { maxSubscriptions: 1 } })
    expect((await reqAnswer(await client(r), 'a', [{ kinds: [1] }]))[0]).toBe('EOSE')
    expect((await reqAnswer(await client(r), 'a', [{ kinds: [1] }]))[0]).toBe('EOSE')
  })

  it('maxSubscriptions: a refused REQ leaves no subscription behind', async () => {
    const r = await relays.start({ limits: { maxSubscriptions: 1 } })
    const c = await client(r)
    const keys = makeKeys()
    await reqAnswer(c, 'open', [{ authors: [keys.pubkey] }])
    expect((await reqAnswer(c, 'refused', [{ authors: [keys.pubkey] }]))[0]).toBe('CLOSED')
    const e = await publishNew(await client(r), keys)
    await c.next((f) => f[0] === 'EVENT' && f[1] === 'open')
    expect(c.frames.filter((f) => f[0] === 'EVENT' && f[1] === 'refused')).toEqual([])
    expect(e.event.id).toBeTruthy()
  })

  it('maxFilters: serves n filters and closes a REQ with n+1 with "invalid:"', async () => {
    const r = await relays.start({ limits: { maxFilters: 2 } })
    const c = await client(r)
    expect((await reqAnswer(c, 'two', [{ kinds: [1] }, { kinds: [2] }]))[0]).toBe('EOSE')
    const three = await reqAnswer(c, 'three', [{ kinds: [1] }, { kinds: [2] }, { kinds: [3] }])
    expect(three[0]).toBe('CLOSED')
    expect(three[2]).toMatch(/^invalid: /)
    c.send(['COUNT', 'count3', { kinds: [1] }, { kinds: [2] }, { kinds: [3] }])
    const f = await c.next((x) => x[1] === 'count3')
    expect(f[0]).toBe('CLOSED')
  })

  it('maxReqValues: serves n values across a REQ\'s filters, closes n+1 with "invalid:" and counts it', async () => {
    const r = await relays.start({ limits: { maxReqValues: 6 } })
    const c = await client(r)
    const tags = (n: number) => Array.from({ length: n }, (_, i) => `v${i}`)
    expect((await reqAnswer(c, 'six', [{ '#t': tags(3) }, { kinds: [1, 2], '#t': ['x'] }]))[0]).toBe('EOSE')
    const seven = await reqAnswer(c, 'seven', [{ '#t': tags(4) }, { kinds: [1, 2], '#t': ['x'] }])
    expect(seven[0]).toBe('CLOSED')
    expect(seven[2]).toMatch(/^invalid: too many values/)
    c.send(['COUNT', 'count7', { '#t': tags(7) }])
    expect(await c.next((x) => x[1] === 'count7')).toMatchObject(['CLOSED', 'count7', expect.stringMatching(/^invalid: /)])
    expect(await labelledMetric(r, 'apiary_reads_refused_total', { reason: 'values' })).toBe(2)
  })

  it('maxSubidLength: serves an id of n characters and refuses n+1 with "invalid:"', async () => {
    const r = await relays.start({ limits: { maxSubidLength: 10 } })
    const c = await client(r)
    expect((await reqAnswer(c, 'a'.repeat(10), [{ kinds: [1] }]))[0]).toBe('EOSE')
    const long = await reqAnswer(c, 'b'.repeat(11), [{ kinds: [1] }])
    expect(long[0]).toBe('CLOSED')
    expect(long[2]).toMatch(/^invalid: /)
  })

  it('maxEventTags: accepts n tags and refuses n+1 with "invalid:"', async () => {
    const r = await relays.start({ limits: { maxEventTags: 3 } })
    const c = await client(r)
    const keys = makeKeys()
    const tags = (n: number) => Array.from({ length: n }, (_, i) => ['t', `tag${i}`])
    expect((await publish(c, fresh(keys, { tags: tags(3) }))).accepted).toBe(true)
    expect(await publish(c, fresh(keys, { tags: tags(4) }))).toMatchObject({ accepted: false, prefix: 'invalid' })
  })

  it('maxTagValueBytes: accepts a tag element of n bytes and refuses n+1 with "invalid:" (UTF-8 bytes)', async () => {
    const r = await relays.start({ limits: { maxTagValueBytes: 10 } })
    const c = await client(r)
    const keys = makeKeys()
    expect((await publish(c, fresh(keys, { tags: [['t', 'x'.repeat(10)]] }))).accepted).toBe(true)
    expect((await publish(c, fresh(keys, { tags: [['t', 'é'.repeat(5)]] }))).accepted).toBe(true)
    expect(await publish(c, fresh(keys, { tags: [['t', 'x'.repeat(11)]] }))).toMatchObject({ accepted: false, prefix: 'invalid' })
    expect(await publish(c, fresh(keys, { tags: [['t', `${'é'.repeat(5)}x`]] }))).toMatchObject({ accepted: false, prefix: 'invalid' })
  })

  it('maxContentBytes: accepts content of n UTF-8 bytes and refuses n+1 with "invalid:"', async () => {
    const r = await relays.start({ limits: { maxContentBytes: 20 } })
    const c = await client(r)
    const keys = makeKeys()
    expect((await publish(c, signEvent(keys, { content: 'a'.repeat(20) }))).accepted).toBe(true)
    expect((await publish(c, signEvent(keys, { content: 'é'.repeat(10) }))).accepted).toBe(true)
    expect(await publish(c, signEvent(keys, { content: 'a'.repeat(21) }))).toMatchObject({ accepted: false, prefix: 'invalid' })
    expect(await publish(c, signEvent(keys, { content: `${'é'.repeat(10)}a` }))).toMatchObject({ accepted: false, prefix: 'invalid' })
  })

  it('maxEventBytes: accepts a serialized event of n bytes and refuses n+1 with "invalid:"', async () => {
    const r = await relays.start({ limits: { maxEventBytes: 600 } })
    const c = await client(r)
    const keys = makeKeys()
    const created_at = Math.floor(Date.now() / 1000)
    const base = Buffer.byteLength(toRaw(signEvent(keys, { created_at, content: '' }).event))
    const exact = signEvent(keys, { created_at, content: 'a'.repeat(600 - base) })
    const over = signEvent(keys, { created_at, content: 'a'.repeat(601 - base) })
    expect(Buffer.byteLength(exact.raw)).toBe(600)
    expect(Buffer.byteLength(over.raw)).toBe(601)
    expect((await publish(c, exact)).accepted).toBe(true)
    expect(await publish(c, over)).toMatchObject({ accepted: false, prefix: 'invalid' })
  })

  it('maxLimit: clamps a larger limit to maxLimit and serves maxLimit events', async () => {
    const r = await relays.start({ limits: { maxLimit: 4 } })
    const c = await client(r)
    const keys = makeKeys()
    for (let i = 0; i < 6; i++) await publishNew(c, keys, { created_at: Math.floor(Date.now() / 1000) - i })
    expect(await reqEvents(c, [{ authors: [keys.pubkey], limit: 4 }])).toHaveLength(4)
    expect(await reqEvents(c, [{ authors: [keys.pubkey], limit: 5 }])).toHaveLength(4)
  })

  it('createdAtFutureSeconds: accepts created_at at now + n and refuses now + n + 1 with "invalid:"', async () => {
    const r = await relays.start({ limits: { createdAtFutureSeconds: 60 } })
    const c = await client(r)
    const keys = makeKeys()
    const [atLimit, over] = await inOneSecond(async (now) => [
      await publish(c, fresh(keys, { created_at: now + 60 })),
      await publish(c, fresh(keys, { created_at: now + 61 })),
    ])
    expect(atLimit!.accepted).toBe(true)
    expect(over).toMatchObject({ accepted: false, prefix: 'invalid' })
  })

  it('createdAtPastSeconds: accepts created_at at now - n and refuses now - n - 1 with "invalid:"', async () => {
    const r = await relays.start({ limits: { createdAtPastSeconds: 3600 } })
    const c = await client(r)
    const keys = makeKeys()
    const [atLimit, over] = await inOneSecond(async (now) => [
      await publish(c, fresh(keys, { created_at: now - 3600 })),
      await publish(c, fresh(keys, { created_at: now - 3601 })),
    ])
    expect(atLimit!.accepted).toBe(true)
    expect(over).toMatchObject({ accepted: false, prefix: 'invalid' })
  })

  it('keeps the connection open after a refused event', async () => {
    const r = await relays.start({ limits: { maxContentBytes: 1 } })
    const c = await client(r)
    await publish(c, signEvent(makeKeys(), { content: 'too long' }))
    expect(idsOf(await reqEvents(c, [{ kinds: [1] }]))).toEqual([])
  })
})
