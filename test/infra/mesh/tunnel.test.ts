import { schnorr } from '@noble/curves/secp256k1.js'
import { afterEach, describe, expect, it } from 'vitest'
import { createHelloBudget } from '../../../src/infra/mesh/hello-budget'
import { CONNECTION_WINDOW_BYTES, type ControlType, type Tunnel, type TunnelEnd, type TunnelHandlers } from '../../../src/infra/mesh/tunnel'
import { dialTunnel, startTunnelServer, type TunnelServer, type TunnelSetup } from '../../../src/infra/mesh/tunnel-handshake'
import { attestRuntime } from '../../../src/protocols/mesh/attestation'
import { encodeFrame, FrameType } from '../../../src/protocols/mesh/frames'
import type { MeshIdentity } from '../../../src/protocols/mesh/hello'
import { toSigningKey } from '../../../src/protocols/nip01/sign'
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy'
import { startWsTamperProxy, type WsTamperProxy } from '../../support/ws-tamper-proxy'

const newKey = () => toSigningKey(schnorr.utils.randomSecretKey())
const relay = newKey()
const identityOf = (relayKey = relay): MeshIdentity => {
  const runtimeKey = newKey()
  return { runtimeKey, relayPubkey: relayKey.pubkey, attestation: attestRuntime(relayKey, runtimeKey.pubkey) }
}

/** A handler that echoes, reversed, so a response is never mistaken for its request. */
const echo: TunnelHandlers = {
  onRequest: async (body) => Uint8Array.from(body).reverse(),
  onControl: () => {},
}

const cleanups: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

interface Node {
  identity: MeshIdentity
  setup: TunnelSetup
  server: TunnelServer
  accepted: Tunnel[]
  refused: string[]
  endpoint: string
  nextTunnel(): Promise<Tunnel>
}

async function startNode(handlers: TunnelHandlers = echo, identity = identityOf()): Promise<Node> {
  const setup: TunnelSetup = { identity, anchorRelayPubkey: relay.pubkey, handlersFor: () => handlers, handshakeTimeoutMs: 2_000 }
  const accepted: Tunnel[] = []
  const refused: string[] = []
  const waiting: ((t: Tunnel) => void)[] = []
  const server = await startTunnelServer(
    '127.0.0.1',
    0,
    setup,
    (t) => {
      accepted.push(t)
      waiting.shift()?.(t)
    },
    (why) => refused.push(why),
  )
  cleanups.push(() => server.close())
  return {
    identity,
    setup,
    server,
    accepted,
    refused,
    endpoint: `ws://127.0.0.1:${server.port}`,
    nextTunnel: () => (accepted.length > 0 ? Promise.resolve(accepted.shift()!) : new Promise((r) => waiting.push(r))),
  }
}

async function link(a: Node, b: Node, endpoint = b.endpoint): Promise<[Tunnel, Tunnel]> {
  const accepted = b.nextTunnel()
  const dialed = await dialTunnel(endpoint, b.identity.runtimeKey.pubkey, a.setup)
  cleanups.push(() => dialed.goodbye('ended'))
  return [dialed, await accepted]
}

const MiB = 1024 * 1024

/** A tunnel from a to b through a proxy, the proxy already stalled: b reads nothing until `proxy.resume()`. */
async function stalledLink(): Promise<{ ab: Tunnel; proxy: TcpProxy }> {
  const [a, b] = [await startNode(), await startNode()]
  const proxy = await startTcpProxy(b.server.port)
  cleanups.push(() => proxy.close())
  const [ab] = await link(a, b, `ws://127.0.0.1:${proxy.port}`)
  proxy.stall()
  return { ab, proxy }
}

const bytes = (n: number, seed = 3) => Uint8Array.from({ length: n }, (_, i) => (i * seed) & 0xff)

