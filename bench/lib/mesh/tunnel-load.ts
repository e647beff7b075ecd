// The mesh tunnel alone, no relay: throughput of 1 MiB requests between two tunnel ends in this process, and
// this process's memory while it keeps sending to a peer that stopped reading (a child process,
// bench/processes/mesh-peer.ts, under SIGSTOP).
import { fork } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { schnorr } from '@noble/curves/secp256k1.js'
import { bytesToHex } from '@noble/hashes/utils.js'
import {
  attestRuntime,
  dialTunnel,
  type MeshIdentity,
  startTunnelServer,
  type Tunnel,
  TunnelError,
  type TunnelHandlers,
  type TunnelSetup,
  toSigningKey,
} from '../../internal'
import { type Latency, latency } from '../load/latency'

const MiB = 1024 * 1024
const round2 = (x: number) => Math.round(x * 100) / 100
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Answers every request with one byte, so a measurement is of the request direction. */
export const ONE_BYTE_ANSWER: TunnelHandlers = { onRequest: async () => Uint8Array.of(1), onControl: () => {} }

/** A fresh runtime attested by `relaySecret`, and the tunnel set-up that trusts that relay key. */
export function meshIdentity(relaySecret: Uint8Array, handlers: TunnelHandlers): { identity: MeshIdentity; setup: TunnelSetup } {
  const relay = toSigningKey(relaySecret)
  const runtimeKey = toSigningKey(schnorr.utils.randomSecretKey())
  const identity: MeshIdentity = { runtimeKey, relayPubkey: relay.pubkey, attestation: attestRuntime(relay, runtimeKey.pubkey) }
  return { identity, setup: { identity, anchorRelayPubkey: relay.pubkey, handlersFor: () => handlers } }
}

export interface TunnelThroughput {
  requests: number
  bodyBytes: number
  inFlight: number
  mibPerSec: number
  elapsedMs: number
  /** request → its 1-byte answer */
  requestLatency: Latency
  /** this process (both tunnel ends), in cores */
  cores: number
}

/** `requests` bodies of `bodyBytes`, at most `inFlight` outstanding, over 127.0.0.1, both ends in this process. */
export async function tunnelThroughput(opts: { requests: number; bodyBytes: number; inFlight: number }): Promise<TunnelThroughput> {
  const relaySecret = schnorr.utils.randomSecretKey()
  const acceptor = meshIdentity(relaySecret, ONE_BYTE_ANSWER)
  const dialer = meshIdentity(relaySecret, ONE_BYTE_ANSWER)
  const server = await startTunnelServer(
    '127.0.0.1',
    0,
    acceptor.setup,
    () => {},
    () => {},
  )
  let tunnel: Tunnel | undefined
  try {
    tunnel = await dialTunnel(`ws://127.0.0.1:${server.port}`, acceptor.identity.runtimeKey.pubkey, dialer.setup)
    const t = tunnel
    // one body for every request: the tunnel copies it into each frame (encodeFrame)
    const body = randomBytes(opts.bodyBytes)
    for (let i = 0; i < 2 * opts.inFlight; i++) await t.request(body, 30_000)
    const lat = new Float64Array(opts.requests)
    let next = 0
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    await Promise.all(
      Array.from({ length: opts.inFlight }, async () => {
        while (next < opts.requests) {
          const i = next++
          const s = performance.now()
          await t.request(body, 30_000)
          lat[i] = performance.now() - s
        }
      }),
    )
    const elapsedMs = performance.now() - t0
    const cpu = process.cpuUsage(cpu0)
    return {
      requests: opts.requests,
      bodyBytes: opts.bodyBytes,
      inFlight: opts.inFlight,
      mibPerSec: round2((opts.requests * opts.bodyBytes) / MiB / (elapsedMs / 1000)),
      elapsedMs: Math.round(elapsedMs),
      requestLatency: latency(lat),
      cores: round2((cpu.user + cpu.system) / 1000 / elapsedMs),
    }
  } finally {
    tunnel?.goodbye('ended')
    await server.close()
  }
}

export interface MemorySnapshot {
  atMs: number
  rss: number
  heapUsed: number
  /** Buffers and ArrayBuffers (the tunnel's frames and the socket's send buffer live here, not in the heap) */
  external: number
  /** the tunnel's own view: bytes waiting for credit, requests outstanding, the socket's send buffer */
  queuedBytes: number
  outbound: number
  bufferedAmount: number
}

