import { schnorr } from '@noble/curves/secp256k1.js'
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js'
import fc from 'fast-check'
import { finalizeEvent, generateSecretKey, getEventHash, getPublicKey, verifyEvent } from 'nostr-tools/pure'
import { describe, expect, it } from 'vitest'
import { verifyBip340 } from '../../../src/protocols/bip340'
import {
  computeEventId,
  type NostrEvent,
  serializeEvent,
  toRawEvent,
  utf8Length,
  verifyEventNoble,
  verifyEventWasm,
} from '../../../src/protocols/nip01/event'
import { shapeEvent } from '../fixtures'
import { BIP340_VECTORS } from './bip340-vectors'

/** schnorr.verify as the relay uses it: any throw (bad hex, bad lengths) counts as a failed verification. */
function verifyHex(sigHex: string, msgHex: string, pubHex: string): boolean {
  try {
    return schnorr.verify(hexToBytes(sigHex), hexToBytes(msgHex), hexToBytes(pubHex))
  } catch {
    return false
  }
}

/** A plain copy: nostr-tools caches a verified flag on the object under a symbol, which spread would copy. */
const plain = (e: NostrEvent): NostrEvent => JSON.parse(JSON.stringify(e))

describe('BIP-340 Schnorr, the primitive under verifyEventNoble', () => {
  it.each(BIP340_VECTORS)('vector $index verifies as $valid ($comment)', (v) => {
    expect(verifyHex(v.signature, v.message, v.publicKey)).toBe(v.valid)
  })

  // libsecp256k1's binding takes 32-byte messages only (an event id); vectors 15-18 sign other lengths
  it.each(BIP340_VECTORS.filter((v) => v.message.length === 64))(
    'vector $index verifies as $valid with libsecp256k1 too (verifyBip340)',
    (v) => {
      expect(verifyBip340(hexToBytes(v.signature), hexToBytes(v.message), hexToBytes(v.publicKey))).toBe(v.valid)
    },
  )

  it.each(BIP340_VECTORS.filter((v) => v.secretKey !== ''))('vector $index signs to the published signature', (v) => {
    expect(bytesToHex(schnorr.getPublicKey(hexToBytes(v.secretKey)))).toBe(v.publicKey)
    const sig = schnorr.sign(hexToBytes(v.message), hexToBytes(v.secretKey), hexToBytes(v.auxRand))
    expect(bytesToHex(sig)).toBe(v.signature)
  })
})

describe('serializing an event for its id', () => {
  const tricky = [
    { name: 'plain text', content: 'hello' },
    { name: 'NIP-01 escapes', content: 'line\nquote"back\\slash\rcr\ttab\bbs\fff' },
    { name: 'other control characters', content: '\u0000\u0001\u001f\u007f' },
    { name: 'non-ASCII verbatim', content: 'héllo wörld 日本 🐝' },
    { name: 'a lone surrogate', content: 'a\ud800b' },
    { name: 'slash and html', content: '</script>&<>' },
  ]

  it.each(tricky)('matches nostr-tools for $name', ({ content }) => {
    const e = shapeEvent({
      content,
      tags: [
        ['t', content],
        ['e', 'x', ''],
      ],
    })
    expect(computeEventId(e)).toBe(getEventHash(e))
  })

  it('is the compact array [0,pubkey,created_at,kind,tags,content]', () => {
    const e = shapeEvent({ content: 'a\nb', tags: [['p', 'x']] })
    expect(serializeEvent(e)).toBe(`[0,"${e.pubkey}",${e.created_at},1,[["p","x"]],"a\\nb"]`)
  })

  it('gives the same id as nostr-tools for random events', () => {
    fc.assert(
      fc.property(
        fc.record({
          kind: fc.integer({ min: 0, max: 65_535 }),
          created_at: fc.integer({ min: 0, max: 2 ** 32 }),
          content: fc.string({ unit: 'binary' }),
          tags: fc.array(fc.array(fc.string({ unit: 'binary' }), { minLength: 1, maxLength: 4 }), { maxLength: 4 }),
        }),
        (t) => {
          const e = shapeEvent(t)
          expect(computeEventId(e)).toBe(getEventHash(e))
        },
      ),
      { numRuns: 300 },
    )
  })
})

