import { randomBytes, randomUUID } from 'node:crypto'
import { tmpdir } from 'node:os'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createBusMac, deriveBusMacKey } from '../../src/infra/bus/bus-mac'
import { connControlChannel } from '../../src/infra/redis/keys'
import { loadRelayKey, signAsRelay } from '../../src/infra/relay-key'
import { type ConnControlOp, KIND_CONTROL, toControlTemplate } from '../../src/protocols/control'
import { makeKeys, type TestKeys } from '../support/events'
import { eventually } from '../support/eventually'
import { httpGet } from '../support/http'
import { metric } from '../support/metrics'
import type { TestRelay } from '../support/relay'
import { auth, client, nowSeconds, relayUrlOf, reqEvents } from '../support/relay-client'
import { REDIS_URL, useCluster, useRelays } from '../support/relay-fixtures'
import type { TestClient } from '../support/ws-client'

/**
 * The conn-control channel (architecture §6.7): payloads are events signed by the relay key, so write access to Redis
 * alone can't kick anyone. Each test owns a community id, hence its own channels on the shared Redis.
 */
describe('cluster control messages', () => {
  const relays = useRelays()
  let redis: Redis
  const cluster = useCluster(relays)
  const relayKey = loadRelayKey(tmpdir(), cluster.relaySecretKey)
  beforeAll(() => {
    redis = new Redis(REDIS_URL)
  })
  afterAll(() => {
    redis.disconnect()
  })

  async function nodes(n: number) {
    const { id, host, nodes: started } = await cluster.nodes(n)
    // a node's subscriber connection confirms its control channels shortly after listen(): poll Redis (bounded)
    const channel = connControlChannel(id)
    const subscribers = async () => Number(((await redis.pubsub('NUMSUB', channel)) as [string, number])[1])
    expect(await eventually(subscribers, (got) => got >= n, `${n} subscriber(s) on ${channel}`, { timeoutMs: 2_000 })).toBe(n)
    return { id, host, nodes: started }
  }

  /** What someone holding Redis credentials (and no relay key) can do: publish anything, bus envelope included. */
  // the control checks stand behind the bus MAC: this test holds the cluster's key, as a node (or a leak) would
  const busMac = createBusMac(deriveBusMacKey(relayKey.secretKey))
  const inject = (community: string, payload: string) => {
    const channel = connControlChannel(community)
    const body = `${randomUUID()}\n${payload}`
    return redis.publish(channel, busMac.sign(channel, body) + body)
  }

  const disconnectOp = (pubkey: string): ConnControlOp => ({ op: 'DisconnectPubkey', pubkey, eventId: '', reason: 'banned' })

  async function authedClient(node: TestRelay, host: string, keys: TestKeys): Promise<TestClient> {
    const c = await client(node, host)
    expect((await auth(c, keys, relayUrlOf(node, host))).accepted).toBe(true)
    return c
  }

  /** The close a DisconnectPubkey causes: a `blocked:` NOTICE, then 1008. */
  async function expectBlockedClose(c: TestClient) {
    const notice = await c.next((f) => f[0] === 'NOTICE')
    expect(String(notice[1])).toMatch(/^blocked: /)
    expect((await c.closed).code).toBe(1008)
  }

  /** Open, and every frame queued for it before this round trip was a normal one (no NOTICE, no close). */
  async function expectStillServed(c: TestClient) {
    expect(await reqEvents(c, [{ kinds: [1], limit: 1 }])).toEqual([])
    expect(c.ws.readyState).toBe(c.ws.OPEN)
    expect(c.frames.filter((f) => f[0] === 'NOTICE')).toEqual([])
  }

  /** apiary_control_rejected_total by its reason label */
  async function rejectedByReason(node: TestRelay): Promise<Record<string, number>> {
    const { body } = await httpGet(node, '/metrics')
    const out: Record<string, number> = {}
    for (const m of body.matchAll(/^apiary_control_rejected_total\{reason="([^"]*)"\} (\S+)$/gm)) out[m[1]!] = Number(m[2])
    return out
  }

  it('ignores unsigned, foreign, stale and unknown-op disconnects, counts them, and still obeys the next valid one', async () => {
    const {
      id,
      host,
      nodes: [node],
    } = await nodes(1)
    const [victim, bystander] = [makeKeys(), makeKeys()]
    const onVictim = await authedClient(node!, host, victim)
    const onBystander = await authedClient(node!, host, bystander)
    const template = toControlTemplate(id, 'conn-control', disconnectOp(victim.pubkey))
    const now = nowSeconds()
    const signed = signAsRelay(relayKey, template, now)
    const forged = [
      'not an event at all',
      JSON.stringify({ ...signed, sig: '00'.repeat(64) }),
      JSON.stringify(signAsRelay(loadRelayKey(tmpdir(), randomBytes(32).toString('hex')), template, now)),
      JSON.stringify(signAsRelay(relayKey, { ...template, created_at: now - 600 }, now)),
      JSON.stringify(
        signAsRelay(
          relayKey,
          { kind: KIND_CONTROL, tags: template.tags, content: JSON.stringify({ op: 'KickEveryone', pubkey: victim.pubkey }) },
          now,
        ),
      ),
    ]
    for (const payload of forged) await inject(id, payload)
    // Redis delivers one publisher's messages in order and the community handles them one at a time: once
    // this valid order has closed the bystander, every forged one before it was handled
    await inject(
      id,
      JSON.stringify(signAsRelay(relayKey, toControlTemplate(id, 'conn-control', disconnectOp(bystander.pubkey)), nowSeconds())),
    )
    await expectBlockedClose(onBystander)
    await expectStillServed(onVictim)
    expect(await rejectedByReason(node!)).toEqual({
      json: 1,
      signature: 1,
      'foreign signer': 1,
      stale: 1,
      'unknown or malformed op': 1,
    })

    // a refused message does not stall the channel: a valid order right behind an unknown op is carried out
    await inject(id, forged.at(-1)!)
    await inject(id, JSON.stringify(signAsRelay(relayKey, template, nowSeconds())))
    await expectBlockedClose(onVictim)
    expect(await metric(node!, 'apiary_control_rejected_total')).toBe(forged.length + 1)
    expect((await rejectedByReason(node!))['unknown or malformed op']).toBe(2)
  })

  it('applies a signed disconnect once: a replay of the same payload is counted and skipped, the pubkey may come back', async () => {
    const {
      id,
      host,
      nodes: [node],
    } = await nodes(1)
    const victim = makeKeys()
    const first = await authedClient(node!, host, victim)
    const payload = JSON.stringify(signAsRelay(relayKey, toControlTemplate(id, 'conn-control', disconnectOp(victim.pubkey)), nowSeconds()))
    await inject(id, payload)
    await expectBlockedClose(first)
    // the pubkey reconnects (it was kicked, not banned); someone with Redis access resends the captured payload
    const back = await authedClient(node!, host, victim)
    await inject(id, payload)
    // a fresh order right behind it shows the replay was handled (and skipped) before it
    const bystander = makeKeys()
    const onBystander = await authedClient(node!, host, bystander)
    await inject(
      id,
      JSON.stringify(signAsRelay(relayKey, toControlTemplate(id, 'conn-control', disconnectOp(bystander.pubkey)), nowSeconds())),
    )
    await expectBlockedClose(onBystander)
    await expectStillServed(back)
    expect(await rejectedByReason(node!)).toEqual({ replayed: 1 })
  })

  it('closes a pubkey banned on one node on every node of three, with a blocked: NOTICE and close code 1008', async () => {
    const {
      id,
      host,
      nodes: [a, b, c],
    } = await nodes(3)
    const bad = makeKeys()
    const sockets = [await authedClient(a!, host, bad), await authedClient(b!, host, bad), await authedClient(c!, host, bad)]
    const bystander = await authedClient(c!, host, makeKeys())
    await a!.relay.banPubkey(id, bad.pubkey, 'spam')
    for (const s of sockets) await expectBlockedClose(s)
    await expectStillServed(bystander)
  })
})
