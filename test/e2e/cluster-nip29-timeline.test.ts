import { afterEach, describe, expect, it, vi } from 'vitest'
import type { ConfigInput } from '../../src/infra/config'
import { parseMeshStatus } from '../../src/protocols/mesh/status'
import { keysFromHex, makeKeys } from '../support/events'
import { eventually } from '../support/eventually'
import { httpGet } from '../support/http'
import { channelEvent, createChannel, post, postAfter, putUser } from '../support/nip29-client'
import { operatorGetHeader } from '../support/nip86-client'
import type { TestRelay } from '../support/relay'
import { client, nowSeconds } from '../support/relay-client'
import { useCluster, useRelays } from '../support/relay-fixtures'

const ref = (id: string) => id.slice(0, 8)

/**
 * NIP-29 timeline references and late publication on two nodes sharing one PostgreSQL: references are looked
 * up in the shared store, not in one node's memory; with the mesh on, a channel change is judged by the
 * channel's owner node after forwarding.
 */
describe('NIP-29 timeline references across nodes', () => {
  const relays = useRelays()
  const cluster = useCluster(relays)

  it('accepts on B a post referencing one accepted on A a moment ago, and refuses an unknown reference there', async () => {
    const { host, nodes } = await cluster.nodes(2)
    const [a, b] = [await client(nodes[0]!, host), await client(nodes[1]!, host)]
    const admin = makeKeys()
    const member = makeKeys()
    expect((await createChannel(a, admin, 'hive', { flags: ['restricted'] })).ok.accepted).toBe(true)
    expect((await putUser(a, admin, 'hive', member.pubkey)).ok.accepted).toBe(true)
    const onA = await post(a, admin, 'hive')
    expect(onA.ok.accepted).toBe(true)
    expect((await postAfter(b, member, 'hive', [ref(onA.event.id)])).ok).toMatchObject({ accepted: true })
    expect((await postAfter(b, member, 'hive', ['0badf00d'])).ok).toMatchObject({ accepted: false, prefix: 'invalid' })
  })

  describe('with the relay mesh on', () => {
    const MESH: ConfigInput = { mesh: 'on', meshPort: 0, meshLeaseTtlMs: 1_500, meshLeaseRenewMs: 500 }
    afterEach(() => {
      vi.useRealTimers()
    })

    async function status(r: TestRelay) {
      const header = operatorGetHeader(keysFromHex(cluster.relaySecretKey), `http://127.0.0.1:${r.port}/mesh/status`)
      const answer = await httpGet(r, '/mesh/status', { Authorization: header })
      const parsed = parseMeshStatus(JSON.parse(answer.body))
      if (!parsed.ok) throw new Error(parsed.error)
      return parsed.value
    }

    /** two linked mesh nodes and a channel `hive`: `owner` decides its changes, `other` forwards them */
    async function setup() {
      const { host, nodes } = await cluster.nodes(2, MESH)
      for (const node of nodes) {
        await eventually(
          () => status(node),
          (s) => s.peers.some((p) => p.connected),
          'the nodes linked',
          { timeoutMs: 15_000, intervalMs: 100 },
        )
      }
      const admin = makeKeys()
      expect((await createChannel(await client(nodes[0]!, host), admin, 'hive', { flags: ['restricted'] })).ok.accepted).toBe(true)
      const local = await Promise.all(
        nodes.map(async (n) => (await status(n)).sessions.some((s) => s.session === 'channel:hive' && s.local)),
      )
      expect(local.filter(Boolean)).toHaveLength(1)
      const i = local.indexOf(true)
      return { owner: await client(nodes[i]!, host), other: await client(nodes[1 - i]!, host), admin }
    }

    it('judges the age of a forwarded channel change at the owner: 60 s old is taken, 61 s old refused with "invalid:"', async () => {
      const { other, admin } = await setup()
      const now = nowSeconds()
      // Date only: the leases and the tunnel run on timers and the monotonic clock
      vi.useFakeTimers({ toFake: ['Date'] })
      vi.setSystemTime(now * 1000 + 500)
      const late = await channelEvent(other, admin, 'hive', 9000, [['p', makeKeys().pubkey]], now - 61)
      expect(late.ok).toMatchObject({ accepted: false, prefix: 'invalid' })
      const atLimit = await channelEvent(other, admin, 'hive', 9000, [['p', makeKeys().pubkey]], now - 60)
      expect(atLimit.ok).toMatchObject({ accepted: true })
    })

    it('checks the references of a forwarded channel change against the shared store at the owner', async () => {
      const { owner, other, admin } = await setup()
      const seen = await post(owner, admin, 'hive')
      expect(seen.ok.accepted).toBe(true)
      const bee = makeKeys().pubkey
      const known = await channelEvent(other, admin, 'hive', 9000, [
        ['p', bee],
        ['previous', ref(seen.event.id)],
      ])
      expect(known.ok).toMatchObject({ accepted: true })
      const unknown = await channelEvent(other, admin, 'hive', 9000, [
        ['p', bee],
        ['previous', 'deadbeef'],
      ])
      expect(unknown.ok).toMatchObject({ accepted: false, prefix: 'invalid' })
    })
  })
})
