import type { Observable } from 'rxjs'
import type { BackoffPolicy } from '../../protocols/backoff.js'

/** 'community/default', 'connection/42', 'principal/default/<hex>': any non-empty string (architecture §4.2). */
export type ActorPath = string

declare const refBrand: unique symbol

/**
 * Names one activation of an actor. The brand is a function *property* (not a method), so under
 * strictFunctionTypes a ref is contravariant in M: a ref that accepts `A | B` may stand where a ref that
 * accepts `A` is wanted, never the reverse. After the activation stops, tell returns false; getOrSpawn
 * makes a new activation with a new ref.
 */
export interface TypedRef<M> {
  readonly path: ActorPath
  readonly [refBrand]: (m: M) => void
}

/** Every timer the kernel sets goes through this, so tests can drive backoff, idle stop and ask timeouts. */
export interface Clock {
  now(): number
  setTimeout(fn: () => void, ms: number): unknown
  clearTimeout(h: unknown): void
}

export interface SupervisionPolicy {
  /** temporary: stopped on the first crash (connection, principal); permanent: restarted with backoff. */
  mode: 'temporary' | 'permanent'
  /** more than this many crashes within windowMs → give up (stop, counted against the kind's budget) */
  maxRestarts: number
  windowMs: number
  /** delay before restart attempt a (1-based) = min(maxMs, minMs·2^(a−1))·(1 + U·jitter), capped at maxMs */
  backoff: BackoffPolicy
  /** the attempt counter starts again at 1 only after this long without a crash since the last (re)start */
  resetAfterMs: number
  /** messages held while waiting to restart; the rest are dropped and reported as 'overflow' */
  stashCapacity: number
  /**
   * Permanent actors only: after giving up, the actor is down (tell returns false, asks fail at once) and
   * its kind supervisor respawns it (fresh init, same path and ref) after this delay, attempt by attempt:
   * OTP's restart of a subtree. The attempts start again at 1 after resetAfterMs of running.
   */
  respawn: BackoffPolicy
}

export interface ActorContext<M> {
  self: TypedRef<M>
  path: ActorPath
  kernel: Kernel
}

export interface ActorDef<S, M extends { type: string }> {
  kind: string
  /** initial state; called again on every restart. Throwing here makes spawn throw. */
  init: (ctx: ActorContext<M>) => S
  handle: (state: S, msg: M, ctx: ActorContext<M>) => S | Promise<S>
  /** runs once for every stopped actor, after the message in progress (if any) has finished */
  afterStop?: (state: S, ctx: ActorContext<M>) => void | Promise<void>
  /**
   * A message admitted but never handled because the actor gave up (down until its respawn): called for each,
   * in order, before the asks they carry fail. For results of the actor's own I/O that must not vanish (a
   * commit's outcome): answer what can be answered, offer the rest again (tellUntilTaken) for after the respawn.
   */
  onDropped?: (msg: M) => void
  /** admitted but not yet handled messages (including the one running); default 10_000 */
  mailboxCapacity?: number
  /** stop after this long with nothing queued or running (principal actors) */
  idleStopMs?: number
  policy?: Partial<SupervisionPolicy>
}

export type StopReason = 'requested' | 'idle' | 'gave-up' | 'shutdown'

/** running: handling messages; backoff: waiting to restart after a crash; down: gave up, waiting to be respawned */
export type ActorPhase = 'running' | 'backoff' | 'down' | 'stopped'

export type SupervisionEvent =
  | { type: 'started'; path: ActorPath; kind: string }
  | { type: 'stopped'; path: ActorPath; kind: string; reason: StopReason }
  | { type: 'crashed'; path: ActorPath; kind: string; error: unknown; msgType: string | undefined }
  | { type: 'backoff'; path: ActorPath; kind: string; delayMs: number; attempt: number }
  | { type: 'restarted'; path: ActorPath; kind: string }
  | { type: 'gave-up'; path: ActorPath; kind: string; failures: number }
  | { type: 'overflow'; path: ActorPath; kind: string; dropped: number }
  | { type: 'lagged'; path: ActorPath; kind: string; skipped: number }
  | { type: 'invalid-message'; path: ActorPath; kind: string; detail: string }
  | { type: 'degraded'; reason: string }

export interface Kernel {
  /** throws ActorExistsError if the path is live, KernelShutdownError after shutdown began */
  spawn<S, M extends { type: string }>(path: ActorPath, def: ActorDef<S, M>): TypedRef<M>
  /** the live activation at path, or a new one (Orleans-style); throws if the live one is of another kind */
  getOrSpawn<S, M extends { type: string }>(path: ActorPath, def: ActorDef<S, M>): TypedRef<M>
  /** unchecked: the caller asserts M; prefer keeping the ref spawn returned */
  lookup<M>(path: ActorPath): TypedRef<M> | undefined
  exists(path: ActorPath): boolean
  /**
   * Resolves after afterStop ran. Waits for the message in progress first, so an actor must not await its
   * own stop inside handle (it would wait out stopGraceMs); `void kernel.stop(ctx.path)` is fine.
   */
  stop(path: ActorPath): Promise<void>
  /** stops every actor whose path starts with prefix, each afterStop awaited; later spawns are not included */
  stopPrefix(prefix: string): Promise<void>
  readonly supervision$: Observable<SupervisionEvent>
  /** queued = admitted and not yet handled (mailbox + stash); undefined once stopped */
  stats(path: ActorPath): { queued: number; dropped: number } | undefined
  report(event: SupervisionEvent): void
  /**
   * What readiness must report: the paths of permanent actors in backoff or down (gave up, awaiting their
   * respawn), and the reasons supervision itself failed (those stay). Empty when all is well.
   */
  unhealthy(): string[]
  /** unhealthy() is not empty */
  readonly degraded: boolean
  /** stops every actor (each afterStop runs), then the nact system; supervision$ completes */
  shutdown(): Promise<void>
}

export interface KernelOptions {
  clock?: Clock
  /** U in the backoff formula; must return [0, 1] */
  random?: () => number
  name?: string
  /** overflow drops of one actor are reported at most once per this interval (first drop at once) */
  overflowReportMs?: number
  /** how long stop waits for the message in progress before running afterStop anyway */
  stopGraceMs?: number
}
