// Hand-over and takeover trials of the mesh scenario: the owner of a fresh channel gets SIGTERM or SIGKILL
// while a client on another node keeps sending put-users; the figure is how long the channel answers nothing
// but refusals. A replacement node is started after each trial, so the next one finds three linked nodes.
import { randomBytes } from 'node:crypto'
import { type Latency, latency } from '../load/latency'
import { createChannel, findOwner } from './channel-owner'
import { channelEvents, openModerationClient, refusalsByPrefix, startPacedSender } from './moderation-client'
import { isAlive, type MeshCluster, type MeshNode, sleep } from './nodes'

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

const PACE_MS = 100
/** the default APIARY_MESH_LEASE_RENEW_MS */
const RENEW_MS = 2_000
const TAKEOVER_TIMEOUT_MS = 30_000
const log = (s: string) => process.stderr.write(`${s}\n`)
const suffix = () => randomBytes(3).toString('hex')

/**
 * Each trial: a fresh channel (created through the next node in turn, which then owns it); a client on another
 * node sends put-users one at a time, 100 ms apart; once 3 were accepted and a random 0–2 s later, right after
 * an OK (nothing in flight), the owner gets `signal`; the figure is the signal → the first OK true to an event sent after it (so the client's next send,
 * up to 100 ms later, is inside it). Then a replacement process is started and every node relinked.
 */
export async function trials(cluster: MeshCluster, nodes: MeshNode[], signal: 'SIGKILL' | 'SIGTERM', count: number): Promise<TrialFigures> {
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
