// Child process: the baseline relay (bench/baseline-relay.ts). Forked by bench/child.ts; prints its URL.
import { readFileSync } from 'node:fs'
import { startBaselineRelay } from './baseline-relay'
import { runRelayChild } from './child'
import type { BenchEvent } from './fixtures'

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
