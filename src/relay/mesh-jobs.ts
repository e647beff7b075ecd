// Job dispatch across the mesh (docs/mesh.md §9), part of the composition root: each capability's session on
// this node (src/actors/mesh/capability-session.ts), what the other nodes ask of it over the tunnel, and each
// community's side of it (registered by community-jobs.ts when the community starts).

import type { DispatchRoute } from '../actors/jobs/community-jobs.js'
import { JobBoard } from '../actors/jobs/job-board.js'
import { ask, type Kernel, tell } from '../actors/kernel/index.js'
import {
  type CapabilitySessionDeps,
  type CapabilitySessionMsg,
  capabilitySessionPath,
  type DispatchHost,
  POLL_MS,
  spawnCapabilitySession,
} from '../actors/mesh/capability-session.js'
import type { SessionView } from '../actors/mesh/session-actor.js'
import type { Logger } from '../infra/log.js'
import { createOrderedPipe, type OrderedPipe } from '../infra/mesh/ordered-pipe.js'
import type { SessionDirectory } from '../infra/mesh/session-directory.js'
import type { Metrics } from '../infra/metrics.js'
import {
  type JobChunksRequest,
  type JobDeliverRequest,
  type JobMeshReply,
  type JobMeshRequest,
  MAX_CHUNKS_PER_BATCH,
} from '../protocols/mesh/job-frames.js'
import { capabilityOfSession, capabilitySessionId } from '../protocols/mesh/session-id.js'

/** A community's side on this node: its dispatchers and agents, and the connections a remote assignment goes to. */
export interface CommunityDispatch extends DispatchHost {
  /** an assignment or revocation another node's dispatcher sent to a connection here: false when it did not take it */
  deliverHere(request: JobDeliverRequest): boolean
  /** a job chunk another node relayed: to the subscriptions here, after the ones before it */
  chunkHere(raw: string): void
}

export interface MeshJobs {
  /** the community's route to its dispatchers (the capability sessions) once its side is registered */
  register(community: string, side: CommunityDispatch): DispatchRoute
  unregister(community: string): void
  /** an assignment or revocation for an agent connected to `runtime`: resolves whether its connection took it */
  deliver(runtime: string, request: JobDeliverRequest): Promise<boolean>
  /** a peer's request about jobs */
  answer(peer: string, request: JobMeshRequest): Promise<JobMeshReply>
  /** the peers this node has a tunnel to */
  peers(): string[]
  /** a job chunk relayed here: to every other node, in order (its requester may be connected to any) */
  chunk(community: string, raw: string): void
  /** membership suspects `peer`: the sessions owned here drop its agents (their jobs go to others) */
  peerSuspect(peer: string): void
}

export interface MeshJobsDeps {
  kernel: Kernel
  runtime: string
  directory: SessionDirectory
  storedGeneration(community: string, session: string): Promise<number>
  peers(): string[]
  send(peer: string, request: JobMeshRequest, timeoutMs: number): Promise<JobMeshReply>
  sessions: Map<string, SessionView>
  renewMs: number
  /** capability sessions a peer's requests may make here per community (jobs.maxCapabilitiesPerCommunity) */
  maxSessionsPerCommunity: number
  metrics: Pick<Metrics, 'meshFenceRejections' | 'meshLeasesLost' | 'jobChunksDropped' | 'jobNotesDropped'>
  log: Logger
}

/** How long a peer's request waits for the session here to take it. */
const ASK_MS = 10_000
const DELIVER_TIMEOUT_MS = 5_000
/** chunks held for one peer (waiting and in flight): past it a chunk does not reach that node */
const MAX_CHUNKS_QUEUED_PER_PEER = 10_000
const MAX_CHUNK_BYTES_QUEUED_PER_PEER = 32 * 2 ** 20
/** under the tunnel's 16 MiB body, its JSON escaping included */
const MAX_CHUNK_BATCH_BYTES = 4 * 2 ** 20
const CHUNKS_TIMEOUT_MS = 10_000

