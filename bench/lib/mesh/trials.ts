// The relay mesh (docs/mesh.md) on three `apiary start` processes sharing Redis and PostgreSQL, with the
// default lease (TTL 6 s, renewed every 2 s): how long a channel is without an owner when its owner is
// SIGKILLed or SIGTERMed, what forwarding a moderation event to the owner costs, how long three fresh nodes
// take to link, and the tunnel alone (1 MiB throughput; memory toward a stalled peer, ./tunnel-load.ts).
//
// Order: the convergence runs start the cluster the other measurements use; the moderation latency runs on
// it with every node alive; then the SIGTERM hand-overs, then the SIGKILL takeovers (last: a killed node's
// readiness record outlives it by up to 45 s). The tunnel measurements run after the relays are gone, so
// they have the machine to themselves.
import { randomBytes } from 'node:crypto'
import { type Latency, latency } from '../load/latency'
import { type Answer, channelEvents, openModerationClient, refusalsByPrefix, startPacedSender } from './moderation-client'
import { isAlive, type MeshCluster, type MeshNode, openMeshCluster, sleep } from './nodes'
import { type StalledPeerMemory, stalledPeerMemory, type TunnelThroughput, tunnelThroughput } from './tunnel-load'

export interface MeshOptions {
  killTrials: number
  termTrials: number
  /** put-users sent to the owner, and as many to a non-owner */
  moderationEvents: number
  convergenceRuns: number
  tunnelRequests: number
  stallSeconds: number
  dir: (label: string) => string
  /** each node's stdout and stderr, kept after the run */
  logDir: string
}

export interface Trial {
  channel: string
  victim: string
  /** the signal → the first OK true for an event sent after it (NaN: none within 30 s) */
  ms: number
  /** the signal → the process exited */
  exitMs: number
  /** the replacement's spawn → every node linked to the two others */
  relinkMs: number
  generationBefore: number
  generationAfter: number
  /** OK false answers to events sent after the signal, by prefix */
  refusals: Record<string, number>
}

export interface TrialFigures {
  signal: 'SIGKILL' | 'SIGTERM'
  trials: Trial[]
  /** over the trials that saw an OK true */
  latency: Latency
  failures: string[]
  exit: Latency
  relink: Latency
}

export interface MeshFigures {
  takeover: TrialFigures
  handover: TrialFigures
  moderation: { events: number; local: Latency; forwarded: Latency; refusals: Record<string, number> }
  convergence: { runs: number; startToLinkedMs: number[]; listeningToLinkedMs: number[] }
  tunnel: TunnelThroughput
  stalled: StalledPeerMemory
}

const PACE_MS = 100
/** the default APIARY_MESH_LEASE_RENEW_MS */
const RENEW_MS = 2_000
const TAKEOVER_TIMEOUT_MS = 30_000
const MiB = 1024 * 1024
const log = (s: string) => process.stderr.write(`${s}\n`)
const suffix = () => randomBytes(3).toString('hex')

export async function meshBench(opts: MeshOptions): Promise<MeshFigures> {
  const cluster = await openMeshCluster(opts.dir, opts.logDir)
  let figures: Omit<MeshFigures, 'tunnel' | 'stalled'>
  try {
    const { nodes, ...convergence } = await convergenceRuns(cluster, opts.convergenceRuns)
    const moderation = await moderationLatency(cluster, nodes, opts.moderationEvents)
    const handover = await trials(cluster, nodes, 'SIGTERM', opts.termTrials)
    const takeover = await trials(cluster, nodes, 'SIGKILL', opts.killTrials)
    figures = { convergence, moderation, handover, takeover }
  } finally {
    await cluster.close()
  }
  log(`    tunnel: ${opts.tunnelRequests} requests of 1 MiB, 8 in flight`)
  const tunnel = await tunnelThroughput({ requests: opts.tunnelRequests, bodyBytes: MiB, inFlight: 8 })
  log(`    tunnel: ${opts.stallSeconds} s of 1 MiB requests to a SIGSTOPped peer`)
  const stalled = await stalledPeerMemory({ seconds: opts.stallSeconds, bodyBytes: MiB, pauseMs: 5, sampleEveryMs: 500 })
  return { ...figures, tunnel, stalled }
}

/** SIGTERM (drain), or SIGKILL when it has not exited within 40 s. */
async function stop(node: MeshNode): Promise<void> {
  if (!isAlive(node)) return
  node.proc.kill('SIGTERM')
  const killer = setTimeout(() => node.proc.kill('SIGKILL'), 40_000)
  await node.exited
  clearTimeout(killer)
}

