import type { ActorPath, ActorPhase, Clock, Kernel, StopReason, SupervisionEvent, SupervisionPolicy, TypedRef } from './types.js'

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
  /** counts against the kind supervisor's budget */
  onGaveUp(cell: LiveCell): void
}

/** The kernel's view of a cell, free of the cell's state and message types. */
export interface LiveCell {
  readonly path: ActorPath
  readonly kind: string
  readonly policy: SupervisionPolicy
  readonly phase: ActorPhase
  readonly ref: TypedRef<never>
  stop(reason: StopReason): Promise<void>
  stats(): { queued: number; dropped: number }
}
