// The subscribing side of a fan-out load: every socket REQs one filter and waits for EOSE, then every EVENT it
// receives is counted and handed on with its id; and the wait for the deliveries still under way.
import type WebSocket from 'ws'

export interface DeliveryCount {
  deliveries: number
  /** performance.now() of the last delivery, 0 before any */
  lastDeliveryMs: number
  /** subscribers the relay closed (e.g. as slow consumers) */
  closed: number
}

/** REQ `filter` on every socket and wait for each EOSE; rejects when the relay answers CLOSED. */
export async function subscribeEach(subs: readonly WebSocket[], filter: Record<string, unknown>): Promise<void> {
  await Promise.all(
    subs.map(
      (ws, i) =>
        new Promise<void>((resolve, reject) => {
          const onEose = (data: WebSocket.RawData) => {
            const s = data.toString()
            if (s.startsWith('["EOSE"')) {
              ws.off('message', onEose)
              resolve()
            } else if (s.startsWith('["CLOSED"')) reject(new Error(`subscription refused: ${s}`))
          }
          ws.on('message', onEose)
          ws.send(JSON.stringify(['REQ', `fan${i}`, filter]))
        }),
    ),
  )
}

/** Counts every EVENT the sockets receive; `onDelivery(subscriber index, event id, at)` for each. */
export function countDeliveries(subs: readonly WebSocket[], onDelivery: (sub: number, id: string, atMs: number) => void): DeliveryCount {
  const count: DeliveryCount = { deliveries: 0, lastDeliveryMs: 0, closed: 0 }
  subs.forEach((ws, i) => {
    ws.on('message', (data) => {
      const s = data.toString()
      if (!s.startsWith('["EVENT"')) return
      const k = s.indexOf('"id":"')
      count.lastDeliveryMs = performance.now()
      count.deliveries++
      onDelivery(i, s.slice(k + 6, k + 70), count.lastDeliveryMs)
    })
    ws.once('close', () => count.closed++)
  })
  return count
}

/**
 * Waits until `expected` deliveries are in, nothing arrived for `settleMs` since the later of the last delivery
 * and `lastPublishMs`, or every subscriber is closed; what is missing then, if anything.
 */
export function awaitDeliveries(
  count: DeliveryCount,
  opts: { expected: number; subscribers: number; lastPublishMs: number; settleMs: number },
): Promise<string | undefined> {
  return new Promise((resolve) => {
    const check = setInterval(() => {
      const quiet = performance.now() - Math.max(count.lastDeliveryMs, opts.lastPublishMs)
      if (count.deliveries >= opts.expected || quiet > opts.settleMs || count.closed === opts.subscribers) {
        clearInterval(check)
        resolve(count.deliveries < opts.expected ? `${opts.expected - count.deliveries} deliveries missing` : undefined)
      }
    }, 20)
  })
}
