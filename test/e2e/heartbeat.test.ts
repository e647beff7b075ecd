import { afterEach, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { startTestRelay, type TestRelay } from '../support/relay'
import { connect } from '../support/ws-client'

describe('connection heartbeats', () => {
  let t: TestRelay | undefined
  afterEach(async () => {
    await t?.close()
    t = undefined
  })

  it('closes a connection that does not answer pings', async () => {
    t = await startTestRelay({ timeouts: { pingIntervalMs: 100, idleUnauthenticatedMs: 60_000 } })
    const ws = new WebSocket(t.url, { autoPong: false })
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)))
    let pings = 0
    ws.on('ping', () => pings++)
    // terminate() gives no close frame: the client sees an abnormal closure
    expect(await closed).toBe(1006)
    expect(pings).toBeGreaterThanOrEqual(1)
  })

  it('keeps a connection that answers pings and holds a subscription', async () => {
    t = await startTestRelay({ timeouts: { pingIntervalMs: 50, idleUnauthenticatedMs: 100 } })
    const c = await connect(t.url)
    c.send(['REQ', 'keep', { kinds: [1] }])
    await c.next((f) => f[0] === 'EOSE')
    let pings = 0
    await new Promise<void>((resolve) =>
      c.ws.on('ping', () => {
        if (++pings === 6) resolve()
      }),
    )
    expect(c.ws.readyState).toBe(WebSocket.OPEN)
    c.close()
  })

  it('closes an unauthenticated connection that stays silent past the idle timeout', async () => {
    t = await startTestRelay({ timeouts: { pingIntervalMs: 50, idleUnauthenticatedMs: 120 } })
    const c = await connect(t.url)
    const closed = await c.closed
    expect(closed.code).toBe(1000)
    expect(closed.reason).toContain('idle')
  })
})
