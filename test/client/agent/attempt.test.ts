import { describe, expect, it } from 'vitest'
import type { AgentState, AgentStateChange } from '../../../src/client/agent/agent-state'
import { Announcer } from '../../../src/client/agent/announcer'
import { type AttemptHost, ConnectionAttempt } from '../../../src/client/agent/attempt'
import { InboundDedup } from '../../../src/client/agent/inbound-dedup'
import { resolveOptions } from '../../../src/client/agent/options'
import { toHttpUrl } from '../../../src/client/agent/relay-info'
import { AppSubscriptions } from '../../../src/client/agent/subscriptions'
import { eventually } from '../../support/eventually'
import { FakeClock } from './fake-clock'
import { type Answer, okAll, type ScriptedRelay, startScriptedRelay, useAgents } from './scripted-relay'

const { agentOn, track } = useAgents()

const scripted = async (answer?: Answer) => {
  const r = await startScriptedRelay(answer)
  track({ stop: () => r.close() })
  return r
}

/** an attempt on its own, as the client makes one per connect, with a host that records what it hears */
function attemptOn(r: ScriptedRelay, clock: FakeClock) {
  const o = resolveOptions({ relays: [r.url], secretKey: '11'.repeat(32), capabilities: [], clock, random: () => 0 })
  const subscriptions = new AppSubscriptions({ clock, resumeOverlapSeconds: 60, dedup: new InboundDedup(o.dedup), limits: undefined })
  let queries = 0
  const deps = { o, announcer: new Announcer(o), subscriptions, newQueryId: () => `agent-q${++queries}` }
  const heard: string[] = []
  let state: AgentState = 'INIT'
  const host: AttemptHost = {
    state: () => state,
    discovered: () => heard.push('discovered'),
    authenticated: () => heard.push('authenticated'),
    registered: () => {
      state = 'ACTIVE'
      heard.push('registered')
    },
    degraded: (to) => {
      state = to
      heard.push(to)
    },
    recovered: () => heard.push('recovered'),
    ended: (error) => heard.push(`ended: ${(error as Error).message}`),
  }
  const attempt = new ConnectionAttempt(deps, 0, host)
  track({ stop: async () => attempt.dispose() })
  return { attempt, heard }
}

describe('a connection attempt once disposed', () => {
  it('leaves no timer, and past the session timeout its heartbeat and watchdog report nothing and send nothing', async () => {
    const clock = new FakeClock()
    const r = await scripted()
    const { attempt, heard } = attemptOn(r, clock)
    await eventually(() => heard.includes('registered'), 'the registration', { timeoutMs: 3000 })
    // the heartbeat and the watchdog
    expect(clock.pending).toBe(2)
    const sent = r.connections[0]!.frames.length
    attempt.dispose()
    expect(clock.pending).toBe(0)
    await eventually(() => r.connections[0]!.closeCode !== undefined, 'the connection dropped', { timeoutMs: 2000 })
    // a live watchdog would have gone SUSPECT, ZOMBIE and given the connection up in this time
    await clock.advance(200_000)
    expect(heard).toEqual(['discovered', 'authenticated', 'registered'])
    expect(r.connections[0]!.frames).toHaveLength(sent)
    expect(attempt.socket?.isOpen).toBe(false)
  })

  it('mid-handshake, clears the wait for the AUTH challenge and goes no further', async () => {
    const clock = new FakeClock()
    const r = await startScriptedRelay(okAll, undefined, { challenge: false })
    track({ stop: () => r.close() })
    const { attempt, heard } = attemptOn(r, clock)
    // the challenge's deadline is the one timer of an attempt waiting for it
    await eventually(() => heard.includes('discovered') && clock.pending === 1, 'the wait for the challenge', { timeoutMs: 3000 })
    attempt.dispose()
    expect(clock.pending).toBe(0)
    await eventually(() => r.connections[0]!.closeCode !== undefined, 'the connection dropped', { timeoutMs: 2000 })
    await clock.advance(60_000)
    expect(heard).toEqual(['discovered'])
    expect(r.connections[0]!.frames).toEqual([])
  })
})

describe('a connection lost while ACTIVE', () => {
  it('takes its timers with it: a subscription re-send and a query pending on it are gone, and the query fails at once', async () => {
    const clock = new FakeClock()
    const r = await scripted((f, ws, c) => {
      // on the first connection the subscription is put off for 30 s and the query never ends
      if (c === 0 && f[0] === 'REQ' && f[1] === 'agent-1') ws.send(JSON.stringify(['CLOSED', f[1], 'rate-limited: retry in 30s']))
      else if (c === 0 && f[0] === 'REQ') return
      else okAll(f, ws, c)
    })
    const agent = agentOn(r, { clock, random: () => 0 })
    const states: AgentStateChange[] = []
    agent.state$.subscribe((s) => states.push(s))
    await agent.start()
    agent.subscribe([{ kinds: [1] }], () => {})
    const found = agent.discover('echo').catch((e: unknown) => e as Error)
    // heartbeat, watchdog, the subscription's re-send and the query's deadline
    await eventually(() => clock.pending === 4, 'the re-send and the query pending', { timeoutMs: 3000 })

    r.connections[0]!.ws.terminate()
    expect(((await found) as Error).message).toMatch(/connection is gone/)
    await eventually(() => agent.state === 'INIT', 'the loss noticed', { timeoutMs: 3000 })
    // the reconnect timer alone
    expect(clock.pending).toBe(1)
    const lost = states.length
    await clock.advance(1000)
    await eventually(() => agent.state === 'ACTIVE', 'ACTIVE on the next connection', { timeoutMs: 3000 })
    expect(states.slice(lost).map((s) => s.state)).toEqual(['DISCOVERED', 'AUTHENTICATED', 'ACTIVE'])
    // the subscription went out again on the new connection, and only its heartbeat and watchdog are left
    await eventually(() => r.connections[1]!.frames.some((f) => f[0] === 'REQ' && f[1] === 'agent-1'), 'the re-sent REQ', {
      timeoutMs: 2000,
    })
    expect(clock.pending).toBe(2)
  })
})

describe('an attempt ended by stop() while NIP-11 was still being read', () => {
  it('does not move the agent out of CLOSED when the answer comes late, and opens nothing more', async () => {
    const clock = new FakeClock()
    const r = await scripted()
    let answer: (() => void) | undefined
    let answered: Promise<unknown> | undefined
    const agent = agentOn(r, {
      clock,
      fetch: async () => {
        await new Promise<void>((resolve) => {
          answer = resolve
        })
        answered = fetch(toHttpUrl(r.url), { headers: { Accept: 'application/nostr+json' } })
        return answered as Promise<Response>
      },
    })
    const states: string[] = []
    agent.state$.subscribe((s) => states.push(s.state))
    const started = agent.start().catch((e: unknown) => e)
    await eventually(() => r.connections.length === 1 && answer !== undefined, 'the socket beside discovery', { timeoutMs: 2000 })
    await agent.stop()
    answer?.()
    await eventually(() => answered !== undefined, 'the late answer', { timeoutMs: 2000 })
    await answered
    // the turn in which the attempt would have gone on with the document
    await new Promise((res) => setImmediate(res))
    await new Promise((res) => setImmediate(res))
    expect(await started).toBeInstanceOf(Error)
    expect(states).toEqual(['INIT', 'CLOSED'])
    expect(agent.state).toBe('CLOSED')
    expect(r.connections).toHaveLength(1)
    expect(r.connections[0]!.frames).toEqual([])
    expect(clock.pending).toBe(0)
  })
})
