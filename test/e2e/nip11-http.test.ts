import { describe, expect, it } from 'vitest'
import { httpGet } from '../support/http'
import { metric } from '../support/metrics'
import { useRelays } from '../support/relay-fixtures'
import { connect } from '../support/ws-client'

const NOSTR_JSON = { Accept: 'application/nostr+json' }
const upgradeHeaders = (host: string) => ({
  Host: host,
  Connection: 'Upgrade',
  Upgrade: 'websocket',
  'Sec-WebSocket-Version': '13',
  'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==',
})

describe('relay information document (NIP-11)', () => {
  const relays = useRelays()

  it('serves the document on GET / with Accept: application/nostr+json, with CORS', async () => {
    const r = await relays.start({ relayName: 'Test Hive', relayContact: 'ops@example.test' })
    const res = await httpGet(r, '/', NOSTR_JSON)
    expect(res.status).toBe(200)
    expect(res.headers['content-type']).toMatch(/^application\/nostr\+json/)
    expect(res.headers['access-control-allow-origin']).toBe('*')
    const info = JSON.parse(res.body)
    expect(info.name).toBe('Test Hive')
    expect(info.contact).toBe('ops@example.test')
    expect(info.supported_nips).toEqual([1, 9, 11, 29, 40, 42, 43, 45, 70, 86, 98])
  })

  it('names the key that signs group state as both self and pubkey when no admin contact is configured', async () => {
    const r = await relays.start()
    const info = JSON.parse((await httpGet(r, '/', NOSTR_JSON)).body)
    // NIP-29 clients (nostr-tools, relay29's) look the relay's key up in `pubkey`; NIP-11 names it `self`
    expect(info.self).toBe(r.relay.communityPubkey('default'))
    expect(info.pubkey).toBe(info.self)
    expect(info.self).not.toBe(r.relay.pubkey)
  })

  it('names the configured admin contact as pubkey, self still the signing key, and omits empty fields such as contact', async () => {
    const admin = 'ab'.repeat(32)
    const r = await relays.start({ relayContactPubkey: admin })
    const info = JSON.parse((await httpGet(r, '/', NOSTR_JSON)).body)
    expect(info.pubkey).toBe(admin)
    expect(info.self).toBe(r.relay.communityPubkey('default'))
    expect(Object.keys(info)).not.toContain('contact')
    expect(info.software).toBe('https://www.npmjs.com/package/apiary-relay')
    expect(info.version).toMatch(/^\d+\.\d+\.\d+/)
  })

  it('exports process metrics under their standard names, not doubly prefixed', async () => {
    const r = await relays.start()
    const body = (await httpGet(r, '/metrics')).body
    expect(body).toMatch(/^process_cpu_user_seconds_total /m)
    expect(body).toMatch(/^nodejs_eventloop_lag_seconds /m)
    expect(body).not.toMatch(/apiary_process_/)
  })

  it('states exactly the configured limits in `limitation`', async () => {
    const limits = {
      maxMessageBytes: 50_000,
      maxSubscriptions: 7,
      maxFilters: 4,
      maxReqValues: 321,
      maxLimit: 123,
      defaultLimit: 45,
      maxSubidLength: 33,
      maxEventTags: 99,
      maxContentBytes: 4_321,
      createdAtPastSeconds: 86_400,
      createdAtFutureSeconds: 60,
    }
    const r = await relays.start({ limits, authRequired: true })
    const info = JSON.parse((await httpGet(r, '/', NOSTR_JSON)).body)
    expect(info.limitation).toMatchObject({
      max_message_length: 50_000,
      max_subscriptions: 7,
      max_filters: 4,
      max_req_values: 321,
      max_limit: 123,
      default_limit: 45,
      max_subid_length: 33,
      max_event_tags: 99,
      max_content_length: 4_321,
      created_at_lower_limit: 86_400,
      created_at_upper_limit: 60,
      auth_required: true,
    })
  })

  it('says auth_required false by default', async () => {
    const r = await relays.start()
    const info = JSON.parse((await httpGet(r, '/', NOSTR_JSON)).body)
    expect(info.limitation.auth_required).toBe(false)
  })

  it('serves each community its own document by Host, with its own key as self and pubkey', async () => {
    const r = await relays.start({ communities: [{ id: 'beta', name: 'Beta Hive', hosts: ['beta.test'] }] })
    const beta = JSON.parse((await httpGet(r, '/', { ...NOSTR_JSON, Host: `beta.test:${r.port}` })).body)
    const home = JSON.parse((await httpGet(r, '/', NOSTR_JSON)).body)
    expect(beta.name).toBe('Beta Hive')
    expect([beta.self, beta.pubkey]).toEqual([r.relay.communityPubkey('beta'), r.relay.communityPubkey('beta')])
    expect(home.self).toBe(r.relay.communityPubkey('default'))
    expect(beta.self).not.toBe(home.self)
  })

  it('answers a plain GET / with a short text, not the document', async () => {
    const r = await relays.start()
    const res = await httpGet(r, '/')
    expect(res.status).toBe(200)
    expect(res.headers['content-type']).toMatch(/^text\/plain/)
  })
})

describe('unknown hosts', () => {
  const relays = useRelays()

  it('answers HTTP 404 with a generic body to a GET for an unknown Host', async () => {
    const r = await relays.start({ communities: [{ id: 'beta', hosts: ['beta.test'] }] })
    const res = await httpGet(r, '/', { ...NOSTR_JSON, Host: `nowhere.test:${r.port}` })
    expect(res.status).toBe(404)
    expect(res.body).not.toMatch(/beta|default|apiary/i)
    expect(res.body.length).toBeLessThan(64)
  })

  it('refuses a WebSocket upgrade for an unknown Host with HTTP 404 and a generic body', async () => {
    const r = await relays.start()
    await expect(connect(r.url, { host: `nowhere.test:${r.port}` })).rejects.toThrow('HTTP 404')
    const res = await httpGet(r, '/', upgradeHeaders(`nowhere.test:${r.port}`))
    expect(res.status).toBe(404)
    expect(res.body).not.toMatch(/default|apiary/i)
    expect(res.body.length).toBeLessThan(64)
  })

  it('counts refused upgrades by reason', async () => {
    const r = await relays.start()
    await expect(connect(r.url, { host: 'nowhere.test' })).rejects.toThrow('HTTP 404')
    expect(await metric(r, 'apiary_connections_refused_total')).toBe(1)
  })
})

describe('health and metrics endpoints', () => {
  const relays = useRelays()

  it('answers /health/live and /health/ready with 200', async () => {
    const r = await relays.start()
    expect((await httpGet(r, '/health/live')).status).toBe(200)
    expect((await httpGet(r, '/health/ready')).status).toBe(200)
  })

  it('exports Prometheus metrics including apiary_events_accepted_total', async () => {
    const r = await relays.start()
    const res = await httpGet(r, '/metrics')
    expect(res.status).toBe(200)
    expect(res.body).toContain('apiary_events_accepted_total')
    expect(res.body).toContain('apiary_connections_active')
  })
})
