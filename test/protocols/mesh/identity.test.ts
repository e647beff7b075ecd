import { schnorr } from '@noble/curves/secp256k1.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex } from '@noble/hashes/utils.js'
import { describe, expect, it } from 'vitest'
import { attestationDigest, attestRuntime, checkAttestation } from '../../../src/protocols/mesh/attestation'
import { checkProof, type MeshIdentity, parseHello, parseHelloProof, proveRuntime, toHello } from '../../../src/protocols/mesh/hello'
import { isPreferredLink } from '../../../src/protocols/mesh/link-choice'
import { buildReadinessRecord, parseReadinessRecord, READINESS_TTL_MS, type ReadinessRecord } from '../../../src/protocols/mesh/readiness'
import { toSigningKey } from '../../../src/protocols/nip01/sign'

const newKey = () => toSigningKey(schnorr.utils.randomSecretKey())
const relay = newKey()
const otherRelay = newKey()
const runtime = newKey()
const NOW = 1_800_000_000_000
const FIELDS = { endpoint: 'ws://10.0.0.7:7778', protocol: 1, capabilities: ['channel'], load: 12, draining: false }

describe('runtime attestation', () => {
  it('signs the digest of "apiary-mesh-ready-v1\\nruntime=<hex>\\nrelay=<hex>" with the relay key', () => {
    const text = `apiary-mesh-ready-v1\nruntime=${runtime.pubkey}\nrelay=${relay.pubkey}`
    expect(bytesToHex(attestationDigest(runtime.pubkey, relay.pubkey))).toBe(bytesToHex(sha256(new TextEncoder().encode(text))))
    const sig = attestRuntime(relay, runtime.pubkey)
    expect(schnorr.verify(Buffer.from(sig, 'hex'), attestationDigest(runtime.pubkey, relay.pubkey), Buffer.from(relay.pubkey, 'hex'))).toBe(
      true,
    )
    expect(checkAttestation(runtime.pubkey, relay.pubkey, sig, relay.pubkey)).toEqual({ ok: true, value: undefined })
  })

  it('refuses an attestation for another runtime', () => {
    const sig = attestRuntime(relay, runtime.pubkey)
    const other = newKey().pubkey
    expect(checkAttestation(other, relay.pubkey, sig, relay.pubkey)).toEqual({ ok: false, error: 'invalid: attestation does not verify' })
  })

  it('refuses a runtime attested by another relay key, even with a valid signature', () => {
    const sig = attestRuntime(otherRelay, runtime.pubkey)
    expect(checkAttestation(runtime.pubkey, otherRelay.pubkey, sig, relay.pubkey)).toEqual({
      ok: false,
      error: 'invalid: attested by another relay key',
    })
  })

  it('refuses malformed input without throwing', () => {
    expect(checkAttestation('zz', relay.pubkey, 'a'.repeat(128), relay.pubkey).ok).toBe(false)
    expect(checkAttestation(runtime.pubkey, relay.pubkey, 'f'.repeat(128), relay.pubkey).ok).toBe(false)
  })
})

