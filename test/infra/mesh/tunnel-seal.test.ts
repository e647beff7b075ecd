import { randomBytes } from 'node:crypto'
import { schnorr } from '@noble/curves/secp256k1.js'
import { describe, expect, it } from 'vitest'
import { deriveTunnelSeal, SEAL_OVERHEAD_BYTES, type TunnelSeal } from '../../../src/infra/mesh/tunnel-seal'
import { toSigningKey } from '../../../src/protocols/nip01/sign'

const newKey = () => toSigningKey(schnorr.utils.randomSecretKey())
const nonce = () => randomBytes(32).toString('hex')

/** Both ends of one tunnel's sealing, as the dialer and the acceptor derive them from one Hello. */
function pair(): { dialer: TunnelSeal; acceptor: TunnelSeal } {
  const [d, a] = [newKey(), newKey()]
  const [dialerNonce, acceptorNonce] = [nonce(), nonce()]
  return {
    dialer: deriveTunnelSeal({ role: 'dialer', secretKey: d.secretKey, self: d.pubkey, peer: a.pubkey, dialerNonce, acceptorNonce }),
    acceptor: deriveTunnelSeal({ role: 'acceptor', secretKey: a.secretKey, self: a.pubkey, peer: d.pubkey, dialerNonce, acceptorNonce }),
  }
}

const frame = (n: number, seed = 1) => Uint8Array.from({ length: n }, (_, i) => (i * seed) & 0xff)
const opened = (s: TunnelSeal, sealed: Uint8Array) => {
  const o = s.open(sealed)
  return o.ok ? Buffer.from(o.frame) : o.why
}

describe('tunnel sealing', () => {
  it('opens on the other side what one side sealed, in both directions, and hides the frame', () => {
    // many key pairs: an x-only key drops its point's parity, and either parity must give the same secret
    for (let i = 0; i < 20; i++) {
      const { dialer, acceptor } = pair()
      const sealed = dialer.seal(frame(100))
      expect(sealed.byteLength).toBe(100 + SEAL_OVERHEAD_BYTES)
      expect(Buffer.from(sealed).includes(Buffer.from(frame(100).subarray(8, 40)))).toBe(false)
      expect(opened(acceptor, sealed)).toEqual(Buffer.from(frame(100)))
      expect(opened(dialer, acceptor.seal(frame(7, 3)))).toEqual(Buffer.from(frame(7, 3)))
    }
  })

  it('keys each direction apart: a frame sent back at its sender does not open', () => {
    const { dialer, acceptor } = pair()
    const sealed = dialer.seal(frame(50))
    expect(opened(dialer, sealed)).toBe('forged')
    expect(opened(acceptor, sealed)).toEqual(Buffer.from(frame(50)))
  })

  it('refuses a flipped byte anywhere (forged), a frame twice (replayed) and a frame skipped (reordered)', () => {
    const { dialer, acceptor } = pair()
    const first = dialer.seal(frame(64))
    for (const at of [9, 40, first.byteLength - 1]) {
      const bad = Uint8Array.from(first)
      bad[at]! ^= 0x80
      expect(opened(acceptor, bad)).toBe('forged')
    }
    expect(opened(acceptor, first)).toEqual(Buffer.from(frame(64)))
    expect(opened(acceptor, first)).toBe('replayed')
    dialer.seal(frame(1))
    expect(opened(acceptor, dialer.seal(frame(2)))).toBe('reordered')
  })

  it('refuses a plaintext frame injected in the stream, and one from another tunnel of the same runtimes', () => {
    const { dialer, acceptor } = pair()
    expect(opened(acceptor, frame(16 + 30))).toBe('forged')
    expect(opened(acceptor, frame(3))).toBe('forged')
    expect(opened(pair().acceptor, dialer.seal(frame(10)))).toBe('forged')
  })

  it('costs a few microseconds of CPU a frame to seal and open', () => {
    const { dialer, acceptor } = pair()
    const body = frame(16 + 300)
    for (let i = 0; i < 2_000; i++) acceptor.open(dialer.seal(body))
    const n = 20_000
    // CPU time, not wall time: on a shared machine the wall clock also counts the other processes' turns
    const started = process.cpuUsage()
    for (let i = 0; i < n; i++) acceptor.open(dialer.seal(body))
    const used = process.cpuUsage(started)
    const perFrameUs = (used.user + used.system) / n
    console.log(`seal+open of a ${body.byteLength}-byte frame: ${perFrameUs.toFixed(2)} µs of CPU`)
    // generous: no frame may pay for a key exchange or a key schedule of its own beyond the cipher's
    expect(perFrameUs).toBeLessThan(200)
  })
})
