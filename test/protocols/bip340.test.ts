import { schnorr } from '@noble/curves/secp256k1.js'
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { bip340KeyOf, signBip340, toBip340Key } from '../../src/protocols/bip340'
import { signTemplate, toSigningKey } from '../../src/protocols/nip01/sign'

const N = schnorr.Point.Fn.ORDER
const secretKeyArb = fc.uint8Array({ minLength: 32, maxLength: 32 }).filter((b) => {
  const d = BigInt(`0x${bytesToHex(b)}`)
  return d > 0n && d < N
})
const bytes32 = fc.uint8Array({ minLength: 32, maxLength: 32 })

describe('BIP-340 signing', () => {
  it("gives noble's signature byte for byte for the same key, message and aux bytes", () => {
    fc.assert(
      fc.property(secretKeyArb, bytes32, bytes32, (sk, message, aux) => {
        const ours = signBip340(toBip340Key(sk), message, aux)
        expect(bytesToHex(ours)).toBe(bytesToHex(schnorr.sign(message, sk, aux)))
      }),
      { numRuns: 60 },
    )
  })

  it('signs with fresh aux bytes by default, and every signature verifies under the derived public key', () => {
    fc.assert(
      fc.property(secretKeyArb, bytes32, (sk, message) => {
        const key = toBip340Key(sk)
        expect(bytesToHex(key.publicKey)).toBe(bytesToHex(schnorr.getPublicKey(sk)))
        const a = signBip340(key, message)
        const b = signBip340(key, message)
        expect(bytesToHex(a)).not.toBe(bytesToHex(b))
        expect(schnorr.verify(a, message, key.publicKey)).toBe(true)
        expect(schnorr.verify(b, message, key.publicKey)).toBe(true)
      }),
      { numRuns: 30 },
    )
  })

  it('matches the BIP-340 test vector 0 (secret key 3, aux all zero)', () => {
    const sk = hexToBytes(`${'0'.repeat(63)}3`)
    const sig = signBip340(toBip340Key(sk), new Uint8Array(32), new Uint8Array(32))
    expect(bytesToHex(toBip340Key(sk).publicKey).toUpperCase()).toBe('F9308A019258C31049344F85F89D5229B531C845836F99B08601F113BCE036F9')
    expect(bytesToHex(sig).toUpperCase()).toBe(
      'E907831F80848D1069A5371B402410364BDF1C5F8307B0084C55F1CE2DCA821525F66A4A85EA8B71E482A74F382D2CE5EBEEE8FDB2172F477DF4900D310536C0',
    )
  })

  it('refuses a secret key of 0, of n or more, or not 32 bytes long', () => {
    expect(() => toBip340Key(new Uint8Array(32))).toThrow()
    expect(() => toBip340Key(hexToBytes(N.toString(16).padStart(64, '0')))).toThrow()
    expect(() => toBip340Key(new Uint8Array(31).fill(1))).toThrow()
  })

  it('derives a key once per secret key, and again when that key was changed in place', () => {
    const sk = schnorr.utils.randomSecretKey()
    const first = bip340KeyOf(sk)
    expect(bip340KeyOf(sk)).toBe(first)
    sk.set(schnorr.utils.randomSecretKey())
    const second = bip340KeyOf(sk)
    expect(bytesToHex(second.publicKey)).toBe(bytesToHex(schnorr.getPublicKey(sk)))
    expect(bytesToHex(second.publicKey)).not.toBe(bytesToHex(first.publicKey))
  })

  it('signs NIP-01 events that verify under their pubkey', () => {
    const key = toSigningKey(schnorr.utils.randomSecretKey())
    const event = signTemplate(key, { kind: 1, content: 'hello', tags: [['t', 'x']] }, 1_700_000_000)
    expect(schnorr.verify(hexToBytes(event.sig), hexToBytes(event.id), hexToBytes(event.pubkey))).toBe(true)
  })
})
