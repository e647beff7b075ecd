// Behaviour every Bus backend owes (docs/architecture.md §6.7), run against each backend by its own test file
// with two buses acting as two nodes of one cluster.
import { afterEach, describe, expect, it } from 'vitest'
import { type Bus, BusError } from '../../../src/infra/bus/bus'
import { eventually } from '../../support/eventually'
import { collect, uniqueChannel } from './bus-harness'

export interface BusNodes {
  a: Bus
  b: Bus
  /** closes both buses (a bus already closed by a test is fine) and whatever backs them */
  close(): Promise<void>
}

export const CONTRACT_DEBOUNCE_MS = 100

/** the backend subscription for channel is live once its subscribes counter reached n */
const subscribed = (bus: Bus, channel: string, n = 1) =>
  eventually(() => bus.stats(channel).subscribes >= n, `${n} subscribe(s) on ${channel}`)

export function describeBusContract(name: string, start: (opts: { unsubscribeDebounceMs: number }) => Promise<BusNodes>): void {
  describe(`${name} bus (contract)`, () => {
    let nodes: BusNodes

    afterEach(async () => {
      await nodes?.close()
    })

    const startNodes = async () => {
      nodes = await start({ unsubscribeDebounceMs: CONTRACT_DEBOUNCE_MS })
      return nodes
    }

    it('delivers a message published on one node to a watcher on the other, both ways', async () => {
      const { a, b } = await startNodes()
      const ch = uniqueChannel('both-ways')
      const onA = collect(a.watch(ch))
      const onB = collect(b.watch(ch))
      await Promise.all([subscribed(a, ch), subscribed(b, ch)])
      await a.publish(ch, 'from a')
      await b.publish(ch, 'from b')
      await eventually(() => onA.items.length === 1 && onB.items.length === 1, 'the message on both buses')
      expect(onB.items).toEqual(['from a'])
      expect(onA.items).toEqual(['from b'])
    })

    it('never delivers a node its own messages (own-echo suppression)', async () => {
      const { a, b } = await startNodes()
      const ch = uniqueChannel('echo')
      const onA = collect(a.watch(ch))
      const onB = collect(b.watch(ch))
      await Promise.all([subscribed(a, ch), subscribed(b, ch)])
      await a.publish(ch, 'mine')
      // the echo did come back to a from the backend; it was dropped, not lost on the way
      await eventually(() => onB.items.length === 1 && a.stats(ch).received === 1, 'the message on B, received once by A')
      expect(onA.items).toEqual([])
    })

    it('keeps delivering to the remaining watcher when another watcher of the channel unsubscribes', async () => {
      const { a, b } = await startNodes()
      const ch = uniqueChannel('refcount')
      const first = collect(b.watch(ch))
      const second = collect(b.watch(ch))
      await subscribed(b, ch)
      first.subscription.unsubscribe()
      expect(b.wanted()).toEqual([ch])
      await a.publish(ch, 'still here')
      await eventually(() => second.items.length === 1, 'the message at the second subscriber')
      expect(first.items).toEqual([])
      expect(b.stats(ch)).toMatchObject({ subscribes: 1, unsubscribes: 0 })
    })

    it('keeps the backend subscription when a channel is watched again within the unsubscribe debounce', async () => {
      const { a, b } = await startNodes()
      const ch = uniqueChannel('debounce')
      const sentinel = uniqueChannel('sentinel')
      collect(b.watch(sentinel))
      const before = collect(b.watch(ch))
      await Promise.all([subscribed(b, ch), subscribed(b, sentinel)])
      before.subscription.unsubscribe()
      expect(b.wanted()).toEqual([sentinel])
      const again = collect(b.watch(ch))
      await a.publish(ch, 'no churn')
      await eventually(() => again.items.length === 1, 'the message at the new subscription')
      expect(b.stats(ch)).toMatchObject({ subscribes: 1, unsubscribes: 0 })

      again.subscription.unsubscribe()
      await eventually(() => b.stats(ch).unsubscribes === 1, 'the unsubscribe on B')
      // published in this order, so once the sentinel arrived anything sent to ch would have arrived too
      const sentinelBefore = b.stats(sentinel).received
      await a.publish(ch, 'nobody listens')
      await a.publish(sentinel, 'marker')
      await eventually(() => b.stats(sentinel).received === sentinelBefore + 1, 'the sentinel message on B')
      expect(b.stats(ch)).toMatchObject({ received: 1, subscribes: 1, unsubscribes: 1 })
    })

    it('receives zero messages for a channel it does not watch while another channel is busy', async () => {
      const { a, b } = await startNodes()
      const quiet = uniqueChannel('not-watched-by-b')
      const busy = uniqueChannel('busy')
      collect(a.watch(quiet))
      const onB = collect(b.watch(busy))
      await Promise.all([subscribed(a, quiet), subscribed(b, busy)])
      for (let i = 0; i < 20; i++) {
        await a.publish(quiet, `q${i}`)
        await a.publish(busy, `b${i}`)
      }
      await eventually(() => onB.items.length === 20, 'all 20 messages on B')
      expect(b.stats(quiet).received).toBe(0)
      expect(b.stats(busy).received).toBe(20)
      expect(a.stats(quiet).received).toBeGreaterThan(0)
    })

    it('delivers a burst published in one turn on two channels in order on each, and resolves every publish', async () => {
      const { a, b } = await startNodes()
      const [one, two] = [uniqueChannel('burst-one'), uniqueChannel('burst-two')]
      const onOne = collect(b.watch(one))
      const onTwo = collect(b.watch(two))
      await Promise.all([subscribed(b, one), subscribed(b, two)])
      const sent = Array.from({ length: 500 }, (_, i) => `m${i}`)
      await Promise.all(sent.map((m, i) => a.publish(i % 3 ? one : two, m)))
      await eventually(() => onOne.items.length + onTwo.items.length === sent.length, 'every message at one of the two subscribers')
      expect(onOne.items).toEqual(sent.filter((_, i) => i % 3))
      expect(onTwo.items).toEqual(sent.filter((_, i) => !(i % 3)))
    })

    it('lists as wanted exactly the channels with at least one watcher', async () => {
      const { b } = await startNodes()
      const [c1, c2] = [uniqueChannel('one'), uniqueChannel('two')]
      expect(b.wanted()).toEqual([])
      const w1 = collect(b.watch(c1))
      const w1bis = collect(b.watch(c1))
      const w2 = collect(b.watch(c2))
      expect(b.wanted().sort()).toEqual([c1, c2].sort())
      w2.subscription.unsubscribe()
      expect(b.wanted()).toEqual([c1])
      w1.subscription.unsubscribe()
      expect(b.wanted()).toEqual([c1])
      w1bis.subscription.unsubscribe()
      expect(b.wanted()).toEqual([])
    })

    it('completes its watchers and refuses to publish once closed', async () => {
      const { b } = await startNodes()
      const ch = uniqueChannel('closed')
      let completed = false
      b.watch(ch).subscribe({ complete: () => (completed = true) })
      await b.close()
      expect(completed).toBe(true)
      expect(b.wanted()).toEqual([])
      const refused = b.publish(ch, 'too late')
      await expect(refused).rejects.toBeInstanceOf(BusError)
      await expect(refused).rejects.toMatchObject({ code: 'APIARY_BUS_CLOSED' })
    })
  })
}
