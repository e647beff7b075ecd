// State: one capability's dispatch session on this node, `mesh-session/<community>/capability:<name>` (docs/mesh.md
// §9): owner (lease, generation; the capability's dispatcher runs here, with the agents every other node reported)
// or forwarder (the holder it knows, and what this node's clients did waiting to go to it, one batch in flight).
// Messages: Note (this node's community), Remote (a peer's batch, with the fence it believes in), Holder (a peer
// took the session over), PeerGone, the owner's Poll of its peers' agents, the lease's I/O, Sent, Fenced, Release.
// Policy: permanent with a short backoff: a restart acquires again. A lost lease stops the actor and its
// dispatcher at once; the next message starts afresh, as a forwarder or as the next owner.
import type { AcquireOutcome, FenceRejection, LeaseRecord, RenewOutcome, SessionDirectory } from '../../infra/mesh/session-directory.js'
import type { SessionFence } from '../../infra/store/session-fence.js'
import type { AgentNote, JobMeshReply, JobMeshRequest, JobNote } from '../../protocols/mesh/job-frames.js'
import type { AgentCandidate } from '../jobs/agent-choice.js'
import type { Holder } from '../jobs/job-board.js'
import type { DispatcherMsg, DispatcherNote } from '../jobs/messages.js'
import { type ActorDef, type Kernel, pipeTo, type Settled, type TypedRef, tell, tellUntilTaken } from '../kernel/index.js'
import { fromWire, RemoteAgents, toDispatcher, toWire } from './capability-notes.js'
import { checkFence, type LeaseLoss, type Mode, type SessionView } from './session-actor.js'
import { SessionLease } from './session-lease.js'

type LocalNote = DispatcherNote

/** What the dispatcher on the owner node reads beside the session (a snapshot read of its state). */
export interface OwnerView {
  /** the fence its writes claim; undefined once the lease is not held (no assignment then) */
  fence(): SessionFence | undefined
  /** the live agents the other nodes reported (SUSPECT ones `holdsOnly`), their connections named `@<runtime>/<conn>` */
  remoteAgents(): AgentCandidate[]
  /** the jobs the other nodes' connections hold, as their last answer to a poll said */
  remoteHolders(): Map<string, Holder>
  /** a write of the dispatcher was fenced off: the session is someone else's */
  fenced(): void
}

/** This node's side of a community's dispatch: its dispatchers and its agents. */
export interface DispatchHost {
  dispatcher(capability: string, owner: OwnerView): TypedRef<DispatcherMsg>
  stopDispatcher(capability: string): void
  hasDispatcher(capability: string): boolean
  /** this node's live agent connections offering the capability (ACTIVE, or SUSPECT and `holdsOnly`); with `holds`, the jobs each holds */
  agents(capability: string, holds?: boolean): AgentNote[]
  /** the capability's open jobs as this node's dispatcher counts them */
  openCount(capability: string): number
}

export type CapabilitySessionMsg =
  | { type: 'Note'; note: LocalNote }
  | { type: 'Remote'; peer: string; fence: { generation: number; owner: string }; notes: JobNote[]; reply: (r: JobMeshReply) => void }
  /** a peer says it owns the session now (its poll); answered with this node's agents */
  | { type: 'Holder'; holder: LeaseRecord; reply: (agents: AgentNote[] | undefined) => void }
  | { type: 'PeerGone'; peer: string }
  | { type: 'Acquire' }
  | { type: 'Acquired'; outcome: Settled<AcquireOutcome> }
  | { type: 'Renew' }
  | { type: 'Renewed'; outcome: Settled<RenewOutcome> }
  | { type: 'Poll' }
  | { type: 'Polled'; agents: [string, AgentNote[] | undefined][] }
  | { type: 'Sent'; outcome: Settled<JobMeshReply>; count: number; lost: boolean; agents?: string }
  | { type: 'Fenced' }
  | { type: 'Release'; done: () => void }
  | { type: 'OwnerSuspect'; owner: string }

