import { describe, expect, it } from 'vitest'
import { checkLatePublication, checkPrevious, MAX_PREVIOUS_REFS, parsePrevious, toPreviousRefs } from '../../src/protocols/nip29-timeline'
import { prefixOf } from '../../src/protocols/reasons'
import { NOW, shapeEvent } from './fixtures'

const ref = (i: number) => i.toString(16).padStart(8, '0')
const prefixOrRefs = (r: ReturnType<typeof parsePrevious>) => (r.ok ? r.value : prefixOf(r.error))

describe('reading the previous references of a channel event', () => {
  it.each([
    { name: 'no previous tag', tags: [['h', 'c']], want: [] },
    { name: 'one tag of several values', tags: [['previous', 'aaaaaaaa', 'bbbbbbbb']], want: ['aaaaaaaa', 'bbbbbbbb'] },
    {
      name: 'a tag per value',
      tags: [
        ['previous', 'aaaaaaaa'],
        ['previous', '01234567'],
      ],
      want: ['aaaaaaaa', '01234567'],
    },
    { name: 'a previous tag without a value', tags: [['previous']], want: [] },
  ])('reads $name', ({ tags, want }) => {
    expect(prefixOrRefs(parsePrevious({ tags }))).toEqual(want)
  })

  it.each([
    { name: 'a whole event id', value: 'a'.repeat(64) },
    { name: 'seven characters', value: 'aaaaaaa' },
    { name: 'upper case', value: 'AAAAAAAA' },
    { name: 'a non-hex character', value: 'aaaaaaag' },
    { name: 'an empty value', value: '' },
  ])('refuses $name as invalid', ({ value }) => {
    expect(prefixOrRefs(parsePrevious({ tags: [['previous', 'aaaaaaaa', value]] }))).toBe('invalid')
  })

  it(`accepts ${MAX_PREVIOUS_REFS} references and refuses one more as invalid, however the tags split them`, () => {
    const refs = Array.from({ length: MAX_PREVIOUS_REFS + 1 }, (_, i) => ref(i))
    expect(prefixOrRefs(parsePrevious({ tags: [['previous', ...refs.slice(0, MAX_PREVIOUS_REFS)]] }))).toHaveLength(MAX_PREVIOUS_REFS)
    expect(prefixOrRefs(parsePrevious({ tags: [['previous', ...refs]] }))).toBe('invalid')
    expect(prefixOrRefs(parsePrevious({ tags: refs.map((r) => ['previous', r]) }))).toBe('invalid')
  })
})

describe('checking previous references against the channel latest events', () => {
  const known = toPreviousRefs(['aaaaaaaa' + '1'.repeat(56), 'bbbbbbbb' + '2'.repeat(56)])

  it('accepts references to known events, and none at all', () => {
    expect(checkPrevious(['aaaaaaaa', 'bbbbbbbb'], known).ok).toBe(true)
    expect(checkPrevious([], new Set()).ok).toBe(true)
  })

  it('refuses an unknown reference with "invalid:" naming it, even beside known ones', () => {
    const r = checkPrevious(['aaaaaaaa', 'cccccccc'], known)
    expect(!r.ok && prefixOf(r.error)).toBe('invalid')
    expect(!r.ok && r.error).toContain('cccccccc')
  })
})

describe('refusing late publication', () => {
  const windows = { maxModerationAgeSeconds: 60, maxPostAgeSeconds: 3600 }
  const late = (kind: number, ageSeconds: number, w = windows) => {
    const r = checkLatePublication(shapeEvent({ kind, created_at: NOW - ageSeconds }), NOW, w)
    return r.ok ? 'ok' : prefixOf(r.error)
  }

  it.each([9000, 9001, 9002, 9005, 9007, 9008, 9010, 9021, 9022])('takes kind %i at 60 s old and refuses it at 61 s', (kind) => {
    expect(late(kind, 60)).toBe('ok')
    expect(late(kind, 61)).toBe('invalid')
  })

  it('takes any other event of a channel up to the post window, and refuses one a second older', () => {
    expect(late(9, 3600)).toBe('ok')
    expect(late(9, 3601)).toBe('invalid')
    expect(late(1, 3601)).toBe('invalid')
  })

  it('bounds no other event when the post window is 0, and still bounds channel changes', () => {
    const off = { ...windows, maxPostAgeSeconds: 0 }
    expect(late(9, 86_400, off)).toBe('ok')
    expect(late(9000, 61, off)).toBe('invalid')
  })

  it('leaves events dated ahead to the relay created_at window', () => {
    expect(late(9000, -300)).toBe('ok')
  })
})
