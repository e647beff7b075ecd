// Job dispatch for one community (docs/jobs.md), wired from what the node has: the event store's jobs table, the
// community's agent connections and subscriptions (read, never changed), its key, and its actor to deliver the
// relay's terminal errors. In a cluster each capability's dispatcher runs on the owner of its mesh session
// (mesh-jobs.ts), with the agents of every node. Undefined when the store has no jobs table, or in a cluster
// without the mesh: dispatch requests are then refused `unsupported:`.

import { communityPath } from '../actors/community/community-actor.js'
import { assignableUnder } from '../actors/community/community-policy.js'
import type { CommunityDeps, CommunitySurvivors } from '../actors/community/community-state.js'
import { deliverToConnection, listenCache } from '../actors/community/direct-delivery.js'
import { type CommunityMsg, REDELIVER } from '../actors/community/messages.js'
import type { AgentCandidate } from '../actors/jobs/agent-choice.js'
import { type CommunityJobs, createCommunityJobs, type DispatchRoute } from '../actors/jobs/community-jobs.js'
import { dispatcherActor, dispatcherPath } from '../actors/jobs/dispatcher-actor.js'
import { type Holder, JobBoard } from '../actors/jobs/job-board.js'
import type { DispatcherMsg } from '../actors/jobs/messages.js'
import { type ActorDef, type Kernel, tell, tellUntilTaken } from '../actors/kernel/index.js'
import type { OwnerView } from '../actors/mesh/capability-session.js'
import type { Config } from '../infra/config.js'
import { assignmentProbe } from '../protocols/jobs.js'
import { type AgentNote, MAX_HOLDS_PER_AGENT, parseRemoteConn } from '../protocols/mesh/job-frames.js'
import type { VerifiedEvent } from '../protocols/nip01/event.js'
import type { MeshJobs } from './mesh-jobs.js'
import { createRemoteJobDelivery, type RemoteJobDelivery } from './remote-job-delivery.js'

export interface CommunityJobsWiring {
  kernel: Kernel
  /** several nodes: dispatch needs the mesh (one owner node per capability), else it is refused */
  clustered: boolean
  mesh?: MeshJobs
  config: Pick<Config, 'jobs'>
  wallMs: () => number
}

