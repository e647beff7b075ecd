import { describe, expect, it } from 'vitest'
import { channelSessionId, sessionKindOf } from '../../../src/protocols/mesh/session-id'

describe('mesh session ids', () => {
  it('names a channel session channel:<id>, for ids of 1 to 64 channel characters', () => {
    expect(channelSessionId('general')).toBe('channel:general')
    expect(channelSessionId('c'.repeat(64))).toBe(`channel:${'c'.repeat(64)}`)
    expect(() => channelSessionId('c'.repeat(65))).toThrow(RangeError)
    expect(() => channelSessionId('Dev')).toThrow(RangeError)
  })

  it.each([
    ['channel:general', 'channel'],
    ['channel:a_b-1', 'channel'],
    ['room:general', undefined],
    ['channel:', undefined],
    ['channel:a:b', undefined],
    [`channel:${'c'.repeat(65)}`, undefined],
  ])('reads the kind of %j', (id, kind) => {
    expect(sessionKindOf(id)).toBe(kind)
  })
})
