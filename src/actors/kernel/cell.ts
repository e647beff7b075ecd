import { cappedBackoffDelayMs } from '../../protocols/backoff.js'
import { decideOnDrainCrash, type SupervisedCell } from './crash-policy.js'
import { DRAIN_BATCH, DRAIN_TOKEN, DrainQueue, HandlerFault, registerTurns } from './drain.js'
import { DropReporter } from './drop-reporter.js'
import { ActorDownError, ActorStoppedError, describeError, HandlerCrashedError } from './errors.js'
import type { CellPlacement, KernelEnv } from './kernel-env.js'
import { type Admission, bindRef, failRepliesIn, PendingAsks, type RefTarget } from './messaging.js'
import { forgetFiredImmediate, type NactActor, type NactRef, nact, nactActorOf, toNactName } from './nact-binding.js'
import { DEFAULT_MAILBOX_CAPACITY, FailureWindow, resolvePolicy } from './policy.js'
import type {
  ActorContext,
  ActorDef,
  ActorPath,
  ActorPhase,
  Clock,
  StopReason,
  SupervisionPolicy,
  SupervisorPath,
  TypedRef,
} from './types.js'

function isMessage(msg: unknown): boolean {
  return typeof msg === 'object' && msg !== null && typeof (msg as { type?: unknown }).type === 'string'
}

/**
 * One actor: admission (bounded mailbox, restart stash), the drain nact runs, idle stop, and our own stop
 * (nact's stop neither awaits nor guards afterStop, and skips children).
 *
 * Batching (see drain.ts): admitted messages wait in `queue`; at most one DRAIN_TOKEN is with nact at a
 * time, and nact still runs it, so its serial execution and onCrash/reset supervision stay in charge. A
 * drain runs queued messages one by one, awaiting each, up to DRAIN_BATCH, then hands nact a new token if
 * any remain. A message told during a drain joins the queue and may run in the same drain: order is
 * admission order either way, and the cap still bounds the turn.
 */
export class ActorCell<S, M extends { type: string }> implements RefTarget, SupervisedCell<S, M> {
  readonly ref: TypedRef<M>
  readonly ctx: ActorContext<M>
  readonly kind: string
  readonly supervisor: SupervisorPath
  readonly policy: SupervisionPolicy
  readonly unreadyWhileRestarting: boolean
  readonly clock: Clock
  readonly pendingAsks = new PendingAsks()
  readonly failures = new FailureWindow()
  phase: ActorPhase = 'running'
  state!: S
  /** 1-based number of the last restart attempt; 0 when stable */
  attempt = 0
  /** 1-based number of the last respawn after giving up; starts again once a respawn ran resetAfterMs */
  private respawnAttempt = 0
  private respawnedAt = Number.NEGATIVE_INFINITY
  /** when the current incarnation started running; +Infinity while waiting to restart */
  runningSince: number
  /** the wait before a restart or respawn; expedite ends a restart's wait early (ActorDef.endsBackoff) */
  backoff: { cancel(): void; expedite?(): void } | undefined
  private readonly capacity: number
  private readonly drops: DropReporter
  private readonly placement: CellPlacement
  private nactRef: NactRef
  private nactActor: NactActor | undefined
  // admitted and not yet finished: queued + the one running (nact's own mailbox is unbounded)
  private inFlight = 0
  private readonly queue: DrainQueue<M>
  private handling = false
  private stash: M[] = []
  private stopping: Promise<void> | undefined
  private handlerDone: (() => void) | undefined
  private idleTimer: unknown = undefined
  private lastActivityAt: number

  constructor(
    readonly path: ActorPath,
    readonly def: ActorDef<S, M>,
    readonly env: KernelEnv,
    placement: CellPlacement,
  ) {
    this.kind = def.kind
    this.supervisor = placement.supervisor
    this.policy = resolvePolicy(def.policy)
    this.unreadyWhileRestarting = def.unreadyWhileRestarting ?? true
    this.capacity = def.mailboxCapacity ?? DEFAULT_MAILBOX_CAPACITY
    if (!Number.isInteger(this.capacity) || this.capacity < 1) throw new RangeError('mailboxCapacity must be >= 1')
    this.clock = env.clock
    this.drops = new DropReporter(env.clock, env.overflowReportMs, (dropped) =>
      env.emit({ type: 'overflow', path, kind: this.kind, supervisor: this.supervisor, dropped }),
    )
    this.ref = bindRef<M>(this)
    this.ctx = { self: this.ref, path, kernel: env.kernel }
    this.placement = placement
    this.queue = new DrainQueue(() => nact.dispatch(this.nactRef, DRAIN_TOKEN))
    this.nactRef = this.spawnNact()
    registerTurns(this.ref, this.queue)
    try {
      this.state = def.init(this.ctx)
    } catch (error) {
      this.phase = 'stopped'
      nact.stop(this.nactRef)
      throw error
    }
    this.runningSince = this.lastActivityAt = env.clock.now()
    if (def.idleStopMs !== undefined) this.armIdle(def.idleStopMs)
  }

