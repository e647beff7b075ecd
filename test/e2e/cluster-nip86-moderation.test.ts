import { describe, expect, it } from 'vitest'
import type { CommunityStore } from '../../src/infra/store/community-store'
import { prefixOf } from '../../src/protocols/reasons'
import { makeKeys, type TestKeys } from '../support/events'
import { eventually } from '../support/eventually'
import { httpGet } from '../support/http'
import { managementUrl, nip98Header, postNip86 } from '../support/nip86-client'
import { testClientIp, upgradeStatus, viaProxy } from '../support/per-ip-clients'
import type { TestRelay } from '../support/relay'
import { auth, client, relayUrlOf } from '../support/relay-client'
import { useCluster, useRelays } from '../support/relay-fixtures'

let callCounter = 0
/** One call to `node` for the community on `host`; the body's `id` keeps identical calls from being replays. */
const call = (node: TestRelay, keys: TestKeys, host: string, method: string, params: unknown[] = []) => {
  const body = JSON.stringify({ id: ++callCounter, method, params })
  return postNip86(node, body, nip98Header(keys, managementUrl(node, host), body), host)
}

const nip11On = async (node: TestRelay, host: string) =>
  JSON.parse((await httpGet(node, '/', { Accept: 'application/nostr+json', Host: `${host}:${node.port}` })).body)

/** polls `read` until it returns `want` (deep equality), for up to 2 s */
const eventuallyEqual = <T>(read: () => Promise<T>, want: T): Promise<T> =>
  eventually(read, (got) => JSON.stringify(got) === JSON.stringify(want), `${JSON.stringify(want)}`, { timeoutMs: 2_000, intervalMs: 100 })

