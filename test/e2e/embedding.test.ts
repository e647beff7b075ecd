import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { ask, ConfigError, createRelay, type HostMsg, RelayError, type SupervisionEvent, type TypedRef } from '../../src/index'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { verifyEventNoble } from '../../src/protocols/nip01/event'
import { makeKeys, signEvent } from '../support/events'
import { client, idsOf, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'

describe('embedding the relay in a program', () => {
  const relays = useRelays()

  it('publishes with relay.publish, signed by the community’s key, to live subscribers and to storage', async () => {
    const r = await relays.start()
    const c = await client(r)
    const signer = r.relay.communityPubkey('default')
    await reqEvents(c, [{ authors: [signer] }], 'from-relay')
    const outcome = await r.relay.publish('default', { kind: 1, content: 'hello from the host program' })
    expect(outcome).toEqual({ accepted: true, message: '' })
    const f = await c.next((x) => x[0] === 'EVENT' && x[1] === 'from-relay')
    const e = f[2] as NostrEvent
    expect(e.pubkey).toBe(signer)
    expect(e.content).toBe('hello from the host program')
    expect(verifyEventNoble(e)).toBe('ok')
    expect(idsOf(await reqEvents(await client(r), [{ authors: [signer] }]))).toEqual([e.id])
  })

  it('publishes into the named community only', async () => {
    const r = await relays.start({ communities: [{ id: 'beta', hosts: ['beta.test'] }] })
    await r.relay.publish('beta', { kind: 1, content: 'beta only' })
    const signer = r.relay.communityPubkey('beta')
    expect(await reqEvents(await client(r), [{ kinds: [1] }])).toEqual([])
    expect(await reqEvents(await client(r, 'beta.test'), [{ authors: [signer] }])).toHaveLength(1)
    await expect(r.relay.publish('nowhere', { kind: 1, content: 'x' })).rejects.toThrow()
  })

  it('reports open subscriptions and connections in relay.stats', async () => {
    const r = await relays.start()
    const c = await client(r)
    await reqEvents(c, [{ kinds: [1] }], 'a')
    await reqEvents(c, [{ kinds: [7] }], 'b')
    expect(await r.relay.stats('default')).toMatchObject({ id: 'default', subscriptions: 2, connections: 1 })
    c.send(['CLOSE', 'a'])
    await reqEvents(c, [{ kinds: [1] }], 'a2')
    c.send(['CLOSE', 'a2'])
    await reqEvents(c, [{ kinds: [9] }], 'c')
    expect((await r.relay.stats('default')).subscriptions).toBe(2)
  })

  it('emits "started" on supervision$ for each connection actor', async () => {
    const r = await relays.start()
    const events: SupervisionEvent[] = []
    const sub = r.relay.supervision$.subscribe((e) => events.push(e))
    await client(r)
    await client(r)
    sub.unsubscribe()
    const started = events.filter((e) => e.type === 'started' && e.kind === 'connection')
    expect(started).toHaveLength(2)
  })

  it('exposes the effective config', async () => {
    const r = await relays.start({ limits: { maxFilters: 3 } })
    expect(r.relay.config.limits.maxFilters).toBe(3)
    expect(r.relay.url).toBe(r.url)
  })
})

describe('publishing an event a host signed with its own key', () => {
  const relays = useRelays()

  it('stores it and delivers it live with relay.publishSigned, authored by that key', async () => {
    const r = await relays.start()
    const keys = makeKeys()
    const c = await client(r)
    await reqEvents(c, [{ authors: [keys.pubkey] }], 'bridged')
    const { event } = signEvent(keys, { content: 'bridged by the host' })
    expect(await r.relay.publishSigned('default', event)).toEqual({ accepted: true, message: '' })
    const f = await c.next((x) => x[0] === 'EVENT' && x[1] === 'bridged')
    expect(f[2]).toEqual(event)
    expect(idsOf(await reqEvents(await client(r), [{ authors: [keys.pubkey] }]))).toEqual([event.id])
  })

  it('answers "invalid:" for a forged signature, an id that does not match and an oversized content, storing none', async () => {
    const r = await relays.start({ limits: { maxContentBytes: 16 } })
    const keys = makeKeys()
    const { event } = signEvent(keys, { content: 'fits' })
    const forged = { ...event, sig: event.sig.replace(/^./, (ch) => (ch === '0' ? '1' : '0')) }
    const tampered = { ...event, content: 'changed' }
    const oversized = signEvent(keys, { content: 'x'.repeat(17) }).event
    expect(await r.relay.publishSigned('default', forged)).toEqual({ accepted: false, message: 'invalid: bad signature' })
    expect(await r.relay.publishSigned('default', tampered)).toEqual({
      accepted: false,
      message: 'invalid: event id does not match its content',
    })
    expect(await r.relay.publishSigned('default', oversized)).toMatchObject({
      accepted: false,
      message: expect.stringMatching(/^invalid: /),
    })
    expect(await reqEvents(await client(r), [{ authors: [keys.pubkey] }])).toEqual([])
  })

  it('stores its own serialization of the event: fields a host added do not reach subscribers', async () => {
    const r = await relays.start()
    const { event } = signEvent(makeKeys(), { content: 'plain' })
    expect((await r.relay.publishSigned('default', { ...event, smuggled: 'x' } as NostrEvent)).accepted).toBe(true)
    const [stored] = await reqEvents(await client(r), [{ ids: [event.id] }])
    expect(stored).toEqual(event)
  })
})

describe("the embedding API's errors and host ref", () => {
  const relays = useRelays()

  it('rejects with APIARY_RELAY_NOT_LISTENING before listen() and APIARY_RELAY_CLOSED after close()', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'apiary-embed-'))
    const relay = createRelay({ port: 0, dataDir, logLevel: 'silent' })
    try {
      const notListening = { name: 'RelayError', code: 'APIARY_RELAY_NOT_LISTENING' }
      await expect(relay.publish('default', { kind: 1, content: 'x' })).rejects.toMatchObject(notListening)
      await expect(relay.stats('default')).rejects.toMatchObject(notListening)
      await expect(relay.banPubkey('default', 'a'.repeat(64), 'spam')).rejects.toMatchObject(notListening)
      await expect(relay.archiveCommunity('default')).rejects.toBeInstanceOf(RelayError)
      expect(() => relay.communityPubkey('default')).toThrow(expect.objectContaining(notListening))
      await relay.close()
      await expect(relay.listen()).rejects.toMatchObject({ code: 'APIARY_RELAY_CLOSED' })
      await expect(relay.publishSigned('default', signEvent(makeKeys()).event)).rejects.toMatchObject({ code: 'APIARY_RELAY_CLOSED' })
    } finally {
      await relay.close()
      rmSync(dataDir, { recursive: true, force: true })
    }
  })

  it('rejects with APIARY_UNKNOWN_COMMUNITY for a community the node does not serve', async () => {
    const r = await relays.start()
    const unknown = { code: 'APIARY_UNKNOWN_COMMUNITY', message: 'unknown community nowhere' }
    await expect(r.relay.publish('nowhere', { kind: 1, content: 'x' })).rejects.toMatchObject(unknown)
    await expect(r.relay.publishSigned('nowhere', signEvent(makeKeys()).event)).rejects.toMatchObject(unknown)
    await expect(r.relay.stats('nowhere')).rejects.toMatchObject(unknown)
    await expect(r.relay.banPubkey('nowhere', 'a'.repeat(64), 'spam')).rejects.toMatchObject(unknown)
  })

  it('throws ConfigError (APIARY_CONFIG_INVALID) from createRelay for an invalid setting, naming it', () => {
    expect(() => createRelay({ port: -1 })).toThrow(ConfigError)
    expect(() => createRelay({ port: -1 })).toThrow(/port/)
    try {
      createRelay({ limits: { maxFilters: 0 } })
      expect.unreachable()
    } catch (error) {
      expect(error).toMatchObject({ code: 'APIARY_CONFIG_INVALID' })
    }
  })

  it('answers Stats through relay.community(id), a ref typed to the host messages only', async () => {
    const r = await relays.start()
    const ref = r.relay.community('default')
    expect(ref).toBeDefined()
    expect(r.relay.community('nowhere')).toBeUndefined()
    expect(await ask(ref!, (reply) => ({ type: 'Stats', reply }), 5_000)).toMatchObject({ id: 'default', connections: 0 })
    // checked by the typecheck: the relay's own plumbing (Subscribe, Saved, Sweep ...) can't be sent on this ref
    expectTypeOf(ref).toEqualTypeOf<TypedRef<HostMsg> | undefined>()
    expectTypeOf<HostMsg['type']>().toEqualTypeOf<'Stats' | 'Publish' | 'DisconnectPubkey' | 'DisconnectCommunity'>()
  })
})
