import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { schnorr } from '@noble/curves/secp256k1.js'
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js'
import type { NostrEvent } from '../protocols/nip01/event.js'
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

/** Sign an event as the relay: with its own key (control payloads) or a community's (community-key.ts). */
export const signAsRelay = (key: RelayKey, t: EventTemplate, nowSeconds: number): NostrEvent => signTemplate(key, t, nowSeconds)
