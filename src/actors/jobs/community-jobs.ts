// A community's side of job dispatch (docs/jobs.md): what its writes mean for the jobs table (the JobWrite
// stored with each event), the checks it makes before storing or relaying (the queue's bound, a chunk's
// fence), and what it tells the dispatchers once the store decided. One per community, made by the
// composition root; the dispatchers are activated on first use, one per capability. With the mesh each
// capability's dispatcher runs on the owner of its session, and what this node tells it goes through the
// session (`route`); the jobs another node's dispatcher handed to agents connected here are on `delivered`.
import type { Metrics } from '../../infra/metrics.js'
import type { JobLedger, JobWrite } from '../../infra/store/job-ledger.js'
import { endsJob, isDispatchRequest, jobReportOf, KIND_JOB_CHUNK, parseJobRequest } from '../../protocols/jobs.js'
import { type NostrEvent, utf8Length } from '../../protocols/nip01/event.js'
import { type Reason, reason } from '../../protocols/reasons.js'
import { REDELIVER } from '../community/messages.js'
import { type ActorDef, type Kernel, type TypedRef, tellUntilTaken } from '../kernel/index.js'
import { dispatcherPath } from './dispatcher-actor.js'
import type { JobBoard } from './job-board.js'
import type { DispatcherMsg, DispatcherNote } from './messages.js'

/** With the mesh: the capability's session, which takes a note to its dispatcher on whichever node runs it. */
export interface DispatchRoute {
  /** `spawn` false: only to a session that exists here (an agent's heartbeat must not make sessions) */
  note(capability: string, note: DispatcherNote, spawn: boolean): void
  /** jobs another node's dispatcher handed to agents connected here: the chunk fence and the routing of reports */
  delivered: JobBoard
  /** a chunk relayed here goes to the other nodes over the mesh, in order (not on the bus) */
  relayChunk(raw: string): void
  /** `then` once every chunk relayed so far reached the other nodes (or was dropped) */
  afterChunks(then: () => void): void
  /** the capability's open jobs as its owner node last said (0 when it has not lately) */
  openAt(capability: string): number
}

export interface CommunityJobs {
  /** before a write is judged: a refusal for a dispatch request that cannot be queued, else undefined */
  refuseRequest(event: NostrEvent): Reason | undefined
  /** a chunk about to be relayed: a refusal unless its author holds the job at its generation now */
  refuseChunk(event: NostrEvent): Reason | undefined
  /** a chunk that passed: true when it went to the other nodes over the mesh (then not on the bus) */
  relayChunk(raw: string): boolean
  /**
   * A stored report of a job (`write`) that must reach the other nodes after its chunks: true when `publish` is
   * called once they went (with the mesh), false when the caller publishes it now.
   */
  publishAfterChunks(write: JobWrite | undefined, publish: () => void): boolean
  /** what storing `event` does to the jobs table, decided in the same transaction */
  writeOf(event: NostrEvent): JobWrite | undefined
  /** the store took `event` (and removed `removedIds`): the dispatchers hear what it means */
  stored(event: NostrEvent, raw: string, write: JobWrite | undefined, removedIds: readonly string[]): void
  /** events removed outright (NIP-86 banevent): a job whose request is among them was cancelled by the store */
  removed(eventIds: readonly string[]): void
  /** an agent connection offering `capabilities` is ACTIVE (a heartbeat, an announcement) */
  agentActive(capabilities: readonly string[]): void
  /** an agent connection closed or lapsed: the jobs it holds go elsewhere */
  agentGone(conn: string, why: 'closed' | 'lapsed'): void
  /** the community started: the dispatchers of capabilities with open jobs start too (read beside the caller) */
  start(): Promise<void>
}

