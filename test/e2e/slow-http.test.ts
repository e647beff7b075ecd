// Slow HTTP against a real relay: raw TCP sockets that send their request headers one byte at a time, from
// 127.0.0.2 (loopback, another client address), while a normal client connects from 127.0.0.1.
import { connect as connectTcp, type Socket } from 'node:net'
import { describe, expect, it } from 'vitest'
import { labelledMetric } from '../support/metrics'
import type { TestRelay } from '../support/relay'
import { useRelays } from '../support/relay-fixtures'
import { connect } from '../support/ws-client'

const HEADERS_TIMEOUT_MS = 1_000
const PENDING_CAP = 5
const closedFor = (r: TestRelay, reason: string) => labelledMetric(r, 'apiary_http_connections_closed_total', { reason })

interface SlowSocket {
  socket: Socket
  /** ms from connect to close, and whether the relay sent anything before closing */
  closed: Promise<{ afterMs: number; answered: boolean }>
}

/** A socket from 127.0.0.2 that sends an upgrade request's headers one byte every 50 ms, forever. */
function slowUpgrade(r: TestRelay): Promise<SlowSocket> {
  const request = `GET / HTTP/1.1\r\nHost: 127.0.0.1:${r.port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n`.repeat(1_000)
  return new Promise((resolve, reject) => {
    const socket = connectTcp({ port: r.port, host: '127.0.0.1', localAddress: '127.0.0.2' })
    let answered = false
    socket.on('data', () => {
      answered = true
    })
    socket.on('error', () => {})
    socket.once('connect', () => {
      const startedAt = performance.now()
      let at = 0
      const drip = setInterval(() => {
        if (!socket.destroyed) socket.write(request[at++ % request.length] ?? ' ')
      }, 50)
      const closed = new Promise<{ afterMs: number; answered: boolean }>((done) =>
        socket.once('close', () => {
          clearInterval(drip)
          done({ afterMs: performance.now() - startedAt, answered })
        }),
      )
      resolve({ socket, closed })
    })
    socket.once('error', reject)
  })
}

describe('slow HTTP: request headers sent a byte at a time', () => {
  const relays = useRelays()

  it('closes each slow socket after headersTimeoutMs, refuses those past the per-IP cap at once, and lets a normal client in meanwhile', async () => {
    const r = await relays.start({
      timeouts: { headersTimeoutMs: HEADERS_TIMEOUT_MS, requestTimeoutMs: 2 * HEADERS_TIMEOUT_MS },
      limits: { maxPendingUpgradesPerIp: PENDING_CAP },
    })
    const slow = await Promise.all(Array.from({ length: PENDING_CAP }, () => slowUpgrade(r)))
    const excess = await Promise.all(Array.from({ length: 3 }, () => slowUpgrade(r)))
    for (const s of excess) expect((await s.closed).afterMs).toBeLessThan(HEADERS_TIMEOUT_MS / 2)
    expect(await closedFor(r, 'too-many-pending')).toBe(3)
    // another address is not held up by the slow ones
    const normal = await connect(r.url)
    normal.close()
    const held = await Promise.all(slow.map((s) => s.closed))
    for (const h of held) {
      expect(h.afterMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS * 0.9)
      // the server's connection check runs every headersTimeoutMs / 4; 2 s more is for a loaded machine
      expect(h.afterMs).toBeLessThan(HEADERS_TIMEOUT_MS + 2_000)
    }
    expect(await closedFor(r, 'timeout')).toBe(PENDING_CAP)
    // their slots are free again: a new slow socket is held, not refused at once
    const again = await slowUpgrade(r)
    expect((await again.closed).afterMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS * 0.9)
  })
})
