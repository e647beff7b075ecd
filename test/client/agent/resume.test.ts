import { bytesToHex } from '@noble/hashes/utils.js'
import { afterEach, describe, expect, it } from 'vitest'
import { AgentClient, type AgentClientOptions } from '../../../src/client/index'
import type { NostrEvent } from '../../../src/protocols/nip01/event'
import { makeKeys, signEvent } from '../../support/events'
import { eventually } from '../../support/eventually'
import { type Answer, okAll, type ScriptedRelay, startScriptedRelay } from './scripted-relay'

const opened: { stop(): Promise<void> }[] = []
afterEach(async () => {
  await Promise.all(opened.splice(0).map((x) => x.stop()))
})

function agentOn(r: ScriptedRelay, extra: Partial<AgentClientOptions> = {}) {
  const agent = new AgentClient({
    relays: [r.url],
    secretKey: bytesToHex(makeKeys().secretKey),
    capabilities: [],
    reconnect: { minMs: 100, maxMs: 400 },
    ...extra,
  })
  opened.push(agent)
  return agent
}

const scripted = async (answer: Answer) => {
  const r = await startScriptedRelay(answer)
  opened.push({ stop: () => r.close() })
  return r
}

const nowSeconds = () => Math.floor(Date.now() / 1000)
const appReqs = (r: ScriptedRelay, connection: number) =>
  r.connections[connection]?.frames.filter((f) => f[0] === 'REQ' && f[1] === 'agent-1') ?? []

/** answers every REQ of the application's subscription with `stored`, then EOSE; connection 0 is dropped after it */
const replaying =
  (stored: NostrEvent[], onAppReq?: (f: unknown[], ws: Parameters<Answer>[1], c: number) => boolean): Answer =>
  (f, ws, c) => {
    if (f[0] === 'REQ' && f[1] === 'agent-1') {
      if (onAppReq?.(f, ws, c)) return
      for (const e of stored) ws.send(JSON.stringify(['EVENT', f[1], e]))
      ws.send(JSON.stringify(['EOSE', f[1]]))
      if (c === 0) setTimeout(() => ws.terminate(), 700)
      return
    }
    okAll(f, ws, c)
  }

describe('a subscription resumed after an outage', () => {
  it('delivers no duplicate when the outage outlasts the dedup window (the resume still asks from before the event)', async () => {
    const { event } = signEvent(makeKeys(), { kind: 1, content: 'delivered once' })
    const r = await scripted(replaying([event]))
    // a 0.5 s window stands for 300 s: the outage (0.7 s up, then the reconnect) is longer than it
    const agent = agentOn(r, { dedup: { windowSeconds: 0.5 } })
    await agent.start()
    const got: string[] = []
    agent.subscribe([{ kinds: [1] }], (e) => got.push(e.id))
    await eventually(() => appReqs(r, 1).length === 1, 'the resumed REQ', { timeoutMs: 5000 })
    await new Promise((res) => setTimeout(res, 200))
    expect(got).toEqual([event.id])
    expect(agent.metrics().deduplicated).toBe(1)
  })

  it('resumes from the local clock, not from a future created_at of a fast-clocked author', async () => {
    const { event } = signEvent(makeKeys(), { kind: 1, content: 'from the future', created_at: nowSeconds() + 3600 })
    const r = await scripted(replaying([event]))
    const agent = agentOn(r)
    await agent.start()
    agent.subscribe([{ kinds: [1] }], () => {})
    await eventually(() => appReqs(r, 1).length === 1, 'the resumed REQ', { timeoutMs: 5000 })
    const since = (appReqs(r, 1)[0]![2] as { since: number }).since
    expect(since).toBeLessThanOrEqual(nowSeconds() - 59)
  })
})

describe('events the relay sends that are not what they claim', () => {
  it('never reach the application: a changed content (id no longer its hash) or a broken signature is dropped', async () => {
    const keys = makeKeys()
    const good = signEvent(keys, { kind: 1, content: 'genuine' }).event
    const reworded = { ...signEvent(keys, { kind: 1, content: 'original' }).event, content: 'reworded' }
    const forged = signEvent(keys, { kind: 1, content: 'forged' }).event
    const badSig = { ...forged, sig: (forged.sig[0] === '0' ? '1' : '0') + forged.sig.slice(1) }
    const r = await scripted(replaying([reworded, badSig, good]))
    const agent = agentOn(r)
    await agent.start()
    const got: string[] = []
    agent.subscribe([{ kinds: [1] }], (e) => got.push(e.content))
    // frames are handled in order: once the genuine one (sent last) is here, the other two were judged
    await eventually(() => got.length > 0, 'the genuine event', { timeoutMs: 5000 })
    expect(got).toEqual(['genuine'])
  })
})

describe('a subscription the relay CLOSED on a connection that stays up', () => {
  it('is re-sent after the `retry in Ns` of a `rate-limited:`', async () => {
    const r = await scripted((f, ws, c) => {
      if (f[0] === 'REQ' && f[1] === 'agent-1' && appReqs(r, c).length === 1)
        ws.send(JSON.stringify(['CLOSED', f[1], 'rate-limited: retry in 1s']))
      else okAll(f, ws, c)
    })
    const agent = agentOn(r)
    await agent.start()
    agent.subscribe([{ kinds: [1] }], () => {})
    await eventually(() => appReqs(r, 0).length === 2, 'the re-sent REQ', { timeoutMs: 3000 })
    const c = r.connections[0]!
    const at = c.frames.flatMap((f, i) => (f[0] === 'REQ' && f[1] === 'agent-1' ? [c.frameAt[i]!] : []))
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(950)
    expect(r.connections).toHaveLength(1)
  })

  it('is re-sent with backoff after repeated `error:`s', async () => {
    const r = await scripted((f, ws, c) => {
      if (f[0] === 'REQ' && f[1] === 'agent-1' && appReqs(r, c).length <= 2)
        ws.send(JSON.stringify(['CLOSED', f[1], 'error: the store is busy']))
      else okAll(f, ws, c)
    })
    const agent = agentOn(r, { random: () => 0 })
    await agent.start()
    agent.subscribe([{ kinds: [1] }], () => {})
    await eventually(() => appReqs(r, 0).length === 3, 'two re-sent REQs', { timeoutMs: 3000 })
    const c = r.connections[0]!
    const at = c.frames.flatMap((f, i) => (f[0] === 'REQ' && f[1] === 'agent-1' ? [c.frameAt[i]!] : []))
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(90)
    expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(190)
  })

  it.each(['restricted: members only', 'auth-required: this channel needs a role', 'invalid: bad filter', 'blocked: not here'])(
    'tells the application of a refusal for good (%j) and does not re-send it',
    async (reason) => {
      const r = await scripted((f, ws, c) => {
        if (f[0] === 'REQ' && f[1] === 'agent-1') ws.send(JSON.stringify(['CLOSED', f[1], reason]))
        else okAll(f, ws, c)
      })
      const agent = agentOn(r)
      await agent.start()
      const closed: string[] = []
      agent.subscribe([{ kinds: [1] }], () => {}, { onClosed: (why) => closed.push(why) })
      await eventually(() => closed.length === 1, 'onClosed', { timeoutMs: 3000 })
      expect(closed).toEqual([reason])
      await new Promise((res) => setTimeout(res, 300))
      expect(appReqs(r, 0)).toHaveLength(1)
    },
  )
})