export function createMeshJobs(d: MeshJobsDeps): MeshJobs {
  const sides = new Map<string, CommunityDispatch>()
  // each capability's open jobs as its owner last said, per community: the queue's bound on this node
  const owned = new Map<string, Map<string, { open: number; atMs: number }>>()
  const sessionDeps: CapabilitySessionDeps = {
    runtime: d.runtime,
    directory: d.directory,
    storedGeneration: d.storedGeneration,
    host: (community) => sides.get(community),
    peers: d.peers,
    send: d.send,
    fenceRejected: (why) => d.metrics.meshFenceRejections.inc({ reason: why }),
    notesDropped: () => d.metrics.jobNotesDropped.inc(),
    leaseLost: (why) => d.metrics.meshLeasesLost.inc({ reason: why }),
    sessions: d.sessions,
    renewMs: d.renewMs,
    now: () => performance.now(),
    log: d.log,
  }
  const session = (community: string, capability: string) =>
    spawnCapabilitySession(d.kernel, community, capabilitySessionId(capability), capability, sessionDeps)
  const refused: JobMeshReply = { ok: false, refused: 'no-lease' }
  const sessionsOf = (community: string) => {
    let n = 0
    for (const s of d.sessions.values()) if (s.kind === 'capability' && s.community === community) n++
    return n
  }
  // one ordered pipe of chunks per peer: a requester reads an agent's chunks in the order its node relayed them
  const pipes = new Map<string, OrderedPipe<JobChunksRequest['chunks'][number]>>()
  const pipeTo = (peer: string) => {
    let pipe = pipes.get(peer)
    if (pipe === undefined) {
      pipe = createOrderedPipe({
        send: async (chunks) => {
          await d.send(peer, { op: 'job-chunks', chunks }, CHUNKS_TIMEOUT_MS)
        },
        sizeOf: (c) => c.event.length + c.community.length,
        maxQueued: MAX_CHUNKS_QUEUED_PER_PEER,
        maxQueuedBytes: MAX_CHUNK_BYTES_QUEUED_PER_PEER,
        maxBatch: MAX_CHUNKS_PER_BATCH,
        maxBatchBytes: MAX_CHUNK_BATCH_BYTES,
        dropped: (count, error) => {
          d.metrics.jobChunksDropped.inc({ reason: 'failed' }, count)
          d.log.warn({ err: error, peer: peer.slice(0, 12), count }, 'job chunks did not reach a node')
        },
      })
      pipes.set(peer, pipe)
    }
    return pipe
  }

  const api: MeshJobs = {
    register(community, side) {
      sides.set(community, side)
      const counts = new Map<string, { open: number; atMs: number }>()
      owned.set(community, counts)
      return {
        openAt: (capability) => {
          const c = counts.get(capability)
          return c !== undefined && performance.now() - c.atMs < 3 * POLL_MS ? c.open : 0
        },
        delivered: new JobBoard(),
        relayChunk: (raw) => api.chunk(community, raw),
        afterChunks: (then) => {
          void Promise.all([...pipes.values()].map((p) => p.flushed())).then(then)
        },
        note(capability, note, spawn) {
          const ref = spawn
            ? session(community, capability)
            : d.kernel.lookup<CapabilitySessionMsg>(capabilitySessionPath(community, capabilitySessionId(capability)))
          if (ref) tell(ref, { type: 'Note', note })
        },
      }
    },
    unregister: (community) => {
      sides.delete(community)
      owned.delete(community)
      // its sessions hand their leases over (an owner releases, a forwarder stops)
      for (const s of [...d.sessions.values()]) {
        if (s.community !== community || s.kind !== 'capability') continue
        const ref = d.kernel.lookup<CapabilitySessionMsg>(capabilitySessionPath(community, s.session))
        if (ref) tell(ref, { type: 'Release', done: () => {} })
      }
    },
    peers: d.peers,
    chunk(community, raw) {
      const peers = d.peers()
      for (const peer of pipes.keys()) if (!peers.includes(peer) && pipes.get(peer)!.queued === 0) pipes.delete(peer)
      for (const peer of peers) if (!pipeTo(peer).push({ community, event: raw })) d.metrics.jobChunksDropped.inc({ reason: 'full' })
    },
    async deliver(runtime, request) {
      const reply = await d.send(runtime, request, DELIVER_TIMEOUT_MS)
      return reply.ok && reply.delivered === true
    },
    async answer(peer, request) {
      if (request.op === 'job-chunks') {
        for (const c of request.chunks) sides.get(c.community)?.chunkHere(c.event)
        return { ok: true }
      }
      if (request.op === 'job-deliver') {
        const side = sides.get(request.community)
        return { ok: true, delivered: side?.deliverHere(request) ?? false }
      }
      const { community, session: id, generation, owner } = request.fence
      const capability = capabilityOfSession(id)
      if (capability === undefined || !sides.has(community)) return refused
      // a peer's request makes a session only within the bound a community's own requests have
      const known = d.kernel.lookup(capabilitySessionPath(community, id)) !== undefined
      if (!known && sessionsOf(community) >= d.maxSessionsPerCommunity) return refused
      const ref = session(community, capability)
      if (request.op === 'job-owner') {
        if (request.open !== undefined) owned.get(community)?.set(capability, { open: request.open, atMs: performance.now() })
        const agents = await ask<CapabilitySessionMsg, Awaited<ReturnType<DispatchHost['agents']>> | undefined>(
          ref,
          (reply) => ({ type: 'Holder', holder: { owner, generation, kind: 'capability' }, reply }),
          ASK_MS,
        )
        return agents === undefined ? { ok: false, refused: 'stale' } : { ok: true, agents }
      }
      return ask<CapabilitySessionMsg, JobMeshReply>(
        ref,
        (reply) => ({ type: 'Remote', peer, fence: { generation, owner }, notes: request.notes, reply }),
        ASK_MS,
      )
    },
    peerSuspect(peer) {
      for (const s of d.sessions.values()) {
        if (!s.local || s.kind !== 'capability') continue
        const ref = d.kernel.lookup<CapabilitySessionMsg>(capabilitySessionPath(s.community, s.session))
        if (ref) tell(ref, { type: 'PeerGone', peer })
      }
    },
  }
  return api
}
