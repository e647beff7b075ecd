import { describe, expect, it } from 'vitest'
import { AgentClient, type PublishResult } from '../../../src/client/index'
import type { NostrEvent } from '../../../src/protocols/nip01/event'
import { eventually } from '../../support/eventually'
import { FakeClock } from './fake-clock'
import { type Answer, okAll, startScriptedRelay, useAgents } from './scripted-relay'

const { agentOn, track } = useAgents()

const scripted = async (answer?: Answer, opts?: { challenge?: boolean }) => {
  const r = await startScriptedRelay(answer, undefined, opts)
  track({ stop: () => r.close() })
  return r
}

const isUserEvent = (f: unknown[]) => f[0] === 'EVENT' && (f[1] as NostrEvent).kind === 1

/** settles within `ms` of real time, or says it did not */
const within = <T>(p: Promise<T>, ms: number): Promise<T | 'pending'> =>
  Promise.race([p, new Promise<'pending'>((r) => setTimeout(() => r('pending'), ms))])

describe('an agent closed by a terminal error', () => {
  it('answers a publish that waited for its OK with the `blocked:` reason, not queued, ends its watches and leaves no timer', async () => {
    const clock = new FakeClock()
    // the relay takes the event and bans the key instead of answering it
    const r = await scripted((f, ws, c) => {
      if (isUserEvent(f)) ws.close(1008, 'blocked: banned by the operator')
      else okAll(f, ws, c)
    })
    const agent = agentOn(r, { clock })
    await agent.start()
    const views: unknown[] = []
    agent.watch('echo', (agents) => views.push(agents))
    const result = agent.publish({ kind: 1, content: 'never answered' })
    await eventually(() => agent.state === 'CLOSED', 'CLOSED', { timeoutMs: 3000 })
    const answered = (await within(result, 1000)) as PublishResult
    expect(answered).toMatchObject({ ok: false, reason: expect.stringMatching(/^blocked: /) })
    expect(answered).not.toHaveProperty('queued')
    await eventually(() => clock.pending === 0, 'every timer cleared', { timeoutMs: 1000 })
    expect(await agent.publish({ kind: 1, content: 'after' })).toMatchObject({ ok: false, reason: expect.stringMatching(/^blocked: /) })
    expect(await within(agent.stop(), 1000)).toBeUndefined()
    expect(clock.pending).toBe(0)
    expect(agent.watch('echo', () => {})).toBeTypeOf('function')
    expect(clock.pending).toBe(0)
  })
})

describe('stopping an agent', () => {
  it('settles a publish asleep in a retry backoff at once and leaves no timer', async () => {
    const clock = new FakeClock()
    const r = await scripted((f, ws, c) => {
      if (isUserEvent(f)) ws.send(JSON.stringify(['OK', (f[1] as NostrEvent).id, false, 'error: store busy']))
      else okAll(f, ws, c)
    })
    const agent = agentOn(r, { clock })
    await agent.start()
    const result = agent.publish({ kind: 1, content: 'retried' })
    await eventually(() => r.connections[0]!.frames.some(isUserEvent), 'the first send', { timeoutMs: 2000 })
    await new Promise((res) => setTimeout(res, 50))
    expect(await within(agent.stop(), 2000)).toBeUndefined()
    expect(await within(result, 100)).toMatchObject({ ok: false, reason: expect.stringMatching(/^error: /) })
    expect(clock.pending).toBe(0)
  })

  it('during the handshake clears the wait for the AUTH challenge', async () => {
    const clock = new FakeClock()
    const r = await scripted(okAll, { challenge: false })
    const agent = agentOn(r, { clock })
    const started = agent.start().catch((e: unknown) => e)
    await eventually(() => r.connections.length === 1 && agent.state === 'DISCOVERED', 'the socket', { timeoutMs: 2000 })
    await new Promise((res) => setTimeout(res, 50))
    await agent.stop()
    expect(await started).toBeInstanceOf(Error)
    expect(clock.pending).toBe(0)
  })

  it('sends no "online" heartbeat after its goodbye', async () => {
    const r = await scripted((f, ws, c) => {
      if (f[0] === 'EVENT' && (f[1] as NostrEvent).content === 'offline') return
      okAll(f, ws, c)
    })
    const agent = agentOn(r, { heartbeatSeconds: 0.1, leaseSeconds: 0.3, sessionSeconds: 1, goodbyeTimeoutMs: 150 })
    await agent.start()
    await agent.stop()
    const contents = r.connections[0]!.frames.filter((f) => f[0] === 'EVENT' && (f[1] as NostrEvent).kind === 20001).map(
      (f) => (f[1] as NostrEvent).content,
    )
    const firstBye = contents.indexOf('offline')
    expect(firstBye).toBeGreaterThan(0)
    expect(contents.slice(firstBye)).toEqual(['offline', 'offline', 'offline', 'offline'])
  })

  it('never rejects a publish whose template cannot be signed: it answers `invalid:`', async () => {
    const agent = new AgentClient({ relays: ['ws://127.0.0.1:9'], secretKey: '11'.repeat(32), capabilities: [] })
    const result = await agent.publish({ kind: 1, content: 'x', created_at: 10n as unknown as number })
    expect(result).toMatchObject({ ok: false, reason: expect.stringMatching(/^invalid: /) })
  })
})
