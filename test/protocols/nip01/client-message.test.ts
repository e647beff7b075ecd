import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type ClientMessageError, parseClientMessage } from '../../../src/protocols/nip01/client-message'
import { toRawEvent } from '../../../src/protocols/nip01/event'
import { prefixOf } from '../../../src/protocols/reasons'
import { ID, LIMITS, NOW, PUBKEY, shapeEvent } from '../fixtures'

const parse = (msg: unknown) => parseClientMessage(typeof msg === 'string' ? msg : JSON.stringify(msg), LIMITS, NOW)

function refusal(msg: unknown): ClientMessageError {
  const r = parse(msg)
  if (r.ok) throw new Error(`expected a refusal for ${JSON.stringify(msg)}`)
  return r.error
}

describe('parsing client frames that are accepted', () => {
  it('reads EVENT and keeps the stored raw form without client extras', () => {
    const r = parse(['EVENT', { ...shapeEvent(), extra: true }])
    expect(r).toEqual({ ok: true, value: { type: 'EVENT', event: shapeEvent(), raw: toRawEvent(shapeEvent()) } })
  })

  it.each(['REQ', 'COUNT'] as const)('reads %s with its filters', (type) => {
    const r = parse([type, 'sub1', { kinds: [1] }, { '#e': [ID] }])
    expect(r).toEqual({ ok: true, value: { type, subId: 'sub1', filters: [{ kinds: [1] }, { tags: { e: [ID] } }] } })
  })

  it('reads CLOSE', () => {
    expect(parse(['CLOSE', 'sub1'])).toEqual({ ok: true, value: { type: 'CLOSE', subId: 'sub1' } })
  })

  it('reads AUTH without applying the EVENT created_at window (nip42 has its own)', () => {
    const old = shapeEvent({ kind: 22_242, created_at: NOW - 10 * LIMITS.createdAtPastSeconds })
    expect(parse(['AUTH', old])).toEqual({ ok: true, value: { type: 'AUTH', event: old } })
  })
})

describe('malformed frames get a NOTICE and the connection stays up', () => {
  const table: { name: string; msg: unknown; prefix: string }[] = [
    { name: 'text that is not JSON', msg: '["EVENT",', prefix: 'invalid' },
    { name: 'a JSON object', msg: { type: 'EVENT' }, prefix: 'invalid' },
    { name: 'an empty array', msg: [], prefix: 'invalid' },
    { name: 'an unknown verb', msg: ['PUBLISH', {}], prefix: 'unsupported' },
    { name: 'a non-string verb', msg: [1, {}], prefix: 'unsupported' },
    { name: 'EVENT without an event', msg: ['EVENT'], prefix: 'invalid' },
    { name: 'EVENT with two events', msg: ['EVENT', shapeEvent(), shapeEvent()], prefix: 'invalid' },
    { name: 'REQ without a subscription id', msg: ['REQ'], prefix: 'invalid' },
    { name: 'COUNT without a subscription id', msg: ['COUNT'], prefix: 'invalid' },
    { name: 'CLOSE without a subscription id', msg: ['CLOSE'], prefix: 'invalid' },
    { name: 'CLOSE with a numeric id', msg: ['CLOSE', 7], prefix: 'invalid' },
    { name: 'CLOSE with an empty id', msg: ['CLOSE', ''], prefix: 'invalid' },
    { name: 'CLOSE with extra items', msg: ['CLOSE', 'a', 'b'], prefix: 'invalid' },
    { name: 'AUTH without an event', msg: ['AUTH'], prefix: 'invalid' },
  ]

  it.each(table)('answers $name with a "$prefix:" NOTICE', ({ msg, prefix }) => {
    const e = refusal(msg)
    expect(e.kind).toBe('notice')
    if (e.kind === 'notice') expect(prefixOf(e.message)).toBe(prefix)
  })

  it('accepts a frame of maxMessageBytes and refuses one byte more', () => {
    const frame = (bytes: number) => {
      const base = JSON.stringify(['CLOSE', 'a']).length
      return JSON.stringify(['CLOSE', 'a']).replace(']', ' '.repeat(bytes - base) + ']')
    }
    expect(parseClientMessage(frame(LIMITS.maxMessageBytes), LIMITS, NOW).ok).toBe(true)
    const r = parseClientMessage(frame(LIMITS.maxMessageBytes + 1), LIMITS, NOW)
    expect(!r.ok && r.error.kind === 'notice' && prefixOf(r.error.message)).toBe('invalid')
  })
})

