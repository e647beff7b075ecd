import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { prefixOf } from '../../src/protocols/reasons'
import { makeKeys } from '../support/events'
import { metric } from '../support/metrics'
import { client, fresh, idsOf, publish, reqAnswer, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'
import type { Frame, TestClient } from '../support/ws-client'

/**
 * One connection, a thousand malformed frames of every kind a broken or hostile client sends. architecture §10:
 * a malformed frame gets a NOTICE and the connection stays up; a malformed EVENT/AUTH gets OK false and a
 * refused REQ/COUNT gets CLOSED, each with a NIP-01 prefix. The relay closes only where the WebSocket layer
 * requires it (RFC 6455): a frame over maxPayload (1009) and a text frame that is not UTF-8 (1007).
 * test/e2e/bad-input.test.ts has one example per shape; this is the flood, mixed, with the accounting.
 */

type Answer = 'NOTICE' | 'OK' | 'CLOSED'
interface Malformed {
  what: string
  data: string | Buffer
  binary?: boolean
  answer: Answer
  /** the id the answer must name: an OK's event id, a CLOSED's subscription id */
  names?: string
}

/** mulberry32: the flood is the same on every run */
function prng(seed: number) {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  return { next, int: (n: number) => Math.floor(next() * n), pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]! }
}

const hexId = (i: number) => createHash('sha256').update(`frame ${i}`).digest('hex')
const subOf = (i: number) => `bad-${i}`
const nest = (depth: number, inner: string) => '['.repeat(depth) + inner + ']'.repeat(depth)

