import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { Limits } from '../../src/protocols/limits'
import { type ClientMessageError, parseClientMessage } from '../../src/protocols/nip01/client-message'
import { utf8Length } from '../../src/protocols/nip01/event'
import { type Filter, parseFilter, parseFilters } from '../../src/protocols/nip01/filter'
import { prefixOf } from '../../src/protocols/reasons'
import { NOW, LIMITS as SMALL_LIMITS } from '../protocols/fixtures'

/**
 * Property tests of the two parsers every client byte goes through (architecture §10, STYLE "protocols never throws
 * on untrusted input"): whatever arrives, they return a value, and every refusal carries a NIP-01 prefix.
 * Seeded, so a failure here reproduces with the same seed; a few thousand runs each, a couple of seconds.
 */

// the suite's small limits, so generated input reaches every one of them and one past it; maxEventBytes is
// below what seven fields plus maxEventTags tags can reach, so 'event too large' is reachable too
const LIMITS: Limits = { ...SMALL_LIMITS, maxEventBytes: 600 }
const RUNS = { seed: 0x41706961, numRuns: 3_000 }
const FILTER_KEYS = ['ids', 'authors', 'kinds', 'since', 'until', 'limit'] as const

const hex = (n: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: n, maxLength: n })
/** numbers a client might send to break integer checks: huge, negative, fractional, unsafe, -0 */
const oddNumber = fc.oneof(
  fc.integer({ min: -5, max: 70_000 }),
  fc.constantFrom(-0, 0.5, 1e21, 1e308, -1e308, 2 ** 53, 2 ** 53 + 2, Number.MAX_SAFE_INTEGER, 65_535, 65_536, NOW),
  fc.double(),
)
const oddString = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  hex(64),
  hex(64).map((h) => h.toUpperCase()),
)
/** a value of a field: usually of a plausible type, sometimes anything */
const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: oddNumber },
  { weight: 3, arbitrary: oddString },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
)

/** ASCII strings, short or within two characters of `n` either side (limits are met at n and n + 1) */
const around = (n: number) => fc.oneof(fc.string({ maxLength: 8 }), fc.string({ minLength: n - 2, maxLength: n + 2 }))
/** mostly `valid`, now and then anything at all */
const mostly = <T>(valid: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 8, arbitrary: valid }, { weight: 1, arbitrary: oddValue })
/** drops one key now and then */
const maybeDrop = (rec: fc.Arbitrary<Record<string, unknown>>) =>
  fc.tuple(rec, fc.oneof({ weight: 7, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.nat(7) })).map(([r, drop]) => {
    if (drop === null) return r
    const { [Object.keys(r)[drop % Object.keys(r).length]!]: _dropped, ...rest } = r
    return rest
  })

/** events close to valid: each field sometimes replaced by something else, one sometimes dropped */
const nearEvent = maybeDrop(
  fc.record({
    id: mostly(hex(64)),
    pubkey: mostly(hex(64)),
    created_at: mostly(fc.integer({ min: NOW - 1_100, max: NOW + 100 })),
    kind: mostly(fc.integer({ min: 0, max: 40_000 })),
    tags: mostly(fc.array(fc.array(around(LIMITS.maxTagValueBytes), { minLength: 1, maxLength: 3 }), { maxLength: 5 })),
    content: mostly(around(LIMITS.maxContentBytes)),
    sig: mostly(hex(128)),
  }),
)

