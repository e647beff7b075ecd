import { describe, expect, it } from 'vitest'
import { createLagBridge, type Lag } from '../../../src/actors/kernel'
import { ManualClock } from './manual-clock'

/** An actor's mailbox as the bridge sees it: takes messages while `room` says so. */
function mailbox() {
  const taken: (string | Lag<string>)[] = []
  const given: Lag<string>[] = []
  let counted = 0
  const state = { room: true }
  const clock = new ManualClock()
  const bridge = createLagBridge<string>({
    tell: (item) => state.room && taken.push(item) > 0,
    tellLag: (lag) => state.room && taken.push({ ...lag, missed: [...lag.missed] }) > 0,
    counted: (n) => {
      counted += n
    },
    onGiveUp: (lag) => given.push(lag),
    keepMissed: 3,
    retryEveryMs: 10,
    giveUpAfterMs: 1_000,
    clock,
  })
  return { bridge, taken, given, state, clock, counted: () => counted }
}

describe('a lag bridge into an actor', () => {
  it('passes every item through while the actor takes them, and tells no lag', () => {
    const m = mailbox()
    for (const item of ['a', 'b', 'c']) m.bridge.push(item)
    expect(m.taken).toEqual(['a', 'b', 'c'])
    expect(m.counted()).toBe(0)
  })

  it('tells the actor one lag with what it missed as soon as it has room, before any later item', () => {
    const m = mailbox()
    m.bridge.push('a')
    m.state.room = false
    m.bridge.push('b')
    m.bridge.push('c')
    m.state.room = true
    // the retry fires: the lag goes in, and only then the next item
    m.clock.advance(10)
    m.bridge.push('d')
    expect(m.taken).toEqual(['a', { skipped: 2, missed: ['b', 'c'], complete: true, interrupted: false }, 'd'])
    expect(m.counted()).toBe(2)
  })

  it('holds back an item that arrives while a lag waits, so nothing overtakes the gap', () => {
    const m = mailbox()
    m.state.room = false
    m.bridge.push('a')
    m.bridge.push('b')
    expect(m.taken).toEqual([])
    m.state.room = true
    m.bridge.push('c')
    expect(m.taken).toEqual([{ skipped: 2, missed: ['a', 'b'], complete: true, interrupted: false }, 'c'])
  })

  it('says the lag is not complete past keepMissed, and counts every skip', () => {
    const m = mailbox()
    m.state.room = false
    for (const item of ['a', 'b', 'c', 'd', 'e']) m.bridge.push(item)
    m.state.room = true
    m.clock.advance(10)
    expect(m.taken).toEqual([{ skipped: 5, missed: ['a', 'b', 'c'], complete: false, interrupted: false }])
    expect(m.counted()).toBe(5)
  })

  it('tells an interruption of the source as a lag that is not complete, even when nothing was skipped', () => {
    const m = mailbox()
    m.bridge.interrupt()
    expect(m.taken).toEqual([{ skipped: 0, missed: [], complete: false, interrupted: true }])
  })

  it('hands a lag never taken to onGiveUp after giveUpAfterMs, then lets items through again', () => {
    const m = mailbox()
    m.state.room = false
    m.bridge.push('a')
    m.clock.advance(990)
    expect(m.given).toEqual([])
    m.clock.advance(10)
    expect(m.given).toEqual([{ skipped: 1, missed: ['a'], complete: true, interrupted: false }])
    m.state.room = true
    m.clock.advance(100)
    m.bridge.push('b')
    expect(m.taken).toEqual(['b'])
  })

  it('hands a waiting lag to onGiveUp when disposed, and stops offering it', () => {
    const m = mailbox()
    m.state.room = false
    m.bridge.push('a')
    m.bridge.dispose()
    expect(m.given).toHaveLength(1)
    m.state.room = true
    m.clock.advance(100)
    expect(m.taken).toEqual([])
  })
})
