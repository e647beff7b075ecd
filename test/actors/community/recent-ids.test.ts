import { describe, expect, it } from 'vitest'
import { RecentIds } from '../../../src/actors/community/recent-ids'

const id = (i: number) => i.toString(16).padStart(64, '0')

describe('the recent ids (inbound duplicate guard)', () => {
  it('keeps the last `capacity` ids added and forgets the older ones in the order they came', () => {
    const recent = new RecentIds(3)
    for (let i = 0; i < 5; i++) recent.add(id(i))
    expect([0, 1, 2, 3, 4].map((i) => recent.has(id(i)))).toEqual([false, false, true, true, true])
    expect(recent.size).toBe(3)
  })

  it('forgets a deleted id at once, and an id added again after its delete stays its full term', () => {
    const recent = new RecentIds(3)
    recent.add(id(0))
    recent.add(id(1))
    recent.delete(id(0))
    expect(recent.has(id(0))).toBe(false)
    recent.add(id(0)) // slot 2; its old slot 0 still names it
    recent.add(id(3)) // slot 0 again: id 0's old add, not the current one, so id 0 stays
    expect([0, 1, 3].map((i) => recent.has(id(i)))).toEqual([true, true, true])
    recent.add(id(4)) // evicts id 1
    recent.add(id(5)) // evicts id 0 (its second add)
    expect([0, 1, 3, 4, 5].map((i) => recent.has(id(i)))).toEqual([false, false, true, true, true])
  })

  it('does not renew an id added twice: it leaves when its first add does', () => {
    const recent = new RecentIds(2)
    recent.add(id(0))
    recent.add(id(0))
    recent.add(id(1))
    recent.add(id(2))
    expect([0, 1, 2].map((i) => recent.has(id(i)))).toEqual([false, true, true])
  })

  it('stays bounded over many adds and deletes, and refuses a capacity that is not a positive integer', () => {
    const recent = new RecentIds(100)
    for (let i = 0; i < 10_000; i++) {
      recent.add(id(i))
      if (i % 3 === 0) recent.delete(id(i - 1))
    }
    expect(recent.size).toBeLessThanOrEqual(100)
    expect(recent.has(id(9_997))).toBe(true)
    expect(recent.has(id(9_998))).toBe(false) // deleted
    expect(recent.has(id(9_898))).toBe(false) // more than 100 adds ago
    expect(() => new RecentIds(0)).toThrow(RangeError)
  })
})
