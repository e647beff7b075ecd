import { describe, expect, it } from 'vitest'
import type { WebSocket } from 'ws'
import { toHttpUrl } from '../../../src/client/agent/relay-info'
import { AgentClient, AgentError } from '../../../src/client/index'
import type { NostrEvent } from '../../../src/protocols/nip01/event'
import { eventually } from '../../support/eventually'
import { FakeClock } from './fake-clock'
import { type Answer, okAll, type ScriptedRelay, startScriptedRelay, useAgents } from './scripted-relay'

const { agentOn, track } = useAgents()

/** resolves when `ws` (the relay's side) gets the pong to a ping sent now */
const pingPong = (ws: WebSocket) =>
  new Promise<void>((resolve) => {
    ws.once('pong', () => resolve())
    ws.ping()
  })

const scripted = async (answer?: Answer, nips?: number[]) => {
  const r = await startScriptedRelay(answer, nips)
  track({ stop: () => r.close() })
  return r
}

const refuseAuthWith =
  (message: string, times = Number.POSITIVE_INFINITY): Answer =>
  (f, ws, connection) => {
    if (f[0] === 'AUTH' && connection < times) ws.send(JSON.stringify(['OK', (f[1] as NostrEvent).id, false, message]))
    else okAll(f, ws, connection)
  }

