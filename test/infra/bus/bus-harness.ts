import { randomUUID } from 'node:crypto'
import type { Observable, Subscription } from 'rxjs'
import { vi } from 'vitest'

/** Unique per test and run: the Redis suites share one server with other test runs (never FLUSHALL). */
export function uniqueChannel(label: string): string {
  return `test:bus:${randomUUID()}:${label}`
}

export interface Collected {
  readonly items: string[]
  readonly subscription: Subscription
}

export function collect(source: Observable<string>): Collected {
  const items: string[] = []
  return { items, subscription: source.subscribe((item) => items.push(item)) }
}

/** Network round trips have no event of ours to await; poll briefly instead of sleeping a fixed time. */
export function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  return vi.waitFor(
    () => {
      if (!condition()) throw new Error('condition not met yet')
    },
    { timeout: timeoutMs, interval: 5 },
  )
}
