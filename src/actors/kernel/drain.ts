import { Fifo } from '../../infra/fifo.js'
import type { TypedRef } from './types.js'

/**
 * Pieces of the cell's batched mailbox. nact 7.6.2 runs every dispatched message in its own setImmediate
 * (actor.js handleMessage), so an actor dispatched one nact message per message handles at most one per
 * event-loop turn; a busy actor then waits for turns while the thread idles. The cell instead keeps its own
 * FIFO and dispatches one DRAIN_TOKEN, whose nact turn runs up to DRAIN_BATCH queued messages.
 */

/**
 * Messages one drain runs before it yields: enough to amortise the turn, few enough that other actors and
 * I/O get theirs (the next drain is a fresh setImmediate, queued behind those already waiting).
 */
export const DRAIN_BATCH = 256

/** The only message nact ever sees from a cell; frozen so no handler can alter it. */
export const DRAIN_TOKEN = Object.freeze({ type: 'kernel/drain' })

/**
 * What a drain throws when a handler fails. nact hands onCrash the message it dispatched (always the
 * token), so the failing message travels inside the error; the crash policy reports its type.
 */
export class HandlerFault {
  constructor(
    readonly msg: unknown,
    readonly error: unknown,
  ) {}
}

/** the failing message (undefined when the failure is not a handler's) and the error it threw */
export function unwrapFault(error: unknown): { msg: unknown; error: unknown } {
  return error instanceof HandlerFault ? { msg: error.msg, error: error.error } : { msg: undefined, error }
}

/**
 * The cell's queue of admitted messages plus the rule that at most one DRAIN_TOKEN is with nact at a time:
 * `scheduled` holds while a token sits in nact's mailbox, a drain runs, or nact handles a drain's crash.
 */
export class DrainQueue<M> {
  /** nact turns spent draining (tests assert batching through drainTurns) */
  turns = 0
  private readonly fifo = new Fifo<M>()
  private scheduled = false

  constructor(private readonly dispatchToken: () => void) {}

  get length(): number {
    return this.fifo.length
  }

  /** appends; hands nact a token unless one is already on its way (a running drain will reach msg) */
  push(msg: M): void {
    this.fifo.push(msg)
    if (this.scheduled) return
    this.scheduled = true
    this.dispatchToken()
  }

  shift(): M | undefined {
    return this.fifo.shift()
  }

  /**
   * The token's work is over (a drain ended, or a crashed one is to go on after restart): hand nact the
   * next token if messages remain and the actor may run them, else let the next push schedule one.
   */
  handOver(mayRun: boolean): void {
    if (mayRun && this.fifo.length > 0) this.dispatchToken()
    else this.scheduled = false
  }

  clear(): void {
    this.fifo.clear()
  }

  /** removes and returns every queued message, in order */
  takeAll(): M[] {
    const out: M[] = []
    for (let m = this.fifo.shift(); m !== undefined; m = this.fifo.shift()) out.push(m)
    return out
  }

  /** for a fresh nact actor (a respawn): nothing queued, no token out */
  reset(): void {
    this.fifo.clear()
    this.scheduled = false
  }
}

/** Read by tests only (not exported from the kernel's index): how many nact turns a cell's drains took. */
const turnCounters = new WeakMap<object, { readonly turns: number }>()

export function registerTurns(ref: TypedRef<never>, counter: { readonly turns: number }): void {
  turnCounters.set(ref, counter)
}

export function drainTurns<M>(ref: TypedRef<M>): number | undefined {
  return turnCounters.get(ref)?.turns
}