describe('the handshake against a scripted relay', () => {
  it.each([
    ['blocked: banned', 'blocked'],
    ['restricted: not on the allow list', 'restricted'],
    ['invalid: auth relay tag does not name this relay', 'auth-rejected'],
  ])('rejects start() for AUTH answered %j with code %s, and never connects again', async (message, code) => {
    const r = await scripted(refuseAuthWith(message))
    const agent = agentOn(r)
    const error = (await agent.start().catch((e: unknown) => e)) as AgentError
    expect(error).toBeInstanceOf(AgentError)
    expect(error.code).toBe(code)
    expect(agent.state).toBe('CLOSED')
    // must not happen: a retry would come after the first backoff delay (1 s); none does
    await new Promise((res) => setTimeout(res, 1300))
    expect(r.connections).toHaveLength(1)
  })

  it('waits out an AUTH answered `rate-limited: retry in 2s` before the next attempt, then becomes ACTIVE', async () => {
    const r = await scripted(refuseAuthWith('rate-limited: retry in 2s', 1))
    const agent = agentOn(r)
    await agent.start()
    expect(r.connections).toHaveLength(2)
    expect(r.connections[1]!.at - r.connections[0]!.at).toBeGreaterThanOrEqual(2000)
  })

  it('waits out a socket closed `rate-limited: retry in 2s` during the handshake before the next attempt', async () => {
    const r = await scripted((f, ws, c) => {
      if (f[0] === 'AUTH' && c === 0) ws.close(1013, 'rate-limited: retry in 2s')
      else okAll(f, ws, c)
    })
    const agent = agentOn(r)
    await agent.start()
    expect(r.connections).toHaveLength(2)
    expect(r.connections[1]!.at - r.connections[0]!.at).toBeGreaterThanOrEqual(2000)
  })

  it('signs AUTH for the challenge and the relay URL, then sends its first heartbeat and announces the capabilities', async () => {
    const r = await scripted()
    const agent = agentOn(r, { version: '2.0.0' })
    await agent.start()
    const [auth, heartbeat, announcement] = r.connections[0]!.frames
    expect(auth![0]).toBe('AUTH')
    expect((auth![1] as NostrEvent).tags).toEqual([
      ['relay', r.url],
      ['challenge', 'challenge-0'],
    ])
    const a = announcement![1] as NostrEvent
    expect(a.kind).toBe(31990)
    expect(a.tags).toEqual([
      ['d', 'apiary-agent'],
      ['c', 'echo'],
      ['k', '5050'],
      ['version', '2.0.0'],
    ])
    expect(JSON.parse(a.content)).toEqual({ capabilities: [{ name: 'echo', kinds: [5050] }] })
    expect(heartbeat![1]).toMatchObject({ kind: 20001, content: 'online', pubkey: agent.pubkey })
  })

  it('sends its registration right behind the AUTH, without waiting for the AUTH OK', async () => {
    // the AUTH is answered only once both registration events are in: a client waiting for it would time out
    let auth: unknown[] | undefined
    const r = await scripted((f, ws, c) => {
      if (f[0] === 'AUTH') auth = f
      else okAll(f, ws, c)
      const events = r.connections[c]!.frames.filter((g) => g[0] === 'EVENT')
      if (auth && events.length === 2) okAll(auth, ws, c)
    })
    const agent = agentOn(r, { handshakeTimeoutMs: 3000 })
    await agent.start()
    expect(r.connections).toHaveLength(1)
    expect(r.connections[0]!.frames.map((f) => f[0])).toEqual(['AUTH', 'EVENT', 'EVENT'])
  })

  it('sends the registration again, in order, once the AUTH is accepted, to a relay that judged it before the AUTH', async () => {
    const authed = new Set<number>()
    const r = await scripted((f, ws, c) => {
      if (f[0] === 'AUTH') {
        setTimeout(() => {
          authed.add(c)
          okAll(f, ws, c)
        }, 50)
      } else if (f[0] === 'EVENT' && !authed.has(c))
        ws.send(JSON.stringify(['OK', (f[1] as NostrEvent).id, false, 'auth-required: AUTH first']))
      else okAll(f, ws, c)
    })
    const agent = agentOn(r)
    await agent.start()
    const sent = r.connections[0]!.frames.filter((f) => f[0] === 'EVENT').map((f) => f[1] as NostrEvent)
    expect(sent.map((e) => e.kind)).toEqual([20001, 31990, 20001, 31990])
    expect(sent[2]!.id).toBe(sent[0]!.id)
    expect(sent[3]!.id).toBe(sent[1]!.id)
    expect(r.connections).toHaveLength(1)
  })

  it('refuses a relay without NIP-42 with a clear `incompatible` error, closing the socket opened beside discovery unused', async () => {
    const r = await scripted(okAll, [1, 11])
    const agent = agentOn(r, {
      fetch: async (url) => {
        await eventually(() => r.connections.length === 1, 'the socket beside discovery', { timeoutMs: 2000 })
        return fetch(url)
      },
    })
    const error = (await agent.start().catch((e: unknown) => e)) as AgentError
    expect(error.code).toBe('incompatible')
    expect(error.message).toMatch(/does not support NIP-42/)
    await eventually(() => r.connections[0]!.closeCode !== undefined, 'the unused socket closed', { timeoutMs: 2000 })
    expect(r.connections).toHaveLength(1)
    expect(r.connections[0]!.frames).toEqual([])
  })

  it('heartbeats on its own timer, and re-announces once per heartbeat when the load changed', async () => {
    const r = await scripted()
    const agent = agentOn(r, { heartbeatSeconds: 0.2, leaseSeconds: 0.6, sessionSeconds: 1 })
    await agent.start()
    agent.setLoad(0.5)
    agent.setLoad(0.75)
    await new Promise((res) => setTimeout(res, 700))
    const events = r.connections[0]!.frames.filter((f) => f[0] === 'EVENT').map((f) => f[1] as NostrEvent)
    expect(events.filter((e) => e.kind === 20001).length).toBeGreaterThanOrEqual(3)
    const announcements = events.filter((e) => e.kind === 31990)
    expect(announcements).toHaveLength(2)
    expect(announcements[1]!.tags).toContainEqual(['load', '0.75'])
    expect(agent.state).toBe('ACTIVE')
  })

  it('keeps heartbeating on time while publishes wait behind the throttle', async () => {
    const r = await scripted()
    const agent = agentOn(r, {
      heartbeatSeconds: 0.2,
      leaseSeconds: 0.6,
      sessionSeconds: 1,
      throttle: { global: { ratePerSecond: 1, burst: 1 } },
    })
    await agent.start()
    const since = r.connections[0]!.frames.length
    const publishes = Array.from({ length: 5 }, (_, i) => agent.publish({ kind: 1, content: `waits ${i}` }))
    await new Promise((res) => setTimeout(res, 700))
    const sent = r.connections[0]!.frames.slice(since).map((f) => f[1] as NostrEvent)
    expect(sent.filter((e) => e.kind === 1).length).toBeLessThanOrEqual(2)
    expect(sent.filter((e) => e.kind === 20001).length).toBeGreaterThanOrEqual(3)
    expect((await Promise.all(publishes)).filter((p) => !p.ok && p.throttled)).toHaveLength(0)
  })

  it('re-sends an unacknowledged goodbye up to 3 times, then CLOSEs its subscriptions and closes with 1000', async () => {
    const r = await scripted((f, ws, c) => {
      if (f[0] === 'EVENT' && (f[1] as NostrEvent).content === 'offline') return
      okAll(f, ws, c)
    })
    const agent = agentOn(r, { goodbyeTimeoutMs: 100 })
    await agent.start()
    agent.subscribe([{ kinds: [1] }], () => {})
    await new Promise((res) => setTimeout(res, 50))
    await agent.stop()
    await new Promise((res) => setTimeout(res, 50))
    const frames = r.connections[0]!.frames
    const byes = frames.filter((f) => f[0] === 'EVENT' && (f[1] as NostrEvent).content === 'offline')
    expect(byes).toHaveLength(4)
    expect(new Set(byes.map((f) => (f[1] as NostrEvent).id)).size).toBe(1)
    expect(frames.at(-1)).toEqual(['CLOSE', expect.stringMatching(/^agent-/)])
    expect(r.connections[0]!.closeCode).toBe(1000)
  })
})

