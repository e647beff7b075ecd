import type { BackoffPolicy } from '../../protocols/backoff.js'
import type { NactRef } from './nact-binding.js'
import type {
  ActorPath,
  ActorPhase,
  Clock,
  Kernel,
  StopReason,
  SupervisionEvent,
  SupervisionPolicy,
  SupervisorPath,
  TypedRef,
} from './types.js'

/** What a cell needs from its kernel. */
export interface KernelEnv {
  readonly kernel: Kernel
  readonly clock: Clock
  readonly random: () => number
  readonly overflowReportMs: number
  readonly stopGraceMs: number
  emit(event: SupervisionEvent): void
  markDegraded(reason: string): void
  /** the path is free from now on (registry entry removed, nact name released) */
  onStopping(cell: LiveCell): void
  onStopped(cell: LiveCell): void
  /** counts against the kind supervisor's intensity */
  onGaveUp(cell: LiveCell): void
}

/** Where a cell sits: under its kind's flat nact parent, reported under its kind supervisor, respawned by it. */
export interface CellPlacement {
  readonly nactParent: NactRef
  readonly supervisor: SupervisorPath
  readonly respawn: BackoffPolicy
}

/** The kernel's view of a cell, free of the cell's state and message types. */
export interface LiveCell {
  readonly path: ActorPath
  readonly kind: string
  readonly supervisor: SupervisorPath
  readonly policy: SupervisionPolicy
  readonly phase: ActorPhase
  /** whether readiness names it while in backoff or down (ActorDef.unreadyWhileRestarting) */
  readonly unreadyWhileRestarting: boolean
  readonly ref: TypedRef<never>
  stop(reason: StopReason): Promise<void>
  stats(): { queued: number; dropped: number }
}
