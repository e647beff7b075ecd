import { cappedBackoffDelayMs } from '../../protocols/backoff.js'
import { unwrapFault } from './drain.js'
import { describeError } from './errors.js'
import type { KernelEnv, LiveCell } from './kernel-env.js'
import type { NactSupervisionCtx } from './nact-binding.js'
import type { FailureWindow } from './policy.js'
import type { ActorContext, ActorDef, ActorPhase } from './types.js'

/** What supervision reads and changes on a cell; ActorCell (cell.ts) is the one implementation. */
export interface SupervisedCell<S, M extends { type: string }> extends LiveCell {
  readonly env: KernelEnv
  readonly def: ActorDef<S, M>
  readonly ctx: ActorContext<M>
  readonly failures: FailureWindow
  phase: ActorPhase
  /** 1-based number of the last restart attempt; 0 when stable */
  attempt: number
  /** when the current incarnation started running; +Infinity while waiting to restart */
  runningSince: number
  backoff: { cancel(): void; expedite?(): void } | undefined
  restart(fresh: S): void
  goDown(): void
}

type Decision = symbol | Promise<symbol>

function typeOfMessage(msg: unknown): string | undefined {
  const type = typeof msg === 'object' && msg !== null ? (msg as { type?: unknown }).type : undefined
  return typeof type === 'string' ? type : undefined
}

/** nact's onCrash for every actor: nact passes the drain token, the failing message is inside the error. */
export function decideOnDrainCrash<S, M extends { type: string }>(
  cell: SupervisedCell<S, M>,
  error: unknown,
  nctx: NactSupervisionCtx,
): Decision {
  const fault = unwrapFault(error)
  return decideOnCrash(cell, fault.msg, fault.error, nctx)
}

/**
 * The crash decision. It must never throw nor return a rejecting promise: nact awaits it without a catch,
 * and the unhandled rejection ends the process. It only ever answers stop, reset or resume: anything else
 * makes nact escalate to the kind supervisor, and an escalated child that gets `resume` is stuck forever.
 * The failing message is dropped (the drain has already taken it off the queue). Everything is decided
 * synchronously; only the wait before a restart is asynchronous.
 */
function decideOnCrash<S, M extends { type: string }>(
  cell: SupervisedCell<S, M>,
  msg: unknown,
  error: unknown,
  nctx: NactSupervisionCtx,
): Decision {
  try {
    cell.env.emit({ type: 'crashed', path: cell.path, kind: cell.kind, supervisor: cell.supervisor, error, msgType: typeOfMessage(msg) })
    if (cell.phase === 'stopped' || cell.phase === 'down') return nctx.stop
    // Temporary (Erlang's restart type): a crash ends the actor, the way a socket ending ends a connection;
    // the budget is not consulted and nothing counts against the kind, since a client can cause these.
    if (cell.policy.mode === 'temporary') {
      void cell.stop('gave-up')
      return nctx.stop
    }
    return restartOrGiveUp(cell, nctx)
  } catch (failure) {
    return failSafe(cell, failure, nctx)
  }
}

function restartOrGiveUp<S, M extends { type: string }>(cell: SupervisedCell<S, M>, nctx: NactSupervisionCtx): Decision {
  const { env, policy } = cell
  const now = env.clock.now()
  const failures = cell.failures.record(now, policy.windowMs, policy.maxRestarts + 1)
  if (failures > policy.maxRestarts) {
    env.emit({ type: 'gave-up', path: cell.path, kind: cell.kind, supervisor: cell.supervisor, failures })
    env.onGaveUp(cell)
    // permanent: down until its kind supervisor respawns it (cell.goDown schedules that); nact's actor ends
    cell.goDown()
    return nctx.stop
  }
  if (now - cell.runningSince >= policy.resetAfterMs) cell.attempt = 0
  cell.attempt++
  const u = env.random()
  const delayMs = cappedBackoffDelayMs(policy.backoff, cell.attempt - 1, Number.isFinite(u) ? Math.min(1, Math.max(0, u)) : 0)
  env.emit({ type: 'backoff', path: cell.path, kind: cell.kind, supervisor: cell.supervisor, delayMs, attempt: cell.attempt })
  cell.phase = 'backoff'
  cell.runningSince = Number.POSITIVE_INFINITY
  return waitThenRestart(cell, delayMs, nctx)
}

function waitThenRestart<S, M extends { type: string }>(
  cell: SupervisedCell<S, M>,
  delayMs: number,
  nctx: NactSupervisionCtx,
): Promise<symbol> {
  const { clock } = cell.env
  let decide!: (decision: Decision) => void
  const decision = new Promise<symbol>((resolve) => {
    decide = resolve
  })
  let waiting = true
  const end = (how: () => Decision) => {
    if (!waiting) return
    waiting = false
    clock.clearTimeout(timer)
    decide(how())
  }
  const timer = clock.setTimeout(() => end(() => restartNow(cell, nctx)), delayMs)
  cell.backoff = {
    cancel: () => end(() => nctx.stop),
    // from a microtask: the message that ends the wait arrives inside someone's tell, which must not run our init
    expedite: () => queueMicrotask(() => end(() => restartNow(cell, nctx))),
  }
  return decision
}

/** An init that throws on restart is one more crash: it counts in the window and backs off again. */
function restartNow<S, M extends { type: string }>(cell: SupervisedCell<S, M>, nctx: NactSupervisionCtx): Decision {
  try {
    cell.backoff = undefined
    if (cell.phase === 'stopped' || cell.phase === 'down') return nctx.stop
    cell.restart(cell.def.init(cell.ctx))
    cell.env.emit({ type: 'restarted', path: cell.path, kind: cell.kind, supervisor: cell.supervisor })
    return nctx.reset
  } catch (error) {
    return decideOnCrash(cell, undefined, error, nctx)
  }
}

/** Supervision itself failed (a throwing clock or random): stop the actor, mark degraded, keep the process. */
function failSafe<S, M extends { type: string }>(cell: SupervisedCell<S, M>, failure: unknown, nctx: NactSupervisionCtx): symbol {
  try {
    cell.env.markDegraded(`supervision of ${cell.path} failed: ${describeError(failure)}`)
  } catch {
    // the bus never throws; this only keeps the promise to nact that onCrash never does
  }
  try {
    void cell.stop('gave-up')
  } catch {
    // returning stop still ends the nact actor
  }
  return nctx.stop
}
