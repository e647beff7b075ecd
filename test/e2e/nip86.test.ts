import { Buffer } from 'node:buffer'
import { describe, expect, it } from 'vitest'
import { NIP86_METHODS } from '../../src/protocols/nip86/methods'
import { prefixOf } from '../../src/protocols/reasons'
import { makeKeys, type TestKeys } from '../support/events'
import { authorizationOf, callNip86, managementUrl, nip98Event, nip98Header, postNip86, rpc } from '../support/nip86-client'
import { auth, client, relayUrlOf } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'

const prefixOfAnswer = (a: { json: { error?: string } }) => prefixOf(a.json.error ?? '')

describe('relay management over HTTP (NIP-86 with NIP-98 auth)', () => {
  const relays = useRelays()
  const operator = makeKeys()

  const start = (extra = {}) =>
    relays.start({ operatorPubkeys: [operator.pubkey], communities: [{ id: 'wasps', hosts: ['wasps.test'] }], ...extra })

  it('answers 401 with a JSON auth-required: error when the Authorization header is missing', async () => {
    const r = await start()
    const a = await postNip86(r, rpc('supportedmethods'))
    expect(a.status).toBe(401)
    expect(a.headers['www-authenticate']).toBe('Nostr')
    expect(a.headers['access-control-allow-origin']).toBe('*')
    expect(prefixOfAnswer(a)).toBe('auth-required')
  })

  it('answers 401 for a bad signature, and the forgery does not use up the real event id', async () => {
    const r = await start()
    const body = rpc('supportedmethods')
    const real = nip98Event(operator, managementUrl(r), body)
    const forged = { ...real, sig: (real.sig[0] === '0' ? '1' : '0') + real.sig.slice(1) }
    const refused = await postNip86(r, body, authorizationOf(forged))
    expect(refused.status).toBe(401)
    expect(prefixOfAnswer(refused)).toBe('invalid')
    expect((await postNip86(r, body, authorizationOf(real))).status).toBe(200)
  })

  it.each([
    ['another community on this relay', (port: number) => `http://wasps.test:${port}/`],
    ['another port', (port: number) => `http://127.0.0.1:${port + 1}/`],
    ['https instead of http', (port: number) => `https://127.0.0.1:${port}/`],
  ])('answers 401 when the u tag names %s', async (_, urlOf) => {
    const r = await start()
    const body = rpc('supportedmethods')
    const a = await postNip86(r, body, nip98Header(operator, urlOf(r.port), body))
    expect(a.status).toBe(401)
    expect(prefixOfAnswer(a)).toBe('invalid')
  })

  it('answers 401 when the Host and the u tag name a port this node does not serve, as for a wrong host', async () => {
    const r = await start()
    const body = rpc('supportedmethods')
    const elsewhere = r.port + 1
    // the port a client (or another node's token) made up: the URL it names is not this node's
    const a = await postNip86(r, body, nip98Header(operator, `http://127.0.0.1:${elsewhere}/`, body), '127.0.0.1', elsewhere)
    expect(a.status).toBe(401)
    expect(prefixOfAnswer(a)).toBe('invalid')
    // the port it serves, and the binding without a port, are its URLs
    expect((await postNip86(r, body, nip98Header(operator, managementUrl(r), body))).status).toBe(200)
    expect((await postNip86(r, body, nip98Header(operator, 'http://127.0.0.1/', body), '127.0.0.1', 80)).status).toBe(200)
  })

  it('answers 401 for an auth event created 120 s ago', async () => {
    const r = await start()
    const body = rpc('supportedmethods')
    const a = await postNip86(r, body, nip98Header(operator, managementUrl(r), body, { created_at: Math.floor(Date.now() / 1000) - 120 }))
    expect(a.status).toBe(401)
  })

  it.each([
    ['has no payload tag (NIP-86 requires it)', null],
    ['has a payload tag for another body', 'f'.repeat(64)],
  ])('answers 401 when the auth event %s', async (_, payload) => {
    const r = await start()
    const body = rpc('supportedmethods')
    expect((await postNip86(r, body, nip98Header(operator, managementUrl(r), body, { payload }))).status).toBe(401)
  })

  it('answers 401 for a method tag other than POST', async () => {
    const r = await start()
    const body = rpc('supportedmethods')
    expect((await postNip86(r, body, nip98Header(operator, managementUrl(r), body, { method: 'GET' }))).status).toBe(401)
  })

  it('answers 401 to the same Authorization header sent a second time', async () => {
    const r = await start()
    const body = rpc('supportedmethods')
    const header = nip98Header(operator, managementUrl(r), body)
    expect((await postNip86(r, body, header)).status).toBe(200)
    const again = await postNip86(r, body, header)
    expect(again.status).toBe(401)
    expect(prefixOfAnswer(again)).toBe('invalid')
  })

  it('answers 403 restricted: to a correctly signed caller who is not an operator', async () => {
    const r = await start()
    const a = await callNip86(r, makeKeys(), 'supportedmethods')
    expect(a.status).toBe(403)
    expect(prefixOfAnswer(a)).toBe('restricted')
  })

  it('lists the supported methods to an operator, with CORS', async () => {
    const r = await start()
    const a = await callNip86(r, operator, 'supportedmethods')
    expect(a.status).toBe(200)
    expect(a.headers['content-type']).toMatch(/^application\/nostr\+json\+rpc/)
    expect(a.headers['access-control-allow-origin']).toBe('*')
    // the list itself is pinned in test/protocols/nip86.test.ts
    expect(a.json).toEqual({ result: [...NIP86_METHODS] })
    expect(a.json.result).toEqual(
      expect.arrayContaining(['banpubkey', 'allowpubkey', 'banevent', 'blockip', 'timeoutpubkey', 'setcommunitypolicy']),
    )
  })

  it("treats the relay's own key as an operator", async () => {
    const relayKeys: TestKeys = makeKeys()
    const r = await start({ operatorPubkeys: [], relaySecretKey: Buffer.from(relayKeys.secretKey).toString('hex') })
    expect(r.relay.pubkey).toBe(relayKeys.pubkey)
    expect((await callNip86(r, relayKeys, 'supportedmethods')).status).toBe(200)
  })

  it('bans a pubkey: 200, its live socket gets a blocked: NOTICE and closes, and listbannedpubkeys shows it', async () => {
    const r = await start()
    const bad = makeKeys()
    const c = await client(r)
    expect((await auth(c, bad, relayUrlOf(r))).accepted).toBe(true)
    const ban = await callNip86(r, operator, 'banpubkey', [bad.pubkey, 'spam'])
    expect(ban.status).toBe(200)
    expect(ban.json).toEqual({ result: true })
    const notice = await c.next((f) => f[0] === 'NOTICE')
    expect(prefixOf(String(notice[1]))).toBe('blocked')
    expect((await c.closed).code).toBe(1008)
    const list = await callNip86(r, operator, 'listbannedpubkeys')
    expect(list.status).toBe(200)
    expect(list.json.result).toEqual([{ pubkey: bad.pubkey, reason: 'spam' }])
  })

  it('bans only in the community whose host the call addressed', async () => {
    const r = await start()
    const bad = makeKeys()
    expect((await callNip86(r, operator, 'banpubkey', [bad.pubkey], 'wasps.test')).status).toBe(200)
    expect((await callNip86(r, operator, 'listbannedpubkeys', [], 'wasps.test')).json.result).toEqual([
      { pubkey: bad.pubkey, reason: 'banned by a relay operator' },
    ])
    expect((await callNip86(r, operator, 'listbannedpubkeys')).json.result).toEqual([])
  })

  it('answers an unknown method with HTTP 200 and an unsupported: error', async () => {
    const r = await start()
    const a = await callNip86(r, operator, 'createrole', ['mods', 'Moderators', '', '#f80', 1])
    expect(a.status).toBe(200)
    expect(prefixOfAnswer(a)).toBe('unsupported')
  })

  it('answers banpubkey with bad params with HTTP 200 and an invalid: error', async () => {
    const r = await start()
    const a = await callNip86(r, operator, 'banpubkey', ['npub1notahexkey'])
    expect(a.status).toBe(200)
    expect(prefixOfAnswer(a)).toBe('invalid')
  })

  it('answers 400 to an authorized caller whose body is not a NIP-86 request', async () => {
    const r = await start()
    const body = '{"params":[]}'
    const a = await postNip86(r, body, nip98Header(operator, managementUrl(r), body))
    expect(a.status).toBe(400)
    expect(prefixOfAnswer(a)).toBe('invalid')
  })

  it('answers 404 to a host no community is bound to', async () => {
    const r = await start()
    const body = rpc('supportedmethods')
    expect((await postNip86(r, body, nip98Header(operator, managementUrl(r, 'nobody.test'), body), 'nobody.test')).status).toBe(404)
  })

  it('names Authorization in the CORS preflight answer', async () => {
    const r = await start()
    const res = await fetch(`http://127.0.0.1:${r.port}/`, { method: 'OPTIONS' })
    expect(res.status).toBe(204)
    expect(res.headers.get('access-control-allow-headers')).toMatch(/Authorization/)
  })
})
