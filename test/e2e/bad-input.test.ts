import { describe, expect, it } from 'vitest'
import { makeKeys } from '../support/events'
import { metric } from '../support/metrics'
import { client, fresh, idsOf, publishNew, reqAnswer, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'
import type { TestClient } from '../support/ws-client'

/** The connection still works: a valid REQ gets its EOSE. */
async function stillServes(c: TestClient) {
  const f = await reqAnswer(c, `alive-${Math.random()}`, [{ kinds: [1], limit: 1 }])
  expect(f[0]).toBe('EOSE')
}

const notices = (c: TestClient) => c.frames.filter((f) => f[0] === 'NOTICE')

describe('malformed client messages', () => {
  const relays = useRelays()

  for (const [what, text] of [
    ['text that is not JSON', 'hello relay'],
    ['a JSON object instead of an array', '{"REQ":"x"}'],
    ['a JSON string', '"EVENT"'],
    ['an empty array', '[]'],
    ['an unknown verb', '["PUBLISH",{}]'],
    ['a verb that is not a string', '[42,"x"]'],
    ['an EVENT without an event', '["EVENT"]'],
    ['a CLOSE with a non-string id', '["CLOSE",7]'],
  ] as const) {
    it(`answers ${what} with a NOTICE and keeps the connection`, async () => {
      const r = await relays.start()
      const c = await client(r)
      c.sendRaw(text)
      const n = await c.next((f) => f[0] === 'NOTICE')
      expect(typeof n[1]).toBe('string')
      await stillServes(c)
    })
  }

  it('answers a malformed event with OK false "invalid:" naming its id', async () => {
    const r = await relays.start()
    const c = await client(r)
    const { event } = fresh(makeKeys())
    c.send(['EVENT', { ...event, kind: 'one' }])
    const f = await c.ok(event.id)
    expect(f[2]).toBe(false)
    expect(f[3]).toMatch(/^invalid: /)
    c.send(['EVENT', { ...event, tags: [['p', 7]] }])
    expect((await c.ok(event.id))[3]).toMatch(/^invalid: /)
    c.send(['EVENT', { ...event, pubkey: event.pubkey.toUpperCase() }])
    expect((await c.ok(event.id))[3]).toMatch(/^invalid: /)
    await stillServes(c)
  })

  it('answers a REQ with a bad filter with CLOSED "invalid:"', async () => {
    const r = await relays.start()
    const c = await client(r)
    const bad: [string, unknown][] = [
      ['not-object', 'x'],
      ['bad-kinds', { kinds: ['1'] }],
      ['bad-authors', { authors: ['abc'] }],
      ['bad-since', { since: -1 }],
      ['bad-limit', { limit: 1.5 }],
    ]
    for (const [subId, filter] of bad) {
      c.send(['REQ', subId, filter])
      const f = await c.next((x) => (x[0] === 'CLOSED' || x[0] === 'EOSE') && x[1] === subId)
      expect(f[0]).toBe('CLOSED')
      expect(f[2]).toMatch(/^invalid: /)
    }
    const noFilter = await reqAnswer(c, 'no-filter', [])
    expect(noFilter[0]).toBe('CLOSED')
    await stillServes(c)
  })

  it('handles a valid REQ sent in a binary frame', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const e = await publishNew(await client(r), keys)
    c.sendRaw(Buffer.from(JSON.stringify(['REQ', 'bin', { authors: [keys.pubkey] }])), true)
    expect(idsOf((await c.collect('bin')).map((f) => f[2] as { id: string }))).toEqual([e.event.id])
  })

  it('answers 1,000 malformed frames in a row with NOTICEs and keeps serving', async () => {
    const r = await relays.start()
    const c = await client(r)
    for (let i = 0; i < 1_000; i++) c.sendRaw(i % 2 ? `not json ${i}` : `["NOPE",${i}]`)
    await stillServes(c)
    expect(notices(c)).toHaveLength(1_000)
    expect(await metric(r, 'apiary_notices_total')).toBe(1_000)
    // and other clients were served meanwhile
    expect(await reqEvents(await client(r), [{ kinds: [1] }])).toEqual([])
  })

  it('closes the socket with 1009 when a frame exceeds maxMessageBytes', async () => {
    const r = await relays.start({ limits: { maxMessageBytes: 4096 } })
    const c = await client(r)
    c.sendRaw(JSON.stringify(['REQ', 'big', { kinds: [1], '#t': ['x'.repeat(5000)] }]))
    expect((await c.closed).code).toBe(1009)
  })
})