  // Our cell, not nact's initialStateFunc, runs init: nact turns an init error into a fault and then
  // resumes the actor on an undefined state. nact's state only mirrors ours, so its reset re-reads it.
  private spawnNact(): NactRef {
    const ref = nact.spawn(this.placement.nactParent, () => this.drain(), toNactName(this.path), {
      initialStateFunc: () => this.state,
      onCrash: (_token, error, nctx) => decideOnDrainCrash(this, error, nctx),
    })
    this.nactActor = nactActorOf(ref)
    return ref
  }

  admit(msg: unknown): Admission {
    if (this.phase === 'stopped') return 'stopped'
    if (this.phase === 'down') return 'down'
    if (!isMessage(msg)) {
      this.env.emit({ type: 'invalid-message', path: this.path, kind: this.kind, supervisor: this.supervisor, detail: 'no string type' })
      return 'invalid'
    }
    if (this.phase === 'backoff') return this.stashMessage(msg as M)
    if (this.inFlight >= this.capacity) {
      this.drops.drop()
      return 'full'
    }
    this.inFlight++
    this.queue.push(msg as M)
    return 'accepted'
  }

  stats(): { queued: number; dropped: number } {
    return { queued: this.inFlight + this.stash.length, dropped: this.drops.total }
  }

  /**
   * Called with a fresh state once the backoff wait is over, before nact's reset. The messages that were
   * queued behind the failing one are still in `queue`; the stash goes after them, so the original order
   * holds. The crashed drain's token still counts as scheduled (pushing dispatches nothing); nact, still in
   * its fault handler, keeps the token handed over now in its mailbox until reset → resume → processNext.
   */
  restart(fresh: S): void {
    this.state = fresh
    this.phase = 'running'
    this.runningSince = this.clock.now()
    for (const msg of this.stash) {
      this.inFlight++
      this.queue.push(msg)
    }
    this.stash = []
    this.queue.handOver(true)
  }

  /**
   * A permanent actor gave up (its crash policy decided; nact's actor is being stopped): drop what is queued,
   * fail what waits, and schedule the respawn. No afterStop: the actor is not finished, only its state is.
   */
  goDown(): void {
    this.phase = 'down'
    this.backoff?.cancel()
    this.backoff = undefined
    // the asks of messages that will never run fail now; those of messages already handled stay: their
    // answer may be on its way from I/O the actor started (a commit that lands after all), else they time out
    const queued = this.queue.takeAll()
    const unhandled = [...queued, ...this.stash]
    this.inFlight -= queued.length
    this.stash = []
    this.queue.reset()
    const error = new ActorDownError(this.path)
    for (const msg of unhandled) {
      try {
        this.def.onDropped?.(msg)
      } catch {
        // the hook reports its own failures; one that throws must not keep the others from their answer
      }
      failRepliesIn(msg, error)
    }
    this.scheduleRespawn()
  }

  /** `afterFailedRespawn`: the last respawn itself failed, so the actor never ran: keep counting up */
  private scheduleRespawn(afterFailedRespawn = false): void {
    const ranLong = Number.isFinite(this.respawnedAt) && this.clock.now() - this.respawnedAt >= this.policy.resetAfterMs
    if (!afterFailedRespawn && ranLong) this.respawnAttempt = 0
    this.respawnAttempt++
    const u = this.env.random()
    const delayMs = cappedBackoffDelayMs(
      this.placement.respawn,
      this.respawnAttempt - 1,
      Number.isFinite(u) ? Math.min(1, Math.max(0, u)) : 0,
    )
    this.env.emit({ type: 'backoff', path: this.path, kind: this.kind, supervisor: this.supervisor, delayMs, attempt: this.respawnAttempt })
    const timer = this.clock.setTimeout(() => this.respawn(), delayMs)
    this.backoff = { cancel: () => this.clock.clearTimeout(timer) }
  }

  /** The kind supervisor's respawn: a fresh nact actor and a fresh state under the same path and ref. */
  private respawn(): void {
    this.backoff = undefined
    if (this.phase !== 'down') return
    try {
      this.state = this.def.init(this.ctx)
      this.nactRef = this.spawnNact()
    } catch (error) {
      // one more failure: still down, and the next respawn waits longer
      this.env.emit({ type: 'crashed', path: this.path, kind: this.kind, supervisor: this.supervisor, error, msgType: undefined })
      this.scheduleRespawn(true)
      return
    }
    this.failures.clear()
    this.attempt = 0
    this.phase = 'running'
    this.runningSince = this.respawnedAt = this.clock.now()
    this.env.emit({ type: 'restarted', path: this.path, kind: this.kind, supervisor: this.supervisor })
  }

  stop(reason: StopReason): Promise<void> {
    if (this.stopping !== undefined) return this.stopping
    // a down actor's nact actor is already gone
    const nactAlive = this.phase !== 'down'
    this.phase = 'stopped'
    try {
      this.halt(nactAlive)
    } catch (error) {
      this.env.markDegraded(`halting ${this.path} failed: ${describeError(error)}`)
    }
    this.stopping = this.finishStop(reason)
    return this.stopping
  }

