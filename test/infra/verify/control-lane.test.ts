import { schnorr } from '@noble/curves/secp256k1.js'
import { describe, expect, it } from 'vitest'
import { withControlLane } from '../../../src/infra/verify/control-lane'
import { createInlineVerifier } from '../../../src/infra/verify/inline-verifier'
import type { Verifier } from '../../../src/infra/verify/verifier'
import type { NostrEvent } from '../../../src/protocols/nip01/event'
import { signTemplate, toSigningKey } from '../../../src/protocols/nip01/sign'

/** a real in-thread verifier that also records the kinds it was given and whether it was closed */
function recording(): Verifier & { seen: number[]; closed: boolean } {
  const inner = createInlineVerifier()
  const v = {
    seen: [] as number[],
    closed: false,
    threads: 1,
    verify: (e: NostrEvent) => {
      v.seen.push(e.kind)
      return inner.verify(e)
    },
    close: async () => {
      v.closed = true
      await inner.close()
    },
  }
  return v
}

describe('the verifier control lane', () => {
  const key = toSigningKey(schnorr.utils.randomSecretKey())
  const event = (kind: number) => signTemplate(key, { kind, content: '' }, 1_700_000_000)

  it('verifies control frames on the control verifier and everything else on the bulk one, with the same verdicts', async () => {
    const bulk = recording()
    const control = recording()
    const lane = withControlLane(bulk, control, (e) => e.kind === 22242 || e.kind === 20001, { maxPerSecond: 100 })
    expect(await lane.verify(event(1))).toBe('ok')
    expect(await lane.verify(event(22242))).toBe('ok')
    expect(await lane.verify(event(20001))).toBe('ok')
    expect(await lane.verify({ ...event(20001), sig: '00'.repeat(64) })).toBe('bad-sig')
    expect(await lane.verify(event(31990))).toBe('ok')
    expect(bulk.seen).toEqual([1, 31990])
    expect(control.seen).toEqual([22242, 20001, 20001])
    expect(lane.threads).toBe(2)
  })

  it('sends the control frames past maxPerSecond in one second to the bulk verifier, and takes them again the next second', async () => {
    const bulk = recording()
    const control = recording()
    let nowMs = 5_000
    const lane = withControlLane(bulk, control, (e) => e.kind === 20001, { maxPerSecond: 2, nowMs: () => nowMs })
    for (let i = 0; i < 3; i++) expect(await lane.verify(event(20001))).toBe('ok')
    expect(await lane.verify(event(1))).toBe('ok')
    expect([control.seen.length, bulk.seen]).toEqual([2, [20001, 1]])
    nowMs += 999
    expect(await lane.verify(event(20001))).toBe('ok')
    expect(control.seen.length).toBe(2)
    nowMs += 1
    expect(await lane.verify(event(20001))).toBe('ok')
    expect(await lane.verify(event(20001))).toBe('ok')
    expect(await lane.verify(event(20001))).toBe('ok')
    expect([control.seen.length, bulk.seen]).toEqual([4, [20001, 1, 20001, 20001]])
  })

  it('closes both verifiers', async () => {
    const bulk = recording()
    const control = recording()
    await withControlLane(bulk, control, () => true, { maxPerSecond: 100 }).close()
    expect([bulk.closed, control.closed]).toEqual([true, true])
  })
})
