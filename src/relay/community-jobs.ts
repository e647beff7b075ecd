// Job dispatch for one community (docs/jobs.md), wired from what the node has: the event store's jobs table, the
// community's agent connections and subscriptions (read, never changed), its key, and its actor to deliver the
// relay's terminal errors. Undefined when the store has no jobs table, or in a cluster (one owner per capability
// is not built yet): dispatch requests are then refused `unsupported:`.

import { communityPath } from '../actors/community/community-actor.js'
import type { CommunityDeps, CommunitySurvivors } from '../actors/community/community-state.js'
import { deliverToConnection } from '../actors/community/direct-delivery.js'
import { type CommunityMsg, REDELIVER } from '../actors/community/messages.js'
import { type CommunityJobs, createCommunityJobs } from '../actors/jobs/community-jobs.js'
import { dispatcherActor } from '../actors/jobs/dispatcher-actor.js'
import { JobBoard } from '../actors/jobs/job-board.js'
import type { DispatcherMsg } from '../actors/jobs/messages.js'
import { type ActorDef, type Kernel, tellUntilTaken } from '../actors/kernel/index.js'
import type { Config } from '../infra/config.js'
import type { VerifiedEvent } from '../protocols/nip01/event.js'

export interface CommunityJobsWiring {
  kernel: Kernel
  /** several nodes: not yet (each capability needs one owner node, the mesh's job); dispatch is refused */
  clustered: boolean
  config: Pick<Config, 'jobs'>
  wallMs: () => number
}

/** `survivors` is read when a dispatcher starts, after the community's survivors exist. */
export function communityJobsOf(w: CommunityJobsWiring, c: CommunityDeps, survivors: () => CommunitySurvivors): CommunityJobs | undefined {
  const jobs = c.store.jobs
  if (jobs === undefined || w.clustered) return undefined
  const community = c.record.id
  const board = new JobBoard()
  const limits = w.config.jobs
  const dispatcherOf = (capability: string) =>
    dispatcherActor({
      community,
      capability,
      store: { save: c.store.save.bind(c.store), query: c.store.query.bind(c.store), jobs },
      board,
      candidates: () => survivors().agents.candidatesFor(capability),
      deliverTo: (conn, event, raw) => deliverToConnection(survivors().index, conn, event, raw),
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
  return createCommunityJobs({
    community,
    kernel: w.kernel,
    store: jobs,
    board,
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
