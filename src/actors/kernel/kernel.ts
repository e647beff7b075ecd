import { randomUUID } from 'node:crypto'
import { ActorCell } from './cell.js'
import { systemClock } from './clock.js'
import { ActorExistsError, describeError, KernelShutdownError } from './errors.js'
import type { KernelEnv, LiveCell } from './kernel-env.js'
import { type NactRef, nact, toNactName } from './nact-binding.js'
import { FailureWindow } from './policy.js'
import { SupervisionBus } from './supervision-bus.js'
import type { ActorDef, ActorPath, Kernel, KernelOptions, SupervisionEvent, TypedRef } from './types.js'

/** A flat nact parent per kind. It never receives a message: nact copies an actor's children map for
 * every message it handles, so a parent of thousands of children handles few messages a second. */
interface KindSupervisor {
  readonly ref: NactRef
  readonly gaveUps: FailureWindow
}

export function createKernel(opts: KernelOptions = {}): Kernel {
  return new ActorKernel(opts)
}

class ActorKernel implements Kernel {
  readonly supervision$
  private readonly cells = new Map<ActorPath, LiveCell>()
  // stopped cells whose afterStop has not finished yet (their paths may already be live again)
  private readonly stopping = new Set<LiveCell>()
  private readonly kinds = new Map<string, KindSupervisor>()
  private readonly bus = new SupervisionBus()
  private readonly env: KernelEnv
  private readonly system: NactRef
  private closing = false
  private shutdownDone: Promise<void> | undefined
  // supervision itself failed (a throwing clock, nact refusing a stop): these reasons stay reported
  private readonly failures: string[] = []

  constructor(opts: KernelOptions) {
    this.supervision$ = this.bus.events$
    // nact keeps systems in one process-wide map keyed by name: a reused name would hijack another kernel.
    this.system = nact.start({ name: `${toNactName(opts.name ?? 'apiary')}-${randomUUID()}` })
    this.env = {
      kernel: this,
      clock: opts.clock ?? systemClock,
      random: opts.random ?? Math.random,
      overflowReportMs: opts.overflowReportMs ?? 1000,
      stopGraceMs: opts.stopGraceMs ?? 10_000,
      emit: (event) => this.bus.emit(event),
      markDegraded: (reason) => this.markDegraded(reason),
      onStopping: (cell) => {
        if (this.cells.get(cell.path) === cell) this.cells.delete(cell.path)
        this.stopping.add(cell)
      },
      onStopped: (cell) => this.stopping.delete(cell),
      onGaveUp: (cell) => this.countGaveUp(cell),
    }
  }

  get degraded(): boolean {
    return this.unhealthy().length > 0
  }

  unhealthy(): string[] {
    const paths: string[] = []
    for (const cell of this.cells.values()) {
      if (cell.policy.mode === 'permanent' && (cell.phase === 'backoff' || cell.phase === 'down')) paths.push(cell.path)
    }
    return [...paths.sort(), ...this.failures.map((reason) => `kernel: ${reason}`)]
  }

  spawn<S, M extends { type: string }>(path: ActorPath, def: ActorDef<S, M>): TypedRef<M> {
    if (this.closing) throw new KernelShutdownError()
    if (typeof path !== 'string' || path.length === 0) throw new TypeError('an actor path is a non-empty string')
    if (this.cells.has(path)) throw new ActorExistsError(path)
    const cell = new ActorCell(path, def, this.env, this.kindSupervisor(def.kind).ref)
    this.cells.set(path, cell)
    this.bus.emit({ type: 'started', path, kind: def.kind })
    return cell.ref
  }

  getOrSpawn<S, M extends { type: string }>(path: ActorPath, def: ActorDef<S, M>): TypedRef<M> {
    const live = this.cells.get(path)
    if (live === undefined) return this.spawn(path, def)
    if (live.kind !== def.kind) throw new TypeError(`${path} is a live ${live.kind} actor, not ${def.kind}`)
    return live.ref as unknown as TypedRef<M>
  }

  lookup<M>(path: ActorPath): TypedRef<M> | undefined {
    return this.cells.get(path)?.ref as unknown as TypedRef<M> | undefined
  }

  exists(path: ActorPath): boolean {
    return this.cells.has(path)
  }

  stop(path: ActorPath): Promise<void> {
    const live = this.cells.get(path)
    if (live !== undefined) return live.stop('requested')
    const pending = [...this.stopping].filter((cell) => cell.path === path)
    return Promise.all(pending.map((cell) => cell.stop('requested'))).then(() => undefined)
  }

  // nact's own cascade is broken (a parent's stop looks children up by the wrong key and stops none), so
  // "stop a subtree" is a prefix scan of our registry.
  async stopPrefix(prefix: string): Promise<void> {
    const targets = [...this.cells.values(), ...this.stopping].filter((cell) => cell.path.startsWith(prefix))
    await Promise.all(targets.map((cell) => cell.stop('requested')))
  }

  stats(path: ActorPath): { queued: number; dropped: number } | undefined {
    return this.cells.get(path)?.stats()
  }

  report(event: SupervisionEvent): void {
    if (event.type === 'degraded') this.failures.push(event.reason)
    this.bus.emit(event)
  }

  shutdown(): Promise<void> {
    this.closing = true
    this.shutdownDone ??= this.stopEverything()
    return this.shutdownDone
  }

  private async stopEverything(): Promise<void> {
    const all = [...this.cells.values(), ...this.stopping]
    await Promise.all(all.map((cell) => cell.stop('shutdown')))
    for (const ref of [...[...this.kinds.values()].map((kind) => kind.ref), this.system]) {
      try {
        nact.stop(ref)
      } catch (error) {
        this.markDegraded(`stopping nact failed: ${describeError(error)}`)
      }
    }
    this.bus.complete()
  }

  private kindSupervisor(kind: string): KindSupervisor {
    let supervisor = this.kinds.get(kind)
    if (supervisor === undefined) {
      const ref = nact.spawn(this.system, () => undefined, `kind-${toNactName(kind)}`, {
        initialStateFunc: () => undefined,
        onCrash: (_msg, _error, nctx) => nctx.resume,
      })
      supervisor = { ref, gaveUps: new FailureWindow() }
      this.kinds.set(kind, supervisor)
    }
    return supervisor
  }

  /**
   * A kind whose actors give up more than maxRestarts times within windowMs escalates to the root, which
   * reports it and keeps running: exiting would take down every community. The actors themselves are down
   * until respawned (permanent) or gone (temporary); readiness reports the down ones while they are.
   */
  private countGaveUp(cell: LiveCell): void {
    const supervisor = this.kinds.get(cell.kind)
    if (supervisor === undefined) return
    const { maxRestarts, windowMs } = cell.policy
    const gaveUps = supervisor.gaveUps.record(this.env.clock.now(), windowMs, maxRestarts + 1)
    if (gaveUps > maxRestarts) {
      this.bus.emit({ type: 'degraded', reason: `kind ${cell.kind}: ${gaveUps} actors gave up within ${windowMs}ms` })
    }
  }

  private markDegraded(reason: string): void {
    this.failures.push(reason)
    this.bus.emit({ type: 'degraded', reason })
  }
}
