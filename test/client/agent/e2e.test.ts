import { bytesToHex } from '@noble/hashes/utils.js'
import { afterEach, describe, expect, it } from 'vitest'
import { AgentClient, type AgentClientOptions, AgentError, type AgentStateChange } from '../../../src/client/index'
import type { NostrEvent } from '../../../src/protocols/nip01/event'
import { makeKeys, signEvent } from '../../support/events'
import { eventually } from '../../support/eventually'
import { httpGet } from '../../support/http'
import { managementUrl, nip98Header, postNip86 } from '../../support/nip86-client'
import type { TestRelay } from '../../support/relay'
import { auth, fresh, publish, reqEvents } from '../../support/relay-client'
import { useRelays } from '../../support/relay-fixtures'
import { connect } from '../../support/ws-client'

const agents: AgentClient[] = []
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.stop()))
})

function newAgent(url: string, extra: Partial<AgentClientOptions> = {}) {
  const keys = makeKeys()
  const agent = new AgentClient({
    relays: [url],
    secretKey: bytesToHex(keys.secretKey),
    capabilities: [{ name: 'echo', kinds: [5050] }],
    ...extra,
  })
  agents.push(agent)
  const states: AgentStateChange[] = []
  agent.state$.subscribe((s) => states.push(s))
  return { agent, keys, states }
}

const connectionsTotal = async (r: TestRelay): Promise<number> => {
  const m = /^apiary_connections_total(?:\{[^}]*\})? (\d+)/m.exec((await httpGet(r, '/metrics')).body)
  return Number(m?.[1] ?? 0)
}

describe('an agent on a real relay', () => {
  const relays = useRelays()

  it('reaches ACTIVE through INIT, DISCOVERED, AUTHENTICATED, and a state$ subscriber late to it sees ACTIVE', async () => {
    const r = await relays.start()
    const { agent, states } = newAgent(r.url)
    await agent.start()
    expect(states.map((s) => s.state)).toEqual(['INIT', 'DISCOVERED', 'AUTHENTICATED', 'ACTIVE'])
    expect(states.every((s) => typeof s.cause === 'string' && s.cause.length > 0)).toBe(true)
    const late: string[] = []
    agent.state$.subscribe((s) => late.push(s.state)).unsubscribe()
    expect(late).toEqual(['ACTIVE'])
    expect(agent.metrics()).toMatchObject({ state: 'ACTIVE', reconnects: 0 })
  })

  it('publishes: ok with the id, then duplicate: true for the same template (its created_at kept)', async () => {
    const r = await relays.start()
    const { agent } = newAgent(r.url)
    await agent.start()
    const t = { kind: 1, content: `hello ${Math.random()}`, created_at: Math.floor(Date.now() / 1000) - 5 }
    const first = await agent.publish(t)
    expect(first).toMatchObject({ ok: true, duplicate: false })
    expect(first.id).toMatch(/^[0-9a-f]{64}$/)
    expect(await agent.publish(t)).toEqual({ ok: true, id: first.id, duplicate: true })
    const c = await connect(r.url)
    const [stored] = await reqEvents(c, [{ ids: [first.id] }])
    expect(stored?.created_at).toBe(t.created_at)
    c.close()
    expect(agent.metrics()).toMatchObject({ sent: 2, failed: 0 })
  })

  it("answers one event's `invalid:` as that publish's result and stays ACTIVE", async () => {
    const r = await relays.start()
    const { agent } = newAgent(r.url)
    await agent.start()
    const result = await agent.publish({ kind: 1, content: 'from the far future', created_at: Math.floor(Date.now() / 1000) + 86_400 })
    expect(result.ok).toBe(false)
    expect(!result.ok && result.reason).toMatch(/^invalid: /)
    expect(agent.state).toBe('ACTIVE')
  })

  it('delivers events matching a subscription, and nothing after the unsubscribe', async () => {
    const r = await relays.start()
    const { agent } = newAgent(r.url)
    await agent.start()
    const author = makeKeys()
    const got: NostrEvent[] = []
    const unsubscribe = agent.subscribe([{ kinds: [1], authors: [author.pubkey] }], (e) => got.push(e))
    const stored = fresh(author)
    const c = await connect(r.url)
    await publish(c, stored)
    await eventually(() => got.length === 1, 'the stored event', { timeoutMs: 5000 })
    const live = fresh(author)
    await publish(c, live)
    await eventually(() => got.length === 2, 'the live event', { timeoutMs: 5000 })
    expect(got.map((e) => e.id)).toEqual([stored.event.id, live.event.id])
    unsubscribe()
    await new Promise((res) => setTimeout(res, 100))
    await publish(c, fresh(author))
    await new Promise((res) => setTimeout(res, 200))
    expect(got).toHaveLength(2)
    c.close()
  })

  it('says goodbye: presence "offline" acknowledged, then a clean 1000 close, ending CLOSED', async () => {
    const r = await relays.start()
    const { agent, keys, states } = newAgent(r.url)
    await agent.start()
    const watcher = await connect(r.url)
    watcher.send(['REQ', 'presence', { kinds: [20001], authors: [keys.pubkey] }])
    await watcher.next((f) => f[0] === 'EOSE')
    await agent.stop()
    const bye = await watcher.next((f) => f[0] === 'EVENT' && (f[2] as NostrEvent).content === 'offline')
    expect((bye[2] as NostrEvent).pubkey).toBe(keys.pubkey)
    expect(states.at(-1)).toMatchObject({ state: 'CLOSED', cause: 'stopped' })
    expect(await agent.publish({ kind: 1, content: 'too late' })).toMatchObject({ ok: false })
    watcher.close()
  })
})

