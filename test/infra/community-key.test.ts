import { hkdfSync } from 'node:crypto'
import { bytesToHex } from '@noble/hashes/utils.js'
import { getPublicKey } from 'nostr-tools/pure'
import { describe, expect, it } from 'vitest'
import { createCommunityKeys, deriveCommunityKey } from '../../src/infra/community-key'
import { loadConfig } from '../../src/infra/load-config'
import { verifyEventNoble } from '../../src/protocols/nip01/event'
import { signTemplate, toSigningKey } from '../../src/protocols/nip01/sign'
import { keysFromHex } from '../support/events'

const RELAY_SECRET = new Uint8Array(32).fill(1)
const relayKey = toSigningKey(RELAY_SECRET)
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n

describe('a community’s key', () => {
  it('is HKDF-SHA256 of the relay secret key, the use and the community id, reduced to a scalar in 1..n-1', () => {
    const okm = hkdfSync('sha256', RELAY_SECRET, new Uint8Array(0), Buffer.from('apiary community key v1\0hive'), 48)
    const expected = (BigInt(`0x${Buffer.from(okm).toString('hex')}`) % (SECP256K1_N - 1n)) + 1n
    expect(bytesToHex(deriveCommunityKey(RELAY_SECRET, 'hive').secretKey)).toBe(expected.toString(16).padStart(64, '0'))
  })

  it('keeps the identity deployments already published: this relay key and id give this pubkey', () => {
    expect(deriveCommunityKey(RELAY_SECRET, 'default').pubkey).toBe('a9416b312a990a4ce87bb5029346f1456a6168d0b64aa7752ed443950653b731')
  })

  it('is the same on every node that has the relay key, and another for another community or relay key', () => {
    const a = createCommunityKeys(relayKey).of('hive')
    const b = createCommunityKeys(toSigningKey(Uint8Array.from(RELAY_SECRET))).of('hive')
    expect(a.pubkey).toBe(b.pubkey)
    const others = [
      createCommunityKeys(relayKey).of('hives').pubkey,
      createCommunityKeys(toSigningKey(new Uint8Array(32).fill(2))).of('hive').pubkey,
      relayKey.pubkey,
    ]
    expect(new Set([a.pubkey, ...others]).size).toBe(4)
  })

  it('signs events that verify under its pubkey', () => {
    const key = deriveCommunityKey(RELAY_SECRET, 'hive')
    expect(key.pubkey).toBe(getPublicKey(key.secretKey))
    const event = signTemplate(key, { kind: 39000, tags: [['d', 'room']], content: '' }, 1_700_000_000)
    expect([event.pubkey, verifyEventNoble(event)]).toEqual([key.pubkey, 'ok'])
  })

  it('is the configured one when a community names its own, and the derived one is then a former key', () => {
    const own = keysFromHex('cd'.repeat(32))
    const keys = createCommunityKeys(relayKey, [
      { id: 'moved', secretKey: 'cd'.repeat(32) },
      { id: 'plain', secretKey: '' },
    ])
    expect(keys.of('moved').pubkey).toBe(own.pubkey)
    expect(keys.formerOf('moved')).toEqual([relayKey.pubkey, deriveCommunityKey(RELAY_SECRET, 'moved').pubkey])
    expect(keys.of('plain').pubkey).toBe(deriveCommunityKey(RELAY_SECRET, 'plain').pubkey)
    expect(keys.formerOf('plain')).toEqual([relayKey.pubkey])
  })

  it('is refused in the config unless it is 64 lowercase hex characters', () => {
    const community = (secretKey: string) => ({ overrides: { communities: [{ id: 'moved', hosts: ['moved.test'], secretKey }] } })
    expect(loadConfig(community('cd'.repeat(32))).communities[0]?.secretKey).toBe('cd'.repeat(32))
    expect(() => loadConfig(community('CD'.repeat(32)))).toThrow(/communities/)
    expect(() => loadConfig(community('cd'.repeat(31)))).toThrow(/communities/)
  })
})
