import { describe, expect, it } from 'vitest'
import { makeKeys } from '../support/events'
import { auth, client, count, publishNew, relayUrlOf } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'

describe('COUNT (NIP-45)', () => {
  const relays = useRelays()

  it('counts the events matching the filters, each event once across overlapping filters', async () => {
    const r = await relays.start()
    const c = await client(r)
    const a = makeKeys()
    const b = makeKeys()
    for (let i = 0; i < 3; i++) await publishNew(c, a, { kind: 1 })
    await publishNew(c, a, { kind: 7 })
    await publishNew(c, b, { kind: 1, tags: [['t', 'x']] })
    expect(await count(c, [{ authors: [a.pubkey] }])).toBe(4)
    expect(await count(c, [{ authors: [a.pubkey], kinds: [1] }])).toBe(3)
    expect(await count(c, [{ kinds: [1] }, { authors: [a.pubkey] }])).toBe(5)
    expect(await count(c, [{ '#t': ['x'] }])).toBe(1)
    expect(await count(c, [{ authors: ['f'.repeat(64)] }])).toBe(0)
  })

  it("counts at most each filter's limit, as a REQ with the same filters would return", async () => {
    const r = await relays.start()
    const c = await client(r)
    const a = makeKeys()
    for (let i = 0; i < 3; i++) await publishNew(c, a)
    expect(await count(c, [{ authors: [a.pubkey], limit: 1 }])).toBe(1)
    expect(await count(c, [{ authors: [a.pubkey], limit: 3 }])).toBe(3)
    expect(await count(c, [{ authors: [a.pubkey], limit: 4 }])).toBe(3)
  })

  it('leaves out DMs the connection may not read and includes them after AUTH as a party', async () => {
    const r = await relays.start()
    const pub = await client(r)
    const alice = makeKeys()
    const bob = makeKeys()
    const carol = makeKeys()
    await publishNew(pub, alice, { kind: 1 })
    await publishNew(pub, alice, { kind: 4, tags: [['p', bob.pubkey]] })
    await publishNew(pub, makeKeys(), { kind: 1059, tags: [['p', bob.pubkey]] })

    const anon = await client(r)
    expect(await count(anon, [{ authors: [alice.pubkey] }])).toBe(1)
    expect(await count(anon, [{ '#p': [bob.pubkey] }])).toBe(0)
    const refused = await count(anon, [{ kinds: [4] }])
    expect(refused).toEqual(['CLOSED', expect.any(String), expect.stringMatching(/^auth-required: /)])

    const asCarol = await client(r)
    await auth(asCarol, carol, relayUrlOf(r))
    expect(await count(asCarol, [{ kinds: [4, 1059] }])).toBe(0)

    const asBob = await client(r)
    await auth(asBob, bob, relayUrlOf(r))
    expect(await count(asBob, [{ kinds: [4, 1059] }])).toBe(2)
    expect(await count(asBob, [{ authors: [alice.pubkey] }])).toBe(2)

    const asAlice = await client(r)
    await auth(asAlice, alice, relayUrlOf(r))
    expect(await count(asAlice, [{ authors: [alice.pubkey] }])).toBe(2)
    expect(await count(asAlice, [{ kinds: [1059] }])).toBe(0)
  })
})