describe('an agent that is banned', () => {
  const relays = useRelays()

  it('ends CLOSED with AgentError blocked when the relay closes its socket as `blocked:`, and never connects again', async () => {
    const operator = makeKeys()
    const r = await relays.start({ operatorPubkeys: [operator.pubkey] })
    const { agent, keys, states } = newAgent(r.url)
    await agent.start()
    const before = await connectionsTotal(r)
    const body = JSON.stringify({ method: 'banpubkey', params: [keys.pubkey, 'spam'] })
    expect((await postNip86(r, body, nip98Header(operator, managementUrl(r), body))).status).toBe(200)
    await eventually(() => agent.state === 'CLOSED', 'CLOSED', { timeoutMs: 5000 })
    const closed = states.at(-1)!
    expect(closed.error).toBeInstanceOf(AgentError)
    expect(closed.error?.code).toBe('blocked')
    // past the first two backoff delays (1 s, 2 s): no attempt was scheduled at all
    await new Promise((res) => setTimeout(res, 3500))
    expect(await connectionsTotal(r)).toBe(before)
    expect(states.filter((s) => s.state === 'INIT')).toHaveLength(1)
  })

  it('rejects start() with AgentError blocked when a banned key is refused at AUTH, without retrying', async () => {
    const operator = makeKeys()
    const r = await relays.start({ operatorPubkeys: [operator.pubkey] })
    const keys = makeKeys()
    const body = JSON.stringify({ method: 'banpubkey', params: [keys.pubkey, 'spam'] })
    expect((await postNip86(r, body, nip98Header(operator, managementUrl(r), body))).status).toBe(200)
    const before = await connectionsTotal(r)
    const agent = new AgentClient({ relays: [r.url], secretKey: keys.secretKey, capabilities: [] })
    agents.push(agent)
    const error = (await agent.start().catch((e: unknown) => e)) as AgentError
    expect(error).toBeInstanceOf(AgentError)
    expect(error.code).toBe('blocked')
    expect(agent.state).toBe('CLOSED')
    // must not happen: a retry would come after the first backoff delay (1 s); none does
    await new Promise((res) => setTimeout(res, 1500))
    expect(await connectionsTotal(r)).toBe(before + 1)
  })
})

describe('an agent behind a path that hangs without closing (half-open socket)', () => {
  const relays = useRelays()

  it('goes SUSPECT, then ZOMBIE, drops the socket within the session timeout, and is ACTIVE again once the path flows', async () => {
    const { relay: r, proxy } = await relays.startBehindProxy()
    const { agent, states } = newAgent(`ws://127.0.0.1:${proxy.port}`, {
      heartbeatSeconds: 0.5,
      leaseSeconds: 1.5,
      sessionSeconds: 3,
      handshakeTimeoutMs: 1000,
    })
    await agent.start()
    const stalledAt = Date.now()
    proxy.stall()
    await eventually(() => states.some((s) => s.state === 'INIT' && /session timeout/.test(s.cause ?? '')), 'the socket to be dropped', {
      timeoutMs: 6000,
    })
    const droppedAfterMs = Date.now() - stalledAt
    expect(droppedAfterMs).toBeGreaterThanOrEqual(3000)
    expect(droppedAfterMs).toBeLessThan(3000 + 1000)
    const seq = states.map((s) => s.state)
    expect(seq.slice(seq.indexOf('SUSPECT'), seq.indexOf('SUSPECT') + 3)).toEqual(['SUSPECT', 'ZOMBIE', 'INIT'])
    // publishes while ZOMBIE or reconnecting are queued, not lost
    const queued = await agent.publish({ kind: 1, content: `while the path hangs ${Math.random()}` })
    expect(queued).toMatchObject({ ok: false, queued: true })
    proxy.resume()
    await eventually(() => agent.state === 'ACTIVE', 'ACTIVE again', { timeoutMs: 10_000 })
    const c = await connect(r.url)
    await eventually(() => agent.metrics().queueLength === 0, 'the queue to flush', { timeoutMs: 5000 })
    // leaving the queue is the send, not the commit: read until the relay has stored it
    const stored = await eventually(
      () => reqEvents(c, [{ ids: [queued.id] }]),
      (found) => found.length === 1,
      'the queued event stored',
      { intervalMs: 100 },
    )
    expect(stored).toHaveLength(1)
    c.close()
    expect(agent.metrics().reconnects).toBeGreaterThanOrEqual(1)
  })
})