describe('mesh tunnel', () => {
  it('opens after both runtimes prove their keys, and names the peer and the dialer on both sides', async () => {
    const [a, b] = [await startNode(), await startNode()]
    const [ab, ba] = await link(a, b)
    const [ra, rb] = [a.identity.runtimeKey.pubkey, b.identity.runtimeKey.pubkey]
    expect([ab.peer, ab.role, ab.dialer]).toEqual([rb, 'dialer', ra])
    expect([ba.peer, ba.role, ba.dialer]).toEqual([ra, 'acceptor', ra])
    expect(Buffer.from(await ab.request(bytes(10), 2_000))).toEqual(Buffer.from(bytes(10)).reverse())
    expect(Buffer.from(await ba.request(bytes(3, 7), 2_000))).toEqual(Buffer.from(bytes(3, 7)).reverse())
  })

  it('carries a 5 MiB body each way: chunked into 1 MiB frames and paced by credit', async () => {
    const [a, b] = [await startNode(), await startNode()]
    const [ab] = await link(a, b)
    const body = bytes(5 * 1024 * 1024 + 17)
    const answer = await ab.request(body, 10_000)
    expect(answer.byteLength).toBe(body.byteLength)
    expect(Buffer.from(answer).equals(Buffer.from(body).reverse())).toBe(true)
    expect(ab.stats()).toMatchObject({ queuedBytes: 0, outbound: 0 })
  })

  it('refuses a runtime attested by another relay key, on both sides', async () => {
    const b = await startNode()
    const foreign = identityOf(newKey())
    const dial = dialTunnel(b.endpoint, b.identity.runtimeKey.pubkey, { ...b.setup, identity: foreign })
    await expect(dial).rejects.toMatchObject({ code: 'HANDSHAKE' })
    await expect.poll(() => b.refused).toEqual([expect.stringContaining('attested by another relay key')])
  })

  it('refuses, as stale, an endpoint that is now another runtime', async () => {
    const [a, b] = [await startNode(), await startNode()]
    const gone = newKey().pubkey
    await expect(dialTunnel(b.endpoint, gone, a.setup)).rejects.toThrow(/stale/)
    expect(b.accepted).toEqual([])
  })

  it('answers a failed request with its reason, and the tunnel stays up', async () => {
    const failing: TunnelHandlers = {
      ...echo,
      onRequest: async (body) => (body[0] === 0 ? Promise.reject(new Error('restricted: not the owner')) : body),
    }
    const [a, b] = [await startNode(), await startNode(failing)]
    const [ab] = await link(a, b)
    await expect(ab.request(Uint8Array.of(0), 2_000)).rejects.toMatchObject({ code: 'PEER_ERROR', message: 'restricted: not the owner' })
    expect(Buffer.from(await ab.request(Uint8Array.of(1, 2), 2_000))).toEqual(Buffer.from([1, 2]))
  })

  it('cancels a request at its deadline: the caller hears TIMEOUT and the handler sees its signal abort', async () => {
    let aborted!: () => void
    const sawAbort = new Promise<void>((r) => {
      aborted = r
    })
    const hanging: TunnelHandlers = {
      ...echo,
      onRequest: (_body, signal) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener('abort', () => {
            aborted()
            reject(new Error('cancelled'))
          })
        }),
    }
    const [a, b] = [await startNode(), await startNode(hanging)]
    const [ab, ba] = await link(a, b)
    await expect(ab.request(Uint8Array.of(1), 100)).rejects.toMatchObject({ code: 'TIMEOUT' })
    await sawAbort
    await expect.poll(() => ba.stats().inbound).toBe(0)
  })

  it('ends with Goodbye{draining}: the peer learns why, and its pending requests fail at once', async () => {
    const never: TunnelHandlers = { ...echo, onRequest: () => new Promise(() => {}) }
    const [a, b] = [await startNode(), await startNode(never)]
    const [ab, ba] = await link(a, b)
    const pending = ab.request(Uint8Array.of(1), 30_000)
    await expect.poll(() => ba.stats().inbound).toBe(1)
    ba.goodbye('draining')
    await expect(pending).rejects.toMatchObject({ code: 'CLOSED' })
    expect(await ab.closed).toEqual<TunnelEnd>({ reason: 'draining', byPeer: true })
    expect(await ba.closed).toEqual<TunnelEnd>({ reason: 'draining', byPeer: false })
  })

  it('delivers control frames (gossip) in order to the peer', async () => {
    const seen: [ControlType, unknown][] = []
    const listening: TunnelHandlers = { ...echo, onControl: (type, json) => seen.push([type, json]) }
    const [a, b] = [await startNode(), await startNode(listening)]
    const [ab] = await link(a, b)
    for (let i = 0; i < 5; i++) expect(ab.sendControl(FrameType.Gossip, { round: i })).toBe(true)
    expect(ab.sendControl(FrameType.Ping, { t: 1 })).toBe(true)
    await expect.poll(() => seen.length).toBe(6)
    expect(seen.map(([, json]) => json)).toEqual([{ round: 0 }, { round: 1 }, { round: 2 }, { round: 3 }, { round: 4 }, { t: 1 }])
    expect(seen[5]?.[0]).toBe(FrameType.Ping)
  })

  it('holds memory flat toward a peer that stops reading: credit stops the sender, and a full queue refuses at once', async () => {
    const { ab, proxy } = await stalledLink()
    // five 12 MiB requests, three times a stream's 4 MiB window each. One body of several chunks leaves at a
    // time, so only the first has released its window to the socket; the rest waits for credit the stalled peer
    // never grants
    const sent = [1, 2, 3, 4, 5].map((seed) => ab.request(bytes(12 * MiB, seed), 60_000).catch((e: unknown) => e))
    expect(ab.stats()).toMatchObject({ queuedBytes: 60 * MiB - 4 * MiB, outbound: 5 })
    await expect.poll(() => ab.stats().bufferedAmount).toBeLessThanOrEqual(4 * MiB)
    // a single-frame request still passes beside the big ones (it only waits for the stalled peer itself)
    const small = ab.request(bytes(100), 60_000)
    expect(ab.stats().queuedBytes).toBe(56 * MiB)
    // past the 64 MiB queue a new request is refused at once instead of growing the queue
    await expect(ab.request(bytes(12 * MiB), 60_000)).rejects.toMatchObject({ code: 'BUSY' })
    expect(ab.stats()).toMatchObject({ queuedBytes: 56 * MiB, outbound: 6 })
    proxy.resume()
    const answers = await Promise.all(sent)
    expect(answers.map((x) => (x instanceof Uint8Array ? x.byteLength : String(x)))).toEqual([
      12 * MiB,
      12 * MiB,
      12 * MiB,
      12 * MiB,
      12 * MiB,
    ])
    expect((await small).byteLength).toBe(100)
    expect(ab.stats()).toMatchObject({ queuedBytes: 0, outbound: 0 })
  })

  it('bounds what many single-frame requests put on the wire to a stopped peer by the tunnel-wide window', async () => {
    const { ab, proxy } = await stalledLink()
    // 40 requests of exactly one frame each: a stream (and 4 MiB of stream credit) per request
    const sent = Array.from({ length: 40 }, (_, i) => ab.request(bytes(MiB, i + 1), 60_000).catch((e: unknown) => e))
    // 16 MiB left for the wire (the connection window), the other 24 wait for credit
    expect(ab.stats()).toMatchObject({ queuedBytes: 24 * MiB, outbound: 40 })
    await expect.poll(() => ab.stats().bufferedAmount).toBeLessThanOrEqual(CONNECTION_WINDOW_BYTES)
    for (let i = 0; i < 40; i++) sent.push(ab.request(bytes(MiB, 100 + i), 60_000).catch((e: unknown) => e))
    // 64 MiB queued at most: the 41st extra megabyte is refused at once
    expect(ab.stats().queuedBytes).toBe(64 * MiB)
    await expect(ab.request(bytes(MiB), 60_000)).rejects.toMatchObject({ code: 'BUSY' })
    proxy.resume()
    const answers = await Promise.all(sent)
    expect(answers.filter((x) => x instanceof Uint8Array && x.byteLength === MiB)).toHaveLength(80)
    expect(ab.stats()).toMatchObject({ queuedBytes: 0, outbound: 0 })
  })
})

