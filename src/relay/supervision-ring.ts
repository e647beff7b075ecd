// The node's latest supervision events as the console shows them: the kernel's supervision$ (as
// supervision-log.ts reads it) kept as the last SUPERVISION_ROWS rows, numbered per node so a reader asks
// for what came after the last one it saw. Starts and ordinary stops are left out: every connection makes both.
import type { Observable, Subscription } from 'rxjs'
import type { SupervisionEvent } from '../actors/kernel/index.js'
import type { SupervisionRow } from '../protocols/console.js'

export const SUPERVISION_ROWS = 100

const MAX_DETAIL_CHARS = 200

export interface SupervisionRing {
  /** oldest first */
  rows(): SupervisionRow[]
  stop(): void
}

export function keepSupervision(events$: Observable<SupervisionEvent>, node: string, nowMs: () => number): SupervisionRing {
  const rows: SupervisionRow[] = []
  let seq = 0
  const sub: Subscription = events$.subscribe((e) => {
    if (e.type === 'started' || e.type === 'invalid-message' || (e.type === 'stopped' && e.reason !== 'gave-up')) return
    rows.push({
      node,
      seq: ++seq,
      atMs: nowMs(),
      type: e.type,
      path: 'path' in e ? e.path : e.supervisor,
      supervisor: e.supervisor,
      detail: detailOf(e).slice(0, MAX_DETAIL_CHARS),
    })
    if (rows.length > SUPERVISION_ROWS) rows.shift()
  })
  return { rows: () => rows.slice(), stop: () => sub.unsubscribe() }
}

function detailOf(e: Exclude<SupervisionEvent, { type: 'started' | 'invalid-message' }>): string {
  switch (e.type) {
    case 'crashed':
      return `${e.error instanceof Error ? `${e.error.name}: ${e.error.message}` : String(e.error)}${e.msgType ? ` (on ${e.msgType})` : ''}`
    case 'backoff':
      return `retry in ${e.delayMs} ms (attempt ${e.attempt})`
    case 'gave-up':
      return `after ${e.failures} failures`
    case 'overflow':
      return `${e.dropped} messages dropped`
    case 'lagged':
      return `${e.skipped} skipped`
    case 'stopped':
      return String(e.reason)
    case 'escalated':
      return `${e.failures} failures in ${e.windowMs} ms`
    case 'degraded':
      return e.reason
    case 'restarted':
      return ''
  }
}
