// Behaviour every ReplayGuard backend owes (architecture §8), run against each backend by replay-guard.test.ts.
// No case waits: expiry and the TTL clamp are checked per backend (injected clock, PTTL).
import { describe, expect, it } from 'vitest'
import type { ReplayGuard } from '../../../src/infra/gates/replay-guard'
import { hex64, testCommunity } from '../redis/connect'

export function describeReplayGuardContract(name: string, make: () => ReplayGuard): void {
  describe(`${name} replay guard (contract)`, () => {
    it('claims an event id the first time and calls the second claim a replay', async () => {
      const guard = make()
      const [community, id] = [testCommunity(), hex64()]
      expect(await guard.claim(community, id, 120)).toBe('claimed')
      expect(await guard.claim(community, id, 120)).toBe('replayed')
      expect(await guard.claim(community, id, 3600)).toBe('replayed')
    })

    it('keeps communities apart: the same id is claimed once in each', async () => {
      const guard = make()
      const id = hex64()
      const [a, b] = [testCommunity(), testCommunity()]
      expect(await guard.claim(a, id, 120)).toBe('claimed')
      expect(await guard.claim(b, id, 120)).toBe('claimed')
      expect(await guard.claim(b, id, 120)).toBe('replayed')
    })

    it('keeps ids apart within a community', async () => {
      const guard = make()
      const community = testCommunity()
      expect(await guard.claim(community, hex64(), 120)).toBe('claimed')
      expect(await guard.claim(community, hex64(), 120)).toBe('claimed')
    })

    it('lets exactly one of 20 concurrent claims of one id win', async () => {
      const guard = make()
      const [community, id] = [testCommunity(), hex64()]
      const outcomes = await Promise.all(Array.from({ length: 20 }, () => guard.claim(community, id, 120)))
      expect(outcomes.filter((o) => o === 'claimed')).toHaveLength(1)
    })

    it('raises a TTL below the minimum instead of letting the id go at once', async () => {
      const guard = make()
      const [community, id] = [testCommunity(), hex64()]
      expect(await guard.claim(community, id, 0)).toBe('claimed')
      expect(await guard.claim(community, id, 0)).toBe('replayed')
      expect(await guard.claim(testCommunity(), hex64(), -5)).toBe('claimed')
    })

    it('refuses a non-canonical event id, a bad community or a NaN TTL as a bug (RangeError)', async () => {
      const guard = make()
      await expect(guard.claim(testCommunity(), hex64().toUpperCase(), 120)).rejects.toBeInstanceOf(RangeError)
      await expect(guard.claim('Bad', hex64(), 120)).rejects.toBeInstanceOf(RangeError)
      await expect(guard.claim(testCommunity(), hex64(), Number.NaN)).rejects.toBeInstanceOf(RangeError)
    })
  })
}
