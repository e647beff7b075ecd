import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { prefixOf } from '../../src/protocols/reasons'
import { makeKeys } from '../support/events'
import { eventually } from '../support/eventually'
import { callNip86, nip98Header, postNip86, rpc } from '../support/nip86-client'
import { startPrivateRedis } from '../support/redis-server'
import { auth, client, relayUrlOf } from '../support/relay-client'
import { REDIS_URL, useCluster, useRelays } from '../support/relay-fixtures'

/** NIP-86 on a cluster: one Redis (the shared replay guard), one PostgreSQL (the ban rows), one relay key. */
describe('relay management on a cluster of nodes', () => {
  const relays = useRelays()
  const operator = makeKeys()
  const cluster = useCluster(relays)
  /** a community of the test's own, so its Redis keys (replay claims included) are its own too */
  const nodes = (n: number, redisUrl = REDIS_URL) => cluster.nodes(n, { redisUrl, operatorPubkeys: [operator.pubkey] })

  it('refuses (401) on node B an Authorization header node A already accepted', async () => {
    const {
      host,
      nodes: [a, b],
    } = await nodes(2)
    // Behind a load balancer both nodes see one Host, the public one (port 80 here): the URL it names is both
    // nodes' URL, so a header A accepted names B's too, and only the shared replay guard can refuse it.
    const body = rpc('supportedmethods')
    const publicUrl = `http://${host}/`
    // one clock reading: the fresh header below must differ (another created_at, so another event id)
    const now = Math.floor(Date.now() / 1000)
    const header = nip98Header(operator, publicUrl, body, { created_at: now })
    expect((await postNip86(a!, body, header, host, 80)).status).toBe(200)
    const replayed = await postNip86(b!, body, header, host, 80)
    expect(replayed.status).toBe(401)
    expect(prefixOf(replayed.json.error ?? '')).toBe('invalid')
    // the same URL with a fresh auth event passes on B: the refusal above was the replay, nothing else
    const fresh = nip98Header(operator, publicUrl, body, { created_at: now - 1 })
    expect((await postNip86(b!, body, fresh, host, 80)).status).toBe(200)
  })

  it('closes the banned pubkey on B when an operator bans it through A, and B lists the ban', async () => {
    const {
      host,
      nodes: [a, b],
    } = await nodes(2)
    const bad = makeKeys()
    const onB = await client(b!, host)
    expect((await auth(onB, bad, relayUrlOf(b!, host))).accepted).toBe(true)
    const ban = await callNip86(a!, operator, 'banpubkey', [bad.pubkey, 'spam'], host)
    expect(ban.status).toBe(200)
    const notice = await onB.next((f) => f[0] === 'NOTICE')
    expect(prefixOf(String(notice[1]))).toBe('blocked')
    expect((await onB.closed).code).toBe(1008)
    const list = await callNip86(b!, operator, 'listbannedpubkeys', [], host)
    expect(list.json.result).toEqual([{ pubkey: bad.pubkey, reason: 'spam' }])
  })

  it('serves a community created through A on B within a second, without waiting for revalidation', async () => {
    const {
      host,
      nodes: [a, b],
    } = await nodes(2)
    const fresh = `n-${randomBytes(5).toString('hex')}`
    const created = await callNip86(a!, operator, 'createcommunity', [fresh, [`${fresh}.test`]], host)
    expect(created.json).toEqual({ result: true })
    // revalidation is every 30 s by default: only the InvalidateAll broadcast makes B serve it this soon
    const served = () =>
      client(b!, `${fresh}.test`).then((c) => {
        c.close()
        return true
      })
    expect(await eventually(served, (yes) => yes, 'node B serving the new community', { timeoutMs: 1_500, intervalMs: 50 })).toBe(true)
  })

  it('fails closed while Redis (the per-IP budget and the replay guard) cannot answer, even for an operator', async () => {
    const redis = await startPrivateRedis()
    // stop() after kill() would wait for an exit that already happened (redis-server.ts checks exitCode
    // only, which stays null after a signal), so the private server is stopped only when still running
    let killed = false
    try {
      const {
        host,
        nodes: [a],
      } = await nodes(1, redis.url)
      expect((await callNip86(a!, operator, 'supportedmethods', [], host)).status).toBe(200)
      await redis.kill()
      killed = true
      // the per-IP budget is charged first (before the signature check) and fails closed
      const refused = await callNip86(a!, operator, 'supportedmethods', [], host)
      expect(refused.status).toBe(503)
      expect(refused.json.error).toBe('rate-limited: admission unavailable')
    } finally {
      if (!killed) await redis.stop()
    }
  })
})
