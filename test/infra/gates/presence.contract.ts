// Behaviour every PresenceStore backend owes (docs/architecture.md §8), run against each backend by presence.test.ts.
import { describe, expect, it } from 'vitest'
import type { PresenceStore } from '../../../src/infra/gates/presence'
import { eventually } from '../../support/eventually'
import { hex64, testCommunity } from '../redis/connect'

export function describePresenceContract(name: string, make: () => PresenceStore): void {
  describe(`${name} presence store (contract)`, () => {
    it('returns the status of each pubkey that has one, and nothing for the others', async () => {
      const store = make()
      const [c, alice, bob, carol] = [testCommunity(), hex64(), hex64(), hex64()]
      await store.set(c, alice, 'online', 30)
      await store.set(c, bob, '{"status":"busy"}', 30)
      expect(await store.get(c, [alice, bob, carol])).toEqual(
        new Map([
          [alice, 'online'],
          [bob, '{"status":"busy"}'],
        ]),
      )
      expect(await store.get(c, [])).toEqual(new Map())
    })

    it('keeps only the latest status of a pubkey', async () => {
      const store = make()
      const [c, alice] = [testCommunity(), hex64()]
      await store.set(c, alice, 'online', 30)
      await store.set(c, alice, 'away', 30)
      expect(await store.get(c, [alice])).toEqual(new Map([[alice, 'away']]))
    })

    it('gives back a status with multi-byte characters exactly as it was set, refreshed or not', async () => {
      const store = make()
      const [c, alice] = [testCommunity(), hex64()]
      const status = '{"content":"在线 🐝 ünïcode","tags":[["t","ß"]]}'
      await store.set(c, alice, status, 30)
      expect(await store.get(c, [alice])).toEqual(new Map([[alice, status]]))
      await store.set(c, alice, `${status} 🍯`, 30)
      expect(await store.get(c, [alice])).toEqual(new Map([[alice, `${status} 🍯`]]))
    })

    it('forgets a pubkey once cleared, and clearing an absent one is harmless', async () => {
      const store = make()
      const [c, alice] = [testCommunity(), hex64()]
      await store.set(c, alice, 'online', 30)
      await store.clear(c, alice)
      await store.clear(c, hex64())
      expect(await store.get(c, [alice])).toEqual(new Map())
    })

    it('never answers with, or clears, a status from another community', async () => {
      const store = make()
      const [a, b, alice] = [testCommunity(), testCommunity(), hex64()]
      await store.set(a, alice, 'online in a', 30)
      expect(await store.get(b, [alice])).toEqual(new Map())
      await store.clear(b, alice)
      await store.set(b, alice, 'online in b', 30)
      expect(await store.get(a, [alice])).toEqual(new Map([[alice, 'online in a']]))
      expect(await store.get(b, [alice])).toEqual(new Map([[alice, 'online in b']]))
    })

    it('forgets a status once its TTL has passed (1 s TTL, gone within 3 s)', async () => {
      const store = make()
      const [c, alice, bob] = [testCommunity(), hex64(), hex64()]
      await store.set(c, alice, 'online', 1)
      await store.set(c, bob, 'online', 60)
      await eventually(
        () => store.get(c, [alice]),
        (found) => found.size === 0,
        'the 1 s status gone',
        { timeoutMs: 3_000, intervalMs: 100 },
      )
      expect(await store.get(c, [alice, bob])).toEqual(new Map([[bob, 'online']]))
    })

    it('clears a presence only when the last connection holding it disconnects', async () => {
      const store = make()
      const [c, alice] = [testCommunity(), hex64()]
      await store.connect(c, alice, 30)
      await store.connect(c, alice, 30)
      await store.set(c, alice, 'online', 30)
      expect(await store.disconnect(c, alice)).toBe(1)
      expect(await store.get(c, [alice])).toEqual(new Map([[alice, 'online']]))
      expect(await store.disconnect(c, alice)).toBe(0)
      expect(await store.get(c, [alice])).toEqual(new Map())
    })

    it('counts connections afresh after the last one left, and a stray disconnect is harmless', async () => {
      const store = make()
      const [c, alice] = [testCommunity(), hex64()]
      expect(await store.disconnect(c, alice)).toBe(0)
      await store.connect(c, alice, 30)
      await store.set(c, alice, 'back', 30)
      expect(await store.get(c, [alice])).toEqual(new Map([[alice, 'back']]))
      expect(await store.disconnect(c, alice)).toBe(0)
      expect(await store.get(c, [alice])).toEqual(new Map())
    })

    it('keeps connection counts apart per community', async () => {
      const store = make()
      const [a, b, alice] = [testCommunity(), testCommunity(), hex64()]
      await store.connect(a, alice, 30)
      await store.connect(b, alice, 30)
      await store.connect(b, alice, 30)
      await store.set(a, alice, 'in a', 30)
      await store.set(b, alice, 'in b', 30)
      expect(await store.disconnect(a, alice)).toBe(0)
      expect(await store.get(a, [alice])).toEqual(new Map())
      expect(await store.get(b, [alice])).toEqual(new Map([[alice, 'in b']]))
      expect(await store.disconnect(b, alice)).toBe(1)
    })

    it('refuses a non-canonical pubkey or a TTL that is not positive as a bug (RangeError)', async () => {
      const store = make()
      const c = testCommunity()
      await expect(store.set(c, hex64().toUpperCase(), 'online', 30)).rejects.toBeInstanceOf(RangeError)
      await expect(store.get(c, [hex64(), 'npub1'])).rejects.toBeInstanceOf(RangeError)
      await expect(store.set(c, hex64(), 'online', 0)).rejects.toBeInstanceOf(RangeError)
      await expect(store.set(c, hex64(), 'online', Number.NaN)).rejects.toBeInstanceOf(RangeError)
      await expect(store.connect(c, hex64().toUpperCase(), 30)).rejects.toBeInstanceOf(RangeError)
      await expect(store.connect(c, hex64(), 0)).rejects.toBeInstanceOf(RangeError)
      await expect(store.disconnect(c, 'npub1')).rejects.toBeInstanceOf(RangeError)
    })
  })
}
