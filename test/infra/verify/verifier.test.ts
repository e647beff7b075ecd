import { schnorr } from '@noble/curves/secp256k1.js'
import { hexToBytes } from '@noble/hashes/utils.js'
import { finalizeEvent, generateSecretKey } from 'nostr-tools/pure'
import { verifySchnorr } from 'tiny-secp256k1'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createInlineVerifier, createNobleVerifier } from '../../../src/infra/verify/inline-verifier'
import { type Verifier, VerifierError, type VerifyVerdict } from '../../../src/infra/verify/verifier'
import { createVerifierPool, type VerifierPool } from '../../../src/infra/verify/verifier-pool'
import { loadSchnorr } from '../../../src/infra/verify/verify-core.mjs'
import type { NostrEvent } from '../../../src/protocols/nip01/event'
import { bip340Vectors } from './bip340-vectors'

const tinyVerify = (msg: Uint8Array, pub: Uint8Array, sig: Uint8Array): boolean => {
  try {
    return verifySchnorr(msg, pub, sig)
  } catch {
    return false
  }
}

describe('BIP-340 official test vectors', () => {
  const withHashSizedMessage = bip340Vectors.filter((v) => v.message.length === 64)

  it.each(bip340Vectors)('@noble/curves agrees with vector $index ($comment)', (v) => {
    const verdict = schnorr.verify(hexToBytes(v.signature), hexToBytes(v.message), hexToBytes(v.publicKey))
    expect(verdict).toBe(v.valid)
  })

  // tiny-secp256k1 takes a 32-byte hash only; nostr always signs the 32-byte id, so rows 15–18 don't apply.
  it.each(withHashSizedMessage)('tiny-secp256k1 agrees with vector $index ($comment)', (v) => {
    const verdict = tinyVerify(hexToBytes(v.message), hexToBytes(v.publicKey), hexToBytes(v.signature))
    expect(verdict).toBe(v.valid)
  })

  // CI's machines build the optional addon at `npm ci`; without it 'auto' would quietly verify in WASM.
  it('native libsecp256k1 (bcrypto) loads here and agrees with every vector on a 32-byte message', () => {
    const native = loadSchnorr('native')
    expect(native.name).toBe('native')
    const auto = loadSchnorr('auto')
    expect([auto.name, auto.fallback]).toEqual(['native', undefined])
    for (const v of withHashSizedMessage) {
      let verdict: boolean
      try {
        verdict = native.verify(Buffer.from(v.message, 'hex'), Buffer.from(v.publicKey, 'hex'), Buffer.from(v.signature, 'hex'))
      } catch {
        verdict = false
      }
      expect({ index: v.index, verdict }).toEqual({ index: v.index, verdict: v.valid })
    }
  })

  it('tiny-secp256k1 refuses messages that are not 32 bytes (vectors 15–18) instead of misverifying them', () => {
    const others = bip340Vectors.filter((v) => v.message.length !== 64)
    expect(others.map((v) => v.index)).toEqual([15, 16, 17, 18])
    for (const v of others) {
      expect(() => verifySchnorr(hexToBytes(v.message), hexToBytes(v.publicKey), hexToBytes(v.signature))).toThrow()
    }
  })
})

function signedEvents(count: number): NostrEvent[] {
  const keys = Array.from({ length: 8 }, () => generateSecretKey())
  return Array.from({ length: count }, (_, i) =>
    finalizeEvent(
      {
        kind: i % 7,
        created_at: 1_700_000_000 + i,
        tags:
          i % 3 === 0
            ? []
            : [
                ['p', 'ab'.repeat(32)],
                ['t', `tag ${i}`, 'x'],
              ],
        content: i % 5 === 0 ? `"quotes" \\ \n\t ünï ${'🐝'.repeat(i % 4)} \u0001 #${i}` : `note ${i}`,
      },
      keys[i % keys.length]!,
    ),
  )
}

function flipBit(hex: string, bit: number): string {
  const bytes = hexToBytes(hex)
  bytes[bit >> 3]! ^= 1 << (bit & 7)
  return Buffer.from(bytes).toString('hex')
}

// Each is not a valid NIP-01 event, whatever else it is; the verifiers must answer, not throw.
function garbageEvents(e: NostrEvent): unknown[] {
  return [
    { ...e, sig: 'zz'.repeat(64) },
    { ...e, sig: e.sig.toUpperCase() },
    { ...e, sig: e.sig.slice(0, 126) },
    { ...e, pubkey: e.pubkey.slice(2) },
    { ...e, id: e.id.toUpperCase() },
    { ...e, id: 'not hex at all' },
    { ...e, tags: [['e', 42]] },
    { ...e, tags: 'p' },
    { ...e, content: undefined },
    { ...e, created_at: '1700000000' },
    { ...e, kind: 1.5 },
    { ...e, sig: undefined },
    { ...e, sig: () => 'a function cannot be cloned to a worker' },
    null,
    'a string',
    {},
  ]
}

async function verdictsOf(verifier: Verifier, events: unknown[]): Promise<VerifyVerdict[]> {
  return Promise.all(events.map((e) => verifier.verify(e as NostrEvent)))
}

