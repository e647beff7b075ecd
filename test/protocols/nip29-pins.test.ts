import { describe, expect, it } from 'vitest'
import { MAX_PINS, parsePins, pinsTemplate } from '../../src/protocols/nip29-pins'
import { prefixOf } from '../../src/protocols/reasons'
import { OTHER_PUBKEY } from './fixtures'

const id = (i: number) => i.toString(16).padStart(64, '0')
const address = `30023:${OTHER_PUBKEY}:notes:2024`

describe('reading the pin list of a kind 9010', () => {
  it('keeps the e and a tags in their order and nothing else', () => {
    const r = parsePins([
      ['h', 'c'],
      ['e', id(2)],
      ['a', address],
      ['p', OTHER_PUBKEY],
      ['e', id(1)],
      ['previous', 'aaaaaaaa'],
    ])
    expect(r.ok && r.value).toEqual([
      ['e', id(2)],
      ['a', address],
      ['e', id(1)],
    ])
  })

  it('reads no pins as an empty list (the pins are cleared)', () => {
    expect(parsePins([['h', 'c']])).toEqual({ ok: true, value: [] })
  })

  it('keeps the first place of a pin listed twice', () => {
    const r = parsePins([
      ['e', id(1)],
      ['e', id(2)],
      ['e', id(1)],
    ])
    expect(r.ok && r.value).toEqual([
      ['e', id(1)],
      ['e', id(2)],
    ])
  })

  it.each([
    { name: 'an e pin that is not an event id', tag: ['e', 'abc'] },
    { name: 'an e pin in upper case', tag: ['e', id(1).toUpperCase().replace(/^0/, 'A')] },
    { name: 'an a pin without a d part', tag: ['a', `30023:${OTHER_PUBKEY}`] },
    { name: 'an a pin with a short pubkey', tag: ['a', '30023:abc:x'] },
    { name: 'an a pin with a kind past 65535', tag: ['a', `70000:${OTHER_PUBKEY}:x`] },
    { name: 'an e tag without a value', tag: ['e'] },
  ])('refuses $name as invalid', ({ tag }) => {
    const r = parsePins([tag])
    expect(!r.ok && prefixOf(r.error)).toBe('invalid')
  })

  it(`takes ${MAX_PINS} pins and refuses ${MAX_PINS + 1} as invalid`, () => {
    const tags = Array.from({ length: MAX_PINS + 1 }, (_, i) => ['e', id(i)])
    const atLimit = parsePins(tags.slice(0, MAX_PINS))
    expect(atLimit.ok && atLimit.value).toHaveLength(MAX_PINS)
    const over = parsePins(tags)
    expect(!over.ok && prefixOf(over.error)).toBe('invalid')
  })
})

describe('describing the pins in kind 39005', () => {
  it('carries the d tag, then the pins in order', () => {
    const t = pinsTemplate('c', [
      ['a', address],
      ['e', id(1)],
    ])
    expect(t.kind).toBe(39005)
    expect(t.tags).toEqual([
      ['d', 'c'],
      ['a', address],
      ['e', id(1)],
    ])
  })
})