  private stashMessage(msg: M): Admission {
    if (this.stash.length >= this.policy.stashCapacity) {
      this.drops.drop()
      return 'full'
    }
    this.stash.push(msg)
    try {
      if (this.def.endsBackoff?.(msg)) this.backoff?.expedite?.()
    } catch {
      // a throwing predicate only keeps the wait
    }
    return 'accepted'
  }

  /**
   * nact's handler for DRAIN_TOKEN. A failing message ends the drain by throwing (nact then calls onCrash
   * and the rest stay queued, in order); a stop ends it after the message in progress.
   */
  private async drain(): Promise<S> {
    forgetFiredImmediate(this.nactActor)
    this.queue.turns++
    for (let n = 0; n < DRAIN_BATCH && this.phase !== 'stopped'; n++) {
      const msg = this.queue.shift()
      if (msg === undefined) break
      // a synchronous handler's message is done at once: no promise and no microtask hop per message
      const pending = this.runOne(msg)
      if (pending !== undefined) await pending
    }
    // nact asserts a dispatch target is not stopped; a stopped cell's queue is dropped (asks fail in stop)
    this.queue.handOver(this.phase !== 'stopped')
    // nact keeps this as its state; ours is authoritative and nact's reset reads it back
    return this.state
  }

  /** Runs one message; a promise only when the handler returned one. Throws (or rejects) a HandlerFault. */
  private runOne(msg: M): Promise<void> | undefined {
    this.handling = true
    let next: S | Promise<S>
    try {
      next = this.def.handle(this.state, msg, this.ctx)
    } catch (error) {
      throw this.faulted(msg, error)
    }
    if (!(next instanceof Promise)) {
      this.state = next
      this.handled()
      return undefined
    }
    return next.then(
      (state) => {
        this.state = state
        this.handled()
      },
      (error: unknown) => {
        throw this.faulted(msg, error)
      },
    )
  }

  private faulted(msg: M, error: unknown): HandlerFault {
    // whoever awaits a reply this message carries hears now, not at its timeout
    failRepliesIn(msg, new HandlerCrashedError(this.path, msg.type, error))
    this.handled()
    return new HandlerFault(msg, error)
  }

  private handled(): void {
    this.inFlight--
    this.handling = false
    if (this.def.idleStopMs !== undefined) this.lastActivityAt = this.clock.now()
    this.handlerDone?.()
  }

  private halt(nactAlive: boolean): void {
    this.env.onStopping(this)
    if (this.idleTimer !== undefined) this.clock.clearTimeout(this.idleTimer)
    this.backoff?.cancel()
    this.backoff = undefined
    this.stash = []
    this.queue.clear()
    // releases the nact name at once, so getOrSpawn can activate this path again while afterStop runs
    if (nactAlive) nact.stop(this.nactRef)
  }

  private async finishStop(reason: StopReason): Promise<void> {
    try {
      await this.handlerFinished()
      await this.runAfterStop()
      this.drops.flush()
      for (const fail of this.pendingAsks.takeAll()) fail(new ActorStoppedError(this.path))
      this.env.emit({ type: 'stopped', path: this.path, kind: this.kind, supervisor: this.supervisor, reason })
    } catch (error) {
      // a stop promise must never reject: callers `void kernel.stop(...)`, and a rejection would end the process
      this.env.markDegraded(`stopping ${this.path} failed: ${describeError(error)}`)
    } finally {
      this.env.onStopped(this)
    }
  }

  private async runAfterStop(): Promise<void> {
    try {
      await this.def.afterStop?.(this.state, this.ctx)
    } catch (error) {
      this.env.emit({ type: 'crashed', path: this.path, kind: this.kind, supervisor: this.supervisor, error, msgType: undefined })
    }
  }

  /** the message in progress, if any, finishes first; a hung one is waited for stopGraceMs at most */
  private handlerFinished(): Promise<void> {
    if (!this.handling) return Promise.resolve()
    return new Promise((resolve) => {
      const done = () => {
        this.handlerDone = undefined
        this.clock.clearTimeout(timer)
        resolve()
      }
      const timer = this.clock.setTimeout(done, this.env.stopGraceMs)
      this.handlerDone = done
    })
  }

  private armIdle(delayMs: number): void {
    this.idleTimer = this.clock.setTimeout(() => this.checkIdle(), delayMs)
  }

  // One timer per actor, re-armed lazily, instead of one clearTimeout/setTimeout pair per message.
  private checkIdle(): void {
    this.idleTimer = undefined
    const idleStopMs = this.def.idleStopMs
    if (this.phase === 'stopped' || idleStopMs === undefined) return
    try {
      const idleForMs = this.clock.now() - this.lastActivityAt
      const quiet = this.phase === 'running' && this.inFlight === 0
      if (quiet && idleForMs >= idleStopMs) {
        void this.stop('idle')
        return
      }
      this.armIdle(quiet ? idleStopMs - idleForMs : idleStopMs)
    } catch (error) {
      this.env.markDegraded(`idle check of ${this.path} failed: ${describeError(error)}`)
    }
  }
}