describe('the socket opened beside discovery', () => {
  const nip11 = (r: ScriptedRelay) => fetch(toHttpUrl(r.url), { headers: { Accept: 'application/nostr+json' } })

  it('is open while NIP-11 is read, and carries nothing until the document fits', async () => {
    const r = await scripted()
    let framesWhileProbing: number | undefined
    const agent = agentOn(r, {
      fetch: async () => {
        await eventually(() => r.connections.length === 1, 'the socket beside discovery', { timeoutMs: 2000 })
        // two pings answered: the agent has had the challenge, and whatever it did with it (in a microtask
        // or the turn after) has reached us before the second pong
        await pingPong(r.connections[0]!.ws)
        await pingPong(r.connections[0]!.ws)
        framesWhileProbing = r.connections[0]!.frames.length
        return nip11(r)
      },
    })
    await agent.start()
    expect(framesWhileProbing).toBe(0)
    expect(r.connections).toHaveLength(1)
    expect(r.connections[0]!.frames.map((f) => f[0])).toEqual(['AUTH', 'EVENT', 'EVENT'])
  })

  it('is closed unused when the first relay does not answer NIP-11, and the agent goes on with the next one', async () => {
    const [a, b] = [await scripted(), await scripted()]
    const agent = agentOn(a, {
      relays: [a.url, b.url],
      fetch: async (url) => {
        if (String(url).startsWith(toHttpUrl(a.url))) {
          await eventually(() => a.connections.length === 1, 'the socket to the first relay', { timeoutMs: 2000 })
          throw new TypeError('fetch failed')
        }
        return nip11(b)
      },
    })
    await agent.start()
    expect(agent.state).toBe('ACTIVE')
    await eventually(() => a.connections[0]!.closeCode !== undefined, 'the unused socket closed', { timeoutMs: 2000 })
    expect(a.connections[0]!.frames).toEqual([])
    expect(b.connections).toHaveLength(1)
    expect(b.connections[0]!.frames[0]![0]).toBe('AUTH')
  })

  it('is closed at once when the agent is stopped while NIP-11 is still being read', async () => {
    const r = await scripted()
    let answer: (() => void) | undefined
    const agent = agentOn(r, {
      fetch: async () => {
        await new Promise<void>((resolve) => {
          answer = resolve
        })
        return nip11(r)
      },
    })
    const started = agent.start().catch((e: unknown) => e)
    await eventually(() => r.connections.length === 1 && answer !== undefined, 'the socket beside discovery', { timeoutMs: 2000 })
    await agent.stop()
    await eventually(() => r.connections[0]!.closeCode !== undefined, 'the socket closed by stop()', { timeoutMs: 2000 })
    expect(agent.state).toBe('CLOSED')
    answer?.()
    expect(await started).toBeInstanceOf(Error)
    expect(r.connections).toHaveLength(1)
    expect(r.connections[0]!.frames).toEqual([])
  })

  it('closed by the relay as `blocked:` before discovery ended, ends start() with `blocked` and no further connection', async () => {
    const r = await scripted()
    const agent = agentOn(r, {
      fetch: async () => {
        await eventually(() => r.connections.length === 1, 'the socket beside discovery', { timeoutMs: 2000 })
        r.connections[0]!.ws.close(1008, 'blocked: this IP is banned')
        await eventually(() => r.connections[0]!.closeCode !== undefined, 'the close', { timeoutMs: 2000 })
        return nip11(r)
      },
    })
    const error = (await agent.start().catch((e: unknown) => e)) as AgentError
    expect(error.code).toBe('blocked')
    expect(agent.state).toBe('CLOSED')
    // must not happen: a retry would come after the first backoff delay (1 s); none does
    await new Promise((res) => setTimeout(res, 1300))
    expect(r.connections).toHaveLength(1)
    expect(r.connections[0]!.frames).toEqual([])
  })
})

