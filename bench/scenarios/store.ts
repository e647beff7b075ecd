// `store`: Apiary's SQLite store alone on the ingest corpus, no relay: the CPU its commits and WAL checkpoints
// cost per event, in commits of 64 events (what 4 × 16 in flight fill) and of 400 (4 × 200). Each measurement
// is a process of its own (bench/processes/measure-sqlite-store.ts), with the shipped schema.
import { fileURLToPath } from 'node:url'
import { CHECKPOINT_INTERVAL_MS } from '../internal'
import { prepareCorpus } from '../lib/corpus-ingest'
import { rowsOf } from '../lib/figures'
import { measureInChild } from '../lib/relay-process'
import { defineScenario } from '../lib/scenario'
import type { StoreCost } from '../processes/measure-sqlite-store'

const SCRIPT = fileURLToPath(new URL('../processes/measure-sqlite-store.ts', import.meta.url))
const BATCHES = { '64-event commits': 64, '400-event commits': 400 } as const
type Batch = keyof typeof BATCHES

export const scenario = defineScenario({
  name: 'store',
  describe: "the SQLite store alone: commit and checkpoint CPU per corpus event, the writer thread's way",
  needs: [],
  sides: () => Object.keys(BATCHES) as Batch[],
  prepare: prepareCorpus,
  measure: (side: Batch, _round, events): Promise<StoreCost> =>
    measureInChild<StoreCost>(SCRIPT, [String(events.length), String(BATCHES[side])], `store ${side}`),
  report: (results) => ({
    figures: (Object.keys(results) as Batch[]).flatMap((batch) => {
      const row = rowsOf(results[batch], undefined, batch)
      return [
        row('commit + checkpoint CPU per event', 'µs', (r) => r.commitUs + r.checkpointUs),
        row('commit CPU per event', 'µs', (r) => r.commitUs),
        row('checkpoint CPU per event', 'µs', (r) => r.checkpointUs),
        row('bytes written per event', 'B', (r) => r.writtenBytes),
        row('SavePlan on the event loop per event', 'µs', (r) => r.planUs),
      ]
    }),
    notes: [
      `store: one process per measurement, a fresh file with the shipped schema; checkpoints PASSIVE every ${CHECKPOINT_INTERVAL_MS} ms`,
    ],
  }),
})
