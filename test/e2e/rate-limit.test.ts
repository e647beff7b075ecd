import { describe, expect, it } from 'vitest'
import { makeKeys } from '../support/events'
import { metric } from '../support/metrics'
import { auth, client, fresh, publish, relayUrlOf, reqAnswer } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'
import { connect } from '../support/ws-client'

describe('rate limits', () => {
  const relays = useRelays()

  it('answers the EVENT past the burst with OK false "rate-limited:"', async () => {
    const r = await relays.start({ rateLimits: { human: { events: { ratePerSecond: 1, burst: 3 } } } })
    const c = await client(r)
    const keys = makeKeys()
    const events = Array.from({ length: 4 }, () => fresh(keys))
    for (const e of events) c.sendRaw(`["EVENT",${e.raw}]`)
    const oks = await Promise.all(events.map((e) => c.ok(e.event.id)))
    expect(oks.map((f) => f[2])).toEqual([true, true, true, false])
    expect(oks[3]![3]).toMatch(/^rate-limited: /)
    expect(await metric(r, 'apiary_admission_rejections_total')).toBe(1)
  })

  it('charges unauthenticated events to the IP across connections', async () => {
    const r = await relays.start({ rateLimits: { human: { events: { ratePerSecond: 1, burst: 2 } } } })
    const keys = makeKeys()
    expect((await publish(await client(r), fresh(keys))).accepted).toBe(true)
    expect((await publish(await client(r), fresh(keys))).accepted).toBe(true)
    expect(await publish(await client(r), fresh(keys))).toMatchObject({ accepted: false, prefix: 'rate-limited' })
  })

  it('gives an authenticated pubkey the community knows its own budget', async () => {
    const authed = makeKeys()
    const r = await relays.start({
      communities: [{ id: 'hive', hosts: ['hive.test'], admins: [authed.pubkey] }],
      rateLimits: { human: { events: { ratePerSecond: 1, burst: 1 } } },
    })
    const c = await client(r, 'hive.test')
    const anon = makeKeys()
    expect((await publish(c, fresh(anon))).accepted).toBe(true)
    expect((await publish(c, fresh(anon))).prefix).toBe('rate-limited')
    await auth(c, authed, `ws://hive.test:${r.port}`)
    expect((await publish(c, fresh(authed))).accepted).toBe(true)
    expect((await publish(c, fresh(authed))).prefix).toBe('rate-limited')
  })

  it('gives an agent from the community roster the budget of its tier once it authenticates', async () => {
    const agent = makeKeys()
    const human = makeKeys()
    const r = await relays.start({
      communities: [{ id: 'hive', hosts: ['hive.test'], agents: [{ pubkey: agent.pubkey, tier: 'platform' }] }],
      rateLimits: { human: { events: { ratePerSecond: 0.001, burst: 1 } }, agentPlatform: { events: { ratePerSecond: 0.001, burst: 3 } } },
    })
    const url = `ws://hive.test:${r.port}`
    const a = await client(r, 'hive.test')
    await auth(a, agent, url)
    const h = await client(r, 'hive.test')
    await auth(h, human, url)
    const agentOks = [await publish(a, fresh(agent)), await publish(a, fresh(agent)), await publish(a, fresh(agent))]
    expect(agentOks.map((o) => o.accepted)).toEqual([true, true, true])
    expect((await publish(a, fresh(agent))).prefix).toBe('rate-limited')
    expect((await publish(h, fresh(human))).accepted).toBe(true)
    expect((await publish(h, fresh(human))).prefix).toBe('rate-limited')
  })

  it('answers the REQ past the burst with CLOSED "rate-limited:"', async () => {
    const r = await relays.start({ rateLimits: { human: { reqs: { ratePerSecond: 1, burst: 2 } } } })
    const c = await client(r)
    expect((await reqAnswer(c, 'r1', [{ kinds: [1] }]))[0]).toBe('EOSE')
    expect((await reqAnswer(c, 'r2', [{ kinds: [1] }]))[0]).toBe('EOSE')
    const third = await reqAnswer(c, 'r3', [{ kinds: [1] }])
    expect(third[0]).toBe('CLOSED')
    expect(third[2]).toMatch(/^rate-limited: /)
  })

  it("charges AUTH messages to the IP's AUTH budget, so signature checks are not free", async () => {
    const r = await relays.start({ rateLimits: { authPerIp: { ratePerSecond: 0.001, burst: 2 } } })
    const c = await client(r)
    expect((await auth(c, makeKeys(), relayUrlOf(r))).accepted).toBe(true)
    expect((await auth(c, makeKeys(), relayUrlOf(r))).accepted).toBe(true)
    expect(await auth(c, makeKeys(), relayUrlOf(r))).toMatchObject({ accepted: false, prefix: 'rate-limited' })
  })

  it('refuses the connection past the per-IP burst with HTTP 429', async () => {
    const r = await relays.start({ rateLimits: { connectionsPerIp: { ratePerSecond: 0.001, burst: 2 } } })
    await connect(r.url)
    await connect(r.url)
    await expect(connect(r.url)).rejects.toThrow('HTTP 429')
    expect(await metric(r, 'apiary_connections_refused_total')).toBe(1)
  })
})
