import { schnorr } from '@noble/curves/secp256k1.js'
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  type AttestationContext,
  attestationMessage,
  checkOwnerAttestation,
  conditionsAllowKind,
  maxConditionsChars,
  type OwnerAttestation,
  parseConditions,
  parseOwnerAttestation,
  signOwnerAttestation,
} from '../../src/protocols/nip-oa'
import { prefixOf } from '../../src/protocols/reasons'
import type { Result } from '../../src/protocols/result'
import { NOW } from './fixtures'

// The NIP-OA test vector (block/buzz docs/nips/NIP-OA.md): owner secret 1, agent secret 2.
const VECTOR = {
  owner: '79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798',
  agent: 'c6047f9441ed7d6d3045406e95c07cd85c778e4b8cef3ca7abac09b95c709ee5',
  conditions: 'kind=1&created_at<1713957000',
  digest: '08cdecd55af4c28d3801fd69615dcf5cc04fab3bc134b38a840bf157197069a6',
  sig: '8b7df2575caf0a108374f8471722b233c53f9ff827a8b0f91861966c3b9dd5cb2e189eae9f49d72187674c2f5bd244145e10ff86c9f257ffe65a1ee5f108b369',
}

const secretKey = (n: bigint): Uint8Array => hexToBytes(n.toString(16).padStart(64, '0'))
const OWNER_SK = secretKey(0x0a11ce5n)
const OWNER = bytesToHex(schnorr.getPublicKey(OWNER_SK))
const AGENT_SK = secretKey(0xb0bn)
const AGENT = bytesToHex(schnorr.getPublicKey(AGENT_SK))
const STRANGER = bytesToHex(schnorr.getPublicKey(secretKey(0xdeadn)))

const mustParse = (tags: string[][]): OwnerAttestation => {
  const r = parseOwnerAttestation(tags)
  if (!r.ok || r.value === undefined) throw new Error(`expected an attestation, got ${JSON.stringify(r)}`)
  return r.value
}
const attest = (conditions: string, agent = AGENT): OwnerAttestation =>
  mustParse([['challenge', 'c'], signOwnerAttestation(OWNER_SK, agent, conditions)])
const at = (over: Partial<AttestationContext> = {}): AttestationContext => ({ agentPubkey: AGENT, nowSeconds: NOW, ...over })
const prefix = (r: Result<unknown>) => (r.ok ? 'ok' : prefixOf(r.error))

describe('the NIP-OA test vector', () => {
  it('hashes the published preimage to the published digest', () => {
    expect(bytesToHex(attestationMessage(VECTOR.agent, VECTOR.conditions))).toBe(VECTOR.digest)
  })

  it('verifies the published tag for an AUTH before its created_at< bound, and refuses it after', () => {
    const att = mustParse([['auth', VECTOR.owner, VECTOR.conditions, VECTOR.sig]])
    expect(checkOwnerAttestation(att, { agentPubkey: VECTOR.agent, nowSeconds: 1_713_956_400 })).toEqual({
      ok: true,
      value: { owner: VECTOR.owner },
    })
    expect(prefix(checkOwnerAttestation(att, { agentPubkey: VECTOR.agent, nowSeconds: 1_713_957_001 }))).toBe('restricted')
  })

  it('signs with secret 1 as the published owner key', () => {
    const tag = signOwnerAttestation(secretKey(1n), VECTOR.agent, VECTOR.conditions)
    expect(tag.slice(0, 3)).toEqual(['auth', VECTOR.owner, VECTOR.conditions])
    expect(tag[3]).toMatch(/^[0-9a-f]{128}$/)
  })
})

