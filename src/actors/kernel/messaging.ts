import { ActorDownError, ActorStoppedError, AskTimeoutError, InvalidMessageError, MailboxFullError } from './errors.js'
import type { ActorPath, Clock, TypedRef } from './types.js'

export type Admission = 'accepted' | 'stopped' | 'down' | 'full' | 'invalid'

/** What a ref leads to: the actor cell, seen only through what tell and ask need. */
export interface RefTarget {
  readonly path: ActorPath
  readonly clock: Clock
  /** fail callbacks of asks still waiting; the cell rejects them all once it has stopped */
  readonly pendingAsks: PendingAsks
  admit(msg: unknown): Admission
}

interface AskNode {
  fail: (error: Error) => void
  prev: AskNode | undefined
  next: AskNode | undefined
}

/**
 * The asks waiting on one actor: a linked list, not a Set. Most actors have one ask at a time, and a Set that
 * empties allocates a new table on its last delete (V8); that table belongs to a long-lived actor, so it would be
 * copied and promoted by the young-generation GC on every ask (a principal actor gets one per event).
 */
export class PendingAsks {
  private head: AskNode | undefined

  add(fail: (error: Error) => void): AskNode {
    const node: AskNode = { fail, prev: undefined, next: this.head }
    if (this.head) this.head.prev = node
    this.head = node
    return node
  }

  /** a node already removed is ignored */
  remove(node: AskNode): void {
    if (node.prev) node.prev.next = node.next
    else if (this.head === node) this.head = node.next
    else return
    if (node.next) node.next.prev = node.prev
    node.prev = node.next = undefined
  }

  /** every waiting ask's fail callback, the list left empty */
  takeAll(): ((error: Error) => void)[] {
    const fails: ((error: Error) => void)[] = []
    for (let n = this.head; n; ) {
      const next: AskNode | undefined = n.next
      fails.push(n.fail)
      n.prev = n.next = undefined
      n = next
    }
    this.head = undefined
    return fails
  }
}

// A ref is a plain frozen { path }; the link to its cell lives here so nobody can forge or reach into it.
const targets = new WeakMap<object, RefTarget>()

export function bindRef<M>(target: RefTarget): TypedRef<M> {
  const ref = Object.freeze({ path: target.path }) as unknown as TypedRef<M>
  targets.set(ref, target)
  return ref
}

/** false when the actor is stopped/unknown, its mailbox (or restart stash) is full, or msg has no type */
export function tell<M>(ref: TypedRef<M>, msg: NoInfer<M>): boolean {
  return targets.get(ref)?.admit(msg) === 'accepted'
}

function admissionError(path: ActorPath, outcome: Exclude<Admission, 'accepted'>): Error {
  if (outcome === 'full') return new MailboxFullError(path)
  if (outcome === 'invalid') return new InvalidMessageError(path)
  if (outcome === 'down') return new ActorDownError(path)
  return new ActorStoppedError(path)
}

// Each ask's reply callback carries the ask's fail under this symbol. A handler that crashes fails, at once,
// every ask whose reply its message carries, even a message the actor made itself from another (a Saved
// carrying a Publish's reply). Not a WeakMap from reply to fail: V8's scavenger keeps the values of an old
// WeakMap whose keys are young, so every ask's fail, its timer and the promise chain awaiting it (the whole
// frame of the async function that asked) would outlive the next scavenge and often be promoted (seen on
// the agents benchmark).
const FAIL = Symbol('apiary.ask.fail')
type ReplyCallback = { [FAIL]?: (error: Error) => void }

/** The handler of `msg` threw: fail the asks whose reply callbacks `msg` carries (own properties only). */
export function failRepliesIn(msg: object, error: Error): void {
  for (const value of Object.values(msg)) {
    if (typeof value === 'function') (value as ReplyCallback)[FAIL]?.(error)
  }
}

/**
 * The reply callback travels inside the message, so a reply can only reach the promise that made it
 * (nact's query keys replies by a 32-bit random id and misroutes at ~1e5 in flight). Calls after the first
 * reply, or after the timeout, are ignored.
 *
 * `const M`: without it TypeScript widens the `type` literal of the object the callback returns to string
 * (a bare type parameter as a callback's return type) and `ask(ref, (reply) => ({ type: 'Get', reply }))`
 * fails to compile. M is then the literal message type, which the ref must accept (contravariance).
 * R comes from explicit type arguments or the surrounding return type, else it is unknown.
 */
export function ask<const M extends { type: string }, R>(
  ref: TypedRef<M>,
  build: (reply: (r: R) => void) => M,
  timeoutMs: number,
): Promise<R> {
  const target = targets.get(ref)
  if (target === undefined) return Promise.reject(new ActorStoppedError(ref.path))
  if (!(timeoutMs > 0)) return Promise.reject(new RangeError(`ask timeoutMs must be > 0, got ${timeoutMs}`))
  return new Promise<R>((resolve, reject) => {
    let settled = false
    let timer: unknown
    let node: AskNode | undefined
    const settle = (finish: () => void) => {
      if (settled) return
      settled = true
      target.clock.clearTimeout(timer)
      if (node) target.pendingAsks.remove(node)
      finish()
    }
    const fail = (error: Error) => settle(() => reject(error))
    const reply: ((r: R) => void) & ReplyCallback = (r: R) => settle(() => resolve(r))
    reply[FAIL] = fail
    const msg = build(reply)
    if (settled) return
    node = target.pendingAsks.add(fail)
    timer = target.clock.setTimeout(() => fail(new AskTimeoutError(ref.path, timeoutMs)), timeoutMs)
    const outcome = target.admit(msg)
    if (outcome !== 'accepted') fail(admissionError(ref.path, outcome))
  })
}

/**
 * For the result of an actor's own I/O (Akka's pipeTo) that the actor could not take when it came (down
 * while it waits for its respawn, or its mailbox full): offered again every `everyMs` until it is taken, for
 * at most `forMs`. `onGiveUp` runs when it never was, or at once when the actor has stopped.
 */
export function tellUntilTaken<M>(
  ref: TypedRef<M>,
  msg: NoInfer<M>,
  opts: { everyMs: number; forMs: number; onGiveUp?: () => void },
): void {
  const target = targets.get(ref)
  if (target === undefined) {
    opts.onGiveUp?.()
    return
  }
  const until = target.clock.now() + opts.forMs
  const attempt = () => {
    const outcome = target.admit(msg)
    if (outcome === 'accepted') return
    if (outcome !== 'stopped' && outcome !== 'invalid' && target.clock.now() < until) {
      const h = target.clock.setTimeout(attempt, opts.everyMs) as { unref?: () => void } | undefined
      h?.unref?.()
      return
    }
    opts.onGiveUp?.()
  }
  attempt()
}

export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown }

/**
 * Akka's pipeTo: the actor started `work` and returned; its outcome comes back as the message `toMsg` makes,
 * offered again while the actor can't take it (tellUntilTaken). `onGiveUp` gets that message when it never was.
 */
export function pipeTo<M, T>(
  ref: TypedRef<M>,
  work: PromiseLike<T>,
  toMsg: (outcome: Settled<T>) => NoInfer<M>,
  opts: { everyMs: number; forMs: number; onGiveUp?: (msg: M) => void },
): void {
  const offer = (outcome: Settled<T>) => {
    const msg = toMsg(outcome)
    tellUntilTaken(ref, msg, { everyMs: opts.everyMs, forMs: opts.forMs, onGiveUp: () => opts.onGiveUp?.(msg) })
  }
  work.then(
    (value) => offer({ ok: true, value }),
    (error: unknown) => offer({ ok: false, error }),
  )
}
