import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { toNactName } from '../../../src/actors/kernel/nact-binding'
import { defaultPolicy, resolvePolicy } from '../../../src/actors/kernel/policy'

// nact 7.6.2, lib/paths.js: ActorPath.isValidName
const nactNamePattern = /^[a-z0-9-$_.+!*'(),]+$/i

describe('supervision policy', () => {
  it('fills what a kind leaves out from the default policy', () => {
    expect(resolvePolicy({ mode: 'temporary', backoff: { minMs: 1000, maxMs: 30_000, jitter: 0 } })).toEqual({
      ...defaultPolicy,
      mode: 'temporary',
      backoff: { minMs: 1000, maxMs: 30_000, jitter: 0 },
    })
  })

  it('rejects negative counts and a maxMs below minMs', () => {
    expect(() => resolvePolicy({ maxRestarts: -1 })).toThrow(RangeError)
    expect(() => resolvePolicy({ stashCapacity: 1.5 })).toThrow(RangeError)
    expect(() => resolvePolicy({ backoff: { minMs: 10, maxMs: 5, jitter: 0 } })).toThrow(RangeError)
  })
})

describe('nact names', () => {
  it('turns any path into a name nact accepts, distinct paths into distinct names', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', minLength: 1 }), fc.string({ unit: 'binary', minLength: 1 }), (a, b) => {
        expect(toNactName(a)).toMatch(nactNamePattern)
        if (a !== b) expect(toNactName(a)).not.toBe(toNactName(b))
      }),
    )
    expect(toNactName('principal/default/ab:cd')).toBe('principal$002fdefault$002fab$003acd')
  })
})