describe('signing and checking an owner attestation', () => {
  it('round-trips: the signed tag parses and checks, naming the owner', () => {
    const r = checkOwnerAttestation(attest(`created_at>${NOW - 60}&created_at<${NOW + 3600}`), at())
    expect(r).toEqual({ ok: true, value: { owner: OWNER } })
  })

  it('answers undefined when the tags carry no auth tag', () => {
    expect(
      parseOwnerAttestation([
        ['relay', 'wss://x'],
        ['challenge', 'c'],
      ]),
    ).toEqual({ ok: true, value: undefined })
  })

  const good = signOwnerAttestation(OWNER_SK, AGENT, 'kind=1')
  const flip = (hex: string, i: number) => hex.slice(0, i) + (hex[i] === '0' ? '1' : '0') + hex.slice(i + 1)
  const tampered: { name: string; tag: string[]; agent?: string }[] = [
    { name: 'presented by another agent key', tag: good, agent: STRANGER },
    { name: 'with its conditions changed', tag: [good[0]!, good[1]!, 'kind=7', good[3]!] },
    { name: 'with its conditions dropped', tag: [good[0]!, good[1]!, '', good[3]!] },
    { name: 'with one signature digit changed', tag: [good[0]!, good[1]!, good[2]!, flip(good[3]!, 70)] },
    { name: 'claiming another owner', tag: [good[0]!, STRANGER, good[2]!, good[3]!] },
    { name: 'naming an owner key that is not on the curve', tag: [good[0]!, 'f'.repeat(64), good[2]!, good[3]!] },
  ]
  it.each(tampered)('refuses a tag $name with "invalid: bad owner attestation signature"', ({ tag, agent }) => {
    const r = checkOwnerAttestation(mustParse([tag]), at({ agentPubkey: agent ?? AGENT }))
    expect(r).toEqual({ ok: false, error: 'invalid: bad owner attestation signature' })
  })

  it('refuses a self-attestation (owner == agent) with "invalid:"', () => {
    const self = mustParse([signOwnerAttestation(AGENT_SK, AGENT, '')])
    expect(prefix(checkOwnerAttestation(self, at()))).toBe('invalid')
  })

  const windows: { name: string; conditions: string; outcome: string; text?: string }[] = [
    { name: 'one second before its created_at< bound', conditions: `created_at<${NOW + 1}`, outcome: 'ok' },
    { name: 'at its created_at< bound', conditions: `created_at<${NOW}`, outcome: 'restricted', text: 'expired' },
    { name: 'after its created_at< bound', conditions: `created_at<${NOW - 100}`, outcome: 'restricted', text: 'expired' },
    { name: 'one second after its created_at> bound', conditions: `created_at>${NOW - 1}`, outcome: 'ok' },
    { name: 'at its created_at> bound', conditions: `created_at>${NOW}`, outcome: 'restricted', text: 'not yet valid' },
    { name: 'before its created_at> bound', conditions: `created_at>${NOW + 100}`, outcome: 'restricted', text: 'not yet valid' },
    { name: 'inside a closed window', conditions: `created_at>${NOW - 10}&created_at<${NOW + 10}`, outcome: 'ok' },
    { name: 'with no conditions at all', conditions: '', outcome: 'ok' },
  ]
  it.each(windows)('answers $outcome for an AUTH $name', ({ conditions, outcome, text }) => {
    const r = checkOwnerAttestation(attest(conditions), at())
    expect(prefix(r)).toBe(outcome)
    if (text !== undefined) expect(!r.ok && r.error).toContain(text)
  })
})

describe('kind= clauses', () => {
  const table: { conditions: string; kind: number; allowed: boolean }[] = [
    { conditions: '', kind: 1, allowed: true },
    { conditions: `created_at<${NOW + 10}`, kind: 30_023, allowed: true },
    { conditions: 'kind=1', kind: 1, allowed: true },
    { conditions: 'kind=1', kind: 7, allowed: false },
    { conditions: `kind=9&created_at<${NOW + 10}`, kind: 9, allowed: true },
    { conditions: 'kind=0', kind: 0, allowed: true },
    { conditions: 'kind=1&kind=7', kind: 1, allowed: false },
    { conditions: 'kind=1&kind=1', kind: 1, allowed: true },
  ]
  it.each(table)('with "$conditions" allow kind $kind: $allowed', ({ conditions, kind, allowed }) => {
    const att = attest(conditions)
    expect(conditionsAllowKind(att, kind)).toBe(allowed)
    expect(prefix(checkOwnerAttestation(att, at({ kind })))).toBe(allowed ? 'ok' : 'restricted')
  })

  it('are left out of the admission check when no kind is given (NIP-AA §Kind Conditions)', () => {
    expect(checkOwnerAttestation(attest('kind=1'), at()).ok).toBe(true)
  })
})

