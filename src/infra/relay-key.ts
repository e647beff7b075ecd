import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { schnorr } from '@noble/curves/secp256k1.js'
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js'
import { computeEventId, type NostrEvent } from '../protocols/nip01/event'

export interface RelayKey {
  secretKey: Uint8Array
  pubkey: string
}

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
  const secretKey = hexToBytes(hex)
  return { secretKey, pubkey: bytesToHex(schnorr.getPublicKey(secretKey)) }
}

export interface EventTemplate {
  kind: number
  content: string
  tags?: string[][]
  created_at?: number
}

/** Sign an event as the relay (control messages, relay-authored notes published by an embedding program). */
export function signAsRelay(key: RelayKey, t: EventTemplate, nowSeconds: number): NostrEvent {
  const unsigned = {
    pubkey: key.pubkey,
    created_at: t.created_at ?? nowSeconds,
    kind: t.kind,
    tags: t.tags ?? [],
    content: t.content,
  }
  const id = computeEventId(unsigned)
  const sig = bytesToHex(schnorr.sign(hexToBytes(id), key.secretKey))
  return { id, ...unsigned, sig }
}