describe('mesh tunnel on a hostile wire', () => {
  /** a to b through a proxy that can alter the WebSocket messages between them */
  async function tamperedLink(): Promise<{ ab: Tunnel; ba: Tunnel; proxy: WsTamperProxy }> {
    const [a, b] = [await startNode(), await startNode()]
    const proxy = await startWsTamperProxy(b.server.port)
    cleanups.push(() => proxy.close())
    const [ab, ba] = await link(a, b, `ws://127.0.0.1:${proxy.port}`)
    // a frame each way after the Hello: the proxy has seen sealed messages in both directions
    expect(Buffer.from(await ab.request(bytes(10), 2_000))).toEqual(Buffer.from(bytes(10)).reverse())
    return { ab, ba, proxy }
  }
  const ended = (t: Tunnel) => t.closed.then((e: TunnelEnd) => e.reason)

  it('closes as forged on a message with one byte flipped, and the request on it fails', async () => {
    const { ab, ba, proxy } = await tamperedLink()
    proxy.flipNext('toServer')
    await expect(ab.request(bytes(10), 5_000)).rejects.toMatchObject({ code: 'CLOSED' })
    expect(await ended(ba)).toBe('forged')
  })

  it('closes as replayed on a message sent twice, in either direction', async () => {
    const first = await tamperedLink()
    first.proxy.replayLast('toServer')
    expect(await ended(first.ba)).toBe('replayed')
    const second = await tamperedLink()
    second.proxy.replayLast('toClient')
    expect(await ended(second.ab)).toBe('replayed')
  })

  it('closes as forged on a well-formed plaintext Request inserted between two messages, and never serves it', async () => {
    const served: Uint8Array[] = []
    const recording: TunnelHandlers = {
      ...echo,
      onRequest: async (body) => {
        served.push(body)
        return body
      },
    }
    const [a, b] = [await startNode(), await startNode(recording)]
    const proxy = await startWsTamperProxy(b.server.port)
    cleanups.push(() => proxy.close())
    const [ab, ba] = await link(a, b, `ws://127.0.0.1:${proxy.port}`)
    await ab.request(bytes(4), 2_000)
    proxy.inject('toServer', encodeFrame({ type: FrameType.Request, more: false, streamId: 1001, requestId: 1001, payload: bytes(8) }))
    expect(await ended(ba)).toBe('forged')
    expect(served).toHaveLength(1)
  })
})

