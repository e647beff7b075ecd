import { describe, expect, it } from 'vitest'
import { makeKeys, type SignedEvent, type TestKeys } from '../support/events'
import { eventually } from '../support/eventually'
import { signEventFast } from '../support/fast-sign'
import { labelledMetric } from '../support/metrics'
import { authAsAgent } from '../support/nip29-client'
import { callNip86 } from '../support/nip86-client'
import type { TestRelay } from '../support/relay'
import { auth, authEvent, challengeOf, client, fresh, publish, relayUrlOf, reqAnswer } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'
import type { TestClient } from '../support/ws-client'

/**
 * One socket, one principal budget: what a client gains by authenticating as many keys, on a real relay
 * with real sockets. Every client here connects from 127.0.0.1, so each test starts a relay of its own.
 */

// Refill of one token per ~17 minutes: nothing refills during a test.
const slow = (burst: number) => ({ ratePerSecond: 0.001, burst })
// The shipped defaults (src/infra/config.ts), spelled out because the test fixtures make every tier generous.
const DEFAULT_HUMAN = { events: { ratePerSecond: 10, burst: 50 }, reqs: { ratePerSecond: 20, burst: 100 } }

const okOf = async (c: TestClient, e: SignedEvent) => {
  const f = await c.next((x) => x[0] === 'OK' && x[1] === e.event.id, 30_000)
  return { accepted: f[2] as boolean, message: f[3] as string }
}

/** AUTH as each of `keys` at once; resolves with the OK of each. */
async function authAll(c: TestClient, r: TestRelay, keys: TestKeys[]) {
  const challenge = await challengeOf(c)
  const auths = keys.map((k) => authEvent(k, challenge, relayUrlOf(r)))
  for (const a of auths) c.send(['AUTH', a.event])
  return Promise.all(auths.map((a) => okOf(c, a)))
}

/** Publish events for `keys` round-robin, all at once; resolves with every OK and how long they took. */
async function pushRoundRobin(c: TestClient, keys: TestKeys[], n: number) {
  const events = Array.from({ length: n }, (_, i) => signEventFast(keys[i % keys.length]!, { content: `probe ${i}` }))
  const startedMs = performance.now()
  for (const e of events) c.sendRaw(`["EVENT",${e.raw}]`)
  const oks = await Promise.all(events.map((e) => okOf(c, e)))
  return { oks, seconds: (performance.now() - startedMs) / 1000 }
}

const prefixes = (oks: { accepted: boolean; message: string }[]) =>
  new Set(oks.filter((o) => !o.accepted).map((o) => o.message.split(':')[0]))

describe('pubkeys per connection', () => {
  const relays = useRelays()

  it('authenticates a connection as maxPubkeysPerConnection keys, answers one more "restricted:", counts it, and keeps the socket', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = Array.from({ length: 5 }, () => makeKeys())
    for (const k of keys.slice(0, 4)) expect((await auth(c, k, relayUrlOf(r))).accepted).toBe(true)
    const past = await auth(c, keys[4]!, relayUrlOf(r))
    expect(past).toMatchObject({ accepted: false, prefix: 'restricted' })
    expect(past.message).toContain('4')
    expect(await labelledMetric(r, 'apiary_auth_refused_total', { reason: 'pubkeys-per-connection' })).toBe(1)
    // the socket stays up: a key it already holds authenticates again, a REQ is served, a held key writes
    expect((await auth(c, keys[0]!, relayUrlOf(r))).accepted).toBe(true)
    expect((await reqAnswer(c, 'still-here', [{ kinds: [1] }]))[0]).toBe('EOSE')
    expect((await publish(c, fresh(keys[1]!))).accepted).toBe(true)
  })

  it('counts the cap per connection: another socket authenticates keys of its own', async () => {
    const r = await relays.start({ limits: { maxPubkeysPerConnection: 1 } })
    const a = await client(r)
    expect((await auth(a, makeKeys(), relayUrlOf(r))).accepted).toBe(true)
    expect((await auth(a, makeKeys(), relayUrlOf(r))).prefix).toBe('restricted')
    expect((await auth(await client(r), makeKeys(), relayUrlOf(r))).accepted).toBe(true)
  })
})

describe("every AUTH spends its IP's budget on the node", () => {
  const relays = useRelays()

  it('charges AUTHs, refused ones too, across communities to the IP, and answers the one past it "rate-limited:"', async () => {
    const r = await relays.start({
      communities: [
        { id: 'hive', hosts: ['hive.test'] },
        { id: 'nest', hosts: ['nest.test'] },
      ],
      rateLimits: { authPerIp: slow(3) },
    })
    const hive = await client(r, 'hive.test')
    const nest = await client(r, 'nest.test')
    // a wrong challenge is refused, and still costs a token: its signature would have been checked
    expect((await auth(hive, makeKeys(), `ws://hive.test:${r.port}`, { challenge: 'f'.repeat(32) })).accepted).toBe(false)
    expect((await auth(hive, makeKeys(), `ws://hive.test:${r.port}`)).accepted).toBe(true)
    expect((await auth(nest, makeKeys(), `ws://nest.test:${r.port}`)).accepted).toBe(true)
    expect(await auth(nest, makeKeys(), `ws://nest.test:${r.port}`)).toMatchObject({ accepted: false, prefix: 'rate-limited' })
    expect(await labelledMetric(r, 'apiary_admission_rejections_total', { type: 'auth', reason: 'limit' })).toBe(1)
  })
})