describe('readiness records', () => {
  const record = () => buildReadinessRecord(runtime, relay.pubkey, attestRuntime(relay, runtime.pubkey), FIELDS, NOW)
  const parse = (r: unknown, now = NOW) => parseReadinessRecord(JSON.stringify(r), relay.pubkey, now)

  it('round-trips a record signed by its runtime and attested by the anchor relay', () => {
    const r = record()
    expect(r.expiresAtMs - r.issuedAtMs).toBe(READINESS_TTL_MS)
    expect(parse(r)).toEqual({ ok: true, value: r })
  })

  it('expires after three refresh intervals (45 s), not a millisecond later', () => {
    const r = record()
    expect(READINESS_TTL_MS).toBe(45_000)
    expect(parse(r, NOW + 44_999).ok).toBe(true)
    expect(parse(r, NOW + 45_000)).toEqual({ ok: false, error: 'invalid: expired' })
  })

  const tampered: [string, (r: ReadinessRecord) => unknown, string][] = [
    ['another endpoint', (r) => ({ ...r, endpoint: 'ws://evil:1' }), 'invalid: record signature does not verify'],
    ['draining flipped', (r) => ({ ...r, draining: true }), 'invalid: record signature does not verify'],
    ['a longer life', (r) => ({ ...r, expiresAtMs: r.expiresAtMs + 1 }), 'invalid: issued in the future or for too long'],
    [
      'issued too far ahead',
      (r) => ({ ...r, issuedAtMs: NOW + 60_000, expiresAtMs: NOW + 60_000 + READINESS_TTL_MS }),
      'invalid: issued in the future or for too long',
    ],
    ['an unknown field', (r) => ({ ...r, extra: 1 }), 'invalid: malformed record'],
    ['a missing field', ({ sig: _sig, ...r }) => r, 'invalid: malformed record'],
    ['another relay', (r) => ({ ...r, relay: otherRelay.pubkey }), 'invalid: attested by another relay key'],
  ]
  it.each(tampered)('refuses a record with %s', (_name, change, why) => {
    expect(parse(change(record()))).toEqual({ ok: false, error: why })
  })

  it('refuses text that is not JSON', () => {
    expect(parseReadinessRecord('{"v":', relay.pubkey, NOW)).toEqual({ ok: false, error: 'invalid: not JSON' })
  })

  it('refuses a record another runtime signed for this runtime id', () => {
    const forger = newKey()
    const forged = buildReadinessRecord(forger, relay.pubkey, attestRuntime(relay, runtime.pubkey), FIELDS, NOW)
    expect(parse({ ...forged, runtime: runtime.pubkey })).toEqual({ ok: false, error: 'invalid: record signature does not verify' })
  })
})

describe('one link per pair of nodes', () => {
  it('keeps the link dialed by the smaller runtime id, whichever side decides', () => {
    const [small, big] = ['0'.repeat(63) + '1', 'f'.repeat(64)]
    expect(isPreferredLink(small, big)).toBe(true)
    expect(isPreferredLink(big, small)).toBe(false)
    for (let i = 0; i < 50; i++) {
      const [a, b] = [newKey().pubkey, newKey().pubkey]
      // exactly one of the two directions survives
      expect(isPreferredLink(a, b) !== isPreferredLink(b, a)).toBe(true)
    }
    expect(() => isPreferredLink(small, small)).toThrow(RangeError)
  })
})

describe('tunnel hello', () => {
  const identity = (k = newKey()): MeshIdentity => ({
    runtimeKey: k,
    relayPubkey: relay.pubkey,
    attestation: attestRuntime(relay, k.pubkey),
  })
  const [dialer, acceptor] = [identity(), identity()]
  const [d, a] = [dialer.runtimeKey.pubkey, acceptor.runtimeKey.pubkey]
  const nonce = 'ab'.repeat(32)

  it("accepts a proof over our own nonce in the prover's role, and nothing else", () => {
    const proof = proveRuntime(acceptor, 'acceptor', nonce, d)
    expect(checkProof(proof, 'acceptor', nonce, a, d).ok).toBe(true)
    // the same signature is no proof in the other role, for another nonce, or for another verifier
    expect(checkProof(proof, 'dialer', nonce, a, d)).toEqual({ ok: false, error: 'invalid: runtime proof does not verify' })
    expect(checkProof(proof, 'acceptor', 'cd'.repeat(32), a, d).ok).toBe(false)
    expect(checkProof(proof, 'acceptor', nonce, a, newKey().pubkey).ok).toBe(false)
    expect(checkProof(undefined, 'acceptor', nonce, a, d)).toEqual({ ok: false, error: 'invalid: hello without proof' })
  })

  it('refuses a hello from ourselves, from another relay, or with unknown fields', () => {
    const hello = toHello(dialer, nonce, { to: a })
    expect(parseHello(hello, relay.pubkey, a)).toEqual({ ok: true, value: hello })
    expect(parseHello(hello, relay.pubkey, d)).toEqual({ ok: false, error: 'invalid: a node does not link to itself' })
    expect(parseHello(hello, otherRelay.pubkey, a)).toEqual({ ok: false, error: 'invalid: attested by another relay key' })
    expect(parseHello({ ...hello, extra: 1 }, relay.pubkey, a)).toEqual({ ok: false, error: 'invalid: malformed hello' })
    expect(parseHello({ ...hello, v: 1 }, relay.pubkey, a).ok).toBe(false)
    expect(parseHello({ ...hello, v: 3 }, relay.pubkey, a).ok).toBe(false)
    expect(parseHelloProof({ proof: 'x' })).toEqual({ ok: false, error: 'invalid: malformed hello proof' })
  })
})