describe('a relay URL `ws` cannot parse', () => {
  it('fails the attempt and backs off, as a refused connection does (no unhandled rejection)', async () => {
    const clock = new FakeClock()
    const agent = new AgentClient({
      relays: ['ws://127.0.0.1:9/#fragment'],
      secretKey: '11'.repeat(32),
      capabilities: [],
      clock,
      random: () => 0,
      fetch: async () =>
        new Response(JSON.stringify({ supported_nips: [1, 11, 42] }), { headers: { 'content-type': 'application/nostr+json' } }),
    })
    const causes: string[] = []
    agent.state$.subscribe((s) => causes.push(`${s.state} ${s.cause ?? ''}`))
    void agent.start().catch(() => {})
    await eventually(() => causes.some((c) => c.startsWith('INIT') && /reconnecting in/.test(c)), 'the failed attempt', { timeoutMs: 2000 })
    expect(causes.find((c) => /reconnecting in/.test(c))).toMatch(/fragment/)
    await agent.stop()
  })
})

describe('registration after a slow handshake', () => {
  it('signs the announcement and first heartbeat again when the AUTH challenge came long after the socket opened', async () => {
    const clock = new FakeClock()
    const r = await startScriptedRelay(okAll, undefined, { challenge: false })
    track({ stop: () => r.close() })
    const agent = agentOn(r, { clock })
    const started = agent.start()
    await eventually(() => r.connections.length === 1 && agent.state === 'DISCOVERED', 'the socket', { timeoutMs: 2000 })
    // 30 s pass before the relay asks for AUTH (no timer runs: the handshake timeout is not what is tested)
    clock.advanceSync(30_000)
    r.connections[0]!.ws.send(JSON.stringify(['AUTH', 'late']))
    await started
    const now = Math.floor(clock.now() / 1000)
    const sent = r.connections[0]!.frames.filter((f) => f[0] === 'EVENT').map((f) => f[1] as NostrEvent)
    const heartbeat = sent.find((e) => e.kind === 20001)!
    const announcement = sent.find((e) => e.kind === 31990)!
    expect(heartbeat.created_at).toBe(now)
    expect(announcement.created_at).toBe(now)
  })
})

describe('heartbeat spacing', () => {
  it('beats at the interval shortened by up to a tenth at random, each beat drawn anew, so agents started together drift apart', async () => {
    const clock = new FakeClock()
    const draws = [0.5, 0.25, 0.999]
    let n = 0
    const r = await scripted()
    const agent = agentOn(r, { clock, random: () => draws[n++ % draws.length]! })
    await agent.start()
    const beats = () => r.connections[0]!.frames.filter((f) => f[0] === 'EVENT' && (f[1] as NostrEvent).kind === 20001).length
    expect(beats()).toBe(1)
    expect(clock.requested).toContain(14_250)
    await clock.advance(14_250)
    await eventually(() => beats() === 2, 'the second heartbeat', { timeoutMs: 2000 })
    expect(clock.requested).toContain(14_625)
    await clock.advance(14_625)
    await eventually(() => beats() === 3, 'the third heartbeat', { timeoutMs: 2000 })
    expect(clock.requested.some((ms) => Math.abs(ms - 13_501.5) < 0.01)).toBe(true)
  })
})
