import { describe, expect, it } from 'vitest'
import { makeKeys } from '../support/events'
import { signEventFast } from '../support/fast-sign'
import { publish } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'
import { connect, type Frame, type TestClient } from '../support/ws-client'

/**
 * A reconnect storm (docs/architecture.md §6.4): every client of a community comes back at once and each sends
 * its REQ. Each connection waits only behind its own reads, so however many arrive together, each is served.
 */

/** enough that well over a thousand REQs wait at once behind the 16 a community runs */
const CONNECTIONS = 1_200
const STORED = 50
/** sockets opened side by side: the listen backlog, not the relay, would refuse a few thousand at once */
const OPENING_AT_ONCE = 100

async function openAll(url: string, n: number): Promise<TestClient[]> {
  const clients: TestClient[] = []
  for (let i = 0; i < n; i += OPENING_AT_ONCE) {
    const batch = Array.from({ length: Math.min(OPENING_AT_ONCE, n - i) }, () => connect(url))
    clients.push(...(await Promise.all(batch)))
  }
  return clients
}

describe('a reconnect storm of REQs to one community', () => {
  const relays = useRelays()

  it('serves every REQ of 1,200 connections sent at once with its stored page and EOSE, none CLOSED', async () => {
    const r = await relays.start()
    const keys = makeKeys()
    const pub = await connect(r.url)
    const now = Math.floor(Date.now() / 1000)
    for (let i = 0; i < STORED; i++) {
      expect((await publish(pub, signEventFast(keys, { kind: 1, created_at: now - i, content: `${i}` }))).accepted).toBe(true)
    }
    const clients = await openAll(r.url, CONNECTIONS)
    try {
      for (const c of clients) c.send(['REQ', 'storm', { authors: [keys.pubkey], limit: 10 }])
      const answers = await Promise.all(
        clients.map((c) => c.next((f: Frame) => (f[0] === 'EOSE' || f[0] === 'CLOSED') && f[1] === 'storm', 30_000)),
      )
      const closed = answers.filter((f) => f[0] === 'CLOSED')
      // the first few, should any be refused: enough to read why
      expect(closed.slice(0, 3)).toEqual([])
      expect(answers.filter((f) => f[0] === 'EOSE')).toHaveLength(CONNECTIONS)
      // each got its page, 10 of the stored events, before its EOSE
      for (const c of clients) {
        const upToEose = c.frames.slice(
          0,
          c.frames.findIndex((f) => f[0] === 'EOSE'),
        )
        expect(upToEose.filter((f) => f[0] === 'EVENT' && f[1] === 'storm')).toHaveLength(10)
      }
    } finally {
      for (const c of [pub, ...clients]) c.close()
    }
  }, 60_000)
})