/** frame i of the flood: its bytes and the answer it must get */
function malformed(i: number, r: ReturnType<typeof prng>, validEvent: object): Malformed {
  const id = hexId(i)
  const sub = subOf(i)
  const ev = { ...validEvent, id }
  const garbage = () => Array.from({ length: 1 + r.int(60) }, () => String.fromCharCode(1 + r.int(0xd7ff))).join('')
  const cases: (() => Malformed)[] = [
    // not JSON at all (a leading '}' can start no JSON text)
    () => ({ what: 'garbage text', data: `}${garbage()}`, answer: 'NOTICE' }),
    () => {
      const text = JSON.stringify(
        r.pick([
          ['REQ', sub, { kinds: [1] }],
          ['EVENT', ev],
          ['CLOSE', sub],
          ['COUNT', sub, {}],
        ]),
      )
      return { what: 'a valid frame cut short', data: text.slice(0, 1 + r.int(text.length - 1)), answer: 'NOTICE' }
    },
    () => ({ what: 'not an array', data: r.pick(['{"REQ":"x"}', '"EVENT"', '42', 'null', 'true', '{}', '1e999']), answer: 'NOTICE' }),
    () => ({ what: 'an empty array', data: '[]', answer: 'NOTICE' }),
    () => ({
      what: 'an unknown verb',
      data: JSON.stringify([r.pick(['PUBLISH', 'event', 'NOTICE', 'OK', 'EOSE', '', 42, null, ['REQ']]), sub]),
      answer: 'NOTICE',
    }),
    () => ({
      what: 'EVENT with the wrong arity',
      data: JSON.stringify(r.pick([['EVENT'], ['EVENT', ev, ev], ['EVENT', sub, ev]])),
      answer: 'NOTICE',
    }),
    () => ({
      what: 'EVENT that is not an event',
      data: JSON.stringify(['EVENT', r.pick([null, 1, 'x', [], [ev]])]),
      answer: 'OK',
      names: '',
    }),
    () => {
      const broken = r.pick([
        { kind: 1e308 },
        { kind: -1 },
        { kind: 65_536 },
        { kind: 1.5 },
        { created_at: 2 ** 53 },
        { created_at: -1 },
        { created_at: '1700000000' },
        { tags: 'none' },
        { tags: [[]] },
        { tags: [['p', 7]] },
        { content: null },
        { pubkey: 'ABC' },
        { sig: 'zz' },
      ])
      return { what: 'EVENT with a malformed field', data: JSON.stringify(['EVENT', { ...ev, ...broken }]), answer: 'OK', names: id }
    },
    // JSON.parse turns 1e400 into Infinity: no integer check may take it for one
    () => ({
      what: 'EVENT with numbers beyond float range',
      data: `["EVENT",${JSON.stringify(ev).replace(/"created_at":\d+/, '"created_at":1e400')}]`,
      answer: 'OK',
      names: id,
    }),
    () => ({
      what: 'EVENT with deeply nested tags',
      data: JSON.stringify(['EVENT', { ...ev, tags: [] }]).replace('"tags":[]', `"tags":${nest(2_000 + r.int(20_000), '"x"')}`),
      answer: 'OK',
      names: id,
    }),
    () => ({ what: 'REQ without a subscription id', data: r.pick(['["REQ"]', '["COUNT"]']), answer: 'NOTICE' }),
    () => {
      const bad = r.pick([7, null, '', { id: sub }, `${sub}-${'x'.repeat(80)}`])
      return {
        what: 'REQ with a bad subscription id',
        data: JSON.stringify(['REQ', bad, {}]),
        answer: 'CLOSED',
        names: typeof bad === 'string' ? bad : '',
      }
    },
    () => {
      const filter = r.pick([
        '"x"',
        '[]',
        '{"kinds":["1"]}',
        '{"kinds":[1.5]}',
        '{"kinds":[70000]}',
        '{"authors":["abc"]}',
        '{"ids":"00"}',
        '{"since":-1}',
        '{"until":1e400}',
        '{"limit":1e999}',
        '{"limit":-5}',
        '{"#e":[1]}',
        `{"#t":${nest(1_000 + r.int(10_000), '"x"')}}`,
      ])
      return {
        what: 'REQ with a malformed filter',
        data: `[${JSON.stringify(r.pick(['REQ', 'COUNT']))},${JSON.stringify(sub)},${filter}]`,
        answer: 'CLOSED',
        names: sub,
      }
    },
    () => ({ what: 'REQ with no filter', data: JSON.stringify(['REQ', sub]), answer: 'CLOSED', names: sub }),
    () => ({
      what: 'REQ with more than maxFilters filters',
      data: JSON.stringify(['REQ', sub, ...Array(11).fill({})]),
      answer: 'CLOSED',
      names: sub,
    }),
    () => ({
      what: 'CLOSE malformed',
      data: JSON.stringify(r.pick([['CLOSE'], ['CLOSE', 7], ['CLOSE', ''], ['CLOSE', sub, sub]])),
      answer: 'NOTICE',
    }),
    () => ({ what: 'AUTH with the wrong arity', data: JSON.stringify(r.pick([['AUTH'], ['AUTH', ev, ev]])), answer: 'NOTICE' }),
    () => ({ what: 'AUTH with a malformed event', data: JSON.stringify(['AUTH', { ...ev, kind: 'auth' }]), answer: 'OK', names: id }),
    () => ({ what: 'deeply nested arrays', data: nest(1_000 + r.int(60_000), '1'), answer: 'NOTICE' }),
    () => ({
      what: 'deeply nested objects',
      data: '{"a":'.repeat(1_000 + r.int(20_000)) + '1' + '}'.repeat(1_000 + r.int(20_000)),
      answer: 'NOTICE',
    }),
    // NIP-01 speaks text; the relay reads a binary frame as UTF-8 (bytes that are not become U+FFFD)
    () => ({
      what: 'binary bytes',
      data: Buffer.from(Array.from({ length: 1 + r.int(200) }, () => r.int(256))),
      binary: true,
      answer: 'NOTICE',
    }),
    () => ({
      what: 'a binary frame cut short',
      data: Buffer.from(JSON.stringify(['REQ', sub, {}]).slice(0, -1)),
      binary: true,
      answer: 'NOTICE',
    }),
    () => ({
      what: 'a binary REQ with a bad filter',
      data: Buffer.from(JSON.stringify(['REQ', sub, { limit: 'all' }])),
      binary: true,
      answer: 'CLOSED',
      names: sub,
    }),
  ]
  return r.pick(cases)()
}

const isAnswer = (f: Frame) => f[0] === 'NOTICE' || f[0] === 'OK' || f[0] === 'CLOSED'
const messageOf = (f: Frame) => String(f[0] === 'NOTICE' ? f[1] : f[0] === 'OK' ? f[3] : f[2])

/** resolves once `c` has received `n` frames matching `pred` (counting those already there) */
function received(c: TestClient, pred: (f: Frame) => boolean, n: number, timeoutMs = 15_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => c.frames.filter(pred).length >= n
    if (check()) return resolve()
    const timer = setTimeout(() => {
      c.ws.off('message', onMessage)
      reject(new Error(`got ${c.frames.filter(pred).length} of ${n} answers`))
    }, timeoutMs)
    // after the client's own handler: listeners run in the order they were added
    const onMessage = () => {
      if (!check()) return
      clearTimeout(timer)
      c.ws.off('message', onMessage)
      resolve()
    }
    c.ws.on('message', onMessage)
  })
}

