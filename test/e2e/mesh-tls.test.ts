import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import type { ConfigInput } from '../../src/infra/config'
import { parseMeshStatus } from '../../src/protocols/mesh/status'
import { keysFromHex, makeKeys } from '../support/events'
import { eventually } from '../support/eventually'
import { httpGet } from '../support/http'
import { type MeshCertificates, makeMeshCertificates } from '../support/mesh-tls'
import { labelledMetric } from '../support/metrics'
import { channelState, createChannel, putUser, tagValues } from '../support/nip29-client'
import { operatorGetHeader } from '../support/nip86-client'
import type { TestRelay } from '../support/relay'
import { client } from '../support/relay-client'
import { useCluster, useRelays } from '../support/relay-fixtures'

/**
 * The mesh port over TLS, as an operator turns it on: a CA and a certificate for 127.0.0.1 made with the
 * openssl CLI, two in-process nodes on one Redis and PostgreSQL.
 */
describe('the relay mesh over TLS', () => {
  const relays = useRelays()
  const cluster = useCluster(relays)

  let certs: MeshCertificates
  beforeAll(() => {
    certs = makeMeshCertificates()
  })
  afterAll(() => certs.remove())

  const tlsConfig = (): ConfigInput => ({
    mesh: 'on',
    meshPort: 0,
    meshLeaseTtlMs: 1_500,
    meshLeaseRenewMs: 500,
    meshTlsCertFile: certs.certFile,
    meshTlsKeyFile: certs.keyFile,
    meshTlsCaFile: certs.caFile,
  })

  async function status(r: TestRelay) {
    const auth = operatorGetHeader(keysFromHex(cluster.relaySecretKey), `http://127.0.0.1:${r.port}/mesh/status`)
    const answer = await httpGet(r, '/mesh/status', { Authorization: auth })
    expect(answer.status).toBe(200)
    const parsed = parseMeshStatus(JSON.parse(answer.body))
    if (!parsed.ok) throw new Error(parsed.error)
    return parsed.value
  }

  async function linkedPair() {
    const started = await cluster.nodes(2, tlsConfig())
    for (const node of started.nodes)
      await eventually(
        () => status(node),
        (s) => s.peers.some((p) => p.connected),
        'each node linked to the other',
        { timeoutMs: 15_000, intervalMs: 100 },
      )
    return started
  }

  it('links two nodes over wss:// and a channel change made on either node goes through the one owner', async () => {
    const { host, nodes } = await linkedPair()
    const all = await Promise.all(nodes.map(status))
    for (const s of all) {
      expect(s.peers).toHaveLength(1)
      expect(s.peers[0]!.connected).toBe(true)
      expect(s.peers[0]!.endpoint).toMatch(/^wss:\/\/127\.0\.0\.1:\d+$/)
    }
    const admin = makeKeys()
    const [first, second] = await Promise.all(nodes.map((r) => client(r, host)))
    expect((await createChannel(first!, admin, 'sealed')).ok.accepted).toBe(true)
    const member = makeKeys().pubkey
    expect((await putUser(second!, admin, 'sealed', member)).ok.accepted).toBe(true)
    const state = await eventually(
      () => channelState(first!, 'sealed'),
      (s) => tagValues(s.members, 'p').includes(member),
      'the member added on the other node, in 39002',
      { timeoutMs: 15_000, intervalMs: 100 },
    )
    expect(tagValues(state.members, 'p')).toContain(member)
    const sessions = (await Promise.all(nodes.map(status))).map((s) => s.sessions.find((x) => x.session === 'channel:sealed'))
    expect(new Set(sessions.map((s) => s?.owner)).size).toBe(1)
    expect(sessions.filter((s) => s?.local)).toHaveLength(1)
  })

  it('refuses a plaintext dialer on the TLS mesh port before any Hello, and counts it as a tls refusal', async () => {
    const { nodes } = await linkedPair()
    const target = nodes[0]!
    const endpoint = (await status(nodes[1]!)).peers[0]!.endpoint
    const port = new URL(endpoint).port
    const refused = () => labelledMetric(target, 'apiary_mesh_hellos_refused_total', { reason: 'tls' })
    const before = await refused()
    const plain = new WebSocket(`ws://127.0.0.1:${port}`)
    const outcome = await new Promise<string>((resolve) => {
      plain.once('open', () => resolve('open'))
      plain.once('error', () => resolve('error'))
    })
    expect(outcome).toBe('error')
    await eventually(refused, (n) => n > before, 'a tls refusal counted', { timeoutMs: 5_000, intervalMs: 50 })
    // the same port answers a dialer that speaks TLS and trusts the CA
    const secure = new WebSocket(`wss://127.0.0.1:${port}`, { ca: readFileSync(certs.caFile) })
    const opened = await new Promise<string>((resolve) => {
      secure.once('open', () => resolve('open'))
      secure.once('error', (e) => resolve(e.message))
    })
    secure.terminate()
    expect(opened).toBe('open')
  })
})