/** `survivors` is read when a dispatcher starts, after the community's survivors exist. */
export function communityJobsOf(w: CommunityJobsWiring, c: CommunityDeps, survivors: () => CommunitySurvivors): CommunityJobs | undefined {
  const jobs = c.store.jobs
  if (jobs === undefined || (w.clustered && w.mesh === undefined)) return undefined
  const community = c.record.id
  const board = new JobBoard()
  const limits = w.config.jobs
  // an agent connection not listening for its assignments (its REQ closed, not yet sent again) would only turn
  // jobs away: it gets none until it listens again, and keeps those it holds
  const listens = listenCache()
  const local = (capability: string): AgentCandidate[] => {
    const index = survivors().index
    const createdAt = Math.floor(w.wallMs() / 1000)
    return survivors()
      .agents.candidatesFor(capability)
      .map((a) =>
        listens(index, a.conn, a.pubkey, createdAt, () => assignmentProbe(c.communityPubkey, a.pubkey, createdAt))
          ? a
          : { ...a, holdsOnly: true },
      )
  }
  // the jobs of the capability this node delivered to a connection still live here (ACTIVE or SUSPECT), at the
  // newest generation either board holds: what a new owner's dispatcher keeps with that connection
  const localHolders = (capability: string, agents: readonly { conn: string }[] = survivors().agents.candidatesFor(capability)) => {
    const live = new Set(agents.map((a) => a.conn))
    const out = new Map<string, Holder>()
    for (const b of route ? [board, route.delivered] : [board])
      for (const [job, h] of b.holdsOf(capability)) if (live.has(h.conn) && (out.get(job)?.generation ?? 0) < h.generation) out.set(job, h)
    return out
  }
  const agentsWithHolds = (capability: string): AgentNote[] => {
    const agents = local(capability)
    const byConn = new Map<string, { job: string; generation: number }[]>()
    for (const [job, h] of localHolders(capability, agents)) {
      const holds = byConn.get(h.conn) ?? []
      if (holds.length < MAX_HOLDS_PER_AGENT) holds.push({ job, generation: h.generation })
      byConn.set(h.conn, holds)
    }
    return agents.map((a) => (byConn.has(a.conn) ? { ...a, holds: byConn.get(a.conn)! } : a))
  }
  const dispatcherOf = (capability: string, owner?: OwnerView) =>
    dispatcherActor({
      community,
      capability,
      store: { save: c.store.save.bind(c.store), query: c.store.query.bind(c.store), jobs },
      board,
      candidates: owner ? () => [...local(capability), ...owner.remoteAgents()] : () => local(capability),
      roleDomains: () => assignableUnder(survivors().current.record),
      ...(owner ? { holders: () => new Map([...owner.remoteHolders(), ...localHolders(capability)]) } : {}),
      deliverTo: (conn, event, raw) =>
        (owner !== undefined && remote?.sendElsewhere(capability, conn, event, raw)) ||
        deliverToConnection(survivors().index, conn, event, raw),
      ...(owner ? { fence: owner.fence, fenced: owner.fenced } : {}),
      // the jobs it gave this node's own connections stay held here, as if another node had delivered them: the
      // chunk fence goes on, and the next owner's poll hears who holds them (remoteConn names the others)
      ...(route ? { stopped: () => board.handOver(capability, route.delivered, (h) => parseRemoteConn(h.conn) === undefined) } : {}),
      announce: (event, raw) => {
        const ref = w.kernel.lookup<CommunityMsg>(communityPath(community))
        const msg: CommunityMsg = { type: 'Announce', events: [{ event: event as VerifiedEvent, raw }], from: 'jobs' }
        // a community that never takes it misses delivering it live: the error is stored, and a REQ finds it
        const lost = () => c.log.error({ community, eventId: event.id }, "a job's terminal error was stored but not delivered live")
        if (ref) tellUntilTaken(ref, msg, { ...REDELIVER, onGiveUp: lost })
        else lost()
      },
      sign: c.sign,
      limits,
      nowMs: c.nowMs,
      wallMs: w.wallMs,
      metrics: c.metrics,
      log: c.log,
    }) as unknown as ActorDef<unknown, DispatcherMsg>
  // with the mesh: assignments for agents on other nodes, and those other nodes' dispatchers send here
  const remote: RemoteJobDelivery | undefined =
    w.mesh &&
    createRemoteJobDelivery({
      community,
      kernel: w.kernel,
      mesh: w.mesh,
      delivered: () => route!.delivered,
      index: () => survivors().index,
      log: c.log,
    })
  const route: DispatchRoute | undefined = w.mesh?.register(community, {
    dispatcher: (capability, owner) => w.kernel.getOrSpawn(dispatcherPath(community, capability), dispatcherOf(capability, owner)),
    stopDispatcher: (capability) => void w.kernel.stop(dispatcherPath(community, capability)),
    hasDispatcher: (capability) => w.kernel.lookup(dispatcherPath(community, capability)) !== undefined,
    agents: (capability, holds) => (holds ? agentsWithHolds(capability) : local(capability)),
    openCount: (capability) => board.openCount(capability),
    deliverHere: (request) => remote?.deliverHere(request) ?? false,
    // through the community's mailbox, which keeps them in the order they came
    chunkHere: (raw) => {
      const ref = w.kernel.lookup<CommunityMsg>(communityPath(community))
      if (!ref || !tell(ref, { type: 'RemoteEvent', raw })) c.metrics.jobChunksDropped.inc({ reason: 'full' })
    },
  })
  return createCommunityJobs({
    community,
    kernel: w.kernel,
    store: jobs,
    board,
    ...(route ? { route } : {}),
    dispatcherOf,
    maxQueuedPerCapability: limits.maxQueuedPerCapability,
    maxCapabilities: limits.maxCapabilitiesPerCommunity,
    maxOpenPerRequester: limits.maxOpenPerRequester,
    maxRequestBytes: limits.maxRequestBytes,
    maxDeadlineMs: limits.maxDeadlineMs,
    wallMs: w.wallMs,
    metrics: c.metrics,
    log: c.log,
  })
}
