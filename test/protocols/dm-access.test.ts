import { describe, expect, it } from 'vitest'
import { canRead, isAuthorOnlyKind } from '../../src/protocols/dm-access'
import { OTHER_PUBKEY, PUBKEY, shapeEvent } from './fixtures'

describe('which kinds only their parties may read', () => {
  it.each([
    { kind: 4, only: true },
    { kind: 1059, only: true },
    { kind: 1, only: false },
    { kind: 14, only: false },
    { kind: 1058, only: false },
  ])('kind $kind is author-only: $only', ({ kind, only }) => {
    expect(isAuthorOnlyKind(kind)).toBe(only)
  })
})

describe('reading direct messages and gift wraps', () => {
  const third = 'e'.repeat(64)
  const dm = shapeEvent({ kind: 4, tags: [['p', OTHER_PUBKEY]] })
  const table = [
    { name: 'anyone reads a public note', event: shapeEvent(), authed: [], can: true },
    { name: 'the author reads their DM', event: dm, authed: [PUBKEY], can: true },
    { name: 'the recipient reads a DM', event: dm, authed: [OTHER_PUBKEY], can: true },
    { name: 'a recipient among several authed keys reads it', event: dm, authed: [third, OTHER_PUBKEY], can: true },
    { name: 'an unauthenticated connection cannot read a DM', event: dm, authed: [], can: false },
    { name: 'a third party cannot read a DM', event: dm, authed: [third], can: false },
    {
      name: 'the recipient reads a gift wrap',
      event: shapeEvent({ kind: 1059, tags: [['p', OTHER_PUBKEY]] }),
      authed: [OTHER_PUBKEY],
      can: true,
    },
    { name: 'a gift wrap without p tag is hidden', event: shapeEvent({ kind: 1059 }), authed: [third], can: false },
    { name: 'a bare ["p"] tag names nobody', event: shapeEvent({ kind: 4, tags: [['p']] }), authed: [third], can: false },
  ]
  it.each(table)('$name', ({ event, authed, can }) => {
    expect(canRead(event, new Set(authed))).toBe(can)
  })
})