export interface CapabilitySessionDeps {
  runtime: string
  directory: SessionDirectory
  storedGeneration(community: string, session: string): Promise<number>
  host(community: string): DispatchHost | undefined
  /** the peers this node has a tunnel to */
  peers(): string[]
  /** a request to a peer over the tunnel; rejects when there is no link or it fails */
  send(peer: string, request: JobMeshRequest, timeoutMs: number): Promise<JobMeshReply>
  fenceRejected(reason: FenceRejection): void
  /** a note for the owner was dropped (apiary_job_notes_dropped_total) */
  notesDropped(): void
  leaseLost(reason: LeaseLoss): void
  sessions: Map<string, SessionView>
  renewMs: number
  /** monotonic ms */
  now(): number
  log: { warn(o: object, m: string): void; info(o: object, m: string): void }
}

interface Outgoing {
  note: JobNote
  atMs: number
  /** its JSON's length */
  bytes: number
}

interface State {
  mode: Mode
  acquiring: boolean
  renewing: boolean
  /** owner: notes heard before the first poll of the peers ended (the dispatcher starts then) */
  pending: LocalNote[]
  started: boolean
  /** owner: when it took the session (monotonic): the dispatcher waits for every peer's agents a while */
  ownedSinceMs?: number
  /** forwarder: what waits to go to the owner, oldest first, one batch in flight */
  outbox: Outgoing[]
  /** a batch is in flight, holding the outbox's first `inFlight` notes */
  sending: boolean
  inFlight: number
  failures: number
  /** forwarder: notes were dropped since the last batch the owner took: the next asks it to read the store again */
  lost?: boolean
  /** forwarder: this node's agents changed since it last sent them */
  agentsDirty: boolean
  sentAgents: string
  idleSinceMs: number
  suspect?: string
}

const PIPE = { everyMs: 100, forMs: 30_000 } as const
const SEND_TIMEOUT_MS = 5_000
/** The owner asks every peer for its agents this often; a node's report older than three rounds is not used. */
export const POLL_MS = 2_000
const POLL_TIMEOUT_MS = 1_000
/** how long a new owner asks again for the agents of peers that did not answer before its dispatcher starts */
const START_GRACE_MS = 5_000
const AGENTS_STALE_MS = 3 * POLL_MS
/** A forwarder whose owner does not answer asks the directory again this often. */
const RETRY_MS = 500
/** What a forwarder holds for an owner that does not answer: past these the oldest goes (the store keeps it). */
const MAX_OUTBOX = 10_000
const OUTBOX_DEADLINE_MS = 60_000
/** An owner whose dispatcher stopped (no open jobs) and that heard nothing for this long gives the session up. */
const OWNER_IDLE_MS = 300_000
const MAX_BATCH = 256
const MAX_BATCH_BYTES = 4 * 2 ** 20

export const capabilitySessionPath = (community: string, session: string) => `mesh-session/${community}/${session}`