describe('fresh keys write within the IP budget', () => {
  const relays = useRelays()

  it('lets one socket that authenticates as 60 fresh keys write no more than an unauthenticated IP could', async () => {
    const [operator, member] = [makeKeys(), makeKeys()]
    const r = await relays.start({ operatorPubkeys: [operator.pubkey], rateLimits: { human: DEFAULT_HUMAN, authPerIp: slow(1_000) } })
    // a member of the community: on its allowed list
    expect((await callNip86(r, operator, 'allowpubkey', [member.pubkey])).status).toBe(200)
    const c = await client(r)
    const keys = Array.from({ length: 60 }, () => makeKeys())
    const auths = await authAll(c, r, keys)
    const authed = auths.filter((a) => a.accepted).length
    const { oks, seconds } = await pushRoundRobin(c, keys, 500)
    const accepted = oks.filter((o) => o.accepted).length
    const ipBudget = DEFAULT_HUMAN.events.burst + DEFAULT_HUMAN.events.ratePerSecond * seconds
    console.info(`60 fresh keys on one socket: ${authed}/60 AUTHed, ${accepted}/500 events accepted in ${seconds.toFixed(2)} s`)
    expect(authed).toBe(4)
    expect(prefixes(auths)).toEqual(new Set(['restricted']))
    // small slack: a token or two refilled between the last OK and the clock read
    expect(accepted).toBeLessThanOrEqual(Math.ceil(ipBudget) + 2)
    expect(accepted).toBeGreaterThanOrEqual(DEFAULT_HUMAN.events.burst)
    expect(prefixes(oks)).toEqual(new Set(['rate-limited']))
    // a key the community knows, on another socket from the same IP, writes on its own budget meanwhile
    const m = await client(r)
    expect((await auth(m, member, relayUrlOf(r))).accepted).toBe(true)
    const memberOks = await pushRoundRobin(m, [member], 10)
    expect(memberOks.oks.every((o) => o.accepted)).toBe(true)
  })

  it('charges a rostered agent its own budget only, so a flood from its IP does not slow it', async () => {
    const agent = makeKeys()
    const r = await relays.start({
      communities: [{ id: 'hive', hosts: ['hive.test'], agents: [{ pubkey: agent.pubkey, tier: 'standard' }] }],
      rateLimits: { human: { events: slow(2) }, agentStandard: { events: slow(20) } },
    })
    const url = `ws://hive.test:${r.port}`
    const c = await client(r, 'hive.test')
    // unauthenticated writes spend the IP's two tokens
    const anon = await pushRoundRobin(c, [makeKeys()], 3)
    expect(anon.oks.map((o) => o.accepted)).toEqual([true, true, false])
    const stranger = makeKeys()
    expect((await auth(c, stranger, url)).accepted).toBe(true)
    expect((await auth(c, agent, url)).accepted).toBe(true)
    // a fresh key has tokens of its own, but needs the IP's too
    expect(await publish(c, fresh(stranger))).toMatchObject({ accepted: false, prefix: 'rate-limited' })
    const agentOks = await pushRoundRobin(c, [agent], 20)
    expect(agentOks.oks.every((o) => o.accepted)).toBe(true)
  })
})

describe('the fresh window', () => {
  const relays = useRelays()

  it("charges a fresh key's writes to its IP for rateLimits.freshKeySeconds after its AUTH, then to the key alone", async () => {
    const r = await relays.start({ rateLimits: { human: { events: slow(4) }, freshKeySeconds: 1 } })
    const c = await client(r)
    const anon = await pushRoundRobin(c, [makeKeys()], 4)
    expect(anon.oks.every((o) => o.accepted)).toBe(true)
    const key = makeKeys()
    expect((await auth(c, key, relayUrlOf(r))).accepted).toBe(true)
    const authedAtMs = performance.now()
    expect(await publish(c, fresh(key))).toMatchObject({ accepted: false, prefix: 'rate-limited' })
    // what is awaited is the window's end itself
    await eventually(() => performance.now() > authedAtMs + 1_100, 'the fresh window to end')
    expect((await publish(c, fresh(key))).accepted).toBe(true)
  })
})

describe('an owner attestation lifts the tier only for an owner the community knows', () => {
  const relays = useRelays()

  // freshKeySeconds 0: the budget each key gets is its tier's alone, not shared with the IP
  const start = (owner: TestKeys) =>
    relays.start({
      communities: [{ id: 'hive', hosts: ['hive.test'], admins: [owner.pubkey] }],
      rateLimits: { human: { events: slow(3) }, agentStandard: { events: slow(6) }, freshKeySeconds: 0 },
    })
  const url = (r: TestRelay) => `ws://hive.test:${r.port}`
  const acceptedOf = async (c: TestClient, keys: TestKeys) => (await pushRoundRobin(c, [keys], 8)).oks.filter((o) => o.accepted).length

  it('gives an agent attested by a throwaway key the budget of a fresh key', async () => {
    const admin = makeKeys()
    const r = await start(admin)
    const plain = await client(r, 'hive.test')
    const fresh = makeKeys()
    expect((await auth(plain, fresh, url(r))).accepted).toBe(true)
    const attested = await client(r, 'hive.test')
    const agent = makeKeys()
    expect((await authAsAgent(attested, agent, makeKeys(), url(r))).accepted).toBe(true)
    expect(await acceptedOf(plain, fresh)).toBe(3)
    expect(await acceptedOf(attested, agent)).toBe(3)
  })

  it('lifts an agent attested by an admin, or by a pubkey on the allowed list, to the agent-standard tier', async () => {
    const admin = makeKeys()
    const r = await start(admin)
    const allowed = makeKeys()
    expect((await callNip86(r, admin, 'allowpubkey', [allowed.pubkey], 'hive.test')).status).toBe(200)
    for (const owner of [admin, allowed]) {
      const c = await client(r, 'hive.test')
      const agent = makeKeys()
      expect((await authAsAgent(c, agent, owner, url(r))).accepted).toBe(true)
      expect(await acceptedOf(c, agent)).toBe(6)
    }
  })
})
