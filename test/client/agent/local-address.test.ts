import { bytesToHex } from '@noble/hashes/utils.js'
import { describe, expect, it } from 'vitest'
import { AgentClient } from '../../../src/client/index'
import { makeKeys } from '../../support/events'
import { startScriptedRelay, useAgents } from './scripted-relay'

const { agentOn, track } = useAgents()

const scripted = async () => {
  const r = await startScriptedRelay()
  track({ stop: () => r.close() })
  return r
}

// any 127/8 address is the loopback interface on Linux only
describe.runIf(process.platform === 'linux')('the local address an agent connects from', () => {
  it('is the one given in localAddress, as the relay sees it (Linux routes all of 127/8 to lo)', async () => {
    const r = await scripted()
    await agentOn(r, { localAddress: '127.0.0.2' }).start()
    expect(r.connections.map((c) => c.remoteAddress)).toEqual(['127.0.0.2'])
  })

  it("is the system's choice without it", async () => {
    const r = await scripted()
    await agentOn(r).start()
    expect(r.connections.map((c) => c.remoteAddress)).toEqual(['127.0.0.1'])
  })

  it('must be an IP address: anything else throws RangeError at construction', () => {
    const options = { relays: ['ws://127.0.0.1:1'], secretKey: bytesToHex(makeKeys().secretKey), capabilities: [] }
    expect(() => new AgentClient({ ...options, localAddress: 'localhost' })).toThrow(RangeError)
    expect(() => new AgentClient({ ...options, localAddress: '::1' })).not.toThrow()
  })
})
