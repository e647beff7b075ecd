// A load generator's timed window, seen from the relay: its event-loop delay and its CPU (every thread) over
// exactly that window, taken through the load generator's onStart / onEnd hooks.
import type { LoopDelay } from './loop-delay'
import type { RelayProcess } from './relay-process'

export interface SpanHooks {
  onStart: () => Promise<void>
  onEnd: () => Promise<void>
}

export type Spanned<T> = T & { loopDelay: LoopDelay; relayCores: number }

/** `run` with hooks that measure `relay` over its timed window; its result with the relay's figures added. */
export async function withRelaySpan<T>(relay: RelayProcess, run: (hooks: SpanHooks) => Promise<T>): Promise<Spanned<T>> {
  let cpu0 = 0
  let t0 = 0
  let relayCores = Number.NaN
  let loopDelay: LoopDelay | undefined
  const r = await run({
    onStart: async () => {
      await relay.spanStart()
      cpu0 = await relay.cpuMicros()
      t0 = performance.now()
    },
    onEnd: async () => {
      const cpu = await relay.cpuMicros()
      relayCores = Math.round(((cpu - cpu0) / 1000 / (performance.now() - t0)) * 100) / 100
      loopDelay = await relay.spanStop()
    },
  })
  if (!loopDelay) throw new Error('the load generator never ended its timed window')
  return { ...r, loopDelay, relayCores }
}