describe.each([
  ['the reference verifier (verifyEventNoble)', verifyEventNoble],
  ["libsecp256k1's, as clients check inbound events (verifyEventWasm)", verifyEventWasm],
])('%s', (_name, verify) => {
  const sk = generateSecretKey()
  const signed = plain(finalizeEvent({ kind: 1, created_at: 1_700_000_000, tags: [['t', 'bee']], content: 'buzz' }, sk))
  const other = getPublicKey(generateSecretKey())

  const cases: { name: string; event: NostrEvent; verdict: 'ok' | 'bad-id' | 'bad-sig' }[] = [
    { name: 'a correctly signed event', event: signed, verdict: 'ok' },
    { name: 'changed content', event: { ...signed, content: 'BUZZ' }, verdict: 'bad-id' },
    { name: 'an id that is not the hash', event: { ...signed, id: 'f'.repeat(64) }, verdict: 'bad-id' },
    { name: 'a flipped signature byte', event: { ...signed, sig: flipFirstHex(signed.sig) }, verdict: 'bad-sig' },
    { name: 'another pubkey with a matching id', event: reId({ ...signed, pubkey: other }), verdict: 'bad-sig' },
    { name: 'a signature that is not hex', event: { ...signed, sig: 'zz'.repeat(64) }, verdict: 'bad-sig' },
    { name: 'a short signature', event: { ...signed, sig: signed.sig.slice(0, 10) }, verdict: 'bad-sig' },
    { name: 'a pubkey off the curve', event: reId({ ...signed, pubkey: 'f'.repeat(64) }), verdict: 'bad-sig' },
  ]

  it.each(cases)('answers $verdict for $name', ({ event, verdict }) => {
    expect(verify(event)).toBe(verdict)
  })

  it('never throws on garbage shapes', () => {
    const garbage = [{}, { id: 1 }, { tags: 'x' }, shapeEvent({ sig: '' }), { ...signed, tags: null }]
    for (const g of garbage) expect(['ok', 'bad-id', 'bad-sig']).toContain(verify(g as NostrEvent))
  })

  it('agrees with nostr-tools verifyEvent on random signed and tampered events', () => {
    const keys = [generateSecretKey(), generateSecretKey()]
    fc.assert(
      fc.property(
        fc.nat({ max: 1 }),
        fc.string({ unit: 'binary', maxLength: 40 }),
        fc.integer({ min: 0, max: 65_535 }),
        fc.constantFrom('none', 'content', 'sig', 'pubkey'),
        (k, content, kind, tamper) => {
          const e = plain(finalizeEvent({ kind, created_at: 1_700_000_000, tags: [], content }, keys[k]!))
          if (tamper === 'content') e.content += '!'
          if (tamper === 'sig') e.sig = flipFirstHex(e.sig)
          if (tamper === 'pubkey') Object.assign(e, reId({ ...e, pubkey: getPublicKey(keys[1 - k]!) }))
          expect(verify(e) === 'ok').toBe(verifyEvent(plain(e)))
          expect(verify(e)).toBe(tamper === 'none' ? 'ok' : tamper === 'content' ? 'bad-id' : 'bad-sig')
        },
      ),
      { numRuns: 60 },
    )
  })
})

describe('verifyEventWasm, beyond the reference', () => {
  it('holds ids, pubkeys and signatures to lowercase hex (NIP-01), which noble would decode either way', () => {
    const signed = plain(finalizeEvent({ kind: 1, created_at: 1_700_000_000, tags: [], content: 'x' }, generateSecretKey()))
    expect(verifyEventNoble({ ...signed, sig: signed.sig.toUpperCase() })).toBe('ok')
    expect(verifyEventWasm({ ...signed, sig: signed.sig.toUpperCase() })).toBe('bad-sig')
    expect(verifyEventWasm({ ...signed, id: signed.id.toUpperCase() })).toBe('bad-id')
  })
})

describe('the stored raw form (toRawEvent)', () => {
  it('keeps exactly the seven NIP-01 fields in a fixed order and drops extras', () => {
    const withExtra = { ...shapeEvent(), extra: 'x', seen_on: ['r'] } as NostrEvent
    expect(Object.keys(JSON.parse(toRawEvent(withExtra)))).toEqual(['id', 'pubkey', 'created_at', 'kind', 'tags', 'content', 'sig'])
  })
})

describe('measuring UTF-8 length without encoding', () => {
  const table = [
    { s: '', bytes: 0 },
    { s: 'abc', bytes: 3 },
    { s: 'é', bytes: 2 },
    { s: '日', bytes: 3 },
    { s: '🐝', bytes: 4 },
    { s: '\ud800', bytes: 3 },
    { s: '\udc00\ud800', bytes: 6 },
  ]
  it.each(table)('counts $bytes bytes for %j', ({ s, bytes }) => {
    expect(utf8Length(s)).toBe(bytes)
  })

  it('agrees with TextEncoder on any UTF-16 string, lone surrogates included', () => {
    const enc = new TextEncoder()
    const anyUnits = fc.array(fc.integer({ min: 0, max: 0xffff })).map((cs) => String.fromCharCode(...cs))
    fc.assert(
      fc.property(fc.oneof(anyUnits, fc.string({ unit: 'binary' })), (s) => {
        expect(utf8Length(s)).toBe(enc.encode(s).length)
      }),
    )
  })
})

function flipFirstHex(hex: string): string {
  return (hex[0] === '0' ? '1' : '0') + hex.slice(1)
}

function reId(e: NostrEvent): NostrEvent {
  return { ...e, id: computeEventId(e) }
}
