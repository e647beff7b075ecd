import { describe, expect, it } from 'vitest'
import { checkProtected, isProtected } from '../../src/protocols/nip70'
import { prefixOf } from '../../src/protocols/reasons'
import { OTHER_PUBKEY, PUBKEY, shapeEvent } from './fixtures'

describe('recognizing a NIP-70 protected event', () => {
  const table = [
    { name: 'a ["-"] tag', tags: [['t', 'x'], ['-']], protected: true },
    { name: 'no tags', tags: [], protected: false },
    { name: 'a "-" tag with a value', tags: [['-', 'x']], protected: false },
    { name: 'a "--" tag', tags: [['--']], protected: false },
  ]
  it.each(table)('is protected=$protected with $name', ({ tags, protected: p }) => {
    expect(isProtected({ tags })).toBe(p)
  })
})

describe('accepting a protected event only from its author', () => {
  const prot = shapeEvent({ tags: [['-']] })

  it.each([
    { name: 'a protected event from its authenticated author', event: prot, authed: [PUBKEY] },
    { name: 'an unprotected event from anyone', event: shapeEvent(), authed: [] },
  ])('accepts $name', ({ event, authed }) => {
    expect(checkProtected(event, new Set(authed)).ok).toBe(true)
  })

  it.each([
    { name: 'nobody is authenticated', authed: [] },
    { name: 'another pubkey is authenticated', authed: [OTHER_PUBKEY] },
  ])('answers "auth-required:" when $name', ({ authed }) => {
    const r = checkProtected(prot, new Set(authed))
    expect(!r.ok && prefixOf(r.error)).toBe('auth-required')
  })
})
