import { finalizeEvent, generateSecretKey, getPublicKey } from 'nostr-tools/pure'
import { Relay, useWebSocketImplementation } from 'nostr-tools/relay'
import { afterEach, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { eventually } from '../support/eventually'
import { useRelays } from '../support/relay-fixtures'

useWebSocketImplementation(WebSocket)

const note = (sk: Uint8Array, content: string, extra: { kind?: number; tags?: string[][] } = {}) =>
  finalizeEvent({ kind: extra.kind ?? 1, created_at: Math.floor(Date.now() / 1000), tags: extra.tags ?? [], content }, sk)

/** relay.auth needs the challenge, which arrives in the first frame after connect (nostr-tools keeps it). */
const challengeArrived = (relay: Relay) =>
  eventually(() => (relay as unknown as { challenge?: string }).challenge !== undefined, 'the AUTH challenge')

describe('nostr-tools end to end', () => {
  const relays = useRelays()
  const open: Relay[] = []
  afterEach(() => {
    for (const r of open.splice(0)) r.close()
  })
  const connectTo = async (url: string) => {
    const r = await Relay.connect(url)
    open.push(r)
    return r
  }

  it('connects, publishes, reads stored events until oneose, then receives live ones', async () => {
    const t = await relays.start()
    const sk = generateSecretKey()
    const pk = getPublicKey(sk)
    const writer = await connectTo(t.url)
    const stored = note(sk, 'stored')
    expect(await writer.publish(stored)).toBe('')

    const reader = await connectTo(t.url)
    const seen: string[] = []
    let eose!: () => void
    const eosed = new Promise<void>((resolve) => (eose = resolve))
    let liveArrived!: () => void
    const live = new Promise<void>((resolve) => (liveArrived = resolve))
    const liveEvent = note(sk, 'live')
    const sub = reader.subscribe([{ authors: [pk] }], {
      onevent: (e) => {
        seen.push(e.id)
        if (e.id === liveEvent.id) liveArrived()
      },
      oneose: () => eose(),
    })
    await eosed
    expect(seen).toEqual([stored.id])
    await writer.publish(liveEvent)
    await live
    expect(seen).toEqual([stored.id, liveEvent.id])
    sub.close()
  })

  it('rejects publish with the relay’s reason when the event is refused', async () => {
    const t = await relays.start()
    const relay = await connectTo(t.url)
    const e = note(generateSecretKey(), 'protected', { tags: [['-']] })
    await expect(relay.publish(e)).rejects.toThrow(/^auth-required: /)
  })

  it('counts with COUNT', async () => {
    const t = await relays.start()
    const sk = generateSecretKey()
    const relay = await connectTo(t.url)
    for (let i = 0; i < 3; i++) await relay.publish(note(sk, `n${i}`))
    expect(await relay.count([{ authors: [getPublicKey(sk)] }], {})).toBe(3)
  })

  it('authenticates with relay.auth and can then publish a protected event', async () => {
    const t = await relays.start()
    const sk = generateSecretKey()
    const relay = await connectTo(t.url)
    await challengeArrived(relay)
    expect(await relay.auth(async (template) => finalizeEvent(template, sk))).toBe('')
    expect(await relay.publish(note(sk, 'mine', { tags: [['-']] }))).toBe('')
  })

  it('reads DMs addressed to it after auth', async () => {
    const t = await relays.start()
    const alice = generateSecretKey()
    const bob = generateSecretKey()
    const writer = await connectTo(t.url)
    const dm = note(alice, 'ciphertext', { kind: 4, tags: [['p', getPublicKey(bob)]] })
    await writer.publish(dm)
    const relay = await connectTo(t.url)
    await challengeArrived(relay)
    await relay.auth(async (template) => finalizeEvent(template, bob))
    const got: string[] = []
    await new Promise<void>((resolve) => {
      relay.subscribe([{ kinds: [4], '#p': [getPublicKey(bob)] }], { onevent: (e) => got.push(e.id), oneose: resolve })
    })
    expect(got).toEqual([dm.id])
  })
})