/** filters close to valid: known keys with plausible or odd values, tag keys, unknown keys */
const nearFilter = fc
  .tuple(
    fc.record(
      {
        ids: mostly(fc.array(hex(64), { maxLength: 3 })),
        authors: mostly(fc.array(hex(64), { maxLength: 3 })),
        kinds: mostly(fc.array(fc.integer({ min: 0, max: 65_536 }), { maxLength: 3 })),
        since: mostly(fc.integer({ min: 0, max: NOW })),
        until: mostly(fc.integer({ min: 0, max: NOW })),
        limit: mostly(fc.integer({ min: 0, max: 200 })),
        '#e': mostly(fc.array(fc.string({ maxLength: 10 }), { maxLength: 3 })),
        '#t': mostly(fc.array(fc.string({ maxLength: 10 }), { maxLength: 3 })),
      },
      { requiredKeys: [] },
    ),
    fc.oneof(
      { weight: 4, arbitrary: fc.constant({}) },
      {
        weight: 1,
        arbitrary: fc.dictionary(fc.constantFrom('#E', '#ee', 'search', '__proto__', 'constructor', '#'), fc.jsonValue({ maxDepth: 2 }), {
          maxKeys: 2,
        }),
      },
    ),
  )
  .map(([known, extra]) => ({ ...extra, ...known }) as Record<string, unknown>)

const subId = fc.oneof(
  { weight: 6, arbitrary: fc.string({ minLength: 1, maxLength: LIMITS.maxSubidLength }) },
  { weight: 1, arbitrary: fc.string({ maxLength: LIMITS.maxSubidLength + 2 }) },
  { weight: 1, arbitrary: oddValue },
)
const filterList = fc.array(fc.oneof({ weight: 12, arbitrary: nearFilter }, { weight: 1, arbitrary: oddValue }), {
  minLength: 1,
  maxLength: LIMITS.maxFilters + 1,
})
const verb = fc.oneof(
  fc.constantFrom('EVENT', 'REQ', 'COUNT', 'CLOSE', 'AUTH'),
  fc.constantFrom('NOTICE', 'OK', 'event', '', 'REQ '),
  oddValue,
)
const structuredFrame = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(fc.constantFrom('EVENT', 'AUTH'), nearEvent).map((f): unknown[] => f) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(
        fc.constantFrom('REQ', 'COUNT'),
        subId,
        fc.oneof({ weight: 9, arbitrary: filterList }, { weight: 1, arbitrary: fc.constant([]) }),
      )
      .map(([v, s, fs]): unknown[] => [v, s, ...fs]),
  },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('CLOSE'), subId).map((f): unknown[] => f) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(verb, fc.array(fc.oneof(nearEvent, nearFilter, oddValue), { maxLength: 4 }))
      .map(([v, rest]): unknown[] => [v, ...rest]),
  },
)

/** Texts a broken or hostile client sends: valid frames cut short, glued together, or wrapped in noise. */
const jsonish = fc.oneof(
  fc.tuple(structuredFrame, fc.nat()).map(([f, n]) => {
    const text = JSON.stringify(f)
    return text.slice(0, n % (text.length + 1))
  }),
  fc.tuple(structuredFrame, structuredFrame).map(([a, b]) => JSON.stringify(a) + JSON.stringify(b)),
  fc.tuple(fc.string({ maxLength: 3 }), structuredFrame, fc.string({ maxLength: 3 })).map(([p, f, s]) => p + JSON.stringify(f) + s),
  fc.json({ maxDepth: 4 }),
  fc.string({ unit: 'binary', maxLength: 200 }),
)

/** The verb of a frame, or of a frame's text when it is JSON at all. */
function verbOf(frame: unknown): unknown {
  let f = frame
  if (typeof f === 'string') {
    try {
      f = JSON.parse(f)
    } catch {
      return undefined
    }
  }
  return Array.isArray(f) ? f[0] : undefined
}

/** A refusal answered with the NIP-01 prefix its frame type needs (notice text carries one too, architecture §10). */
function expectStandardRefusal(e: ClientMessageError, frame: unknown): void {
  const text = e.kind === 'notice' ? e.message : e.reason
  expect(prefixOf(text), `${JSON.stringify(frame)?.slice(0, 200)} → ${text}`).toBeDefined()
  const v = verbOf(frame)
  if (e.kind === 'closed') expect(['REQ', 'COUNT']).toContain(v)
  if (e.kind === 'ok-false') {
    expect(['EVENT', 'AUTH']).toContain(v)
    // the id named in OK is one the client could have meant, never an arbitrary echo of its input
    expect(e.eventId === '' || (typeof e.eventId === 'string' && e.eventId.length <= 64)).toBe(true)
  }
}

