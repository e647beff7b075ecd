// Assignments and revocations between nodes (docs/mesh.md §9): the owner's dispatcher sends one for an agent
// connected to another node there (`job-deliver`), and that node sends it to the connection and keeps who holds
// the job on its `delivered` board (the chunk fence, the routing of reports). Holds move only forward: an
// assignment older than the hold or a revocation this node saw is ignored, whatever order the tunnel brought
// them in; a revocation whose holder's node the owner does not know goes to every node.
import { deliverToConnection } from '../actors/community/direct-delivery.js'
import type { SubscriptionIndex } from '../actors/community/subscription-index.js'
import { dispatcherPath } from '../actors/jobs/dispatcher-actor.js'
import type { JobBoard } from '../actors/jobs/job-board.js'
import type { DispatcherMsg } from '../actors/jobs/messages.js'
import { type Kernel, tell } from '../actors/kernel/index.js'
import type { Logger } from '../infra/log.js'
import { assignmentOf } from '../protocols/jobs.js'
import { type JobDeliverRequest, parseRemoteConn } from '../protocols/mesh/job-frames.js'
import { type NostrEvent, parseEventShape } from '../protocols/nip01/event.js'
import type { MeshJobs } from './mesh-jobs.js'

/** jobs whose last revocation here is remembered (the oldest forgotten first) */
const MAX_REVOKED_REMEMBERED = 10_000
/** a revocation no node answered is sent again this often, this many times in all (a tunnel back within 30 s) */
const REVOCATION_RETRY_MS = 500
const REVOCATION_TRIES = 60

export interface RemoteJobDelivery {
  /** the owner's side: false for a connection of this node (deliver it here); otherwise sent, answered later */
  sendElsewhere(capability: string, conn: string, event: NostrEvent, raw: string): boolean
  /** the agent's node: false when the connection did not take it */
  deliverHere(request: JobDeliverRequest): boolean
}

export function createRemoteJobDelivery(d: {
  community: string
  kernel: Kernel
  mesh: MeshJobs
  delivered: () => JobBoard
  index: () => SubscriptionIndex
  log: Pick<Logger, 'warn'>
}): RemoteJobDelivery {
  const revoked = new Map<string, number>()
  const remember = (job: string, generation: number) => {
    revoked.delete(job)
    revoked.set(job, Math.max(generation, revoked.get(job) ?? 0))
    if (revoked.size > MAX_REVOKED_REMEMBERED) revoked.delete(revoked.keys().next().value!)
  }

  function send(capability: string, conn: string, to: { runtime: string; conn?: string }, event: NostrEvent, raw: string) {
    const assigned = assignmentOf(event)
    const request: JobDeliverRequest = {
      op: 'job-deliver',
      community: d.community,
      capability,
      ...(to.conn === undefined ? {} : { conn: to.conn }),
      job: assigned.job,
      event: raw,
      ...(assigned.hold ? { hold: assigned.hold } : {}),
    }
    // an assignment its connection did not take goes to another agent at once
    const undelivered = () => {
      const ref = d.kernel.lookup<DispatcherMsg>(dispatcherPath(d.community, capability))
      if (ref) tell(ref, { type: 'Undelivered', job: assigned.job, conn })
    }
    const attempt = (tries: number) =>
      d.mesh.deliver(to.runtime, request).then(
        (took) => took || assigned.hold === undefined || undelivered(),
        (error: unknown) => {
          // no answer (a cut tunnel, a timeout): the agent may have it. An assignment waits for its acceptance
          // (the accept deadline hands it on if it never arrived); a revocation is sent again, as a superseded
          // agent would otherwise work on and stream chunks its node still lets through
          if (assigned.hold === undefined && tries < REVOCATION_TRIES) {
            setTimeout(() => void attempt(tries + 1), REVOCATION_RETRY_MS).unref?.()
            return
          }
          d.log.warn(
            { err: error, community: d.community, job: assigned.job },
            'a job assignment or revocation did not reach its agent node',
          )
        },
      )
    void attempt(1)
  }

  function deliverHere(request: JobDeliverRequest): boolean {
    const delivered = d.delivered()
    const shape = parseEventShape(request.event)
    if (shape === undefined) return false
    const held = delivered.holderOf(request.job)
    if (request.hold) {
      const { generation } = request.hold
      // older than what this node holds or saw revoked: superseded already, nothing to do
      if ((held !== undefined && held.generation > generation) || (revoked.get(request.job) ?? 0) >= generation) return true
      if (request.conn === undefined) return false
      delivered.add(request.job, request.capability, request.hold.requester)
      delivered.hold(request.job, { conn: request.conn, pubkey: request.hold.pubkey, generation })
    } else {
      const generation = assignmentOf(shape).generation
      remember(request.job, generation)
      if (held !== undefined && held.generation <= generation) delivered.remove(request.job)
      // to the connection that held it, unless the hold here is newer than what is revoked
      else if (request.conn === undefined) return false
    }
    const conn = request.conn ?? held?.conn
    if (conn === undefined) return false
    const took = deliverToConnection(d.index(), conn, shape, request.event)
    if (!took && request.hold) delivered.remove(request.job)
    return took
  }

  return {
    sendElsewhere(capability, conn, event, raw) {
      if (conn === '') {
        // a revocation for a holder whose node is not known: every node, this one too, drops the hold it has
        const request = { community: d.community, capability, job: assignmentOf(event).job, event: raw }
        deliverHere({ op: 'job-deliver', ...request })
        for (const runtime of d.mesh.peers()) send(capability, conn, { runtime }, event, raw)
        return true
      }
      const remote = parseRemoteConn(conn)
      if (remote === undefined) return false
      send(capability, conn, remote, event, raw)
      return true
    },
    deliverHere,
  }
}
