import { readFileSync } from 'node:fs'
import { schnorr } from '@noble/curves/secp256k1.js'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createHelloBudget, type HelloBudget } from '../../../src/infra/mesh/hello-budget'
import type { Tunnel, TunnelHandlers } from '../../../src/infra/mesh/tunnel'
import { dialTunnel, type HelloRefusal, startTunnelServer, type TunnelSetup } from '../../../src/infra/mesh/tunnel-handshake'
import { attestRuntime } from '../../../src/protocols/mesh/attestation'
import type { MeshIdentity } from '../../../src/protocols/mesh/hello'
import { toSigningKey } from '../../../src/protocols/nip01/sign'
import { type MeshCertificates, makeMeshCertificates } from '../../support/mesh-tls'

const newKey = () => toSigningKey(schnorr.utils.randomSecretKey())
const relay = newKey()
const identityOf = (): MeshIdentity => {
  const runtimeKey = newKey()
  return { runtimeKey, relayPubkey: relay.pubkey, attestation: attestRuntime(relay, runtimeKey.pubkey) }
}
const echo: TunnelHandlers = { onRequest: async (body) => Uint8Array.from(body).reverse(), onControl: () => {} }
const setupOf = (identity: MeshIdentity, tlsCa?: string): TunnelSetup => ({
  identity,
  anchorRelayPubkey: relay.pubkey,
  handlersFor: () => echo,
  handshakeTimeoutMs: 2_000,
  ...(tlsCa === undefined ? {} : { tlsCa }),
})

let certs: MeshCertificates
beforeAll(() => {
  certs = makeMeshCertificates()
})
afterAll(() => certs.remove())
const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

/** A tunnel server on 127.0.0.1 serving TLS with the test CA's certificate; what it accepted and refused. */
async function startTlsNode(helloBudget?: HelloBudget) {
  const identity = identityOf()
  const accepted: Tunnel[] = []
  const refusals: HelloRefusal[] = []
  const tls = { cert: readFileSync(certs.certFile, 'utf8'), key: readFileSync(certs.keyFile, 'utf8') }
  const server = await startTunnelServer(
    '127.0.0.1',
    0,
    { ...setupOf(identity), ...(helloBudget ? { helloBudget } : {}) },
    (t) => accepted.push(t),
    (_why, refusal) => refusals.push(refusal),
    tls,
  )
  cleanups.push(() => server.close())
  return { identity, accepted, refusals, port: server.port }
}

describe('a mesh tunnel over TLS', () => {
  it('opens to a dialer that trusts the CA, and carries sealed requests inside TLS', async () => {
    const b = await startTlsNode()
    const tunnel = await dialTunnel(
      `wss://127.0.0.1:${b.port}`,
      b.identity.runtimeKey.pubkey,
      setupOf(identityOf(), readFileSync(certs.caFile, 'utf8')),
    )
    cleanups.push(() => tunnel.goodbye('ended'))
    expect(Array.from(await tunnel.request(Uint8Array.of(1, 2, 3), 2_000))).toEqual([3, 2, 1])
    expect(b.refusals).toEqual([])
  })

  it('is refused by a dialer that trusts another CA, before any Hello; the port counts a tls refusal', async () => {
    const b = await startTlsNode()
    const dial = dialTunnel(
      `wss://127.0.0.1:${b.port}`,
      b.identity.runtimeKey.pubkey,
      setupOf(identityOf(), readFileSync(certs.otherCaFile, 'utf8')),
    )
    await expect(dial).rejects.toMatchObject({ code: 'HANDSHAKE', message: expect.stringMatching(/certificate/) })
    await expect.poll(() => b.refusals).toEqual(['tls'])
    expect(b.accepted).toEqual([])
  })

  it('refuses a plaintext ws:// dialer: no tunnel, a tls refusal', async () => {
    const b = await startTlsNode()
    await expect(dialTunnel(`ws://127.0.0.1:${b.port}`, b.identity.runtimeKey.pubkey, setupOf(identityOf()))).rejects.toMatchObject({
      code: 'HANDSHAKE',
    })
    await expect.poll(() => b.refusals).toEqual(['tls'])
    expect(b.accepted).toEqual([])
  })

  it('charges a failed TLS handshake to the IP, and drops a spent IP before any TLS work', async () => {
    const helloBudget = createHelloBudget({ perSecond: 1, burst: 1, maxIps: 10 }, () => 0)
    const b = await startTlsNode(helloBudget)
    const trusting = setupOf(identityOf(), readFileSync(certs.caFile, 'utf8'))
    await expect(dialTunnel(`ws://127.0.0.1:${b.port}`, b.identity.runtimeKey.pubkey, trusting)).rejects.toMatchObject({
      code: 'HANDSHAKE',
    })
    await expect.poll(() => b.refusals).toEqual(['tls'])
    // even a dialer that would pass TLS and the Hello is dropped now: the budget's clock stands still
    await expect(dialTunnel(`wss://127.0.0.1:${b.port}`, b.identity.runtimeKey.pubkey, trusting)).rejects.toMatchObject({
      code: 'HANDSHAKE',
    })
    await expect.poll(() => b.refusals).toEqual(['tls', 'rate-limited'])
    expect(b.accepted).toEqual([])
  })
})
