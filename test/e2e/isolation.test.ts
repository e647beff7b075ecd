import { describe, expect, it } from 'vitest'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { makeKeys } from '../support/events'
import { client, count, fresh, idsOf, publish, publishNew, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'

const BETA = { communities: [{ id: 'beta', hosts: ['beta.test'] }] }

describe('communities on one relay are isolated', () => {
  const relays = useRelays()

  it('stores the same event in both communities: OK true in each, not "duplicate:" in the second', async () => {
    const r = await relays.start(BETA)
    const e = fresh(makeKeys())
    expect(await publish(await client(r), e)).toEqual({ accepted: true, message: '', prefix: undefined })
    expect(await publish(await client(r, 'beta.test'), e)).toEqual({ accepted: true, message: '', prefix: undefined })
    expect(idsOf(await reqEvents(await client(r), [{ ids: [e.event.id] }]))).toEqual([e.event.id])
    expect(idsOf(await reqEvents(await client(r, 'beta.test'), [{ ids: [e.event.id] }]))).toEqual([e.event.id])
  })

  it('never returns one community’s stored events to a REQ or COUNT on the other', async () => {
    const r = await relays.start(BETA)
    const keys = makeKeys()
    await publishNew(await client(r), keys)
    const beta = await client(r, 'beta.test')
    expect(await reqEvents(beta, [{ authors: [keys.pubkey] }])).toEqual([])
    expect(await reqEvents(beta, [{ kinds: [1] }])).toEqual([])
    expect(await count(beta, [{ authors: [keys.pubkey] }])).toBe(0)
  })

  it('does not fan out live events across communities', async () => {
    const r = await relays.start(BETA)
    const keys = makeKeys()
    const beta = await client(r, 'beta.test')
    await reqEvents(beta, [{ authors: [keys.pubkey] }], 'beta-sub')
    const inDefault = await publishNew(await client(r), keys)
    const marker = await publishNew(await client(r, 'beta.test'), keys)
    await beta.next((f) => f[0] === 'EVENT' && f[1] === 'beta-sub' && (f[2] as NostrEvent).id === marker.event.id)
    expect(beta.frames.some((f) => f[0] === 'EVENT' && (f[2] as NostrEvent).id === inDefault.event.id)).toBe(false)
  })

  it('keeps replaceable and deletion state per community', async () => {
    const r = await relays.start(BETA)
    const keys = makeKeys()
    const def = await client(r)
    const beta = await client(r, 'beta.test')
    const now = Math.floor(Date.now() / 1000)
    const profileDefault = await publishNew(def, keys, { kind: 0, created_at: now - 10 })
    const profileBeta = await publishNew(beta, keys, { kind: 0, created_at: now - 20 })
    expect(idsOf(await reqEvents(beta, [{ authors: [keys.pubkey], kinds: [0] }]))).toEqual([profileBeta.event.id])
    await publishNew(beta, keys, {
      kind: 5,
      tags: [
        ['e', profileBeta.event.id],
        ['e', profileDefault.event.id],
      ],
    })
    expect(await reqEvents(beta, [{ authors: [keys.pubkey], kinds: [0] }])).toEqual([])
    expect(idsOf(await reqEvents(def, [{ authors: [keys.pubkey], kinds: [0] }]))).toEqual([profileDefault.event.id])
  })

  it('reports stats per community', async () => {
    const r = await relays.start(BETA)
    await reqEvents(await client(r, 'beta.test'), [{ kinds: [1] }], 'only-beta')
    expect((await r.relay.stats('beta')).subscriptions).toBe(1)
    expect((await r.relay.stats('default')).subscriptions).toBe(0)
    expect(r.relay.communityIds().sort()).toEqual(['beta', 'default'])
  })
})
