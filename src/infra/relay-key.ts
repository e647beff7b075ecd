import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { schnorr } from '@noble/curves/secp256k1.js'
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js'
import { computeEventId, type NostrEvent } from '../protocols/nip01/event.js'
import { type EventTemplate, type SigningKey, signTemplate, toSigningKey } from '../protocols/nip01/sign.js'

export type RelayKey = SigningKey

/** The relay's own keypair: configured, or generated once into <dataDir>/relay.key (mode 0600) and reused. */
export function loadRelayKey(dataDir: string, configuredHex: string): RelayKey {
  let hex = configuredHex
  if (!hex) {
    const file = join(dataDir, 'relay.key')
    if (existsSync(file)) hex = readFileSync(file, 'utf8').trim()
    else {
      mkdirSync(dataDir, { recursive: true })
      hex = bytesToHex(schnorr.utils.randomSecretKey())
      writeFileSync(file, `${hex}\n`, { mode: 0o600 })
    }
  }
  return toSigningKey(hexToBytes(hex))
}

interface NativeSchnorr {
  sign(message: Buffer, secretKey: Buffer, auxRand: Buffer): Buffer
}

let native: NativeSchnorr | null | undefined

/**
 * BIP-340 signing on libsecp256k1's native addon (the optional dependency bcrypto, which the verifier uses too)
 * when it loaded at install; null where it did not. The relay signs on the event loop (a job's assignment, an
 * agent's departure, channel state), and the addon signs several times faster than the WASM build.
 */
function nativeSchnorr(): NativeSchnorr | null {
  if (native !== undefined) return native
  try {
    const schnorr = createRequire(import.meta.url)('bcrypto/lib/schnorr') as NativeSchnorr & { native?: number }
    // 2: bcrypto runs on its compiled addon; 0 would be its JavaScript fallback, slower than the WASM build
    native = schnorr.native === 2 ? schnorr : null
  } catch {
    native = null
  }
  return native
}

/** Sign an event as the relay: with its own key (control payloads) or a community's (community-key.ts). */
export function signAsRelay(key: RelayKey, t: EventTemplate, nowSeconds: number): NostrEvent {
  const schnorr = nativeSchnorr()
  if (schnorr === null) return signTemplate(key, t, nowSeconds)
  const unsigned = { pubkey: key.pubkey, created_at: t.created_at ?? nowSeconds, kind: t.kind, tags: t.tags ?? [], content: t.content }
  const id = computeEventId(unsigned)
  const sig = schnorr.sign(Buffer.from(id, 'hex'), Buffer.from(key.secretKey), randomBytes(32)).toString('hex')
  return { id, ...unsigned, sig }
}