describe('a connection flooded with malformed frames', () => {
  const relays = useRelays()

  it('answers each of 1,000 mixed malformed frames once, with the frame type NIP-01 asks for and a standard prefix, stays up and accepts a valid EVENT after', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const valid = fresh(keys)
    const rand = prng(0x0bad_f00d)
    const flood = Array.from({ length: 1_000 }, (_, i) => malformed(i, rand, valid.event))
    for (const m of flood) {
      expect(Buffer.byteLength(m.data)).toBeLessThanOrEqual(r.relay.config.limits.maxMessageBytes)
      c.sendRaw(m.data, m.binary ?? false)
    }
    await received(c, isAnswer, flood.length)
    // one more round trip: nothing answers twice, nothing arrives late
    expect((await reqAnswer(c, 'alive', [{ ids: [valid.event.id] }]))[0]).toBe('EOSE')
    const answers = c.frames.filter(isAnswer)
    expect(answers).toHaveLength(flood.length)

    const expected = (a: Answer) => flood.filter((m) => m.answer === a)
    expect(answers.filter((f) => f[0] === 'NOTICE')).toHaveLength(expected('NOTICE').length)
    expect(answers.filter((f) => f[0] === 'OK')).toHaveLength(expected('OK').length)
    expect(answers.filter((f) => f[0] === 'CLOSED')).toHaveLength(expected('CLOSED').length)
    // every answer is a refusal with a NIP-01 prefix; the client's input is what was wrong
    for (const f of answers) {
      if (f[0] === 'OK') expect(f[2]).toBe(false)
      const p = prefixOf(messageOf(f))
      expect(p === 'invalid' || p === 'unsupported', messageOf(f)).toBe(true)
    }
    // each OK and CLOSED names the event or subscription the client sent (or '' when it had none)
    const named = (a: Answer, name: string) => answers.filter((f) => f[0] === a && f[1] === name).length
    for (const m of flood) {
      if (m.names === undefined) continue
      const want = flood.filter((x) => x.answer === m.answer && x.names === m.names).length
      expect(named(m.answer, m.names), `${m.what}: ${m.answer} for "${m.names.slice(0, 20)}"`).toBe(want)
    }
    expect(new Set(flood.map((m) => m.what)).size).toBeGreaterThanOrEqual(20)

    expect(await metric(r, 'apiary_notices_total')).toBe(expected('NOTICE').length)
    expect(await metric(r, 'apiary_events_rejected_total')).toBe(expected('OK').length)
    expect(c.ws.readyState).toBe(c.ws.OPEN)
    expect((await publish(c, valid)).accepted).toBe(true)
    expect(idsOf(await reqEvents(c, [{ ids: [valid.event.id] }]))).toEqual([valid.event.id])
  })

  it('serves a frame of exactly maxMessageBytes and closes the socket with 1009 at one byte more (ws maxPayload)', async () => {
    const r = await relays.start({ limits: { maxMessageBytes: 8_192 } })
    const c = await client(r)
    // a valid REQ padded with a tag value to the exact size
    const req = (bytes: number, subId: string) => {
      const shell = JSON.stringify(['REQ', subId, { '#t': [''] }])
      return JSON.stringify(['REQ', subId, { '#t': ['x'.repeat(bytes - shell.length)] }])
    }
    const atLimit = req(8_192, 'at-limit')
    expect(Buffer.byteLength(atLimit)).toBe(8_192)
    c.sendRaw(atLimit)
    expect((await c.next((f) => f[1] === 'at-limit'))[0]).toBe('EOSE')
    const over = req(8_193, 'over')
    expect(Buffer.byteLength(over)).toBe(8_193)
    c.sendRaw(over)
    expect((await c.closed).code).toBe(1009)
    expect(c.frames.some((f) => f[1] === 'over')).toBe(false)
    // the relay goes on serving everyone else
    expect((await reqAnswer(await client(r), 'after', [{ kinds: [1] }]))[0]).toBe('EOSE')
  })

  it('reads a binary frame as UTF-8: garbage bytes get a NOTICE, a valid EVENT is accepted', async () => {
    const r = await relays.start()
    const c = await client(r)
    c.sendRaw(Buffer.from([0xff, 0xfe, 0x00, 0xc3, 0x28, 0x5b]), true)
    expect(prefixOf(String((await c.next((f) => f[0] === 'NOTICE'))[1]))).toBe('invalid')
    const e = fresh(makeKeys())
    c.sendRaw(Buffer.from(`["EVENT",${e.raw}]`), true)
    expect((await c.ok(e.event.id))[2]).toBe(true)
    expect(c.ws.readyState).toBe(c.ws.OPEN)
  })

  it('closes with 1007 a text frame that is not valid UTF-8, as RFC 6455 requires, and keeps serving other connections', async () => {
    const r = await relays.start()
    const c = await client(r)
    c.sendRaw(Buffer.from([0x5b, 0x22, 0xff, 0xfe, 0x22, 0x5d]), false)
    expect((await c.closed).code).toBe(1007)
    expect(await metric(r, 'apiary_notices_total')).toBe(0)
    expect((await reqAnswer(await client(r), 'after', [{ kinds: [1] }]))[0]).toBe('EOSE')
  })
})
