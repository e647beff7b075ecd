// The child side of a relay run in its own process (bench/lib/relay-process.ts forks it), so the load
// generator's CPU and memory stay out of the relay's figures. It prints its URL and answers the parent over
// IPC: memory after GC, CPU used, the event-loop delay over a measured span, a direct pre-fill, close.
import type { IntervalHistogram } from 'node:perf_hooks'
import { type LoopDelay, startGcPauses, startLoopDelay, startStallTimeline, stopLoopDelay } from './loop-delay'
import { startDiagnostics } from './relay-diagnostics'
import type { MemorySample, RelayReply, RelayRequest } from './relay-ipc'

export interface StartedRelay {
  url: string
  close(): Promise<void>
  /** load a fixture file (jsonl, first `count` events) straight into storage; optional per relay */
  prefill?(file: string, count: number): Promise<number>
}

/** What the child measures between `span-start` and `span-stop`. */
interface Span {
  eld: IntervalHistogram
  gc: ReturnType<typeof startGcPauses>
  stalls: ReturnType<typeof startStallTimeline>
  diagnostics: () => Promise<void>
}

async function memoryAfterGc(): Promise<MemorySample> {
  const gc = (globalThis as { gc?: () => void }).gc
  for (let i = 0; i < 3; i++) {
    gc?.()
    await new Promise((r) => setImmediate(r))
  }
  const m = process.memoryUsage()
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers }
}

/** `start(dataDir, config)`: argv[2] is the data directory, argv[3] the scenario's JSON config (or none). */
export async function runRelayChild(start: (dataDir: string, config: Record<string, unknown>) => Promise<StartedRelay>): Promise<void> {
  const send = (m: RelayReply) => process.send?.(m)
  const [dataDir, config] = process.argv.slice(2)
  if (!dataDir || !process.send) {
    console.error('usage: forked by bench/lib/relay-process.ts with <dataDir> [config JSON]')
    process.exit(2)
  }
  let relay: StartedRelay
  try {
    relay = await start(dataDir, JSON.parse(config || '{}') as Record<string, unknown>)
  } catch (error) {
    send({ type: 'failed', error: errorText(error) })
    process.exitCode = 1
    setTimeout(() => process.exit(1), 200).unref()
    return
  }
  let span: Span | undefined
  const answer = async (req: RelayRequest): Promise<unknown> => {
    switch (req.cmd) {
      case 'mem':
        return memoryAfterGc()
      case 'cpu': {
        // the whole process: the event loop and every worker thread
        const c = process.cpuUsage()
        return c.user + c.system
      }
      case 'span-start':
        span?.eld.disable()
        span = { diagnostics: startDiagnostics(), eld: startLoopDelay(), gc: startGcPauses(), stalls: startStallTimeline('stalls') }
        return null
      case 'span-stop': {
        if (!span) throw new Error('span-stop without span-start')
        const s = span
        span = undefined
        const result: LoopDelay = { ...stopLoopDelay(s.eld), gc: s.gc.stop() }
        s.stalls.stop()
        await s.diagnostics()
        return result
      }
      case 'prefill':
        if (!relay.prefill) throw new Error('this relay has no direct pre-fill')
        return relay.prefill(req.file, req.count)
      case 'close':
        await relay.close()
        setTimeout(() => process.exit(0), 50)
        return null
    }
  }
  process.stdout.write(`${relay.url}\n`)
  send({ type: 'ready', url: relay.url })
  process.on('message', (req: RelayRequest) => {
    answer(req).then(
      (result) => send({ id: req.id, ok: true, result }),
      (error: unknown) => send({ id: req.id, ok: false, error: errorText(error) }),
    )
  })
  process.on('disconnect', () => {
    relay.close().finally(() => process.exit(0))
  })
}

function errorText(error: unknown): string {
  return error instanceof Error
    ? `${error.message}${error.stack ? `\n${error.stack.split('\n').slice(1, 4).join('\n')}` : ''}`
    : String(error)
}
