import { randomUUID } from 'node:crypto'
import { ActorCell } from './cell.js'
import { systemClock } from './clock.js'
import { ActorExistsError, describeError, KernelShutdownError } from './errors.js'
import type { CellPlacement, KernelEnv, LiveCell } from './kernel-env.js'
import { type NactRef, nact, toNactName } from './nact-binding.js'
import { resolvePolicy } from './policy.js'
import { SupervisionBus } from './supervision-bus.js'
import { Supervisor } from './supervisor.js'
import type {
  ActorDef,
  ActorPath,
  Intensity,
  Kernel,
  KernelOptions,
  SupervisionEvent,
  SupervisionReport,
  SupervisorLevel,
  TypedRef,
} from './types.js'

/**
 * A kind's supervisor and its flat nact parent. The nact parent never receives a message: nact copies an
 * actor's children map for every message it handles, so a parent of thousands of children handles few
 * messages a second. The supervisor tree above it is ours, not nact's.
 */
interface KindSupervisor extends CellPlacement {
  readonly level: SupervisorLevel
  readonly tree: Supervisor
}

/**
 * `node` absorbs one escalation of its kinds: a single failing part is already visible as its kind's own
 * `escalated`; a second within the minute means the node's machinery rather than one part is failing.
 */
const NODE_INTENSITY: Intensity = { maxGiveUps: 1, windowMs: 60_000 }

export function createKernel(opts: KernelOptions = {}): Kernel {
  return new ActorKernel(opts)
}

class ActorKernel implements Kernel {
  readonly supervision$
  private readonly cells = new Map<ActorPath, LiveCell>()
  // stopped cells whose afterStop has not finished yet (their paths may already be live again)
  private readonly stopping = new Set<LiveCell>()
  private readonly kinds = new Map<string, KindSupervisor>()
  private readonly levels: Record<SupervisorLevel, Supervisor>
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
      onGaveUp: (cell) => this.kinds.get(cell.kind)?.tree.childFailed({ from: cell.path, describe: 'gave up' }),
    }
    const emit = (event: SupervisionEvent) => this.bus.emit(event)
    const root = new Supervisor('root', undefined, { maxGiveUps: 0, windowMs: 0 }, this.env.clock, emit)
    const node = new Supervisor(root.childPath('node'), root, { ...NODE_INTENSITY, ...opts.node }, this.env.clock, emit)
    this.levels = { root, node }
  }

  get degraded(): boolean {
    return this.unhealthy().length > 0
  }

  unhealthy(): string[] {
    const paths: string[] = []
    for (const cell of this.cells.values()) {
      const restarting = cell.phase === 'backoff' || cell.phase === 'down'
      if (cell.policy.mode === 'permanent' && restarting && cell.unreadyWhileRestarting) paths.push(cell.path)
    }
    return [...paths.sort(), ...this.failures.map((reason) => `kernel: ${reason}`)]
  }

  spawn<S, M extends { type: string }>(path: ActorPath, def: ActorDef<S, M>): TypedRef<M> {
    if (this.closing) throw new KernelShutdownError()
    if (typeof path !== 'string' || path.length === 0) throw new TypeError('an actor path is a non-empty string')
    if (this.cells.has(path)) throw new ActorExistsError(path)
    const cell = new ActorCell(path, def, this.env, this.kindSupervisor(def))
    this.cells.set(path, cell)
    this.bus.emit({ type: 'started', path, kind: def.kind, supervisor: cell.supervisor })
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

  report(event: SupervisionReport): void {
    if (event.type === 'degraded') {
      this.markDegraded(event.reason)
      return
    }
    const supervisor = this.kinds.get(event.kind)?.tree.path ?? this.levels.root.childPath(event.kind)
    this.bus.emit({ ...event, supervisor })
  }

  shutdown(): Promise<void> {
    this.closing = true
    this.shutdownDone ??= this.stopEverything()
    return this.shutdownDone
  }

  private async stopEverything(): Promise<void> {
    const all = [...this.cells.values(), ...this.stopping]
    await Promise.all(all.map((cell) => cell.stop('shutdown')))
    for (const ref of [...[...this.kinds.values()].map((kind) => kind.nactParent), this.system]) {
      try {
        nact.stop(ref)
      } catch (error) {
        this.markDegraded(`stopping nact failed: ${describeError(error)}`)
      }
    }
    this.bus.complete()
  }

  /**
   * The kind's supervisor, made by its first actor: under `root` or `node` (ActorDef.supervisor), with that
   * actor's policy as its intensity (maxRestarts give-ups within windowMs) and respawn backoff. Past its
   * intensity it escalates to its level; the actors themselves are down until respawned (permanent) or gone
   * (temporary), and readiness names the down ones while they are.
   */
  private kindSupervisor(def: Pick<ActorDef<unknown, never>, 'kind' | 'supervisor' | 'policy'>): KindSupervisor {
    const level = def.supervisor ?? 'root'
    const known = this.kinds.get(def.kind)
    if (known !== undefined) {
      if (known.level !== level) throw new TypeError(`kind ${def.kind} is supervised under ${known.level}, not ${level}`)
      return known
    }
    const policy = resolvePolicy(def.policy)
    const parent = this.levels[level]
    const tree = new Supervisor(
      parent.childPath(def.kind),
      parent,
      { maxGiveUps: policy.maxRestarts, windowMs: policy.windowMs },
      this.env.clock,
      (event) => this.bus.emit(event),
    )
    const nactParent = nact.spawn(this.system, () => undefined, `kind-${toNactName(def.kind)}`, {
      initialStateFunc: () => undefined,
      onCrash: (_msg, _error, nctx) => nctx.resume,
    })
    const supervisor: KindSupervisor = { level, tree, nactParent, supervisor: tree.path, respawn: policy.respawn }
    this.kinds.set(def.kind, supervisor)
    return supervisor
  }

  private markDegraded(reason: string): void {
    this.failures.push(reason)
    this.bus.emit({ type: 'degraded', supervisor: this.levels.root.path, reason })
  }
}
