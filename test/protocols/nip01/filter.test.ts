import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { effectiveLimit, type Filter, parseFilter, parseFilters } from '../../../src/protocols/nip01/filter'
import { prefixOf } from '../../../src/protocols/reasons'
import { ID, LIMITS, PUBKEY } from '../fixtures'

describe('parsing a REQ filter', () => {
  const valid: { name: string; json: unknown; filter: Filter }[] = [
    { name: 'an empty filter', json: {}, filter: {} },
    { name: 'exact ids and authors', json: { ids: [ID], authors: [PUBKEY] }, filter: { ids: [ID], authors: [PUBKEY] } },
    { name: 'kinds at both ends of the range', json: { kinds: [0, 65_535] }, filter: { kinds: [0, 65_535] } },
    { name: 'since and until', json: { since: 0, until: 1_700_000_000 }, filter: { since: 0, until: 1_700_000_000 } },
    { name: 'a limit of zero', json: { limit: 0 }, filter: { limit: 0 } },
    { name: 'single-letter tags, either case', json: { '#e': ['x'], '#P': ['y'] }, filter: { tags: { e: ['x'], P: ['y'] } } },
    { name: 'empty lists, kept (they match nothing)', json: { ids: [], '#t': [] }, filter: { ids: [], tags: { t: [] } } },
    { name: 'unsupported keys, ignored', json: { search: 'bees', '#long': ['x'], '#': ['y'], foo: 1 }, filter: {} },
  ]

  it.each(valid)('accepts $name', ({ json, filter }) => {
    expect(parseFilter(json, LIMITS)).toEqual({ ok: true, value: filter })
  })

  const invalid: { name: string; json: unknown }[] = [
    { name: 'null', json: null },
    { name: 'an array', json: [] },
    { name: 'a number', json: 3 },
    { name: 'ids not an array', json: { ids: ID } },
    { name: 'an id prefix (NIP-01 dropped prefixes)', json: { ids: ['abcd'] } },
    { name: 'an uppercase author', json: { authors: [PUBKEY.toUpperCase()] } },
    { name: 'a fractional kind', json: { kinds: [1.5] } },
    { name: 'kind 65536', json: { kinds: [65_536] } },
    { name: 'a negative kind', json: { kinds: [-1] } },
    { name: 'a string kind', json: { kinds: ['1'] } },
    { name: 'a negative since', json: { since: -1 } },
    { name: 'a string until', json: { until: '5' } },
    { name: 'a fractional limit', json: { limit: 1.5 } },
    { name: 'a negative limit', json: { limit: -1 } },
    { name: 'a numeric tag value', json: { '#e': [1] } },
    { name: 'a tag condition that is not a list', json: { '#e': 'x' } },
  ]

  it.each(invalid)('refuses $name with "invalid:"', ({ json }) => {
    const r = parseFilter(json, LIMITS)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(prefixOf(r.error)).toBe('invalid')
  })

  it('clamps limit to maxLimit instead of refusing', () => {
    expect(parseFilter({ limit: LIMITS.maxLimit }, LIMITS)).toEqual({ ok: true, value: { limit: LIMITS.maxLimit } })
    expect(parseFilter({ limit: LIMITS.maxLimit + 1 }, LIMITS)).toEqual({ ok: true, value: { limit: LIMITS.maxLimit } })
  })

  it.each(['ids', 'authors', 'kinds', '#p'])('accepts 1000 values in %s and refuses 1001', (key) => {
    const value = key === 'kinds' ? 1 : key === '#p' ? 'x' : ID
    expect(parseFilter({ [key]: Array(1000).fill(value) }, LIMITS).ok).toBe(true)
    const r = parseFilter({ [key]: Array(1001).fill(value) }, LIMITS)
    expect(!r.ok && prefixOf(r.error)).toBe('invalid')
  })

  it('never throws on arbitrary input', () => {
    const filterish = fc.dictionary(
      fc.constantFrom('ids', 'authors', 'kinds', 'since', 'until', 'limit', '#e', '#p', 'search', '__proto__'),
      fc.jsonValue(),
    )
    fc.assert(
      fc.property(fc.oneof(fc.anything(), fc.jsonValue(), filterish), (v) => {
        expect(typeof parseFilter(v, LIMITS).ok).toBe('boolean')
      }),
    )
  })
})

describe('parsing the filters of one REQ', () => {
  it('accepts maxFilters filters and refuses one more', () => {
    expect(parseFilters(Array(LIMITS.maxFilters).fill({}), LIMITS).ok).toBe(true)
    const r = parseFilters(Array(LIMITS.maxFilters + 1).fill({}), LIMITS)
    expect(!r.ok && prefixOf(r.error)).toBe('invalid')
  })

  it('refuses a REQ without filters', () => {
    const r = parseFilters([], LIMITS)
    expect(!r.ok && prefixOf(r.error)).toBe('invalid')
  })

  it('refuses the whole list when one filter is malformed', () => {
    const r = parseFilters([{}, { kinds: ['x'] }], LIMITS)
    expect(!r.ok && prefixOf(r.error)).toBe('invalid')
  })
})

describe('the effective limit of a query', () => {
  const table = [
    { name: 'defaultLimit when absent', limit: undefined, expected: LIMITS.defaultLimit },
    { name: 'the asked limit below maxLimit', limit: 5, expected: 5 },
    { name: 'zero when asked for zero', limit: 0, expected: 0 },
    { name: 'maxLimit at the limit', limit: LIMITS.maxLimit, expected: LIMITS.maxLimit },
    { name: 'maxLimit past the limit', limit: LIMITS.maxLimit + 1, expected: LIMITS.maxLimit },
  ]
  it.each(table)('is $name', ({ limit, expected }) => {
    expect(effectiveLimit(limit === undefined ? {} : { limit }, LIMITS)).toBe(expected)
  })

  it('never exceeds maxLimit even when defaultLimit is configured above it', () => {
    expect(effectiveLimit({}, { ...LIMITS, defaultLimit: LIMITS.maxLimit + 50 })).toBe(LIMITS.maxLimit)
  })
})
