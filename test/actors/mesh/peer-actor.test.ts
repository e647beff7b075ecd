import { afterEach, describe, expect, it } from 'vitest'
import { createKernel, type Kernel } from '../../../src/actors/kernel'
import type { PeerDeps } from '../../../src/actors/mesh/peer-actor'
import { createPeerLinks, type PeerLinks } from '../../../src/actors/mesh/peer-links'
import { type GoodbyeReason, type Tunnel, type TunnelEnd, TunnelError } from '../../../src/infra/mesh/tunnel'
import { type EventLog, recordEvents, settle, waitTurns } from '../kernel/harness'
import { ManualClock } from '../kernel/manual-clock'

/**
 * One peer link on the real kernel with a clock the test moves. Dials and tunnels are working fakes of their
 * interfaces, so the test decides when a dial fails and when a tunnel closes; the redial schedule is supervision's.
 */
const ME = 'a'.repeat(64)
const PEER = 'b'.repeat(64)
const PATH = `mesh/peer/${PEER}`

class FakeTunnel implements Tunnel {
  readonly peer = PEER
  readonly role
  readonly closed: Promise<TunnelEnd>
  readonly goodbyes: GoodbyeReason[] = []
  private finish!: (end: TunnelEnd) => void

  constructor(readonly dialer: string) {
    this.role = dialer === ME ? ('dialer' as const) : ('acceptor' as const)
    this.closed = new Promise((resolve) => {
      this.finish = resolve
    })
  }
  request(): Promise<Uint8Array> {
    return Promise.reject(new TunnelError('CLOSED', 'not used here'))
  }
  sendControl(): boolean {
    return true
  }
  goodbye(reason: GoodbyeReason): void {
    this.goodbyes.push(reason)
    this.finish({ reason, byPeer: false })
  }
  /** the socket went away, or the peer said goodbye */
  end(end: TunnelEnd): void {
    this.finish(end)
  }
  stats() {
    return { queuedBytes: 0, outbound: 0, inbound: 0, bufferedAmount: 0 }
  }
}

let kernel: Kernel
let clock: ManualClock
let events: EventLog
afterEach(async () => {
  await kernel.shutdown()
})

/** `outcomes[n]` answers the n-th dial: a tunnel, a failure, or (past the end) a dial that never answers */
function start(outcomes: ('fail' | 'ok')[]) {
  clock = new ManualClock()
  // U = 0.5: every delay is its doubling step lengthened by a quarter (jitter 0.5)
  kernel = createKernel({ clock, random: () => 0.5 })
  events = recordEvents(kernel)
  const dialed: FakeTunnel[] = []
  const ups: string[] = []
  const downs: TunnelEnd[] = []
  let dials = 0
  const links = new Map<string, Tunnel>()
  const deps: PeerDeps = {
    self: ME,
    endpointOf: () => 'ws://127.0.0.1:1',
    dial: () => {
      const outcome = outcomes[dials++]
      if (outcome === 'fail') return Promise.reject(new TunnelError('HANDSHAKE', 'error: mesh dial failed (ECONNREFUSED)'))
      if (outcome === undefined) return new Promise<Tunnel>(() => {})
      const tunnel = new FakeTunnel(ME)
      dialed.push(tunnel)
      return Promise.resolve(tunnel)
    },
    links,
    linkUp: (peer) => ups.push(peer),
    linkDown: (_peer, end) => downs.push(end),
    log: { info: () => {}, debug: () => {} },
  }
  const peers: PeerLinks = createPeerLinks(kernel, deps)
  return { peers, links, dialed, ups, downs, dials: () => dials }
}

/** waits for the next crash, then moves the clock past the backoff it announced; returns that delay */
async function redialAfterBackoff(): Promise<number> {
  const crashes = events.of('crashed', PATH).length
  await events.waitFor('crashed', PATH, crashes + 1)
  const delayMs = events.of('backoff', PATH).at(-1)!.delayMs
  clock.advance(delayMs)
  await events.waitFor('restarted', PATH, crashes + 1)
  return delayMs
}