/** What an accepted filter may hold: only known fields, each within its rule and our limits. */
function expectWellFormedFilter(f: Filter): void {
  for (const key of Object.keys(f)) expect([...FILTER_KEYS, 'tags']).toContain(key)
  for (const list of [f.ids, f.authors]) if (list) for (const v of list) expect(v).toMatch(/^[0-9a-f]{64}$/)
  if (f.kinds) for (const k of f.kinds) expect(Number.isInteger(k) && k >= 0 && k <= 65_535).toBe(true)
  for (const t of [f.since, f.until, f.limit]) if (t !== undefined) expect(Number.isSafeInteger(t) && t >= 0).toBe(true)
  if (f.limit !== undefined) expect(f.limit).toBeLessThanOrEqual(LIMITS.maxLimit)
  for (const [letter, values] of Object.entries(f.tags ?? {})) {
    expect(letter).toMatch(/^[a-zA-Z]$/)
    expect(values.every((v) => typeof v === 'string')).toBe(true)
  }
}

/** Parses one text as the relay does and checks what it made of it. */
function checkFrameText(text: string, frame: unknown = text): void {
  const r = parseClientMessage(text, LIMITS, NOW)
  if (!r.ok) {
    expectStandardRefusal(r.error, frame)
    return
  }
  const m = r.value
  switch (m.type) {
    case 'EVENT': {
      // the stored form: exactly the seven NIP-01 fields, within maxEventBytes
      expect(Object.keys(JSON.parse(m.raw))).toEqual(['id', 'pubkey', 'created_at', 'kind', 'tags', 'content', 'sig'])
      expect(utf8Length(m.raw)).toBeLessThanOrEqual(LIMITS.maxEventBytes)
      expect(Math.abs(m.event.created_at - NOW)).toBeLessThanOrEqual(LIMITS.createdAtPastSeconds)
      return
    }
    case 'REQ':
    case 'COUNT':
      expect(m.subId.length).toBeGreaterThan(0)
      expect(m.subId.length).toBeLessThanOrEqual(LIMITS.maxSubidLength)
      expect(m.filters.length).toBeGreaterThan(0)
      expect(m.filters.length).toBeLessThanOrEqual(LIMITS.maxFilters)
      for (const f of m.filters) expectWellFormedFilter(f)
      return
    case 'CLOSE':
      expect(m.subId.length).toBeGreaterThan(0)
      return
    case 'AUTH':
      return
  }
}

describe('the client-message parser under fuzzing', () => {
  it('never throws on arbitrary text, and refuses with a standard prefix', () => {
    fc.assert(
      fc.property(jsonish, (text) => checkFrameText(text)),
      RUNS,
    )
  })

  it('never throws on structured frames close to valid ones; accepts only what fits the limits, refuses with the prefix the frame type needs', () => {
    fc.assert(
      fc.property(structuredFrame, (frame) => checkFrameText(JSON.stringify(frame), frame)),
      RUNS,
    )
  })

  it('never throws on deeply nested input anywhere in a frame (JSON.parse copes; nothing re-serializes it)', () => {
    const depth = fc.integer({ min: 1, max: 20_000 })
    const nest = (d: number, open: string, close: string, inner = '1') => open.repeat(d) + inner + close.repeat(d)
    const deep = fc.oneof(
      depth.map((d) => nest(d, '[', ']')),
      depth.map((d) => `["REQ","s",{"#t":${nest(d, '[', ']', '"x"')}}]`),
      depth.map((d) => `["REQ","s",{"search":${nest(d, '{"a":', '}')}}]`),
      depth.map((d) => `["EVENT",{"tags":${nest(d, '[', ']', '"x"')}}]`),
      depth.map((d) => `["CLOSE",${nest(d, '[', ']')}]`),
    )
    // big enough that the nesting itself, not the size limit, is what the parser meets
    const roomy = { ...LIMITS, maxMessageBytes: 1_000_000 }
    fc.assert(
      fc.property(deep, (text) => {
        const r = parseClientMessage(text, roomy, NOW)
        if (!r.ok) expectStandardRefusal(r.error, text)
        // an unknown filter key is ignored however deep its value: that REQ is fine
        else expect(r.value.type).toBe('REQ')
      }),
      { ...RUNS, numRuns: 200 },
    )
  })

  it('refuses a frame one byte over maxMessageBytes before parsing it, whatever it contains', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 64 }), (s) => {
        const pad = LIMITS.maxMessageBytes + 1 - utf8Length(s)
        const r = parseClientMessage(s + ' '.repeat(Math.max(0, pad)), LIMITS, NOW)
        expect(r.ok).toBe(false)
        if (!r.ok) expect(r.error).toEqual({ kind: 'notice', message: 'invalid: message too large' })
      }),
      { ...RUNS, numRuns: 500 },
    )
  })
})

