import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { bytesToHex } from '@noble/hashes/utils.js'
import { afterAll, describe, expect, it } from 'vitest'
import { AgentClient, type PublishResult } from '../../../src/client/index'
import type { NostrEvent } from '../../../src/protocols/nip01/event'
import { makeKeys, signEvent } from '../../support/events'
import { eventually } from '../../support/eventually'
import { freePort } from '../../support/redis-server'
import { reqEvents } from '../../support/relay-client'
import { GENEROUS_ENV, type RelayProcess, startRelayProcess } from '../../support/relay-process'
import { connect } from '../../support/ws-client'

/**
 * The real `apiary start` process (dist/), SIGKILLed under two running agents and restarted on the same port
 * and data directory: what a crash and a supervisor's restart look like from the agents' side.
 */
describe('agents across a relay killed with SIGKILL and restarted', { timeout: 60_000 }, () => {
  const cleanups: (() => Promise<void> | void)[] = []
  afterAll(async () => {
    for (const c of cleanups.splice(0).reverse()) await c()
  })

  it('stores every publish that resolved queued: true, and the subscription resumes with no gap and no duplicate', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'apiary-agent-restart-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const port = await freePort()
    const args = ['--port', String(port), '--data-dir', dir]
    let relay: RelayProcess = await startRelayProcess(args, GENEROUS_ENV)
    cleanups.push(() => {
      relay.proc.kill('SIGKILL')
    })
    const url = `ws://127.0.0.1:${port}`
    const writerKeys = makeKeys()
    const writer = new AgentClient({
      relays: [url],
      secretKey: bytesToHex(writerKeys.secretKey),
      capabilities: [{ name: 'echo', kinds: [5050] }],
    })
    const reader = new AgentClient({ relays: [url], secretKey: makeKeys().secretKey, capabilities: [] })
    cleanups.push(
      () => writer.stop(),
      () => reader.stop(),
    )
    await Promise.all([writer.start(), reader.start()])
    const delivered: NostrEvent[] = []
    reader.subscribe([{ kinds: [1], authors: [writer.pubkey] }], (e) => delivered.push(e))

    const before: PublishResult[] = []
    for (let i = 0; i < 5; i++) before.push(await writer.publish({ kind: 1, content: `before the crash ${i}` }))
    expect(before.every((r) => r.ok)).toBe(true)
    await eventually(() => delivered.length === 5, 'the first five', { timeoutMs: 5000 })

    relay.proc.kill('SIGKILL')
    await relay.exited
    await eventually(() => writer.state !== 'ACTIVE' && reader.state !== 'ACTIVE', 'both agents to notice', { timeoutMs: 5000 })
    const during: PublishResult[] = []
    for (let i = 0; i < 5; i++) during.push(await writer.publish({ kind: 1, content: `while the relay is down ${i}` }))
    for (const r of during) expect(r).toMatchObject({ ok: false, queued: true, id: expect.stringMatching(/^[0-9a-f]{64}$/) })

    relay = await startRelayProcess(args, GENEROUS_ENV)
    // stored by someone else while the agents are still backing off: only the resume's REQ can bring them
    const other = await connect(url)
    const gap: string[] = []
    for (let i = 0; i < 3; i++) {
      const { event } = signEvent(writerKeys, { kind: 1, content: `stored during the reconnect ${i}` })
      other.send(['EVENT', event])
      expect((await other.ok(event.id))[2]).toBe(true)
      gap.push(event.id)
    }
    other.close()
    await eventually(() => writer.state === 'ACTIVE' && reader.state === 'ACTIVE', 'both agents ACTIVE again', { timeoutMs: 40_000 })
    await eventually(() => writer.metrics().queueLength === 0, 'the queue to flush', { timeoutMs: 5000 })
    const all = [...before.map((r) => r.id), ...gap, ...during.map((r) => r.id)]
    await eventually(() => delivered.length >= all.length, 'every event at the reader', { timeoutMs: 5000 })
    // time for a duplicate to show up, if the resume's overlap let one through
    await new Promise((r) => setTimeout(r, 500))
    expect(delivered.map((e) => e.id).sort()).toEqual([...all].sort())
    expect(reader.metrics().deduplicated).toBeGreaterThanOrEqual(5)

    const c = await connect(url)
    const stored = await reqEvents(c, [{ authors: [writer.pubkey], kinds: [1] }])
    expect(new Set(stored.map((e) => e.id))).toEqual(new Set(all))
    expect(stored).toHaveLength(all.length)
    c.close()
    expect(writer.metrics()).toMatchObject({ queued: 5, failed: 0 })
    expect(writer.metrics().reconnects).toBeGreaterThanOrEqual(1)
  })
})
