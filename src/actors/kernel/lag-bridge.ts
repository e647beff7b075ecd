import { systemClock } from './clock.js'
import type { Clock } from './types.js'

/**
 * A stream told into one actor's mailbox (an RxJS subscription's next, the bus's messages). An item the actor
 * cannot take (its mailbox is full, it is down) is not lost in silence: the actor hears one lag, offered as
 * soon as it has room, with how many items it missed and the first `keepMissed` of them, and acts on it.
 * While a lag waits to be taken, later items are skipped and added to it, so none overtakes the gap: the
 * actor learns what it missed before it sees anything that came after. A lag never taken within
 * `giveUpAfterMs` (the actor stayed down or full that long) goes to `onGiveUp`, whoever else can act on it.
 */
export interface Lag<T> {
  /** items skipped (an interruption adds none: the source itself lost an unknown number) */
  skipped: number
  /** the first skipped items, at most keepMissed */
  missed: T[]
  /** false when `missed` is not all that was lost: more than keepMissed were skipped, or the source was interrupted */
  complete: boolean
  /** the source reported a gap of its own (a lost connection), not just items this actor could not take */
  interrupted: boolean
}

export interface LagBridgeOptions<T> {
  /** tells one item; false when the actor could not take it */
  tell(item: T): boolean
  /** tells the lag as one message; false when the actor could not take it yet */
  tellLag(lag: Lag<T>): boolean
  /** every skip, for metrics and supervision's 'lagged' events */
  counted?(skipped: number): void
  /** the lag was never taken: act on it without the actor */
  onGiveUp(lag: Lag<T>): void
  /** how many skipped items the lag carries; past it, the actor is told the lag is not complete */
  keepMissed?: number
  /** how often a waiting lag is offered again (also on every new item) */
  retryEveryMs?: number
  giveUpAfterMs?: number
  clock?: Clock
}

export interface LagBridge<T> {
  push(item: T): void
  /** the source lost an unknown number of items: the actor hears a lag that is not complete */
  interrupt(): void
  /** stops offering a waiting lag (the actor is stopping for good); what it held goes to onGiveUp */
  dispose(): void
}

const KEEP_MISSED = 256
const RETRY_EVERY_MS = 20
const GIVE_UP_AFTER_MS = 60_000

export function createLagBridge<T>(o: LagBridgeOptions<T>): LagBridge<T> {
  const clock = o.clock ?? systemClock
  const keep = o.keepMissed ?? KEEP_MISSED
  let lag: Lag<T> | undefined
  let since = 0
  let timer: unknown

  const offer = () => {
    if (lag === undefined) return
    if (o.tellLag(lag)) {
      lag = undefined
      cancelRetry()
    } else if (clock.now() - since >= (o.giveUpAfterMs ?? GIVE_UP_AFTER_MS)) {
      const lost = lag
      lag = undefined
      cancelRetry()
      o.onGiveUp(lost)
    } else if (timer === undefined) {
      timer = clock.setTimeout(() => {
        timer = undefined
        offer()
      }, o.retryEveryMs ?? RETRY_EVERY_MS)
      ;(timer as { unref?: () => void } | undefined)?.unref?.()
    }
  }
  const cancelRetry = () => {
    if (timer !== undefined) clock.clearTimeout(timer)
    timer = undefined
  }
  const open = (): Lag<T> => {
    if (lag === undefined) {
      lag = { skipped: 0, missed: [], complete: true, interrupted: false }
      since = clock.now()
    }
    return lag
  }
  const skip = (item: T) => {
    const l = open()
    l.skipped++
    if (l.missed.length < keep) l.missed.push(item)
    else l.complete = false
    o.counted?.(1)
  }

  return {
    push(item) {
      // a waiting lag goes first: nothing may reach the actor ahead of what it missed
      if (lag !== undefined) offer()
      if (lag === undefined && o.tell(item)) return
      skip(item)
      offer()
    },
    interrupt() {
      const l = open()
      l.complete = false
      l.interrupted = true
      offer()
    },
    dispose() {
      cancelRetry()
      const lost = lag
      lag = undefined
      if (lost) o.onGiveUp(lost)
    },
  }
}
