// The ingest ceiling: events/s the verifiers sustain on this machine alone (noble, libsecp256k1 as WASM and as
// the native addon, inline and as the worker pool the relay runs), in one process so the figures compare as
// ratios. An ingest scenario's rate is read against the pool's.
import { finalizeEvent, generateSecretKey } from 'nostr-tools/pure'
import type { NostrEvent } from '../built-package'
import { createInlineVerifier, createNobleVerifier, createVerifierPool, type Verifier } from '../internal'
import { corpusEvents } from './corpus'

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

/** The verifiers on the first events of the ingest corpus (the verifier pool as the relay runs it: 2 threads). */
export const ceilingOnCorpus = (quick: boolean) => measureVerifyCeiling({ events: corpusEvents(quick ? 1_000 : 4_000), threads: 2 })

/** `events`: a count to sign here (kind 1, ~200 bytes), or the events to verify */
export async function measureVerifyCeiling(opts: { events: number | NostrEvent[]; threads: number }): Promise<VerifyCeiling> {
  const events = typeof opts.events === 'number' ? signEvents(opts.events) : opts.events
  const pool = await createVerifierPool({ threads: opts.threads })
  const wasmPool = await createVerifierPool({ threads: opts.threads, backend: 'wasm' })
  try {
    // Each verifier sees the events once untimed so JIT and WASM warm-up stay out of the figures.
    const noble = createNobleVerifier()
    const native = pool.backend === 'native' ? createInlineVerifier('native') : undefined
    // the native backend is the fastest: more passes keep its runs about as long as the others'
    const passes = (v: 'native' | 'wasm'): NostrEvent[] => (v === 'native' ? [...events, ...events, ...events] : events)
    return {
      // noble is the slowest: a fifth of the events keeps its share of the run comparable
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
