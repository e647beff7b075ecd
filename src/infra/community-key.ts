// The key that signs what the relay publishes for one community (its NIP-29 group state, its answers to joins
// and leaves, its agent departures, a host's relay.publish) and that its hosts serve as NIP-11 `self`: a
// hosting operator's communities must not be linkable through one shared key. Derived from the relay key,
// which every node of a cluster shares (docs/cluster.md), so every node signs for a community with the same
// key and there is nothing new to store or hand out; a config community may name a key of its own instead.
import { mapHashToField } from '@noble/curves/abstract/modular.js'
import { secp256k1 } from '@noble/curves/secp256k1.js'
import { hkdf } from '@noble/hashes/hkdf.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js'
import { type SigningKey, toSigningKey } from '../protocols/nip01/sign.js'

// HKDF's info names the use, so no other key derived from the relay key (the bus MAC's) ever equals one of these
const HKDF_INFO_PREFIX = 'apiary community key v1\0'
// FIPS 186-5 A.4.1: 16 bytes beyond the order's 32 make reducing the output modulo n unbiased
const DERIVED_BYTES = 48

/** Community `id`'s key under the relay secret key: HKDF-SHA256, reduced to a valid secp256k1 scalar (1..n-1). */
export function deriveCommunityKey(relaySecretKey: Uint8Array, id: string): SigningKey {
  const okm = hkdf(sha256, relaySecretKey, undefined, utf8ToBytes(HKDF_INFO_PREFIX + id), DERIVED_BYTES)
  return toSigningKey(mapHashToField(okm, secp256k1.Point.CURVE().n))
}

export interface CommunityKeys {
  /** the key that signs for community `id` */
  of(id: string): SigningKey
  /** keys that may have signed for `id` before: the relay key, and the derived key when a configured one replaced it */
  formerOf(id: string): string[]
}

/**
 * Each community's key: the configured one (`communities[].secretKey`), else derived from the relay key.
 * Remembered per id, as NIP-11 asks for it on every request; the ids are the communities the store lists.
 */
export function createCommunityKeys(relayKey: SigningKey, configured: readonly { id: string; secretKey?: string }[] = []): CommunityKeys {
  const explicit = new Map(configured.filter((c) => c.secretKey).map((c) => [c.id, c.secretKey as string]))
  const keys = new Map<string, SigningKey>()
  return {
    of(id) {
      let key = keys.get(id)
      if (!key) {
        const hex = explicit.get(id)
        key = hex ? toSigningKey(hexToBytes(hex)) : deriveCommunityKey(relayKey.secretKey, id)
        keys.set(id, key)
      }
      return key
    },
    formerOf(id) {
      const current = this.of(id).pubkey
      const former = [relayKey.pubkey, ...(explicit.has(id) ? [deriveCommunityKey(relayKey.secretKey, id).pubkey] : [])]
      return former.filter((pubkey) => pubkey !== current)
    },
  }
}