describe('an agent whose path hangs for less than the lease', () => {
  const relays = useRelays()

  it('goes SUSPECT and back to ACTIVE on the same connection when the relay answers again', async () => {
    const { proxy } = await relays.startBehindProxy()
    const { agent, states } = newAgent(`ws://127.0.0.1:${proxy.port}`, { heartbeatSeconds: 0.5, leaseSeconds: 1.5, sessionSeconds: 3 })
    await agent.start()
    proxy.stall()
    await eventually(() => agent.state === 'SUSPECT', 'SUSPECT', { timeoutMs: 3000 })
    proxy.resume()
    await eventually(() => agent.state === 'ACTIVE', 'ACTIVE again', { timeoutMs: 3000 })
    expect(states.map((s) => s.state).slice(-2)).toEqual(['SUSPECT', 'ACTIVE'])
    expect(agent.metrics().reconnects).toBe(0)
  })
})

describe('discover()', () => {
  const relays = useRelays()

  it("maps live announcements to pubkey, capabilities, version, load and the lease's end", async () => {
    const r = await relays.start()
    const translator = newAgent(r.url, {
      capabilities: [{ name: 'translate', kinds: [5002], description: 'any language to English' }],
      version: '1.2.0',
    })
    translator.agent.setLoad(0.25)
    const asker = newAgent(r.url, { capabilities: [] })
    await Promise.all([translator.agent.start(), asker.agent.start()])
    const before = Date.now()
    const found = await asker.agent.discover('translate')
    expect(found).toHaveLength(1)
    const [a] = found
    expect(a).toMatchObject({
      pubkey: translator.agent.pubkey,
      capabilities: [{ name: 'translate', kinds: [5002], description: 'any language to English' }],
      version: '1.2.0',
      load: 0.25,
    })
    // the relay advertises no lease yet: 45 s after the last heartbeat (created_at has second precision)
    expect(a!.leaseExpiresAt).toBeGreaterThan(before + 43_000)
    expect(a!.leaseExpiresAt).toBeLessThanOrEqual(before + 46_000)
    expect(await asker.agent.discover('summarize')).toEqual([])
  })

  it('watch() sees an agent arrive and, after its goodbye, leave', async () => {
    const r = await relays.start()
    const watcher = newAgent(r.url, { capabilities: [] })
    await watcher.agent.start()
    const views: string[][] = []
    const end = watcher.agent.watch('translate', (agents) => views.push(agents.map((a) => a.pubkey)))
    const translator = newAgent(r.url, { capabilities: [{ name: 'translate', kinds: [5002] }] })
    await translator.agent.start()
    await eventually(() => views.at(-1)?.[0] === translator.agent.pubkey, 'the arrival', { timeoutMs: 5000 })
    await translator.agent.stop()
    await eventually(() => views.at(-1)?.length === 0, 'the departure', { timeoutMs: 5000 })
    expect(views).toEqual([[translator.agent.pubkey], []])
    end()
  })

  it('drops an announcement without a live heartbeat, and one whose last heartbeat is older than the lease', async () => {
    const r = await relays.start()
    const c = await connect(r.url)
    const silent = makeKeys()
    const announce = (keys: typeof silent) =>
      signEvent(keys, {
        kind: 31990,
        tags: [
          ['d', 'apiary-agent'],
          ['c', 'translate'],
          ['k', '5002'],
        ],
        content: '{"capabilities":[{"name":"translate","kinds":[5002]}]}',
      })
    expect((await publish(c, announce(silent))).accepted).toBe(true)
    // a stale agent: announced, AUTHed, but its last heartbeat is 60 s old
    const stale = makeKeys()
    const staleClient = await connect(r.url)
    expect((await auth(staleClient, stale, r.url)).accepted).toBe(true)
    expect((await publish(staleClient, announce(stale))).accepted).toBe(true)
    const oldBeat = signEvent(stale, { kind: 20001, content: 'online', created_at: Math.floor(Date.now() / 1000) - 60 })
    expect((await publish(staleClient, oldBeat)).accepted).toBe(true)
    // the relay still holds that presence (its TTL runs from receipt): the drop is the client's
    expect(await reqEvents(c, [{ kinds: [20001], authors: [stale.pubkey] }])).toHaveLength(1)
    const live = newAgent(r.url, { capabilities: [{ name: 'translate', kinds: [5002] }] })
    await live.agent.start()
    const found = await live.agent.discover('translate')
    expect(found.map((f) => f.pubkey)).toEqual([live.agent.pubkey])
    c.close()
    staleClient.close()
  })
})
