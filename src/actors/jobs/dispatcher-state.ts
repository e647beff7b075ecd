// The types a job dispatcher's parts share (docs/jobs.md), so that no part imports the actor.
import type { Logger } from '../../infra/log.js'
import type { Metrics } from '../../infra/metrics.js'
import type { EventStore } from '../../infra/store/event-store.js'
import type { JobLedger } from '../../infra/store/job-ledger.js'
import type { SessionFence } from '../../infra/store/session-fence.js'
import type { JobErrorCode } from '../../protocols/jobs.js'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import type { EventTemplate } from '../../protocols/nip01/sign.js'
import type { ActorContext } from '../kernel/index.js'
import type { AgentCandidate } from './agent-choice.js'
import type { Holder, JobBoard } from './job-board.js'
import type { DispatcherMsg, QueuedJob } from './messages.js'

export interface JobLimits {
  /** how long an agent has to accept an assignment (its `processing`) before the job goes to another */
  acceptTimeoutMs: number
  /** assignments of one job before it ends `exhausted` */
  maxAttempts: number
  /** open jobs of one capability; past it a request is answered `rate-limited:` */
  maxQueuedPerCapability: number
  maxCapabilitiesPerCommunity: number
  maxOpenPerRequester: number
}

export interface DispatcherDeps {
  community: string
  capability: string
  store: Pick<EventStore, 'save' | 'query'> & { jobs: JobLedger }
  board: JobBoard
  /** the live agent connections offering the capability now (those that may get no new job `holdsOnly`) */
  candidates: () => AgentCandidate[]
  /**
   * Role domains now: whether `agent` may be given a job `requester` asked for; undefined while the community
   * has none (any agent may)
   */
  roleDomains?: () => ((requester: string, agent: string) => boolean) | undefined
  /**
   * Who holds each job of the capability now, as the nodes its agents are connected to know it (the connection
   * an assignment was delivered to, at its generation): a job read back from the store is kept only by that
   * connection. Default: what `board` holds for a connection among `candidates` (one node).
   */
  holders?: () => ReadonlyMap<string, Holder>
  /** sends `event` to that connection alone, on its subscription that matches it; false when none can take it */
  deliverTo: (conn: string, event: NostrEvent, raw: string) => boolean
  /** a relay event for the community to deliver live and to the other nodes */
  announce: (event: NostrEvent, raw: string) => void
  /** signs with the community's key */
  sign: (t: EventTemplate, createdAt: number) => NostrEvent
  limits: JobLimits
  /** monotonic ms: accept deadlines, the assignment latency */
  nowMs: () => number
  /** epoch ms: a job's deadline is stored as one */
  wallMs: () => number
  metrics: Pick<Metrics, 'jobAssignments' | 'jobsEnded' | 'jobAssignmentSeconds'>
  log: Pick<Logger, 'warn' | 'error' | 'info'>
  /** how often accept deadlines and job deadlines are looked at; default 250 ms */
  tickMs?: number
  /**
   * With the mesh: the capability session's fence, which every assignment claims in its transaction; undefined
   * while this node does not hold the session (no assignment is written then).
   */
  fence?: () => SessionFence | undefined
  /** an assignment was fenced off: the session is another node's now */
  fenced?: () => void
  /**
   * The dispatcher stops (its session went to another node): what its board holds goes, except what the node
   * must go on fencing and reporting for its own connections (default: all of it goes).
   */
  stopped?: () => void
}

/** `unclosed`: its terminal error could not be stored; the timer tries again */
export type JobPhase = 'queued' | 'assigning' | 'assigned' | 'running' | 'closing' | 'unclosed'

export interface JobEntry {
  job: QueuedJob
  generation: number
  attempts: number
  phase: JobPhase
  /** the connection it is assigned (or being assigned) to */
  holder?: { conn: string; pubkey: string }
  /** monotonic: an assignment not accepted by then goes to another agent */
  acceptByMs?: number
  /** monotonic: when it joined the queue (the assignment latency) */
  waitingSinceMs: number
  /** why it is being ended by the relay, once it is */
  closing?: { code: JobErrorCode; text: string }
  /** agents that refused it, failed it or let it lapse: tried last */
  excluded: Set<string>
}

export interface DispatcherState {
  /** false until the open jobs were read back from the store */
  ready: boolean
  jobs: Map<string, JobEntry>
  /** ids in the order they go out; an id whose entry is not `queued` any more is skipped */
  queue: string[]
  /** jobs each connection holds from this dispatcher */
  held: Map<string, number>
  lastAssignedMs: Map<string, number>
  /**
   * connections that did not take an assignment, or refused one, and until when (monotonic) they get no other:
   * a connection closing, not listening or busy would otherwise turn every queued job away in turn
   */
  resting: Map<string, number>
  /** stored before the open jobs were read: queued once they are */
  early: QueuedJob[]
  /** a read of the open jobs again is in flight (resync.ts) */
  resyncing?: boolean
  /** reports, cancellations and agents gone heard before the open jobs were read: handled once they are */
  earlyReports: Extract<DispatcherMsg, { type: 'Reported' | 'Cancelled' | 'AgentGone' }>[]
}

export type Ctx = ActorContext<DispatcherMsg>
