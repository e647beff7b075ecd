import { describe, expect, it } from 'vitest'
import { createLocalBus, createLocalHub } from '../../../src/infra/bus/local-bus'
import { describeBusContract } from './bus.contract'
import { collect, uniqueChannel } from './bus-harness'

describeBusContract('local', async ({ unsubscribeDebounceMs }) => {
  const hub = createLocalHub()
  const a = createLocalBus({ nodeId: 'node-a', hub, unsubscribeDebounceMs })
  const b = createLocalBus({ nodeId: 'node-b', hub, unsubscribeDebounceMs })
  return { a, b, close: async () => void (await Promise.all([a.close(), b.close()])) }
})

describe('local bus', () => {
  it('reaches only the buses on its own hub: a bus without a hub is a single node', async () => {
    const lone = createLocalBus({ nodeId: 'lone' })
    const other = createLocalBus({ nodeId: 'other' })
    const ch = uniqueChannel('lone')
    const heard = collect(other.watch(ch))
    await lone.publish(ch, 'anyone?')
    await Promise.resolve()
    expect(heard.items).toEqual([])
    expect(other.stats(ch).received).toBe(0)
  })

  it('leaves the hub when a channel is no longer watched and the debounce is over', async () => {
    const hub = createLocalHub()
    const bus = createLocalBus({ nodeId: 'n', hub, unsubscribeDebounceMs: 0 })
    const ch = uniqueChannel('leave')
    const w = collect(bus.watch(ch))
    expect(hub.subscribers(ch)).toBe(1)
    w.subscription.unsubscribe()
    expect(hub.subscribers(ch)).toBe(0)
  })

  it('refuses a node id that would break the envelope', () => {
    expect(() => createLocalBus({ nodeId: 'a\nb' })).toThrow(RangeError)
    expect(() => createLocalBus({ nodeId: '' })).toThrow(RangeError)
  })
})
