import { describe, expect, it } from 'vitest'
import { GENERATION_TAG, StateGenerations } from '../../../src/protocols/mesh/state-generation'
import { makeKeys, signEvent } from '../../support/events'

const relay = makeKeys()
const someone = makeKeys()
const state = (kind: number, channel: string, generation?: number, by = relay) =>
  signEvent(by, { kind, tags: [['d', channel], ...(generation === undefined ? [] : [[GENERATION_TAG, String(generation), 'owner']])] })
    .event

describe('channel state versions by mesh generation', () => {
  it('drops a version of an older generation than one already delivered for the channel, of any state kind', () => {
    const seen = new StateGenerations(relay.pubkey)
    expect(seen.stale(state(39_002, 'a', 1))).toBe(false)
    expect(seen.stale(state(39_000, 'a', 2))).toBe(false)
    expect(seen.stale(state(39_002, 'a', 1))).toBe(true)
    expect(seen.stale(state(39_001, 'a', 1))).toBe(true)
    // the same generation again is its owner's next version
    expect(seen.stale(state(39_002, 'a', 2))).toBe(false)
  })

  it("keeps channels apart, and never drops what carries no generation or is not the relay's state", () => {
    const seen = new StateGenerations(relay.pubkey)
    expect(seen.stale(state(39_002, 'a', 5))).toBe(false)
    expect(seen.stale(state(39_002, 'b', 1))).toBe(false)
    expect(seen.stale(state(39_002, 'a'))).toBe(false)
    expect(seen.stale(state(39_002, 'a', 1, someone))).toBe(false)
    expect(seen.stale(state(9, 'a', 1))).toBe(false)
  })
})
