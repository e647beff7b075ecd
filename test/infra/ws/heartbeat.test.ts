import { EventEmitter } from 'node:events'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { WebSocket } from 'ws'
import { SLICES, startHeartbeat, type Watched, watch } from '../../../src/infra/ws/heartbeat'

/** A socket that counts what the heartbeat does to it and answers pings only when told to. */
class FakeSocket extends EventEmitter {
  pings = 0
  terminated = false
  ping() {
    this.pings++
  }
  terminate() {
    this.terminated = true
  }
  close() {}
}

describe('heartbeat', () => {
  beforeEach(() => {
    vi.useFakeTimers()
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('spreads the pings over the interval: 1/SLICES of the sockets per tick, each socket once per interval', () => {
    const sockets = Array.from({ length: 1_000 }, () => new FakeSocket())
    const watched: Watched[] = sockets.map((s) =>
      watch(
        s as unknown as WebSocket,
        () => 0,
        () => true,
      ),
    )
    const stop = startHeartbeat({ intervalMs: 30_000, idleMs: 60_000, nowMs: () => 0, sockets: () => watched })
    for (let tick = 1; tick <= SLICES; tick++) {
      vi.advanceTimersByTime(30_000 / SLICES)
      expect(sockets.filter((s) => s.pings > 0).length).toBe((1_000 / SLICES) * tick)
    }
    expect(sockets.every((s) => s.pings === 1)).toBe(true)
    stop()
  })

  it('visits each socket once per interval when the interval is shorter than SLICES ms', () => {
    const sockets = Array.from({ length: 200 }, () => new FakeSocket())
    const watched: Watched[] = sockets.map((s) =>
      watch(
        s as unknown as WebSocket,
        () => 0,
        () => true,
      ),
    )
    const stop = startHeartbeat({ intervalMs: 50, idleMs: 60_000, nowMs: () => 0, sockets: () => watched })
    vi.advanceTimersByTime(49)
    expect(sockets.some((s) => s.pings === 0)).toBe(true)
    vi.advanceTimersByTime(1)
    expect(sockets.every((s) => s.pings === 1)).toBe(true)
    for (const s of sockets) s.emit('pong')
    vi.advanceTimersByTime(50)
    expect(sockets.every((s) => s.pings === 2 && !s.terminated)).toBe(true)
    stop()
  })

  it('terminates a socket at its visit one interval after the ping it did not answer, and keeps one that answered', () => {
    const [silent, answering] = [new FakeSocket(), new FakeSocket()]
    const watched = [silent, answering].map((s) =>
      watch(
        s as unknown as WebSocket,
        () => 0,
        () => true,
      ),
    )
    const stop = startHeartbeat({ intervalMs: 30_000, idleMs: 60_000, nowMs: () => 0, sockets: () => watched })
    // the first tick visits slot 0, so slot n is first visited on tick n + 1
    const tickMs = 30_000 / SLICES
    const firstVisit = (watched[0]!.slot + 1) * tickMs
    vi.advanceTimersByTime(firstVisit - 1)
    expect(silent.pings).toBe(0)
    vi.advanceTimersByTime(1)
    expect(silent.pings).toBe(1)
    vi.advanceTimersByTime(30_000 - 1)
    answering.emit('pong')
    expect(silent.terminated).toBe(false)
    vi.advanceTimersByTime(1)
    expect(silent.terminated).toBe(true)
    vi.advanceTimersByTime(30_000)
    expect(answering.terminated).toBe(false)
    expect(answering.pings).toBe(2)
    stop()
  })
})
