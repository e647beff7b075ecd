import { randomUUID } from 'node:crypto'
import type { Observable, Subscription } from 'rxjs'

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
