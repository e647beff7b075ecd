// State: one channel session's role on this node — owner (lease, generation, validity on the monotonic
// clock) or forwarder (the holder it knows) — and the moderation events waiting, one in flight at a time.
// Messages: Moderate (from the local community, or from a peer with the fence it believes in), the lease's
// I/O results (Acquired, Renewed), the work's results (Done, Forwarded), Retry, Release (drain).
// Policy: permanent with a short backoff: a restart acquires again and finds its own lease if it still holds
// one. A lost lease (failed renew, a fence refusal) stops the actor at once: the next message starts afresh.
import type { AcquireOutcome, FenceRejection, LeaseRecord, RenewOutcome, SessionDirectory } from '../../infra/mesh/session-directory.js'
import { FencedError } from '../../infra/store/session-fence.js'
import type { ForwardedAuth, ModerateReply, ModerateRequest } from '../../protocols/mesh/session-frames.js'
import type { VerifiedEvent } from '../../protocols/nip01/event.js'
import { reason } from '../../protocols/reasons.js'
import { DeferredState, type RelayEvent, type StateWanted } from '../community/community-channels.js'
import type { PublishOutcome } from '../community/messages.js'
import { type ActorDef, type Kernel, pipeTo, type Settled, type TypedRef, tell } from '../kernel/index.js'
import { LeaseLostError, type Moderated, moderateAsOwner, type OwnerLease, type OwnerSinks, publishStateAsOwner } from './channel-owner.js'
import { SessionLease } from './session-lease.js'

/** What a peer hears: the outcome, or why its frame was refused (and who holds the lease, if known). */
export type SessionAnswer =
  | { outcome: PublishOutcome; generation: number; owner: string }
  | { refused: FenceRejection; holder?: LeaseRecord }

/** A moderation event, or the channel's state published again (deferred past a burst of changes). */
type Work = { reply: (a: SessionAnswer) => void; deadlineMs: number; failures?: number } & (
  | {
      kind: 'moderate'
      event: VerifiedEvent
      raw: string
      /** the client's AUTH state: sent along when forwarded, judged on by the owner when the work came from a peer */
      auth: ForwardedAuth
      fromPeer: boolean
    }
  | { kind: 'state'; what: StateWanted }
)

export type SessionMsg =
  | {
      type: 'Moderate'
      event: VerifiedEvent
      raw: string
      reply: (a: SessionAnswer) => void
      auth: ForwardedAuth
      remote?: { generation: number; owner: string }
    }
  | { type: 'Acquire' }
  | { type: 'Acquired'; outcome: Settled<AcquireOutcome> }
  | { type: 'Renew' }
  | { type: 'Renewed'; outcome: Settled<RenewOutcome> }
  | { type: 'Done'; outcome: Settled<Moderated> }
  | { type: 'Forwarded'; outcome: Settled<ModerateReply> }
  | { type: 'Release'; done: () => void }
  | { type: 'PublishState'; what: StateWanted }
  /** membership suspects the holder: ask the directory until the lease lapses and someone (maybe us) takes over */
  | { type: 'OwnerSuspect'; owner: string }

/** Known sessions, for /mesh/status: written by the session actors, read beside them. */
export type SessionView = { community: string; session: string; kind: string; generation: number; owner: string; local: boolean }

export interface SessionDeps {
  runtime: string
  directory: SessionDirectory
  /** the highest generation that wrote for the session (the ACQUIRE floor) */
  storedGeneration(community: string, session: string): Promise<number>
  sinks: OwnerSinks
  /** a request to the owner's node over the tunnel; rejects when there is no link or it fails */
  forward(owner: string, request: ModerateRequest, timeoutMs: number): Promise<ModerateReply>
  /** deliver what the owner stored to this node's community (fan-out) and publish it to the others */
  deliver(community: string, events: RelayEvent[]): void
  fenceRejected(reason: FenceRejection): void
  /** this node owned the session and no longer does, without giving it up (apiary_mesh_leases_lost_total{reason}) */
  leaseLost(reason: LeaseLoss): void
  sessions: Map<string, SessionView>
  renewMs: number
  /** how long a moderation may wait for an owner before it is answered `error:` */
  workDeadlineMs: number
  /** monotonic ms */
  now(): number
  log: { warn(o: object, m: string): void; info(o: object, m: string): void }
}

