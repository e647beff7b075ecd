import { describe, expect, it } from 'vitest'
import { createInboundFlow, MIN_FRAME_CHARGE_BYTES } from '../../../src/infra/ws/inbound-flow'

/** A socket that records pause/resume, as ws's WebSocket does for its underlying TCP socket. */
function fakeSocket() {
  const calls: string[] = []
  return {
    calls,
    OPEN: 1 as const,
    readyState: 1 as 0 | 1 | 2 | 3,
    pause: () => void calls.push('pause'),
    resume: () => void calls.push('resume'),
  }
}

describe('inbound flow control of one socket', () => {
  it('pauses reading once the bytes in flight pass the bound, and resumes at half of it', () => {
    const ws = fakeSocket()
    let pauses = 0
    const flow = createInboundFlow(ws, 10_000, () => pauses++)
    const charges = [4_000, 4_000].map((b) => flow.charge(b))
    expect(ws.calls).toEqual([])
    charges.push(flow.charge(2_001))
    expect(ws.calls).toEqual(['pause'])
    expect(flow.bytesInFlight).toBe(10_001)
    flow.charge(4_000)
    expect(ws.calls).toEqual(['pause'])
    flow.release(charges[0]!)
    flow.release(charges[1]!)
    expect(ws.calls).toEqual(['pause'])
    flow.release(charges[2]!)
    expect(flow.bytesInFlight).toBe(4_000)
    expect(ws.calls).toEqual(['pause', 'resume'])
    expect(pauses).toBe(1)
  })

  it('bounds by bytes, not by frames: 1,000 frames of 128 KiB pause after the first few', () => {
    const ws = fakeSocket()
    const flow = createInboundFlow(ws, 1_048_576)
    let read = 0
    for (let i = 0; i < 1000 && !ws.calls.includes('pause'); i++) {
      flow.charge(131_072)
      read++
    }
    expect(read).toBe(9)
  })

  it('charges tiny frames a floor, so a flood of "[]" is bounded too', () => {
    const ws = fakeSocket()
    const flow = createInboundFlow(ws, 1_048_576)
    expect(flow.charge(2)).toBe(MIN_FRAME_CHARGE_BYTES)
    let frames = 1
    while (!ws.calls.includes('pause')) {
      flow.charge(2)
      frames++
    }
    expect(frames).toBe(Math.floor(1_048_576 / MIN_FRAME_CHARGE_BYTES) + 1)
  })

  it('does not resume a socket that closed meanwhile', () => {
    const ws = fakeSocket()
    const flow = createInboundFlow(ws, 100)
    const bytes = flow.charge(1_000)
    ws.readyState = 3
    flow.release(bytes)
    expect(ws.calls).toEqual(['pause'])
  })
})
