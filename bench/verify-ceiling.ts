// Ingest ceiling (DESIGN §12): events/s the verifiers sustain on this machine (noble, libsecp256k1 as WASM and
// as a native addon, in thread and as the pool), measured in one process so the figures compare as ratios. Run standalone: `npx tsx bench/verify-ceiling.ts [events] [threads]`.
import os from 'node:os'
import { pathToFileURL } from 'node:url'
import { finalizeEvent, generateSecretKey } from 'nostr-tools/pure'
import { createInlineVerifier, createNobleVerifier } from '../src/infra/verify/inline-verifier'
import type { Verifier } from '../src/infra/verify/verifier'
import { createVerifierPool } from '../src/infra/verify/verifier-pool'
import type { NostrEvent } from '../src/protocols/nip01/event'

export interface VerifyCeiling {
  nobleInlinePerSec: number
  wasmInlinePerSec: number
  /** null where the addon does not load (the relay then verifies in WASM) */
  nativeInlinePerSec: number | null
  /** the pool as the relay runs it (backend 'auto'): the ingest ceiling */
  poolPerSec: number
  backend: 'native' | 'wasm'
  /** the same pool verifying in WASM */
  wasmPoolPerSec: number
  threads: number
}

/** `events`: a count to sign here (kind 1, ~200 bytes), or the events to verify (the ingest corpus) */
export async function measureVerifyCeiling(opts: { events: number | NostrEvent[]; threads: number }): Promise<VerifyCeiling> {
  const events = typeof opts.events === 'number' ? signEvents(opts.events) : opts.events
  const pool = await createVerifierPool({ threads: opts.threads })
  const wasmPool = await createVerifierPool({ threads: opts.threads, backend: 'wasm' })
  try {
    // Each verifier sees the events once untimed so JIT and WASM warm-up stay out of the figures.
    const noble = createNobleVerifier()
    const native = pool.backend === 'native' ? createInlineVerifier('native') : undefined
    // the native backend verifies ~5× faster than WASM: more passes keep its runs as long
    const passes = (v: 'native' | 'wasm'): NostrEvent[] => (v === 'native' ? [...events, ...events, ...events] : events)
    return {
      // noble is ~5× slower than WASM: a fifth of the events keeps its share of the run comparable
      nobleInlinePerSec: await sequentialRate(noble, events.slice(0, Math.max(50, Math.ceil(events.length / 5)))),
      wasmInlinePerSec: await sequentialRate(createInlineVerifier('wasm'), events),
      nativeInlinePerSec: native ? await sequentialRate(native, passes('native')) : null,
      poolPerSec: await concurrentRate(pool, passes(pool.backend)),
      backend: pool.backend,
      wasmPoolPerSec: await concurrentRate(wasmPool, events),
      threads: pool.threads,
    }
  } finally {
    await Promise.all([pool.close(), wasmPool.close()])
  }
}

function signEvents(count: number): NostrEvent[] {
  const keys = Array.from({ length: 16 }, () => generateSecretKey())
  return Array.from({ length: count }, (_, i) =>
    finalizeEvent(
      {
        kind: 1,
        created_at: 1_700_000_000 + i,
        tags: [['t', 'bench']],
        content: `event ${i} `.repeat(20),
      },
      keys[i % keys.length]!,
    ),
  )
}

// In-thread verifiers block the loop per event anyway, so awaiting one at a time measures them fairly.
async function sequentialRate(verifier: Verifier, events: NostrEvent[]): Promise<number> {
  for (const e of events.slice(0, 20)) await verifier.verify(e)
  const start = performance.now()
  for (const e of events) {
    if ((await verifier.verify(e)) !== 'ok') throw new Error('bench event failed verification')
  }
  return perSecond(events.length, start)
}

// The pool only reaches its ceiling with many requests outstanding, as under real ingest.
async function concurrentRate(verifier: Verifier, events: NostrEvent[]): Promise<number> {
  await Promise.all(events.slice(0, 200).map((e) => verifier.verify(e)))
  const start = performance.now()
  const verdicts = await Promise.all(events.map((e) => verifier.verify(e)))
  const rate = perSecond(events.length, start)
  if (verdicts.some((v) => v !== 'ok')) throw new Error('bench event failed verification')
  return rate
}

function perSecond(count: number, startMs: number): number {
  return Math.round((count * 1000) / (performance.now() - startMs))
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const events = Number(process.argv[2] ?? 2000)
  const threads = Number(process.argv[3] ?? os.cpus().length)
  const r = await measureVerifyCeiling({ events, threads })
  console.log(`cpu: ${os.cpus()[0]?.model ?? 'unknown'} × ${os.cpus().length} cores, node ${process.version}`)
  console.log(`events: ${events}`)
  console.log(`noble inline : ${r.nobleInlinePerSec} events/s`)
  const ratio = (a: number, b: number): string => (a / b).toFixed(2)
  console.log(`wasm inline  : ${r.wasmInlinePerSec} events/s (${ratio(r.wasmInlinePerSec, r.nobleInlinePerSec)}× noble)`)
  if (r.nativeInlinePerSec !== null)
    console.log(`native inline: ${r.nativeInlinePerSec} events/s (${ratio(r.nativeInlinePerSec, r.wasmInlinePerSec)}× wasm)`)
  console.log(`pool (${r.threads} threads, ${r.backend}): ${r.poolPerSec} events/s`)
  console.log(`pool (${r.threads} threads, wasm): ${r.wasmPoolPerSec} events/s`)
}