/**
 * How an owner learnt its lease was gone: the directory refused or could not answer a renewal, a write was
 * fenced off, or a peer named a newer generation.
 */
export type LeaseLoss = 'renewal-refused' | 'renewal-failed' | 'fenced' | 'superseded'

/** A session's role on this node. */
export type Mode =
  | { role: 'starting' }
  | { role: 'owner'; generation: number }
  | { role: 'forwarder'; holder: LeaseRecord; retryAtMs: number }

interface State {
  mode: Mode
  queue: Work[]
  busy: Work | undefined
  acquiring: boolean
  renewing: boolean
  idleSinceMs: number
  release?: () => void
  /** the holder membership suspects: keep asking the directory while it still holds the lease */
  suspect?: string
}

const PIPE = { everyMs: 100, forMs: 30_000 } as const
/** An owner with nothing to do for this long gives the session up (RELEASE): leases cost a renewal each. */
const OWNER_IDLE_MS = 300_000
const FORWARD_TIMEOUT_MS = 5_000
/** A forwarder whose owner does not answer asks the directory again this often (so within 1 s of expiry). */
const RETRY_MS = 500

const unavailable = (text: string): SessionAnswer => ({
  outcome: { accepted: false, message: reason('error', text) },
  generation: 0,
  owner: '',
})

