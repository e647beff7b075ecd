import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { channelOfSession, channelSessionId, isSessionId, sessionKindOf } from '../../../src/protocols/mesh/session-id'
import { isChannelId } from '../../../src/protocols/nip29'

describe('mesh session ids', () => {
  it('names a channel session channel:<id>, its id percent-encoded outside a-z 0-9 - _', () => {
    expect(channelSessionId('general')).toBe('channel:general')
    expect(channelSessionId('c'.repeat(64))).toBe(`channel:${'c'.repeat(64)}`)
    expect(channelSessionId('Dev')).toBe('channel:%44ev')
    expect(channelSessionId('a:b/c')).toBe('channel:a%3ab%2fc')
    expect(() => channelSessionId('c'.repeat(65))).toThrow(RangeError)
    expect(() => channelSessionId('a b')).toThrow(RangeError)
  })

  it.each([
    ['channel:general', 'channel'],
    ['channel:a_b-1', 'channel'],
    ['channel:%44ev', 'channel'],
    ['room:general', undefined],
    ['channel:', undefined],
    ['channel:a:b', undefined],
    ['channel:Dev', undefined],
    // another spelling of `a`, and of the upper-case escape: one session per channel
    ['channel:%61', undefined],
    ['channel:%3A', undefined],
    ['channel:a%20b', undefined],
    [`channel:${'c'.repeat(65)}`, undefined],
  ])('reads the kind of %j', (id, kind) => {
    expect(sessionKindOf(id)).toBe(kind)
  })

  it('reads back the channel of every session id it makes, and no other text is one (property)', () => {
    const id = fc.string({ unit: 'binary', minLength: 1, maxLength: 64 }).filter(isChannelId)
    fc.assert(
      fc.property(id, (channel) => {
        const session = channelSessionId(channel)
        expect(channelOfSession(session)).toBe(channel)
        expect(session).toMatch(/^channel:[a-z0-9_%-]+$/)
      }),
      { numRuns: 500 },
    )
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (text) => {
        if (isSessionId(text)) expect(channelSessionId(channelOfSession(text) as string)).toBe(text)
      }),
      { numRuns: 500 },
    )
  })
})
