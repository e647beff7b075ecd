import type { Subscription } from 'rxjs'
import type { Kernel, SupervisionEvent } from '../../../src/actors/kernel'

/**
 * nact handles messages on setImmediate turns, so waiting means yielding turns until the condition holds. Not
 * test/support/eventually.ts: it counts event-loop turns, not time, so a kernel on a ManualClock never waits on
 * the wall clock and the condition is checked after every turn.
 */
export async function waitTurns(condition: () => boolean, what = 'condition', maxTurns = 20_000): Promise<void> {
  for (let turn = 0; turn < maxTurns; turn++) {
    if (condition()) return
    await new Promise<void>((resolve) => setImmediate(resolve))
  }
  throw new Error(`timed out after ${maxTurns} event-loop turns waiting for ${what}`)
}

/** lets nact run whatever it has queued, for asserting that something did NOT happen */
export async function settle(turns = 50): Promise<void> {
  for (let turn = 0; turn < turns; turn++) await new Promise<void>((resolve) => setImmediate(resolve))
}

export interface EventLog {
  readonly events: SupervisionEvent[]
  of<T extends SupervisionEvent['type']>(type: T, path?: string): Extract<SupervisionEvent, { type: T }>[]
  waitFor<T extends SupervisionEvent['type']>(type: T, path?: string, count?: number): Promise<void>
  readonly subscription: Subscription
}

export function recordEvents(kernel: Kernel): EventLog {
  const events: SupervisionEvent[] = []
  const subscription = kernel.supervision$.subscribe((event) => events.push(event))
  const of = <T extends SupervisionEvent['type']>(type: T, path?: string) =>
    events.filter(
      (e): e is Extract<SupervisionEvent, { type: T }> => e.type === type && (path === undefined || ('path' in e && e.path === path)),
    )
  return {
    events,
    of,
    waitFor: (type, path, count = 1) => waitTurns(() => of(type, path).length >= count, `${count}× ${type}`),
    subscription,
  }
}
