import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { Limits } from '../../../src/protocols/limits'
import { parseEvent, parseEventWithRaw, toRawEvent, utf8Length, utf8LongerThan } from '../../../src/protocols/nip01/event'
import { prefixOf } from '../../../src/protocols/reasons'
import { LIMITS, NOW, shapeEvent } from '../fixtures'

const withEvent = (over: Record<string, unknown>): unknown => ({ ...shapeEvent(), ...over })
const without = (key: string): unknown => {
  const e: Record<string, unknown> = { ...shapeEvent() }
  delete e[key]
  return e
}

function expectInvalid(json: unknown, text: string, limits: Limits = LIMITS): void {
  const r = parseEvent(json, limits, NOW)
  expect(r.ok).toBe(false)
  if (r.ok) return
  expect(prefixOf(r.error)).toBe('invalid')
  expect(r.error).toBe(`invalid: ${text}`)
}

describe('parsing a client-sent event', () => {
  it('accepts a well-shaped event and returns only the seven NIP-01 fields', () => {
    const r = parseEvent(withEvent({ extra: 1, tags: [['e', 'x'], ['t']] }), LIMITS, NOW)
    expect(r).toEqual({ ok: true, value: shapeEvent({ tags: [['e', 'x'], ['t']] }) })
  })

  it('returns the stored raw form alongside, without client extras', () => {
    const r = parseEventWithRaw(withEvent({ extra: 1 }), LIMITS, NOW)
    expect(r.ok && r.value.raw).toBe(toRawEvent(shapeEvent()))
  })

  const malformed: { name: string; json: unknown; text: string }[] = [
    { name: 'null', json: null, text: 'event is not an object' },
    { name: 'an array', json: [shapeEvent()], text: 'event is not an object' },
    { name: 'a string', json: 'event', text: 'event is not an object' },
    { name: 'a missing id', json: without('id'), text: 'id must be 64 lowercase hex characters' },
    { name: 'an uppercase id', json: withEvent({ id: 'A'.repeat(64) }), text: 'id must be 64 lowercase hex characters' },
    { name: 'a 63-char id', json: withEvent({ id: 'a'.repeat(63) }), text: 'id must be 64 lowercase hex characters' },
    { name: 'a numeric pubkey', json: withEvent({ pubkey: 1 }), text: 'pubkey must be 64 lowercase hex characters' },
    { name: 'a 127-char sig', json: withEvent({ sig: 'c'.repeat(127) }), text: 'sig must be 128 lowercase hex characters' },
    { name: 'a non-hex sig', json: withEvent({ sig: 'g'.repeat(128) }), text: 'sig must be 128 lowercase hex characters' },
    { name: 'a string kind', json: withEvent({ kind: '1' }), text: 'kind must be an integer from 0 to 65535' },
    { name: 'a fractional kind', json: withEvent({ kind: 1.5 }), text: 'kind must be an integer from 0 to 65535' },
    { name: 'a negative kind', json: withEvent({ kind: -1 }), text: 'kind must be an integer from 0 to 65535' },
    { name: 'kind 65536', json: withEvent({ kind: 65_536 }), text: 'kind must be an integer from 0 to 65535' },
    { name: 'a string created_at', json: withEvent({ created_at: '1' }), text: 'created_at must be a non-negative integer' },
    { name: 'a negative created_at', json: withEvent({ created_at: -1 }), text: 'created_at must be a non-negative integer' },
    { name: 'a fractional created_at', json: withEvent({ created_at: NOW + 0.5 }), text: 'created_at must be a non-negative integer' },
    { name: 'tags not an array', json: withEvent({ tags: {} }), text: 'tags must be an array' },
    { name: 'a tag that is a string', json: withEvent({ tags: ['e'] }), text: 'each tag must be a non-empty array' },
    { name: 'an empty tag', json: withEvent({ tags: [[]] }), text: 'each tag must be a non-empty array' },
    { name: 'a numeric tag element', json: withEvent({ tags: [['e', 1]] }), text: 'tag elements must be strings' },
    { name: 'a null tag element', json: withEvent({ tags: [['e', null]] }), text: 'tag elements must be strings' },
    { name: 'missing content', json: without('content'), text: 'content must be a string' },
    { name: 'numeric content', json: withEvent({ content: 5 }), text: 'content must be a string' },
  ]

  it.each(malformed)('refuses $name with "invalid:"', ({ json, text }) => {
    expectInvalid(json, text)
  })

  it('never throws on arbitrary JSON values', () => {
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), fc.record({ id: fc.jsonValue(), tags: fc.jsonValue() })), (v) => {
        expect(typeof parseEvent(v, LIMITS, NOW).ok).toBe('boolean')
      }),
    )
  })
})