/** Moderation on a cluster: settings reach every node at once (InvalidateAll), budgets are shared (Redis). */
describe('moderation over NIP-86 on a cluster of nodes', () => {
  const relays = useRelays()
  const operator = makeKeys()
  const cluster = useCluster(relays)
  const GENEROUS = { ratePerSecond: 100_000, burst: 100_000 }

  it("shows a name, description and policy changed through A in B's NIP-11 without waiting for revalidation", async () => {
    const {
      host,
      nodes: [a, b],
    } = await cluster.nodes(2, { operatorPubkeys: [operator.pubkey], rateLimits: { human: { api: GENEROUS } } })
    expect((await call(a!, operator, host, 'changerelayname', ['Cluster Nest'])).json).toEqual({ result: true })
    expect((await call(a!, operator, host, 'changerelaydescription', ['shared by every node'])).json).toEqual({ result: true })
    expect((await call(a!, operator, host, 'setcommunitypolicy', [{ authRequired: true }])).json).toEqual({ result: true })
    const seen = await eventuallyEqual(
      async () => {
        const info = await nip11On(b!, host)
        return { name: info.name, description: info.description, auth: info.limitation.auth_required }
      },
      { name: 'Cluster Nest', description: 'shared by every node', auth: true },
    )
    expect(seen).toEqual({ name: 'Cluster Nest', description: 'shared by every node', auth: true })
  })

  it('lists on B the kinds and allowed pubkeys set through A', async () => {
    const {
      host,
      nodes: [a, b],
    } = await cluster.nodes(2, { operatorPubkeys: [operator.pubkey], rateLimits: { human: { api: GENEROUS } } })
    const member = makeKeys()
    await call(a!, operator, host, 'allowkind', [1])
    await call(a!, operator, host, 'allowpubkey', [member.pubkey, 'ok'])
    expect((await call(b!, operator, host, 'listallowedkinds')).json.result).toEqual([1])
    expect((await call(b!, operator, host, 'listallowedpubkeys')).json.result).toEqual([{ pubkey: member.pubkey, reason: 'ok' }])
  })

  it('closes on B the socket of a pubkey timed out through A', async () => {
    const {
      host,
      nodes: [a, b],
    } = await cluster.nodes(2, { operatorPubkeys: [operator.pubkey], rateLimits: { human: { api: GENEROUS } } })
    const noisy = makeKeys()
    const onB = await client(b!, host)
    expect((await auth(onB, noisy, relayUrlOf(b!, host))).accepted).toBe(true)
    expect((await call(a!, operator, host, 'timeoutpubkey', [noisy.pubkey, 60])).json).toEqual({ result: true })
    expect(prefixOf(String((await onB.next((f) => f[0] === 'NOTICE'))[1]))).toBe('blocked')
    expect((await onB.closed).code).toBe(1008)
  })

  /** each node's reads of the block lists, through a wrapper of its community store */
  function countingListReads() {
    const reads = [0, 0]
    const opts = (i: number) => ({
      wrapCommunityStore: (store: CommunityStore): CommunityStore => ({
        ...store,
        listBlockedIps: (community) => {
          reads[i]!++
          return store.listBlockedIps(community)
        },
      }),
    })
    return { reads, opts }
  }

  it('closes on B the socket from an address range blocked through A, refuses it on both, and lets it in again once unblocked', async () => {
    const counted = countingListReads()
    const {
      host,
      nodes: [a, b],
    } = await cluster.nodes(
      2,
      {
        operatorPubkeys: [operator.pubkey],
        rateLimits: { human: { api: GENEROUS } },
        trustedProxies: ['127.0.0.1'],
        // a list kept a minute: only the invalidations that travel with blockip and unblockip explain what B does
        accessCacheTtlMs: 60_000,
      },
      counted.opts,
    )
    const ip = testClientIp()
    const range = `${ip.split(':').slice(0, 4).join(':')}::/64`
    const upgradeOn = (node: TestRelay) => upgradeStatus(node, { 'X-Forwarded-For': ip, Host: `${host}:${node.port}` })
    const onB = await viaProxy(b!, ip, host)
    expect((await call(a!, operator, host, 'blockip', [range, 'abuse'])).json).toEqual({ result: true })
    expect(prefixOf(String((await onB.next((f) => f[0] === 'NOTICE'))[1]))).toBe('blocked')
    expect((await onB.closed).code).toBe(1008)
    for (const node of [a!, b!]) expect(await upgradeOn(node)).toBe(403)
    expect((await call(a!, operator, host, 'unblockip', [range])).json).toEqual({ result: true })
    expect(await upgradeOn(a!)).toBe(101)
    expect(
      await eventually(
        () => upgradeOn(b!),
        (status) => status === 101,
        'B lets the range in again',
        { timeoutMs: 2_000, intervalMs: 50 },
      ),
    ).toBe(101)
  })

  it('reads the block list once for many upgrades on a node, until a blockip through another node changes it', async () => {
    const counted = countingListReads()
    const {
      host,
      nodes: [a, b],
    } = await cluster.nodes(
      2,
      {
        operatorPubkeys: [operator.pubkey],
        rateLimits: { human: { api: GENEROUS } },
        trustedProxies: ['127.0.0.1'],
        accessCacheTtlMs: 60_000,
      },
      counted.opts,
    )
    const upgradeFrom = (ip: string) => upgradeStatus(b!, { 'X-Forwarded-For': ip, Host: `${host}:${b!.port}` })
    for (let i = 0; i < 10; i++) expect(await upgradeFrom(testClientIp())).toBe(101)
    expect(counted.reads[1]).toBe(1)
    const blocked = testClientIp()
    expect((await call(a!, operator, host, 'blockip', [blocked, 'abuse'])).json).toEqual({ result: true })
    // B hears of it (the blockip's DisconnectIp) and reads the list once more, at its next upgrade
    expect(
      await eventually(
        () => upgradeFrom(blocked),
        (status) => status === 403,
        'B refuses the new block',
        { timeoutMs: 2_000, intervalMs: 50 },
      ),
    ).toBe(403)
    for (let i = 0; i < 10; i++) expect(await upgradeFrom(testClientIp())).toBe(101)
    expect(counted.reads[1]).toBe(2)
  })

  it("spends one api budget per caller across the nodes: A's calls count on B", async () => {
    const {
      host,
      nodes: [a, b],
    } = await cluster.nodes(2, {
      operatorPubkeys: [operator.pubkey],
      rateLimits: { human: { api: { ratePerSecond: 0.01, burst: 3 } } },
    })
    for (let i = 0; i < 3; i++) expect((await call(a!, operator, host, 'supportedmethods')).status).toBe(200)
    const refused = await call(b!, operator, host, 'supportedmethods')
    expect(refused.status).toBe(429)
    expect(prefixOf(refused.json.error ?? '')).toBe('rate-limited')
  })
})