describe('parsing the auth tag', () => {
  const sig = 'a'.repeat(128)
  const ok = (conditions: string) => ['auth', OWNER, conditions, sig]
  const malformed: { name: string; tags: string[][] }[] = [
    { name: 'two auth tags', tags: [ok(''), ok('')] },
    { name: 'a tag of 3 elements', tags: [['auth', OWNER, '']] },
    { name: 'a tag of 5 elements', tags: [[...ok(''), 'extra']] },
    { name: 'a bare auth tag', tags: [['auth']] },
    { name: 'a short owner key', tags: [['auth', OWNER.slice(2), '', sig]] },
    { name: 'an uppercase owner key', tags: [['auth', OWNER.toUpperCase(), '', sig]] },
    { name: 'a non-hex owner key', tags: [['auth', 'z'.repeat(64), '', sig]] },
    { name: 'a short signature', tags: [['auth', OWNER, '', sig.slice(1)]] },
    { name: 'a non-hex signature', tags: [['auth', OWNER, '', 'g'.repeat(128)]] },
    { name: 'an unknown clause', tags: [ok('pubkey=abc')] },
    { name: 'a misspelt operator', tags: [ok('created_at<=5')] },
    { name: 'an uppercase clause name', tags: [ok('KIND=1')] },
    { name: 'a trailing &', tags: [ok('kind=1&')] },
    { name: 'a leading &', tags: [ok('&kind=1')] },
    { name: 'an empty clause (&&)', tags: [ok('kind=1&&kind=1')] },
    { name: 'a leading zero', tags: [ok('kind=01')] },
    { name: 'an empty value', tags: [ok('created_at<')] },
    { name: 'a negative value', tags: [ok('created_at>-1')] },
    { name: 'a kind over 65535', tags: [ok('kind=65536')] },
    { name: 'a timestamp over 2^32-1', tags: [ok('created_at<4294967296')] },
    { name: 'whitespace', tags: [ok('kind=1 & created_at<5')] },
    { name: 'non-ASCII', tags: [ok('kind=１')] },
    { name: 'conditions one past the length limit', tags: [ok(conditionsOfLength(maxConditionsChars + 1))] },
  ]
  it.each(malformed)('refuses $name with "invalid:"', ({ tags }) => {
    expect(prefix(parseOwnerAttestation(tags))).toBe('invalid')
  })

  it('accepts conditions exactly at the length limit and signs over them verbatim', () => {
    const conditions = conditionsOfLength(maxConditionsChars)
    expect(conditions).toHaveLength(maxConditionsChars)
    const att = attest(conditions)
    expect(att.conditions).toBe(conditions)
    expect(checkOwnerAttestation(att, at({ kind: 1 })).ok).toBe(true)
  })

  it('keeps the range ends: kind=65535 and created_at<4294967295', () => {
    expect(parseConditions('kind=65535&created_at<4294967295&created_at>0')).toEqual({
      ok: true,
      value: [
        { type: 'kind', value: 65_535 },
        { type: 'created_at<', value: 4_294_967_295 },
        { type: 'created_at>', value: 0 },
      ],
    })
  })
})

/** `kind=1&…&created_at>1000…`: well-formed clauses that hold at NOW for kind 1, exactly `n` characters (n ≥ 15). */
function conditionsOfLength(n: number): string {
  const repeats = Math.ceil((n - 21) / 7) // leaves 15..21 characters for a created_at> clause of 4..10 digits
  const s = 'kind=1&'.repeat(repeats) + 'created_at>' + '1'.padEnd(n - 7 * repeats - 11, '0')
  if (s.length !== n) throw new Error(`could not build conditions of ${n} characters`)
  return s
}

describe('sign, parse and check, for any keys and conditions', () => {
  const CURVE_ORDER = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
  const key = fc.bigInt({ min: 1n, max: CURVE_ORDER - 1n }).map(secretKey)
  const clausesHolding = (nowSeconds: number, kind: number) =>
    fc.array(
      fc.oneof(
        fc.constant(`kind=${kind}`),
        fc.integer({ min: nowSeconds + 1, max: 4_294_967_295 }).map((t) => `created_at<${t}`),
        fc.integer({ min: 0, max: nowSeconds - 1 }).map((t) => `created_at>${t}`),
      ),
      { maxLength: 6 },
    )
  const scenario = fc
    .record({
      ownerSk: key,
      agentSk: key,
      nowSeconds: fc.integer({ min: 1, max: 4_294_967_294 }),
      kind: fc.integer({ min: 0, max: 65_535 }),
    })
    .chain((s) => clausesHolding(s.nowSeconds, s.kind).map((clauses) => ({ ...s, conditions: clauses.join('&') })))

  it('accepts every attestation an owner signs for a different agent, under conditions that hold', () => {
    fc.assert(
      fc.property(scenario, ({ ownerSk, agentSk, nowSeconds, kind, conditions }) => {
        const owner = bytesToHex(schnorr.getPublicKey(ownerSk))
        const agent = bytesToHex(schnorr.getPublicKey(agentSk))
        fc.pre(owner !== agent)
        const parsed = parseOwnerAttestation([['p', owner], signOwnerAttestation(ownerSk, agent, conditions)])
        if (!parsed.ok || parsed.value === undefined) return false
        const r = checkOwnerAttestation(parsed.value, { agentPubkey: agent, nowSeconds, kind })
        return r.ok && r.value.owner === owner && parsed.value.conditions === conditions
      }),
      { numRuns: 100 },
    )
  })
})