describe('event limits, each at the limit and one past it', () => {
  const accepts = (json: unknown, limits: Limits = LIMITS) => expect(parseEvent(json, limits, NOW).ok).toBe(true)

  it('created_at up to createdAtFutureSeconds ahead', () => {
    accepts(withEvent({ created_at: NOW + LIMITS.createdAtFutureSeconds }))
    expectInvalid(withEvent({ created_at: NOW + LIMITS.createdAtFutureSeconds + 1 }), 'created_at too far in the future')
  })

  it('created_at up to createdAtPastSeconds behind', () => {
    accepts(withEvent({ created_at: NOW - LIMITS.createdAtPastSeconds }))
    expectInvalid(withEvent({ created_at: NOW - LIMITS.createdAtPastSeconds - 1 }), 'created_at too far in the past')
  })

  it('skips the created_at window only when asked (AUTH)', () => {
    expect(parseEventWithRaw(withEvent({ created_at: 0 }), LIMITS, undefined).ok).toBe(true)
  })

  it('kind 65535', () => {
    accepts(withEvent({ kind: 65_535 }))
  })

  it('maxEventTags tags', () => {
    const tags = (n: number) => Array.from({ length: n }, () => ['t', 'x'])
    accepts(withEvent({ tags: tags(LIMITS.maxEventTags) }))
    expectInvalid(withEvent({ tags: tags(LIMITS.maxEventTags + 1) }), 'too many tags')
  })

  it('maxTagValueBytes per tag element, counted in UTF-8 bytes', () => {
    const n = LIMITS.maxTagValueBytes
    accepts(withEvent({ tags: [['t', 'x'.repeat(n)]] }))
    accepts(withEvent({ tags: [['é'.repeat(n / 2)]] }))
    expectInvalid(withEvent({ tags: [['t', 'x'.repeat(n + 1)]] }), 'tag element too long')
    expectInvalid(withEvent({ tags: [['é'.repeat(n / 2) + 'x']] }), 'tag element too long')
  })

  it('maxContentBytes of content, counted in UTF-8 bytes', () => {
    const n = LIMITS.maxContentBytes
    accepts(withEvent({ content: 'x'.repeat(n) }))
    accepts(withEvent({ content: '🐝'.repeat(n / 4) }))
    expectInvalid(withEvent({ content: 'x'.repeat(n + 1) }), 'content too long')
    expectInvalid(withEvent({ content: '🐝'.repeat(n / 4) + 'x' }), 'content too long')
  })

  it('maxEventBytes for the whole stored event', () => {
    const roomy: Limits = { ...LIMITS, maxContentBytes: 10_000 }
    const base = utf8Length(toRawEvent(shapeEvent({ content: '' })))
    const pad = roomy.maxEventBytes - base
    accepts(withEvent({ content: 'x'.repeat(pad) }), roomy)
    expectInvalid(withEvent({ content: 'x'.repeat(pad + 1) }), 'event too large', roomy)
  })

  it('tells whether a string passes a UTF-8 byte limit exactly as counting every byte does, at and around the limit', () => {
    // strings of 1-, 2-, 3- and 4-byte characters and lone surrogates; limits near the length, 3× the length and the byte count
    const text = fc.array(fc.constantFrom('x', 'é', '€', '🐝', '\ud800', '\udc00'), { maxLength: 60 }).map((cs) => cs.join(''))
    fc.assert(
      fc.property(text, fc.integer({ min: -2, max: 2 }), fc.constantFrom('length', 'triple', 'bytes'), (s, delta, near) => {
        const base = near === 'length' ? s.length : near === 'triple' ? 3 * s.length : utf8Length(s)
        const limit = Math.max(0, base + delta)
        expect(utf8LongerThan(s, limit)).toBe(utf8Length(s) > limit)
      }),
    )
  })

  it('counts the stored form, so client extras do not count against maxEventBytes', () => {
    const roomy: Limits = { ...LIMITS, maxContentBytes: 10_000 }
    const pad = roomy.maxEventBytes - utf8Length(toRawEvent(shapeEvent({ content: '' })))
    accepts(withEvent({ content: 'x'.repeat(pad), extra: 'y'.repeat(5000) }), roomy)
  })
})