/**
 * Three fresh processes started together, timed until each lists two connected peers; all but the last run's
 * are stopped again. A first node migrates the fresh database alone beforehand (nodes migrating one empty
 * database at once would race), untimed.
 */
async function convergenceRuns(cluster: MeshCluster, runs: number) {
  await stop(await cluster.start())
  const startToLinkedMs: number[] = []
  const listeningToLinkedMs: number[] = []
  for (let r = 0; ; r++) {
    const t0 = performance.now()
    const nodes = await Promise.all([0, 1, 2].map(() => cluster.start()))
    const linkedAt = t0 + (await cluster.waitLinked(nodes, t0))
    startToLinkedMs.push(Math.round(linkedAt - t0))
    listeningToLinkedMs.push(Math.round(linkedAt - Math.max(...nodes.map((n) => n.listeningAt))))
    log(`    convergence ${r + 1}/${runs}: all linked ${(startToLinkedMs[r]! / 1000).toFixed(2)} s after the spawn`)
    if (r === runs - 1) return { runs, startToLinkedMs, listeningToLinkedMs, nodes }
    await Promise.all(nodes.map(stop))
  }
}

/** The node whose /mesh/status has `channel` as a local session, and its generation. */
async function findOwner(cluster: MeshCluster, nodes: MeshNode[], channel: string): Promise<{ index: number; generation: number }> {
  const deadline = performance.now() + 10_000
  for (;;) {
    const views = await Promise.all(nodes.map((n) => cluster.status(n).catch(() => undefined)))
    for (const [index, v] of views.entries()) {
      const s = v?.sessions.find((x) => x.session === `channel:${channel}` && x.local)
      if (s) return { index, generation: s.generation }
    }
    if (performance.now() > deadline) throw new Error(`no node owns channel ${channel} 10 s after its creation`)
    await sleep(50)
  }
}

/** A fresh channel, created through `node` (which then owns it); throws when refused. */
async function createChannel(
  cluster: MeshCluster,
  node: MeshNode,
  events: ReturnType<typeof channelEvents>,
  channel: string,
): Promise<void> {
  const creator = await openModerationClient(node.url, cluster.host)
  try {
    const a = await creator.send(events.create(channel))
    if (!a.accepted) throw new Error(`9007 for ${channel} refused: ${a.message}`)
  } finally {
    creator.close()
  }
}

/**
 * Put-users awaited one at a time, `events` to the owner's node and as many to a non-owner's (forwarded over
 * the tunnel), in rounds of 10 whose order alternates; 5 unmeasured warm-ups on each first.
 */
async function moderationLatency(cluster: MeshCluster, nodes: MeshNode[], events: number) {
  const ev = channelEvents(`${cluster.community}-latency`)
  const channel = `latency-${suffix()}`
  await createChannel(cluster, nodes[0]!, ev, channel)
  const owner = (await findOwner(cluster, nodes, channel)).index
  const local = await openModerationClient(nodes[owner]!.url, cluster.host)
  const forwarded = await openModerationClient(nodes[(owner + 1) % nodes.length]!.url, cluster.host)
  const answers: Answer[] = []
  const ms = { local: [] as number[], forwarded: [] as number[] }
  try {
    for (let i = 0; i < 5; i++) answers.push(await local.send(ev.putUser(channel)), await forwarded.send(ev.putUser(channel)))
    const ROUND = 10
    for (let r = 0; r * ROUND < events; r++) {
      const order = r % 2 === 0 ? (['local', 'forwarded'] as const) : (['forwarded', 'local'] as const)
      for (const side of order) {
        const client = side === 'local' ? local : forwarded
        for (let i = 0; i < Math.min(ROUND, events - r * ROUND); i++) {
          const a = await client.send(ev.putUser(channel))
          answers.push(a)
          if (a.accepted) ms[side].push(a.answeredAt - a.sentAt)
        }
      }
    }
  } finally {
    local.close()
    forwarded.close()
  }
  const figures = { events, local: latency(ms.local), forwarded: latency(ms.forwarded), refusals: refusalsByPrefix(answers) }
  log(`    moderation: local p50 ${figures.local.p50Ms} ms, forwarded p50 ${figures.forwarded.p50Ms} ms`)
  return figures
}

/**
 * Each trial: a fresh channel (created through the next node in turn, which then owns it); a client on another
 * node sends put-users one at a time, 100 ms apart; once 3 were accepted and a random 0–2 s later, right after
 * an OK (nothing in flight), the owner gets `signal`; the figure is the signal → the first OK true to an event sent after it (so the client's next send,
 * up to 100 ms later, is inside it). Then a replacement process is started and every node relinked.
 */
