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
   * OTP's restart of a subtree. The attempts start again at 1 after resetAfterMs of running. The kind
   * supervisor takes this, and its intensity (maxRestarts give-ups within windowMs), from the kind's
   * first spawned actor: every actor of a kind shares one def.
   */
  respawn: BackoffPolicy
}

/**
 * The level a kind's supervisor sits under (docs/architecture.md §4.5): `root` for the tenant-facing kinds
 * (community, connection, principal, ...), `node` for the node's own parts (the bus bridge, mesh links,
 * the verifier pool, the SQLite writer thread).
 */
export type SupervisorLevel = 'root' | 'node'

/** Where a supervisor sits in the tree: 'root', 'root/node', 'root/community', 'root/node/mesh-peer'. */
export type SupervisorPath = string

/** OTP's restart intensity: more than maxGiveUps failures of a supervisor's children within windowMs and it escalates. */
export interface Intensity {
  maxGiveUps: number
  windowMs: number
}

export interface ActorContext<M> {
  self: TypedRef<M>
  path: ActorPath
  kernel: Kernel
}

export interface ActorDef<S, M extends { type: string }> {
  kind: string
  /** the level this kind's supervisor sits under: `root/<kind>` (default) or `root/node/<kind>`; one per kind */
  supervisor?: SupervisorLevel
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
  /**
   * A message that makes waiting pointless (a peer link's tunnel the peer dialed): one arriving while the
   * actor waits to restart ends the wait at once, and is handled right after the fresh init. Must not throw.
   */
  endsBackoff?: (msg: M) => boolean
  /**
   * Default true: a permanent actor in backoff or down makes unhealthy() (readiness) name it. False for one
   * whose resource serves a fallback while it waits (the SQLite writer's writes run on the main thread).
   */
  unreadyWhileRestarting?: boolean
}

export type StopReason = 'requested' | 'idle' | 'gave-up' | 'shutdown'

/** running: handling messages; backoff: waiting to restart after a crash; down: gave up, waiting to be respawned */
export type ActorPhase = 'running' | 'backoff' | 'down' | 'stopped'

/**
 * Every event names the supervisor it happened under: an actor's kind supervisor (`root/community`,
 * `root/node/mesh-peer`); a supervisor's own `escalated`; root's `degraded`, which names the level whose
 * escalation reached root (or `root` when supervision itself failed).
 */
export type SupervisionEvent =
  | { type: 'started'; path: ActorPath; kind: string; supervisor: SupervisorPath }
  | { type: 'stopped'; path: ActorPath; kind: string; supervisor: SupervisorPath; reason: StopReason }
  | { type: 'crashed'; path: ActorPath; kind: string; supervisor: SupervisorPath; error: unknown; msgType: string | undefined }
  | { type: 'backoff'; path: ActorPath; kind: string; supervisor: SupervisorPath; delayMs: number; attempt: number }
  | { type: 'restarted'; path: ActorPath; kind: string; supervisor: SupervisorPath }
  | { type: 'gave-up'; path: ActorPath; kind: string; supervisor: SupervisorPath; failures: number }
  | { type: 'overflow'; path: ActorPath; kind: string; supervisor: SupervisorPath; dropped: number }
  | { type: 'lagged'; path: ActorPath; kind: string; supervisor: SupervisorPath; skipped: number }
  | { type: 'invalid-message'; path: ActorPath; kind: string; supervisor: SupervisorPath; detail: string }
  | { type: 'escalated'; supervisor: SupervisorPath; failures: number; windowMs: number }
  | { type: 'degraded'; supervisor: SupervisorPath; reason: string }

// distributes over the union, so each event type keeps its own fields
type WithoutSupervisor<E> = E extends unknown ? Omit<E, 'supervisor'> : never

/** What kernel.report takes: an actor's event or a degraded reason, without the supervisor the kernel fills in. */
export type SupervisionReport = WithoutSupervisor<Exclude<SupervisionEvent, { type: 'escalated' }>>

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
  report(event: SupervisionReport): void
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
  /** the `node` supervisor's intensity: how many escalations of its kinds it absorbs before escalating to root */
  node?: Partial<Intensity>
}