describe('verifying nostr events', () => {
  const events = signedEvents(300)
  let pool: VerifierPool
  let wasmPool: VerifierPool
  const noble = createNobleVerifier()
  const all = (): [string, Verifier][] => [
    ['pool', pool],
    ['wasm pool', wasmPool],
    ['inline native', createInlineVerifier('native')],
    ['inline wasm', createInlineVerifier('wasm')],
    ['noble', noble],
  ]

  beforeAll(async () => {
    pool = await createVerifierPool({ threads: 2 })
    wasmPool = await createVerifierPool({ threads: 2, backend: 'wasm' })
  })
  afterAll(async () => {
    await Promise.all([pool.close(), wasmPool.close()])
  })

  it('runs the pool on the native backend by default and on WASM when asked', () => {
    expect(pool.backend).toBe('native')
    expect(wasmPool.backend).toBe('wasm')
  })

  it('answers ok for 300 events signed by nostr-tools, on native and WASM pools and inline, and noble alike', async () => {
    for (const [, verifier] of all()) {
      expect(await verdictsOf(verifier, events)).toEqual(events.map(() => 'ok'))
    }
  })

  it('answers bad-id when the content was changed after signing', async () => {
    const tampered = events.slice(0, 40).map((e) => ({ ...e, content: e.content + '!' }))
    for (const [, verifier] of all()) {
      expect(await verdictsOf(verifier, tampered)).toEqual(tampered.map(() => 'bad-id'))
    }
  })

  it('answers bad-sig when one bit of the signature is flipped', async () => {
    const tampered = events.slice(0, 40).map((e, i) => ({ ...e, sig: flipBit(e.sig, (i * 13) % 512) }))
    for (const [, verifier] of all()) {
      expect(await verdictsOf(verifier, tampered)).toEqual(tampered.map(() => 'bad-sig'))
    }
  })

  it('never answers ok for garbage, and every verifier gives the same verdict for each', async () => {
    const garbage = events.slice(0, 3).flatMap(garbageEvents)
    const verdicts = await Promise.all(all().map(async ([name, v]) => [name, await verdictsOf(v, garbage)] as const))
    const fromNoble = verdicts.find(([name]) => name === 'noble')![1]
    for (const [name, fromOne] of verdicts) expect({ name, verdicts: fromOne }).toEqual({ name, verdicts: fromNoble })
    expect(fromNoble).not.toContain('ok')
    expect(fromNoble).toContain('bad-id')
    expect(fromNoble).toContain('bad-sig')
  })
})

describe('the verifier pool under failure', () => {
  const events = signedEvents(100)

  it('answers every request when a worker dies holding a batch, by retrying on another worker', async () => {
    const pool = await createVerifierPool({ threads: 2 })
    try {
      pool.crashWorkerOnNextBatchForTest(0)
      expect(await verdictsOf(pool, events)).toEqual(events.map(() => 'ok'))
      expect(pool.stats()).toMatchObject({ respawns: 1, queued: 0, inFlight: 0 })
      expect(pool.stats().retries).toBeGreaterThan(0)
      expect(await verdictsOf(pool, events.slice(0, 10))).toEqual(events.slice(0, 10).map(() => 'ok'))
    } finally {
      await pool.close()
    }
  })

  it('retries on the replacement worker when it has only one thread', async () => {
    const pool = await createVerifierPool({ threads: 1 })
    try {
      pool.crashWorkerOnNextBatchForTest(0)
      expect(await verdictsOf(pool, events.slice(0, 20))).toEqual(events.slice(0, 20).map(() => 'ok'))
      expect(pool.stats()).toMatchObject({ respawns: 1, retries: 20 })
    } finally {
      await pool.close()
    }
  })

  it('rejects with APIARY_VERIFIER_WORKER_DIED once a request has been on two workers that died', async () => {
    const pool = await createVerifierPool({ threads: 2 })
    try {
      pool.crashWorkerOnNextBatchForTest(0)
      pool.crashWorkerOnNextBatchForTest(1)
      const err = await pool.verify(events[0]!).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(VerifierError)
      expect((err as VerifierError).code).toBe('APIARY_VERIFIER_WORKER_DIED')
      expect(await pool.verify(events[1]!)).toBe('ok')
    } finally {
      await pool.close()
    }
  })

  it('close() rejects queued and in-flight requests with APIARY_VERIFIER_CLOSED, and later ones too', async () => {
    const pool: VerifierPool = await createVerifierPool({ threads: 2 })
    const dispatched = events.map((e) => pool.verify(e).catch((err: unknown) => err))
    await new Promise((resolve) => setImmediate(resolve))
    const queued = events.slice(0, 5).map((e) => pool.verify(e).catch((err: unknown) => err))
    await pool.close()
    const outcomes = await Promise.all([...dispatched, ...queued])
    const rejected = outcomes.filter((o) => o instanceof VerifierError)
    expect(rejected.length).toBeGreaterThanOrEqual(5)
    expect(outcomes.every((o) => o === 'ok' || (o as VerifierError).code === 'APIARY_VERIFIER_CLOSED')).toBe(true)
    await expect(pool.verify(events[0]!)).rejects.toMatchObject({ code: 'APIARY_VERIFIER_CLOSED' })
  })

  // Worker.terminate() in the middle of the native verifier's first call aborted the whole process (seen in
  // CI, bcrypto's context creation); the pool now stops workers between messages, on either backend.
  it('closes while batches are in flight, again and again, without taking the process down', async () => {
    for (let i = 0; i < 20; i++) {
      const pool = await createVerifierPool({ threads: 2, backend: i % 2 === 0 ? 'native' : 'wasm' })
      const inFlight = events.slice(0, 64).map((e) => pool.verify(e).catch((err: unknown) => err))
      await new Promise((resolve) => setImmediate(resolve))
      await pool.close()
      const outcomes = await Promise.all(inFlight)
      expect(outcomes.every((o) => o === 'ok' || (o as VerifierError).code === 'APIARY_VERIFIER_CLOSED')).toBe(true)
    }
  })

  it('refuses a thread count below one', async () => {
    await expect(createVerifierPool({ threads: 0 })).rejects.toBeInstanceOf(RangeError)
  })
})