async function trials(cluster: MeshCluster, nodes: MeshNode[], signal: 'SIGKILL' | 'SIGTERM', count: number): Promise<TrialFigures> {
  const ev = channelEvents(`${cluster.community}-${signal}`)
  const done: Trial[] = []
  const failures: string[] = []
  for (let i = 0; i < count; i++) {
    const channel = `${signal === 'SIGKILL' ? 'kill' : 'term'}-${i}-${suffix()}`
    try {
      done.push(await trial(cluster, nodes, signal, channel, i % nodes.length, ev))
      const t = done[done.length - 1]!
      log(
        `    ${signal} ${i + 1}/${count}: ${Number.isNaN(t.ms) ? 'no OK' : `${(t.ms / 1000).toFixed(2)} s`} (${t.victim}; exit ${(t.exitMs / 1000).toFixed(2)} s, relinked ${(t.relinkMs / 1000).toFixed(1)} s)`,
      )
      if (Number.isNaN(t.ms))
        failures.push(`${channel}: no OK true within ${TAKEOVER_TIMEOUT_MS / 1000} s of ${signal} (${JSON.stringify(t.refusals)})`)
    } catch (error) {
      const text = error instanceof Error ? error.message : String(error)
      log(`    ${signal} ${i + 1}/${count}: failed: ${text}`)
      failures.push(`${channel}: ${text}`)
      // the next trial needs three linked nodes: replace whatever died, or give up
      for (const [k, n] of nodes.entries()) if (!isAlive(n)) nodes[k] = await cluster.start()
      await cluster.waitLinked(nodes, performance.now())
    }
  }
  const ok = done.filter((t) => !Number.isNaN(t.ms))
  return {
    signal,
    trials: done,
    latency: latency(ok.map((t) => t.ms)),
    failures,
    exit: latency(done.map((t) => t.exitMs)),
    relink: latency(done.map((t) => t.relinkMs)),
  }
}

async function trial(
  cluster: MeshCluster,
  nodes: MeshNode[],
  signal: 'SIGKILL' | 'SIGTERM',
  channel: string,
  via: number,
  ev: ReturnType<typeof channelEvents>,
): Promise<Trial> {
  await createChannel(cluster, nodes[via]!, ev, channel)
  const owner = await findOwner(cluster, nodes, channel)
  const victim = nodes[owner.index]!
  const witness = nodes[(owner.index + 1) % nodes.length]!
  const client = await openModerationClient(witness.url, cluster.host)
  const sender = startPacedSender(client, () => ev.putUser(channel), PACE_MS)
  let signalledAt = 0
  let exitMs = Number.NaN
  try {
    const warmDeadline = performance.now() + 15_000
    while (sender.answers.filter((a) => a.accepted).length < 3) {
      if (performance.now() > warmDeadline)
        throw new Error(`no 3 forwarded put-users accepted before the ${signal}: ${JSON.stringify(refusalsByPrefix(sender.answers))}`)
      await sender.nextGap()
    }
    // the lease was taken when the channel was created, moments ago: a random wait of up to one renewal period
    // spreads the signal over the renewal cycle (else every kill would find nearly the whole lease left)
    await sleep(Math.random() * RENEW_MS)
    await sender.nextGap()
    signalledAt = performance.now()
    victim.proc.kill(signal)
    void victim.exited.then(() => {
      exitMs = performance.now() - signalledAt
    })
    const first = await sender.firstAcceptedSentAfter(signalledAt, TAKEOVER_TIMEOUT_MS)
    const ms = first ? first.answeredAt - signalledAt : Number.NaN
    await sender.stop()
    const killer = setTimeout(() => victim.proc.kill('SIGKILL'), 40_000)
    await victim.exited
    clearTimeout(killer)
    const after = (await cluster.status(witness)).sessions.find((s) => s.session === `channel:${channel}`)
    const refusals = refusalsByPrefix(sender.answers.filter((a) => a.sentAt >= signalledAt))
    const t0 = performance.now()
    nodes[owner.index] = await cluster.start()
    const relinkMs = await cluster.waitLinked(nodes, t0)
    return {
      channel,
      victim: victim.name,
      ms,
      exitMs,
      relinkMs,
      generationBefore: owner.generation,
      generationAfter: after?.generation ?? Number.NaN,
      refusals,
    }
  } finally {
    await sender.stop()
    client.close()
  }
}
