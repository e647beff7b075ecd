import { schnorr } from '@noble/curves/secp256k1.js'
import { hexToBytes } from '@noble/hashes/utils.js'
import { describe, expect, it } from 'vitest'
import { signAsRelay } from '../../src/infra/relay-key'
import { computeEventId } from '../../src/protocols/nip01/event'
import { toSigningKey } from '../../src/protocols/nip01/sign'

describe('signing as the relay', () => {
  it('makes events whose id and BIP-340 signature check out with noble, for many keys and templates', () => {
    for (let i = 1; i <= 20; i++) {
      const key = toSigningKey(schnorr.utils.randomSecretKey())
      const e = signAsRelay(
        key,
        {
          kind: 25_900 + (i % 2),
          tags: [
            ['e', 'a'.repeat(64)],
            ['n', String(i)],
          ],
          content: `x${i}`,
        },
        1_700_000_000 + i,
      )
      expect(e.pubkey).toBe(key.pubkey)
      expect(e.created_at).toBe(1_700_000_000 + i)
      expect(e.id).toBe(computeEventId(e))
      expect(schnorr.verify(hexToBytes(e.sig), hexToBytes(e.id), hexToBytes(e.pubkey))).toBe(true)
    }
  })

  it("keeps a template's created_at", () => {
    const key = toSigningKey(schnorr.utils.randomSecretKey())
    expect(signAsRelay(key, { kind: 1, content: '', created_at: 42 }, 99).created_at).toBe(42)
  })
})
