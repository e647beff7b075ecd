// Idle connections: sockets that never send anything, and what the relay process holds for each.
import WebSocket from 'ws'
import type { MemorySample } from '../relay-ipc'
import { closeAll, connect } from './connect'

export interface IdleMemoryResult {
  connections: number
  /** (heapUsed + external) delta per connection, bytes, after forced GC in the relay process */
  heapPerConnection: number
  /** rss delta per connection, bytes */
  rssPerConnection: number
  /** sockets on which the relay sent something (e.g. the NIP-42 AUTH challenge) before we measured */
  greeted: number
  before: MemorySample
  after: MemorySample
}

/**
 * Open `connections` sockets that never send anything: complete the upgrade, wait for the relay's first frame
 * (Apiary sends an AUTH challenge; the baseline sends nothing, so give up after 300 ms), then measure.
 * `measure` reads the relay process's memory after GC (the relay child answers it over IPC).
 */
export async function idleConnectionMemory(
  url: string,
  opts: { connections: number },
  measure: () => Promise<MemorySample> | MemorySample,
): Promise<IdleMemoryResult> {
  // one throwaway connection first, so lazily created per-server structures are not charged to the sample
  const warm = await connect(url)
  await new Promise((r) => setTimeout(r, 300))
  warm.close()
  await new Promise((r) => setTimeout(r, 300))
  const before = await measure()
  let greeted = 0
  const sockets: WebSocket[] = []
  // The listener goes on before the upgrade completes: a greeting can arrive in the same read as the 101.
  const openIdle = () =>
    new Promise<WebSocket>((resolve, reject) => {
      const ws = new WebSocket(url, { perMessageDeflate: false, skipUTF8Validation: true })
      let timer: NodeJS.Timeout | undefined
      ws.once('message', () => {
        greeted++
        clearTimeout(timer)
        resolve(ws)
      })
      ws.once('open', () => {
        timer = setTimeout(() => resolve(ws), 300)
      })
      ws.on('error', reject) // after resolve: a no-op that keeps a late socket error from going unhandled
    })
  for (let i = 0; i < opts.connections; i += 100) {
    sockets.push(...(await Promise.all(Array.from({ length: Math.min(100, opts.connections - i) }, openIdle))))
  }
  await new Promise((r) => setTimeout(r, 1_000))
  const after = await measure()
  const open = sockets.filter((ws) => ws.readyState === WebSocket.OPEN).length
  closeAll(sockets)
  const heap = (m: MemorySample) => m.heapUsed + m.external
  return {
    connections: open,
    heapPerConnection: Math.round((heap(after) - heap(before)) / Math.max(1, open)),
    rssPerConnection: Math.round((after.rss - before.rss) / Math.max(1, open)),
    greeted,
    before,
    after,
  }
}