export interface StalledPeerMemory {
  seconds: number
  bodyBytes: number
  attempts: number
  /** taken by the tunnel (not refused at once) */
  accepted: number
  /** refused at once with TunnelError BUSY */
  busy: number
  /** after a forced GC, right after the SIGSTOP */
  start: MemorySnapshot
  /** each field's highest value over the samples (not necessarily of one moment) */
  max: Omit<MemorySnapshot, 'atMs'>
  samples: MemorySnapshot[]
  /** after SIGCONT: the accepted requests answered, and those that failed (by error code) */
  answeredAfterResume: number
  failedAfterResume: Record<string, number>
  resumeToAllSettledMs: number
}

/**
 * A tunnel to a child process (bench/processes/mesh-peer.ts) that is SIGSTOPped: for `seconds`, requests of `bodyBytes`
 * with `pauseMs` between attempts (60 s timeout each, BUSY refusals counted), this process's memory sampled
 * every `sampleEveryMs`. Then SIGCONT, and every accepted request must still be answered.
 */
export async function stalledPeerMemory(opts: {
  seconds: number
  bodyBytes: number
  pauseMs: number
  sampleEveryMs: number
}): Promise<StalledPeerMemory> {
  const relaySecret = schnorr.utils.randomSecretKey()
  const peer = fork(new URL('../../processes/mesh-peer.ts', import.meta.url), [bytesToHex(relaySecret)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const gone = new Promise<void>((r) => peer.once('exit', () => r()))
  let tunnel: Tunnel | undefined
  try {
    const where = await new Promise<{ port: number; runtime: string }>((resolve, reject) => {
      peer.once('message', (m) => resolve(m as { port: number; runtime: string }))
      peer.once('exit', (code) => reject(new Error(`the mesh peer exited (${code}) before listening`)))
      setTimeout(() => reject(new Error('the mesh peer did not listen within 30 s')), 30_000).unref()
    })
    const t = await dialTunnel(`ws://127.0.0.1:${where.port}`, where.runtime, meshIdentity(relaySecret, ONE_BYTE_ANSWER).setup)
    tunnel = t
    for (let i = 0; i < 3; i++) await t.request(randomBytes(opts.bodyBytes), 10_000)

    peer.kill('SIGSTOP')
    forcedGc()
    const t0 = performance.now()
    const snapshot = (): MemorySnapshot => {
      const m = process.memoryUsage()
      return { atMs: Math.round(performance.now() - t0), rss: m.rss, heapUsed: m.heapUsed, external: m.external, ...t.stats() }
    }
    const start = snapshot()
    const samples = [start]
    const sampler = setInterval(() => samples.push(snapshot()), opts.sampleEveryMs)
    const pending: Promise<void>[] = []
    const failed: Record<string, number> = {}
    let attempts = 0
    let busy = 0
    let answered = 0
    while (performance.now() - t0 < opts.seconds * 1000) {
      attempts++
      // a body of its own, as each forwarded request has: a queued request holds its body until it leaves
      const sent = t.request(Buffer.alloc(opts.bodyBytes, attempts & 0xff), 60_000)
      let refusedAtOnce = false
      sent.catch((e: unknown) => {
        if (e instanceof TunnelError && e.code === 'BUSY') {
          refusedAtOnce = true
          busy++
        }
      })
      await Promise.resolve()
      if (!refusedAtOnce) {
        pending.push(
          sent.then(
            () => {
              answered++
            },
            (e: unknown) => {
              const code = e instanceof TunnelError ? e.code : 'other'
              failed[code] = (failed[code] ?? 0) + 1
            },
          ),
        )
      }
      await sleep(opts.pauseMs)
    }
    clearInterval(sampler)
    samples.push(snapshot())
    const highest = (f: (m: MemorySnapshot) => number) => Math.max(...samples.map(f))
    const max = {
      rss: highest((m) => m.rss),
      heapUsed: highest((m) => m.heapUsed),
      external: highest((m) => m.external),
      queuedBytes: highest((m) => m.queuedBytes),
      outbound: highest((m) => m.outbound),
      bufferedAmount: highest((m) => m.bufferedAmount),
    }

    peer.kill('SIGCONT')
    const resumed = performance.now()
    await Promise.race([Promise.all(pending), sleep(60_000)])
    return {
      seconds: opts.seconds,
      bodyBytes: opts.bodyBytes,
      attempts,
      accepted: pending.length,
      busy,
      start,
      max,
      samples,
      answeredAfterResume: answered,
      failedAfterResume: failed,
      resumeToAllSettledMs: Math.round(performance.now() - resumed),
    }
  } finally {
    tunnel?.goodbye('ended')
    peer.kill('SIGCONT')
    peer.kill('SIGKILL')
    await gone
  }
}

/** A full collection, so that the start sample holds no garbage of earlier work (bench runs without --expose-gc). */
function forcedGc(): void {
  setFlagsFromString('--expose-gc')
  ;(runInNewContext('gc') as () => void)()
}