describe('mesh handshake gates', () => {
  it('refuses a Hello naming a runtime the registry does not list before checking any signature', async () => {
    const b = await startNode()
    const refusals: string[] = []
    const gated = await startTunnelServer(
      '127.0.0.1',
      0,
      { ...b.setup, isKnownRuntime: () => false },
      () => {},
      (why, refusal) => refusals.push(`${refusal} ${why}`),
    )
    cleanups.push(() => gated.close())
    // attested by another relay key: had the attestation been checked, that would be the refusal
    const foreign = identityOf(newKey())
    const dial = dialTunnel(`ws://127.0.0.1:${gated.port}`, b.identity.runtimeKey.pubkey, { ...b.setup, identity: foreign })
    await expect(dial).rejects.toThrow(/restricted: runtime .* is not in the readiness registry/)
    await expect.poll(() => refusals).toEqual([expect.stringMatching(/^unknown-runtime restricted:/)])
  })

  it('charges every Hello to its IP: past the budget one is dropped unread, and so is the next connection', async () => {
    const [a, b] = [await startNode(), await startNode()]
    const refusals: string[] = []
    let clock = 0
    const helloBudget = createHelloBudget({ perSecond: 1, burst: 2, maxIps: 10 }, () => clock)
    const gated = await startTunnelServer(
      '127.0.0.1',
      0,
      { ...b.setup, helloBudget },
      () => {},
      (_why, refusal) => refusals.push(refusal),
    )
    cleanups.push(() => gated.close())
    const endpoint = `ws://127.0.0.1:${gated.port}`
    const dial = () => dialTunnel(endpoint, b.identity.runtimeKey.pubkey, a.setup)
    for (let i = 0; i < 2; i++) (await dial()).goodbye('ended')
    // the third Hello spends what is not there; the fourth connection is closed before its Hello
    await expect(dial()).rejects.toMatchObject({ code: 'HANDSHAKE' })
    await expect(dial()).rejects.toMatchObject({ code: 'HANDSHAKE' })
    await expect.poll(() => refusals).toEqual(['rate-limited', 'rate-limited'])
    expect(helloBudget.spent('127.0.0.1') || helloBudget.spent('::ffff:127.0.0.1')).toBe(true)
    clock += 1_000
    ;(await dial()).goodbye('ended')
  })
})
