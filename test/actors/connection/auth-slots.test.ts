import { describe, expect, it } from 'vitest'
import { createAuthSlots, shapedRetrySeconds } from '../../../src/actors/connection/auth-slots'

describe('AUTH slots (limits.maxConcurrentAuth)', () => {
  it('gives out exactly max slots at once and one more only after a release', () => {
    const slots = createAuthSlots(3)
    expect([slots.take(), slots.take(), slots.take()]).toEqual([true, true, true])
    expect(slots.take()).toBe(false)
    expect(slots.inFlight).toBe(3)
    slots.release()
    expect(slots.take()).toBe(true)
    expect(slots.take()).toBe(false)
  })

  it('refuses a maximum that is not a positive integer', () => {
    expect(() => createAuthSlots(0)).toThrow(RangeError)
    expect(() => createAuthSlots(1.5)).toThrow(RangeError)
  })

  it('jitters the retry over whole seconds 1 to 5', () => {
    expect([0, 0.19, 0.2, 0.5, 0.79, 0.8, 0.999999].map((u) => shapedRetrySeconds(() => u))).toEqual([1, 1, 2, 3, 4, 5, 5])
    // Math.random never returns 1, but a custom source might: still at most 5
    expect(shapedRetrySeconds(() => 1)).toBe(5)
  })
})