export function spawnCapabilitySession(
  kernel: Kernel,
  community: string,
  session: string,
  capability: string,
  deps: CapabilitySessionDeps,
): TypedRef<CapabilitySessionMsg> {
  const key = `${community}/${session}`
  let pollTimer: NodeJS.Timeout | undefined
  let self: TypedRef<CapabilitySessionMsg> | undefined
  // read beside the actor by its dispatcher: the lease's validity and the other nodes' agents
  const lease = new SessionLease(community, session, 'capability', deps)
  const leaseHeld = () => lease.held()
  const remote = new RemoteAgents(AGENTS_STALE_MS)
  const view: OwnerView = {
    fence: () => (leaseHeld() ? { community, session, generation: lease.generation, owner: deps.runtime } : undefined),
    remoteAgents: () => remote.agents(deps.now()),
    remoteHolders: () => remote.holders(deps.now()),
    fenced: () => {
      if (self) tell(self, { type: 'Fenced' })
    },
  }
  const host = () => deps.host(community)

  const def: ActorDef<State, CapabilitySessionMsg> = {
    kind: 'mesh-session',
    policy: { mode: 'permanent', backoff: { minMs: 200, maxMs: 5_000, jitter: 0.2 }, maxRestarts: 20, windowMs: 60_000 },
    idleStopMs: 60_000,
    init: (ctx) => {
      self = ctx.self
      tell(ctx.self, { type: 'Acquire' })
      return {
        mode: { role: 'starting' },
        acquiring: false,
        renewing: false,
        pending: [],
        started: false,
        outbox: [],
        sending: false,
        inFlight: 0,
        failures: 0,
        agentsDirty: true,
        sentAgents: '',
        idleSinceMs: deps.now(),
      }
    },
    handle: (state, msg, ctx) => {
      const self = ctx.self
      switch (msg.type) {
        case 'Note':
          return onNote(state, msg.note, self)
        case 'Remote':
          return onRemote(state, msg, self)
        case 'Holder':
          return onHolder(state, msg, self)
        case 'PeerGone':
          return onPeerGone(state, msg.peer)
        case 'Acquire':
          return onAcquire(state, self)
        case 'Acquired':
          return onAcquired(state, msg.outcome, self)
        case 'Renew':
          return onRenew(state, self)
        case 'Renewed':
          return onRenewed(state, msg.outcome, self)
        case 'Poll':
          return poll(state, self)
        case 'Polled':
          return onPolled(state, msg.agents, self)
        case 'Sent':
          return onSent(state, msg, self)
        case 'Fenced':
          return state.mode.role === 'owner' ? stopNow(state, self, 'fenced') : state
        case 'Release':
          return release(state, msg.done, self)
        case 'OwnerSuspect':
          if (state.mode.role !== 'forwarder' || state.mode.holder.owner !== msg.owner) return state
          state.suspect = msg.owner
          retryLater(self, RETRY_MS)
          return state
      }
    },
    afterStop: (state) => {
      lease.stop()
      clearInterval(pollTimer)
      remote.clear()
      deps.sessions.delete(key)
      if (state.mode.role === 'owner') host()?.stopDispatcher(capability)
    },
  }

  function dispatcher(): TypedRef<DispatcherMsg> | undefined {
    return host()?.dispatcher(capability, view)
  }

  /** To the dispatcher here, offered again while it is full or restarting (the store keeps what it misses). */
  function tellDispatcher(msg: DispatcherMsg): void {
    const ref = dispatcher()
    if (ref === undefined) return
    tellUntilTaken(ref, msg, {
      everyMs: 500,
      forMs: 60_000,
      onGiveUp: () => {
        // the store has what it said: the dispatcher's next read of its open jobs makes up for it
        deps.notesDropped()
        deps.log.warn({ community, capability, type: msg.type }, 'a job dispatcher did not take a message')
      },
    })
  }

  function onNote(state: State, note: LocalNote, self: TypedRef<CapabilitySessionMsg>): State {
    state.idleSinceMs = deps.now()
    if (state.mode.role === 'owner') {
      if (!state.started) state.pending.push(note)
      else tellDispatcher(toDispatcher(note))
      return state
    }
    if (note.type === 'Agents') state.agentsDirty = true
    else {
      if (state.outbox.length >= MAX_OUTBOX) dropOldest(state, 'the outbox is full')
      const wire = toWire(note)
      state.outbox.push({ note: wire, atMs: deps.now(), bytes: JSON.stringify(wire).length })
    }
    flush(state, self)
    return state
  }

  /** One batch to the holder if none is in flight: what waits, and this node's agents if they changed. */
  function flush(state: State, self: TypedRef<CapabilitySessionMsg>): void {
    const mode = state.mode
    if (mode.role !== 'forwarder' || state.sending || deps.now() < mode.retryAtMs) return
    const now = deps.now()
    while (state.outbox[0] && now - state.outbox[0].atMs > OUTBOX_DEADLINE_MS) dropOldest(state, 'no owner answered in time')
    // a batch is bounded by count and by bytes: the tunnel refuses a body past 16 MiB
    const notes: JobNote[] = []
    let bytes = 0
    for (const o of state.outbox) {
      if (notes.length >= MAX_BATCH || (notes.length > 0 && bytes + o.bytes > MAX_BATCH_BYTES)) break
      notes.push(o.note)
      bytes += o.bytes
    }
    const count = notes.length
    const lost = state.lost === true
    if (lost) notes.push({ type: 'Resync' })
    let agents: string | undefined
    if (state.agentsDirty) {
      const mine = host()?.agents(capability) ?? []
      agents = JSON.stringify(mine)
      if (agents === state.sentAgents) state.agentsDirty = false
      else if (notes.length < MAX_BATCH) notes.push({ type: 'Agents', agents: mine })
    }
    if (notes.length === 0) return
    state.sending = true
    state.inFlight = count
    const request: JobMeshRequest = {
      op: 'jobs',
      fence: { community, session, generation: mode.holder.generation, owner: mode.holder.owner },
      notes,
    }
    pipeTo(
      self,
      deps.send(mode.holder.owner, request, SEND_TIMEOUT_MS),
      (o): CapabilitySessionMsg => ({ type: 'Sent', outcome: o, count, lost, ...(agents === undefined ? {} : { agents }) }),
      PIPE,
    )
  }

  /** the oldest note not in flight: the store has what it says, and the owner reads the store again (Resync) */
  function dropOldest(state: State, why: string): void {
    const [dropped] = state.outbox.splice(state.inFlight, 1)
    if (!dropped) return
    deps.notesDropped()
    state.lost = true
    deps.log.warn({ community, capability, type: dropped.note.type, why }, 'a job note for the owner was dropped')
  }

  function onSent(state: State, msg: Extract<CapabilitySessionMsg, { type: 'Sent' }>, self: TypedRef<CapabilitySessionMsg>): State {
    state.sending = false
    state.inFlight = 0
    if (msg.outcome.ok && msg.outcome.value.ok) {
      state.outbox.splice(0, msg.count)
      state.failures = 0
      if (msg.lost) state.lost = false
      if (msg.agents !== undefined) {
        state.sentAgents = msg.agents
        state.agentsDirty = false
      }
      flush(state, self)
      return state
    }
    // refused or unreachable: ask the directory again, at once the first time, then every RETRY_MS
    state.failures++
    const delayMs = state.failures === 1 ? 0 : RETRY_MS
    if (state.mode.role === 'forwarder') state.mode.retryAtMs = deps.now() + delayMs
    state.agentsDirty = true
    state.sentAgents = ''
    retryLater(self, delayMs)
    return state
  }

  function onRemote(state: State, msg: Extract<CapabilitySessionMsg, { type: 'Remote' }>, self: TypedRef<CapabilitySessionMsg>): State {
    state.idleSinceMs = deps.now()
    const refused = checkFence(state.mode, msg.fence, deps.runtime, leaseHeld(), 'capability')
    if (refused) {
      deps.fenceRejected(refused.refused)
      msg.reply({ ok: false, refused: refused.refused, ...(refused.holder ? { holder: holderOf(refused.holder) } : {}) })
      return refused.refused === 'future' ? stopNow(state, self, 'superseded') : state
    }
    for (const note of msg.notes) {
      if (note.type === 'Agents') {
        gone(state, remote.report(msg.peer, note.agents, deps.now(), false))
        onNote(state, { type: 'Agents' }, self)
      } else onNote(state, fromWire(note, msg.peer), self)
    }
    msg.reply({ ok: true })
    return state
  }

  function onHolder(state: State, msg: Extract<CapabilitySessionMsg, { type: 'Holder' }>, self: TypedRef<CapabilitySessionMsg>): State {
    const mode = state.mode
    const known = mode.role === 'owner' ? mode.generation : mode.role === 'forwarder' ? mode.holder.generation : 0
    if (msg.holder.generation < known) {
      msg.reply(undefined)
      return state
    }
    // a newer owner: this one was superseded (its own renewal would say so soon)
    if (mode.role === 'owner' && msg.holder.owner !== deps.runtime) return stopNow(state, self, 'superseded')
    if (mode.role !== 'owner') {
      const changed = mode.role !== 'forwarder' || mode.holder.owner !== msg.holder.owner
      state.mode = { role: 'forwarder', holder: msg.holder, retryAtMs: changed || mode.role !== 'forwarder' ? 0 : mode.retryAtMs }
      publishView(state)
    }
    const agents = host()?.agents(capability, true) ?? []
    // what an Agents note would carry: the same agents without the jobs they hold
    state.sentAgents = JSON.stringify(agents.map(({ holds: _, ...a }) => a))
    state.agentsDirty = false
    msg.reply(agents)
    flush(state, self)
    return state
  }

  /**
   * Other nodes' connections gone for the dispatcher: their node is, or no longer reports them (closed or lapsed
   * there), in case its AgentGone note was lost.
   */
  function gone(state: State, conns: string[]): void {
    if (state.mode.role !== 'owner' || !state.started) return
    for (const conn of conns) tellDispatcher({ type: 'AgentGone', conn, why: 'closed' })
  }

  function onPeerGone(state: State, peer: string): State {
    gone(state, remote.drop(peer))
    return state
  }

  function onAcquire(state: State, self: TypedRef<CapabilitySessionMsg>): State {
    if (state.acquiring || state.mode.role === 'owner') return state
    state.acquiring = true
    pipeTo(self, lease.acquire(), (o): CapabilitySessionMsg => ({ type: 'Acquired', outcome: o }), PIPE)
    return state
  }

  function onAcquired(state: State, outcome: Settled<AcquireOutcome>, self: TypedRef<CapabilitySessionMsg>): State {
    state.acquiring = false
    if (!outcome.ok) {
      deps.log.warn({ err: outcome.error, community, session }, 'mesh session acquire failed')
      retryLater(self, 1_000)
      return state
    }
    const o = outcome.value
    if (o.acquired || o.holder.owner === deps.runtime) {
      const generation = lease.own(o, () => tell(self, { type: 'Renew' }))
      state.mode = { role: 'owner', generation }
      state.ownedSinceMs = deps.now()
      clearInterval(pollTimer)
      pollTimer = setInterval(() => tell(self, { type: 'Poll' }), POLL_MS)
      // the dispatcher starts once the peers said which agents they have: a job held by an agent on another node
      // stays with it rather than going to another agent for want of knowing it
      poll(state, self)
      // what this node held for the previous owner is the dispatcher's now (its own reads cover the rest)
      state.pending.push(...state.outbox.splice(0).flatMap((o) => (o.note.type === 'Agents' ? [] : [fromWire(o.note, deps.runtime, true)])))
      deps.log.info({ community, session, generation }, 'mesh session owned here')
    } else {
      const changed = state.mode.role !== 'forwarder' || state.mode.holder.owner !== o.holder.owner
      state.mode = { role: 'forwarder', holder: o.holder, retryAtMs: 0 }
      if (changed) state.agentsDirty = true
      if (state.suspect === o.holder.owner) retryLater(self, Math.min(RETRY_MS, o.remainingMs + 1))
      else state.suspect = undefined
    }
    publishView(state)
    flush(state, self)
    return state
  }

  function poll(state: State, self: TypedRef<CapabilitySessionMsg>): State {
    const mode = state.mode
    if (mode.role !== 'owner') return state
    const fence = { community, session, generation: mode.generation, owner: deps.runtime }
    const asked = deps.peers().map((peer) =>
      deps.send(peer, { op: 'job-owner', fence, open: host()?.openCount(capability) ?? 0 }, POLL_TIMEOUT_MS).then(
        (r): [string, AgentNote[] | undefined] => [peer, r.ok ? r.agents : undefined],
        (): [string, AgentNote[] | undefined] => [peer, undefined],
      ),
    )
    pipeTo(self, Promise.all(asked), (o): CapabilitySessionMsg => ({ type: 'Polled', agents: o.ok ? o.value : [] }), PIPE)
    return state
  }

  function onPolled(state: State, answers: [string, AgentNote[] | undefined][], self: TypedRef<CapabilitySessionMsg>): State {
    if (state.mode.role !== 'owner') return state
    const now = deps.now()
    let more = false
    for (const [peer, agents] of answers) {
      if (agents === undefined) continue
      more ||= agents.length > 0
      gone(state, remote.report(peer, agents, now, true))
    }
    // a peer that did not answer yet may hold agents working on this capability's jobs: ask again, a while
    const unanswered = answers.some(([, agents]) => agents === undefined)
    if (!state.started && unanswered && now - (state.ownedSinceMs ?? now) < START_GRACE_MS) return poll(state, self)
    if (!state.started) {
      state.started = true
      dispatcher()
      for (const note of state.pending.splice(0)) tellDispatcher(toDispatcher(note))
    } else if (more) tellDispatcher({ type: 'AgentReady' })
    return state
  }

  function onRenew(state: State, self: TypedRef<CapabilitySessionMsg>): State {
    const m = state.mode
    if (m.role !== 'owner' || state.renewing) return state
    if (!host()?.hasDispatcher(capability) && deps.now() - state.idleSinceMs > OWNER_IDLE_MS) return release(state, () => {}, self)
    state.renewing = true
    pipeTo(self, lease.renew(), (o): CapabilitySessionMsg => ({ type: 'Renewed', outcome: o }), PIPE)
    return state
  }

  function onRenewed(state: State, outcome: Settled<RenewOutcome>, self: TypedRef<CapabilitySessionMsg>): State {
    state.renewing = false
    if (state.mode.role !== 'owner') return state
    if (!outcome.ok || !lease.renewed(outcome.value)) return stopNow(state, self, outcome.ok ? 'renewal-refused' : 'renewal-failed')
    return state
  }

  function retryLater(self: TypedRef<CapabilitySessionMsg>, ms: number): void {
    lease.retryLater(ms, () => tell(self, { type: 'Acquire' }))
  }

  function publishView(state: State): void {
    const m = state.mode
    if (m.role === 'owner')
      deps.sessions.set(key, { community, session, kind: 'capability', generation: m.generation, owner: deps.runtime, local: true })
    else if (m.role === 'forwarder')
      deps.sessions.set(key, {
        community,
        session,
        kind: 'capability',
        generation: m.holder.generation,
        owner: m.holder.owner,
        local: false,
      })
  }

  /** The lease is gone: the dispatcher stops here (the next owner reads the store); the next message starts afresh. */
  function stopNow(state: State, self: TypedRef<CapabilitySessionMsg>, why: LeaseLoss): State {
    deps.log.warn({ community, session, why }, 'mesh session stops')
    if (state.mode.role === 'owner') deps.leaseLost(why)
    lease.stop()
    void kernel.stop(self.path)
    return state
  }

  function release(state: State, done: () => void, self: TypedRef<CapabilitySessionMsg>): State {
    if (state.mode.role === 'owner') {
      host()?.stopDispatcher(capability)
      void lease.release().then(done)
    } else {
      lease.stop()
      done()
    }
    void kernel.stop(self.path)
    return state
  }

  return kernel.getOrSpawn(capabilitySessionPath(community, session), def)
}

const holderOf = (h: LeaseRecord) => ({ owner: h.owner, generation: h.generation })
