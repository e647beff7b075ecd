import { describe, expect, it } from 'vitest'
import { linkCandidates } from '../../../src/actors/mesh/link-candidates'
import type { MemberState } from '../../../src/protocols/mesh/gossip'
import type { ReadinessRecord } from '../../../src/protocols/mesh/readiness'

const ME = 'a'.repeat(64)
const B = 'b'.repeat(64)
const C = 'c'.repeat(64)

const member = (runtime: string, draining = false): MemberState => ({
  runtime,
  endpoint: `ws://${runtime[0]}:1`,
  version: 1,
  draining,
  load: 0,
})
const record = (runtime: string, draining = false) => ({ runtime, endpoint: `ws://${runtime[0]}:2`, draining }) as ReadinessRecord

describe('which peers a node keeps a link to', () => {
  it('wants every peer the registry lists and every peer gossip names, never itself, at the registry’s endpoint', () => {
    const { wanted } = linkCandidates(ME, [member(ME), member(B)], new Set(), [record(ME), record(B), record(C)])
    expect(wanted).toEqual(
      new Map([
        [B, 'ws://b:2'],
        [C, 'ws://c:2'],
      ]),
    )
  })

  it('lets go of a peer it suspects once its readiness record is gone, and keeps one the registry still lists', () => {
    const suspects = new Set([B, C])
    const { wanted } = linkCandidates(ME, [member(B), member(C)], suspects, [record(C)])
    expect([...wanted.keys()]).toEqual([C])
  })

  it('marks a peer that announced it is draining, by gossip or by its record, and wants no link to it', () => {
    const { wanted, draining } = linkCandidates(ME, [member(B, true)], new Set(), [record(C, true)])
    expect(wanted.size).toBe(0)
    expect(draining).toEqual(new Set([B, C]))
  })

  it('believes the registry over gossip when they disagree about draining', () => {
    const { wanted, draining } = linkCandidates(ME, [member(B, true)], new Set(), [record(B)])
    expect([...wanted.keys()]).toEqual([B])
    expect(draining.size).toBe(0)
  })
})
