// Child process: the baseline relay (bench/lib/baseline-relay.ts), forked by bench/lib/relay-process.ts.
import { readFileSync } from 'node:fs'
import { startBaselineRelay } from '../lib/baseline-relay'
import type { BenchEvent } from '../lib/fixtures'
import { runRelayChild } from '../lib/relay-child'

await runRelayChild(async (dir) => {
  const relay = await startBaselineRelay({ dir })
  return {
    url: relay.url,
    close: () => relay.close(),
    prefill: (file, count) => relay.prefill(readFixture(file, count)),
  }
})

function readFixture(file: string, count: number): BenchEvent[] {
  const lines = readFileSync(file, 'utf8').split('\n')
  return lines.slice(1, count + 1).map((l) => JSON.parse(l) as BenchEvent)
}