/**
 * A deliberately dumb statement of NIP-01's filter rules plus our documented bounds (strfry's
 * fuzz-against-a-dumb-reference): known keys checked one by one, anything else ignored.
 */
function dumbAccepts(json: unknown): boolean {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return false
  const list = (v: unknown, item: (x: unknown) => boolean) => Array.isArray(v) && v.length <= 1000 && v.every(item)
  const isHex64 = (x: unknown) => typeof x === 'string' && /^[0-9a-f]{64}$/.test(x)
  const isTime = (x: unknown) => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0
  for (const [k, v] of Object.entries(json)) {
    if (k === 'ids' || k === 'authors') {
      if (!list(v, isHex64)) return false
    } else if (k === 'kinds') {
      if (!list(v, (x) => typeof x === 'number' && Number.isInteger(x) && x >= 0 && x <= 65_535)) return false
    } else if (k === 'since' || k === 'until' || k === 'limit') {
      if (!isTime(v)) return false
    } else if (/^#[a-zA-Z]$/.test(k)) {
      if (!list(v, (x) => typeof x === 'string')) return false
    }
  }
  return true
}

describe('the filter parser under fuzzing', () => {
  const anyFilter = fc.oneof(nearFilter, fc.anything(), fc.jsonValue({ maxDepth: 3 }))

  it('never throws, agrees with the dumb reference on what it accepts, and refuses with "invalid:"', () => {
    fc.assert(
      fc.property(anyFilter, (v) => {
        const r = parseFilter(v, LIMITS)
        expect(r.ok).toBe(dumbAccepts(v))
        if (r.ok) expectWellFormedFilter(r.value)
        else expect(prefixOf(r.error)).toBe('invalid')
      }),
      RUNS,
    )
  })

  it('keeps what an accepted filter asks for: the same ids, authors, kinds, times and tag values, limit clamped', () => {
    fc.assert(
      fc.property(nearFilter, (v) => {
        const r = parseFilter(v, LIMITS)
        if (!r.ok) return
        const src = v as Record<string, unknown>
        for (const k of ['ids', 'authors', 'kinds', 'since', 'until'] as const) expect(r.value[k]).toEqual(src[k])
        if (src.limit !== undefined) expect(r.value.limit).toBe(Math.min(src.limit as number, LIMITS.maxLimit))
        for (const [k, values] of Object.entries(src)) if (/^#[a-zA-Z]$/.test(k)) expect(r.value.tags?.[k.slice(1)]).toEqual(values)
      }),
      RUNS,
    )
  })

  it('accepts 1 to maxFilters filters per REQ and refuses an empty or longer list with "invalid:"', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(nearFilter, oddValue), { maxLength: LIMITS.maxFilters + 2 }), (list) => {
        const r = parseFilters(list, LIMITS)
        const expected = list.length >= 1 && list.length <= LIMITS.maxFilters && list.every(dumbAccepts)
        expect(r.ok).toBe(expected)
        if (!r.ok) expect(prefixOf(r.error)).toBe('invalid')
        else expect(r.value).toHaveLength(list.length)
      }),
      RUNS,
    )
  })
})