describe('a malformed EVENT or AUTH gets OK false', () => {
  const table: { name: string; msg: unknown; eventId: string }[] = [
    { name: 'EVENT with a bad sig', msg: ['EVENT', shapeEvent({ sig: 'x' })], eventId: ID },
    { name: 'EVENT that is not an object', msg: ['EVENT', 'x'], eventId: '' },
    { name: 'EVENT with a numeric id', msg: ['EVENT', { ...shapeEvent(), id: 5 }], eventId: '' },
    { name: 'EVENT with an over-long id', msg: ['EVENT', { ...shapeEvent(), id: 'a'.repeat(65) }], eventId: '' },
    { name: 'EVENT from the far future', msg: ['EVENT', shapeEvent({ created_at: NOW + 3600 })], eventId: ID },
    { name: 'AUTH with tags that are not arrays', msg: ['AUTH', { ...shapeEvent(), tags: 'x' }], eventId: ID },
  ]

  it.each(table)('answers $name with "invalid:" naming the event id', ({ msg, eventId }) => {
    const e = refusal(msg)
    expect(e.kind).toBe('ok-false')
    if (e.kind !== 'ok-false') return
    expect(e.eventId).toBe(eventId)
    expect(prefixOf(e.reason)).toBe('invalid')
  })
})

describe('a refused REQ or COUNT gets CLOSED, never a NOTICE', () => {
  const long = 'x'.repeat(LIMITS.maxSubidLength + 1)
  const table: { name: string; msg: unknown; subId: string }[] = [
    { name: 'a numeric subscription id', msg: ['REQ', 5, {}], subId: '' },
    { name: 'an empty subscription id', msg: ['COUNT', '', {}], subId: '' },
    { name: 'a subscription id over maxSubidLength', msg: ['REQ', long, {}], subId: long },
    { name: 'no filters', msg: ['REQ', 's'], subId: 's' },
    { name: 'a malformed filter', msg: ['REQ', 's', { kinds: 'x' }], subId: 's' },
    { name: 'a filter that is not an object', msg: ['COUNT', 's', 'x'], subId: 's' },
    { name: 'too many filters', msg: ['REQ', 's', ...Array(LIMITS.maxFilters + 1).fill({})], subId: 's' },
  ]

  it.each(table)('closes $name with "invalid:"', ({ msg, subId }) => {
    const e = refusal(msg)
    expect(e.kind).toBe('closed')
    if (e.kind !== 'closed') return
    expect(e.subId).toBe(subId)
    expect(prefixOf(e.reason)).toBe('invalid')
  })

  // maxReqValues is 12: every list of every filter counts, ids, authors, kinds and tags alike
  const valuesFilters = (n: number) => [
    { kinds: Array.from({ length: 4 }, (_, i) => i) },
    { '#t': Array.from({ length: 4 }, (_, i) => `t${i}`), authors: [PUBKEY] },
    { ids: Array.from({ length: n - 9 }, (_, i) => String(i).padStart(64, '0')) },
  ]

  it.each(['REQ', 'COUNT'])('serves a %s whose filters hold maxReqValues values together', (type) => {
    expect(parse([type, 's', ...valuesFilters(LIMITS.maxReqValues)]).ok).toBe(true)
  })

  it.each(['REQ', 'COUNT'])('closes a %s whose filters hold one value more with "invalid:", marked for the metric', (type) => {
    const e = refusal([type, 's', ...valuesFilters(LIMITS.maxReqValues + 1)])
    expect(e).toMatchObject({ kind: 'closed', subId: 's', refusal: 'values' })
    if (e.kind === 'closed') expect(e.reason).toBe(`invalid: too many values in this ${type}'s filters (max ${LIMITS.maxReqValues})`)
  })

  it('accepts a subscription id of exactly maxSubidLength characters', () => {
    expect(parse(['REQ', 'x'.repeat(LIMITS.maxSubidLength), {}]).ok).toBe(true)
  })
})

describe('the parser never throws', () => {
  const verbs = fc.constantFrom('EVENT', 'REQ', 'COUNT', 'CLOSE', 'AUTH', 'NOPE')

  it('on arbitrary strings', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary' }), (s) => void parseClientMessage(s, LIMITS, NOW)))
  })

  it('on arbitrary JSON', () => {
    fc.assert(fc.property(fc.json(), (s) => void parseClientMessage(s, LIMITS, NOW)))
  })

  it('on frames with a known verb and arbitrary arguments', () => {
    const frames = fc.tuple(verbs, fc.array(fc.jsonValue(), { maxLength: 5 })).map(([v, rest]) => [v, ...rest])
    fc.assert(
      fc.property(frames, (f) => {
        const r = parse(f)
        if (!r.ok) expect(['notice', 'ok-false', 'closed']).toContain(r.error.kind)
      }),
    )
  })
})