export function spawnSession(kernel: Kernel, community: string, session: string, channel: string, deps: SessionDeps): TypedRef<SessionMsg> {
  const key = `${community}/${session}`
  // the lease's validity, read by the work beside the actor (a snapshot read of actor state); the mode holds the rest
  const lease = new SessionLease(community, session, 'channel', deps)
  const leaseHeld = () => lease.held()
  let self: TypedRef<SessionMsg> | undefined
  const deferred = new DeferredState((_channel, what) => self !== undefined && tell(self, { type: 'PublishState', what }))
  const ownerLease: OwnerLease = {
    guard: () => {
      if (!leaseHeld()) throw new LeaseLostError(`mesh session ${community}/${session}: lease no longer held`)
    },
    defer: (what) => deferred.add(channel, what),
  }

  const def: ActorDef<State, SessionMsg> = {
    kind: 'mesh-session',
    policy: { mode: 'permanent', backoff: { minMs: 200, maxMs: 5_000, jitter: 0.2 }, maxRestarts: 20, windowMs: 60_000 },
    idleStopMs: 60_000,
    init: (ctx) => {
      self = ctx.self
      tell(ctx.self, { type: 'Acquire' })
      return { mode: { role: 'starting' }, queue: [], busy: undefined, acquiring: false, renewing: false, idleSinceMs: deps.now() }
    },
    handle: (state, msg, ctx) => {
      const self = ctx.self
      switch (msg.type) {
        case 'Moderate':
          return onModerate(state, msg, self)
        case 'Acquire':
          return onAcquire(state, self)
        case 'Acquired':
          return onAcquired(state, msg.outcome, self)
        case 'Renew':
          return onRenew(state, self)
        case 'Renewed':
          return onRenewed(state, msg.outcome, self)
        case 'Done':
          return onDone(state, msg.outcome, self)
        case 'Forwarded':
          return onForwarded(state, msg.outcome, self)
        case 'Release':
          return release(state, msg.done, self)
        case 'OwnerSuspect':
          if (state.mode.role !== 'forwarder' || state.mode.holder.owner !== msg.owner) return state
          state.suspect = msg.owner
          retryLater(self, RETRY_MS)
          return state
        case 'PublishState':
          state.queue.push({ kind: 'state', what: msg.what, reply: () => {}, deadlineMs: deps.now() + deps.workDeadlineMs })
          next(state, self)
          return state
      }
    },
    afterStop: (state) => {
      deferred.stop()
      lease.stop()
      deps.sessions.delete(key)
      for (const w of [...(state.busy ? [state.busy] : []), ...state.queue]) w.reply(unavailable('the channel owner is moving, retry'))
      state.release?.()
    },
  }

  /** Starts the next work if nothing is in flight: as owner while the lease is held, else forwarded to the holder. */
  function next(state: State, self: TypedRef<SessionMsg>): void {
    if (state.busy || state.queue.length === 0) return
    const now = deps.now()
    while (state.queue[0] && state.queue[0].deadlineMs <= now)
      state.queue.shift()!.reply(unavailable('no channel owner answered in time, retry'))
    const work = state.queue[0]
    if (!work) return
    const mode = state.mode
    if (mode.role === 'owner' && leaseHeld()) {
      state.busy = state.queue.shift()
      const fence = { community, session, generation: mode.generation, owner: deps.runtime }
      const running =
        work.kind === 'state'
          ? publishStateAsOwner(work.what, fence, channel, deps.sinks, ownerLease)
          : moderateAsOwner(work.event, work.raw, fence, channel, deps.sinks, ownerLease, work.fromPeer ? work.auth : undefined)
      pipeTo(self, running, (o): SessionMsg => ({ type: 'Done', outcome: o }), PIPE)
    } else if (mode.role === 'forwarder') {
      if (work.kind === 'state') {
        state.queue.shift() // the state is the owner's to publish: it republishes after its own changes
        next(state, self)
        return
      }
      if (now < mode.retryAtMs) return
      state.busy = state.queue.shift()
      const request: ModerateRequest = {
        op: 'moderate',
        fence: { community, session, generation: mode.holder.generation, owner: mode.holder.owner },
        event: work.raw,
        auth: work.auth,
      }
      pipeTo(
        self,
        deps.forward(mode.holder.owner, request, FORWARD_TIMEOUT_MS),
        (o): SessionMsg => ({ type: 'Forwarded', outcome: o }),
        PIPE,
      )
    }
  }

  function retryLater(self: TypedRef<SessionMsg>, ms: number): void {
    lease.retryLater(ms, () => tell(self, { type: 'Acquire' }))
  }

  function publishView(state: State): void {
    const m = state.mode
    if (m.role === 'owner')
      deps.sessions.set(key, { community, session, kind: 'channel', generation: m.generation, owner: deps.runtime, local: true })
    else if (m.role === 'forwarder')
      deps.sessions.set(key, { community, session, kind: 'channel', generation: m.holder.generation, owner: m.holder.owner, local: false })
  }

  /** The lease is gone (or never was ours): no side effect from here on; the next message starts afresh. */
  function stopNow(state: State, self: TypedRef<SessionMsg>, why: LeaseLoss): State {
    deps.log.warn({ community, session, why }, 'mesh session stops')
    if (state.mode.role === 'owner') {
      deps.leaseLost(why)
      // what waited for this owner is refused, not written: a stale owner's attempts show in the fence counters
      for (const w of state.queue) if (w.kind === 'moderate') deps.fenceRejected('stale')
    }
    lease.stop()
    void kernel.stop(self.path)
    return state
  }

  function onModerate(state: State, msg: Extract<SessionMsg, { type: 'Moderate' }>, self: TypedRef<SessionMsg>): State {
    state.idleSinceMs = deps.now()
    if (msg.remote) {
      const refused = checkFence(state.mode, msg.remote, deps.runtime, leaseHeld())
      if (refused) {
        deps.fenceRejected(refused.refused)
        msg.reply(refused)
        return refused.refused === 'future' ? stopNow(state, self, 'superseded') : state
      }
    }
    state.queue.push({
      kind: 'moderate',
      event: msg.event,
      raw: msg.raw,
      auth: msg.auth,
      fromPeer: msg.remote !== undefined,
      reply: msg.reply,
      deadlineMs: deps.now() + deps.workDeadlineMs,
    })
    next(state, self)
    return state
  }

  function onAcquire(state: State, self: TypedRef<SessionMsg>): State {
    if (state.acquiring || state.mode.role === 'owner') return state
    state.acquiring = true
    pipeTo(self, lease.acquire(), (o): SessionMsg => ({ type: 'Acquired', outcome: o }), PIPE)
    return state
  }

  function onAcquired(state: State, outcome: Settled<AcquireOutcome>, self: TypedRef<SessionMsg>): State {
    state.acquiring = false
    if (!outcome.ok) {
      deps.log.warn({ err: outcome.error, community, session }, 'mesh session acquire failed')
      retryLater(self, 1_000)
      return state
    }
    const o = outcome.value
    if (o.acquired || o.holder.owner === deps.runtime) {
      // our own lease found after a restart: valid only once a renewal says so
      const generation = lease.own(o, () => tell(self, { type: 'Renew' }))
      state.mode = { role: 'owner', generation }
      deps.log.info({ community, session, generation }, 'mesh session owned here')
    } else {
      state.mode = { role: 'forwarder', holder: o.holder, retryAtMs: 0 }
      if (state.suspect === o.holder.owner) retryLater(self, Math.min(RETRY_MS, o.remainingMs + 1))
      else state.suspect = undefined
    }
    publishView(state)
    next(state, self)
    return state
  }

  function onRenew(state: State, self: TypedRef<SessionMsg>): State {
    const m = state.mode
    if (m.role !== 'owner' || state.renewing) return state
    if (!state.busy && state.queue.length === 0 && deps.now() - state.idleSinceMs > OWNER_IDLE_MS) return release(state, () => {}, self)
    state.renewing = true
    pipeTo(self, lease.renew(), (o): SessionMsg => ({ type: 'Renewed', outcome: o }), PIPE)
    return state
  }

  function onRenewed(state: State, outcome: Settled<RenewOutcome>, self: TypedRef<SessionMsg>): State {
    state.renewing = false
    if (state.mode.role !== 'owner') return state
    if (!outcome.ok || !lease.renewed(outcome.value)) return stopNow(state, self, outcome.ok ? 'renewal-refused' : 'renewal-failed')
    next(state, self)
    return state
  }

  function onDone(state: State, outcome: Settled<Moderated>, self: TypedRef<SessionMsg>): State {
    const work = state.busy
    state.busy = undefined
    if (!work) return state
    if (outcome.ok) {
      const { outcome: answer, events } = outcome.value
      if (events.length > 0) deps.deliver(community, events)
      work.reply({ outcome: answer, generation: lease.generation, owner: deps.runtime })
      if (state.release) return release(state, state.release, self)
      next(state, self)
      return state
    }
    work.reply(unavailable('the channel owner changed, retry'))
    const error = outcome.error
    if (error instanceof FencedError || error instanceof LeaseLostError) {
      deps.fenceRejected('stale')
      return stopNow(state, self, 'fenced')
    }
    deps.log.warn({ err: error, community, session }, 'channel moderation failed')
    next(state, self)
    return state
  }

  function onForwarded(state: State, outcome: Settled<ModerateReply>, self: TypedRef<SessionMsg>): State {
    const work = state.busy
    state.busy = undefined
    if (!work) return state
    if (outcome.ok && outcome.value.ok) {
      work.reply({ outcome: toOutcome(outcome.value), generation: outcome.value.generation, owner: outcome.value.owner })
      next(state, self)
      return state
    }
    // Refused or unreachable: ask the directory again. At once the first time (an owner that drained released
    // its lease, so the directory hands the session over now), then every RETRY_MS while a dead owner's lease
    // runs out, so a forwarder never spins on a lease that is still held.
    work.failures = (work.failures ?? 0) + 1
    const delayMs = work.failures === 1 ? 0 : RETRY_MS
    state.queue.unshift(work)
    if (state.mode.role === 'forwarder') state.mode.retryAtMs = deps.now() + delayMs
    retryLater(self, delayMs)
    return state
  }

  function release(state: State, done: () => void, self: TypedRef<SessionMsg>): State {
    const m = state.mode
    if (m.role !== 'owner') {
      done()
      void kernel.stop(self.path)
      return state
    }
    if (state.busy) {
      state.release = done
      return state
    }
    void lease.release().then(done)
    state.release = undefined
    void kernel.stop(self.path)
    return state
  }

  return kernel.getOrSpawn(`mesh-session/${community}/${session}`, def)
}

/** A peer's frame against what this node holds for a session of `kind`: undefined when it may be acted on. */
export function checkFence(
  mode: Mode,
  remote: { generation: number; owner: string },
  runtime: string,
  held: boolean,
  kind = 'channel',
): { refused: FenceRejection; holder?: LeaseRecord } | undefined {
  if (mode.role !== 'owner' || !held) return { refused: 'no-lease', holder: mode.role === 'forwarder' ? mode.holder : undefined }
  const holder = { owner: runtime, generation: mode.generation, kind }
  if (remote.generation > mode.generation) return { refused: 'future', holder }
  if (remote.generation < mode.generation) return { refused: 'stale', holder }
  if (remote.owner !== runtime) return { refused: 'owner-mismatch', holder }
  return undefined
}

function toOutcome(r: Extract<ModerateReply, { ok: true }>): PublishOutcome {
  return r.accepted
    ? { accepted: true, message: r.message as PublishOutcome['message'] }
    : { accepted: false, message: r.message as Extract<PublishOutcome, { accepted: false }>['message'] }
}