describe('a mesh peer link', () => {
  it('redials a failed dial through supervision with growing jittered delays, never giving up, and links once one succeeds', async () => {
    const s = start(['fail', 'fail', 'fail', 'fail', 'fail', 'fail', 'fail', 'ok'])
    s.peers.ensure(PEER)
    const delays: number[] = []
    for (let i = 0; i < 7; i++) delays.push(await redialAfterBackoff())
    expect(delays).toEqual([625, 1250, 2500, 5000, 10_000, 20_000, 30_000])
    await waitTurns(() => s.links.has(PEER), 'the link')
    expect(s.links.get(PEER)).toBe(s.dialed[0])
    expect(s.dials()).toBe(8)
    expect(s.ups).toEqual([PEER])
    expect(events.of('gave-up')).toEqual([])
    expect(events.of('crashed', PATH)[0]).toMatchObject({ supervisor: 'root/node/mesh-peer', msgType: 'Dialed' })
    expect(events.of('backoff', PATH).every((e) => e.supervisor === 'root/node/mesh-peer')).toBe(true)
  })

  it('redials a tunnel that closed, and links again over the new one', async () => {
    const s = start(['ok', 'ok'])
    s.peers.ensure(PEER)
    await waitTurns(() => s.links.has(PEER), 'the first link')
    s.dialed[0]!.end({ reason: 'lost', byPeer: false })
    expect(await redialAfterBackoff()).toBe(625)
    await waitTurns(() => s.links.get(PEER) === s.dialed[1], 'the second link')
    expect(s.downs).toEqual([{ reason: 'lost', byPeer: false }])
    expect(events.of('crashed', PATH)[0]).toMatchObject({ msgType: 'Closed' })
    expect(s.ups).toEqual([PEER, PEER])
  })

  it('dials no more once membership stopped it, and closes the tunnel it held', async () => {
    const s = start(['fail', 'ok'])
    s.peers.ensure(PEER)
    await events.waitFor('backoff', PATH)
    s.peers.stop(PEER)
    await events.waitFor('stopped', PATH)
    clock.advance(60_000)
    await settle()
    expect(s.dials()).toBe(1)
    expect(events.of('restarted', PATH)).toEqual([])
    expect(s.peers.peers()).toEqual([])

    // and a linked one says goodbye on its way out
    s.peers.ensure(PEER)
    await waitTurns(() => s.links.has(PEER), 'the link')
    s.peers.stop(PEER)
    await events.waitFor('stopped', PATH, 2)
    expect(s.dialed[0]!.goodbyes).toEqual(['ended'])
    expect(s.links.has(PEER)).toBe(false)
  })

  it('adopts a tunnel the peer dialed while it waits to redial, without waiting out the backoff', async () => {
    const s = start(['fail'])
    s.peers.ensure(PEER)
    await events.waitFor('backoff', PATH)
    const theirs = new FakeTunnel(PEER)
    s.peers.accept(theirs)
    await waitTurns(() => s.links.get(PEER) === theirs, 'the accepted link')
    expect(events.of('restarted', PATH)).toHaveLength(1)
    expect(clock.now()).toBe(0)
    // the redial its restart started never answers here; the link stands meanwhile
    expect(s.dials()).toBe(2)
    expect(events.of('crashed', PATH)).toHaveLength(1)
  })

  it('spawns a link actor for a tunnel a peer dialed before membership knew it, and dials nothing', async () => {
    const s = start([])
    const theirs = new FakeTunnel(PEER)
    s.peers.accept(theirs)
    await waitTurns(() => s.links.get(PEER) === theirs, 'the accepted link')
    expect(s.dials()).toBe(0)
    expect(s.peers.peers()).toEqual([PEER])
  })

  it('ends the link without redialing when the peer says it is draining', async () => {
    const s = start(['ok'])
    s.peers.ensure(PEER)
    await waitTurns(() => s.links.has(PEER), 'the link')
    s.dialed[0]!.end({ reason: 'draining', byPeer: true })
    await waitTurns(() => s.downs.length === 1, 'the link down')
    await settle()
    expect(s.links.has(PEER)).toBe(false)
    expect(s.downs).toEqual([{ reason: 'draining', byPeer: true }])
    expect(events.of('crashed', PATH)).toEqual([])
  })
})