export interface CommunityJobsDeps {
  community: string
  kernel: Pick<Kernel, 'getOrSpawn'>
  store: Pick<JobLedger, 'openCapabilities' | 'job'>
  board: JobBoard
  route?: DispatchRoute
  /** the dispatcher of one capability, as the composition root builds it */
  dispatcherOf: (capability: string) => ActorDef<unknown, DispatcherMsg>
  maxQueuedPerCapability: number
  maxCapabilities: number
  maxOpenPerRequester: number
  maxRequestBytes: number
  maxDeadlineMs: number
  wallMs: () => number
  metrics: Pick<Metrics, 'jobsQueued'>
  log: { warn(o: object, m: string): void }
}

/** how long the jobs delivered to a connection that went stay held for its agent (see leftBehind) */
const GONE_HOLDS_MS = 30_000

export function createCommunityJobs(d: CommunityJobsDeps): CommunityJobs {
  const route = d.route
  const dispatcher = (capability: string): TypedRef<DispatcherMsg> =>
    d.kernel.getOrSpawn(dispatcherPath(d.community, capability), d.dispatcherOf(capability))
  const tellDispatcher = (capability: string, msg: DispatcherNote, again = true): void => {
    if (route) route.note(capability, msg, true)
    else tellLocal(capability, msg.type === 'Agents' ? { type: 'AgentReady' } : msg, again)
  }
  const tellLocal = (capability: string, msg: DispatcherMsg, again: boolean): void =>
    tellUntilTaken(dispatcher(capability), msg, {
      ...REDELIVER,
      onGiveUp: () => {
        // an activation that stopped as idle just then: its successor reads the store at start, and hears this too
        if (again) return tellLocal(capability, msg, false)
        // the store has it: the dispatcher reads it back when it restarts
        d.log.warn({ community: d.community, capability, type: msg.type }, 'a job dispatcher did not take a message')
      },
    })

  // What another node's dispatcher handed a connection that closed or lapsed stays held a while: until the
  // owner's revocation comes, its agent reconnected under the same key may still finish the job (the store
  // fences a result by key and generation), and its chunks must pass as its result would. Dropped past
  // GONE_HOLDS_MS, when the next connection goes.
  const gone = new Map<string, number>()
  const leftBehind = (delivered: JobBoard, conn: string) => {
    const now = d.wallMs()
    for (const [c, atMs] of gone) {
      if (now - atMs < GONE_HOLDS_MS) break
      gone.delete(c)
      for (const job of delivered.heldBy(c)) delivered.remove(job)
    }
    gone.delete(conn)
    gone.set(conn, now)
  }
  const capabilityOf = (job: string) => d.board.capabilityOf(job) ?? route?.delivered.capabilityOf(job)
  const holderOf = (job: string) => d.board.holderOf(job) ?? route?.delivered.holderOf(job)
  const cancelled = (ids: readonly string[]) => {
    for (const id of ids) {
      const capability = capabilityOf(id)
      if (capability !== undefined) tellDispatcher(capability, { type: 'Cancelled', jobs: [id] })
      else if (route) cancelledElsewhere(id)
    }
  }
  // with the mesh a request's dispatcher may run on another node: its row names the capability
  const cancelledElsewhere = (id: string) => {
    d.store.job(d.community, id).then(
      (row) => {
        if (row !== undefined) tellDispatcher(row.capability, { type: 'Cancelled', jobs: [id] })
      },
      (error: unknown) => d.log.warn({ err: error, community: d.community, job: id }, "a cancelled job's dispatcher was not told"),
    )
  }

  return {
    refuseRequest(event) {
      if (!isDispatchRequest(event)) return undefined
      const parsed = parseJobRequest(event, d.maxDeadlineMs)
      if (!parsed.ok) return parsed.error
      if (utf8Length(JSON.stringify(event)) > d.maxRequestBytes) {
        return reason('invalid', `a dispatched job request is at most ${d.maxRequestBytes} bytes`)
      }
      const { capability } = parsed.value
      // with the mesh the dispatcher may be on another node: its owner's count, as it last said
      const open = Math.max(d.board.openCount(capability), route?.openAt(capability) ?? 0)
      if (open >= d.maxQueuedPerCapability) {
        return reason('rate-limited', `the queue of ${capability} is full (${d.maxQueuedPerCapability} jobs); retry later`)
      }
      // each capability with open jobs is a dispatcher with a queue: a requester must not make them at will
      if (open === 0 && d.board.capabilities >= d.maxCapabilities) {
        return reason('rate-limited', `${d.maxCapabilities} capabilities already have open jobs here; retry later`)
      }
      if (d.board.openOf(event.pubkey) >= d.maxOpenPerRequester) {
        return reason('rate-limited', `you have ${d.maxOpenPerRequester} open jobs here; wait for their answers`)
      }
      return undefined
    },
    refuseChunk(event) {
      if (event.kind !== KIND_JOB_CHUNK) return undefined
      const report = jobReportOf(event)
      if (!report.ok) return report.error
      const holder = holderOf(report.value!.job)
      if (holder === undefined || holder.pubkey !== event.pubkey || holder.generation !== report.value!.generation) {
        return reason('restricted', 'not the assignee of this job at this generation')
      }
      return undefined
    },
    publishAfterChunks(write, publish) {
      if (!route || write?.op !== 'report') return false
      route.afterChunks(publish)
      return true
    },
    relayChunk(raw) {
      if (!route) return false
      route.relayChunk(raw)
      return true
    },
    writeOf(event) {
      if (isDispatchRequest(event)) {
        const parsed = parseJobRequest(event, d.maxDeadlineMs)
        if (!parsed.ok) return undefined
        const now = d.wallMs()
        const { deadlineMs } = parsed.value
        return {
          op: 'enqueue',
          capability: parsed.value.capability,
          queuedAtMs: now,
          deadlineAtMs: deadlineMs === undefined ? null : now + deadlineMs,
        }
      }
      const report = jobReportOf(event)
      if (!report.ok || report.value === undefined || report.value.what === 'chunk') return undefined
      const r = report.value
      const ends = endsJob(r) ? (r.what === 'result' ? 'success' : 'error') : null
      return {
        op: 'report',
        job: r.job,
        generation: r.generation ?? null,
        ends,
        accepts: r.what === 'processing',
        ...(r.what === 'result' ? { resultKind: event.kind } : {}),
      }
    },
    removed: (eventIds) => cancelled(eventIds),
    stored(event, raw, write, removedIds) {
      cancelled(removedIds)
      if (write?.op === 'enqueue') {
        const deadlineAtMs = write.deadlineAtMs
        const job = { id: event.id, requester: event.pubkey, kind: event.kind, raw, queuedAtMs: write.queuedAtMs, deadlineAtMs }
        d.metrics.jobsQueued.inc()
        tellDispatcher(write.capability, { type: 'Enqueued', job })
        return
      }
      if (write?.op !== 'report') return
      const capability = capabilityOf(write.job)
      const report = jobReportOf(event)
      if (capability === undefined || !report.ok || report.value === undefined) return
      tellDispatcher(capability, { type: 'Reported', pubkey: event.pubkey, report: report.value })
      if (write.ends !== null) route?.delivered.remove(write.job)
    },
    agentActive(capabilities) {
      for (const capability of capabilities) {
        if (route) route.note(capability, { type: 'Agents' }, false)
        else if (d.board.openCount(capability) > 0) tellDispatcher(capability, { type: 'Agents' })
      }
    },
    async start() {
      for (const capability of await d.store.openCapabilities(d.community)) {
        if (route) route.note(capability, { type: 'Agents' }, true)
        else dispatcher(capability)
      }
    },
    agentGone(conn, why) {
      const held = [...d.board.heldBy(conn), ...(route?.delivered.heldBy(conn) ?? [])]
      const capabilities = new Set(held.map((job) => capabilityOf(job)!))
      if (route) leftBehind(route.delivered, conn)
      for (const capability of capabilities) tellDispatcher(capability, { type: 'AgentGone', conn, why })
    },
  }
}
