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
import { createChannel, findOwner } from './channel-owner'
import { type Answer, channelEvents, openModerationClient, refusalsByPrefix } from './moderation-client'
import { isAlive, type MeshCluster, type MeshNode, openMeshCluster } from './nodes'
import { type TrialFigures, trials } from './signal-trials'
import { type StalledPeerMemory, stalledPeerMemory, type TunnelThroughput, tunnelThroughput } from './tunnel-load'

export type { TrialFigures } from './signal-trials'

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

export interface MeshFigures {
  takeover: TrialFigures
  handover: TrialFigures
  moderation: { events: number; local: Latency; forwarded: Latency; refusals: Record<string, number> }
  convergence: { runs: number; startToLinkedMs: number[]; listeningToLinkedMs: number[] }
  tunnel: TunnelThroughput
  stalled: StalledPeerMemory
}

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
