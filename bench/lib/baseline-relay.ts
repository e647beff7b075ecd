// The baseline: @nostr-relay/core with its SQLite event repository behind a plain `ws` server, a typical
// single-process Node relay that verifies every signature with @noble/curves on the event loop.
// Configured as shipped (its 1 s filter-result cache and 10 min event-result cache stay on).
import { join } from 'node:path'
import { LogLevel } from '@nostr-relay/common'
import { NostrRelay } from '@nostr-relay/core'
import { EventRepositorySqlite } from '@nostr-relay/event-repository-sqlite'
import { WebSocketServer } from 'ws'
import type { BenchEvent } from './fixtures'

export interface BaselineRelay {
  url: string
  close(): Promise<void>
  /** write events straight into the repository (no signature check, no fan-out): REQ data-set pre-fill */
  prefill(events: BenchEvent[]): Promise<number>
}

export async function startBaselineRelay(opts: { dir: string }): Promise<BaselineRelay> {
  const repository = new EventRepositorySqlite(join(opts.dir, 'baseline.sqlite'))
  await repository.init()
  const relay = new NostrRelay(repository, { logLevel: LogLevel.ERROR })
  // ws's own default maxPayload (100 MiB) would be unfair; match Apiary's 128 KiB frame limit.
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, maxPayload: 131_072 })
  wss.on('connection', (ws, req) => {
    relay.handleConnection(ws, req.socket.remoteAddress)
    ws.on('message', (data) => {
      let message: unknown
      try {
        message = JSON.parse(data.toString())
      } catch {
        ws.send(JSON.stringify(['NOTICE', 'invalid: bad JSON']))
        return
      }
      if (!Array.isArray(message)) {
        ws.send(JSON.stringify(['NOTICE', 'invalid: not an array']))
        return
      }
      // biome-ignore lint/suspicious/noExplicitAny: the baseline does no validation of its own (no validator plugin)
      relay.handleMessage(ws, message as any).catch((error: unknown) => {
        ws.send(JSON.stringify(['NOTICE', `error: ${(error as Error).message}`]))
      })
    })
    ws.on('close', () => relay.handleDisconnect(ws))
    ws.on('error', () => relay.handleDisconnect(ws))
  })
  await new Promise<void>((resolve, reject) => {
    wss.once('listening', resolve)
    wss.once('error', reject)
  })
  const { port } = wss.address() as { port: number }
  return {
    url: `ws://127.0.0.1:${port}`,
    async prefill(events) {
      // upsert opens its own transaction per event: the per-commit fsync is skipped only while pre-filling.
      // The running relay keeps the repository's own settings (WAL, synchronous=FULL).
      const db = repository.getDatabase()
      const previous = db.pragma('synchronous', { simple: true })
      db.pragma('synchronous = OFF')
      let stored = 0
      try {
        for (const e of events) {
          const r = await repository.upsert(e)
          if (!r.isDuplicate) stored++
        }
      } finally {
        db.pragma(`synchronous = ${previous}`)
      }
      return stored
    },
    async close() {
      for (const ws of wss.clients) ws.terminate()
      await new Promise<void>((resolve) => wss.close(() => resolve()))
      await relay.destroy()
      await repository.destroy()
    },
  }
}
