// `store-pg`: Apiary's PostgreSQL store alone on the ingest corpus, no relay and no Redis: the node's and the
// server's CPU per event, with group commits of at most 64 and of at most 400 events. Each measurement is a
// process of its own (bench/processes/measure-postgres-store.ts) on a fresh database.
import { fileURLToPath } from 'node:url'
import { prepareCorpus } from '../lib/corpus-ingest'
import { rowsOf } from '../lib/figures'
import { measureInChild } from '../lib/relay-process'
import { defineScenario } from '../lib/scenario'
import type { PgStoreCost } from '../processes/measure-postgres-store'

const SCRIPT = fileURLToPath(new URL('../processes/measure-postgres-store.ts', import.meta.url))
const BATCHES = { 'commits of ≤ 64 events': 64, 'commits of ≤ 400 events': 400 } as const
type Batch = keyof typeof BATCHES

export const scenario = defineScenario({
  name: 'store-pg',
  describe: 'the PostgreSQL store alone: node and server CPU per corpus event',
  needs: ['postgres'],
  sides: () => Object.keys(BATCHES) as Batch[],
  prepare: prepareCorpus,
  measure: (side: Batch, _round, events): Promise<PgStoreCost> =>
    measureInChild<PgStoreCost>(SCRIPT, [String(events.length), String(BATCHES[side])], `store-pg ${side}`),
  report: (results) => ({
    figures: (Object.keys(results) as Batch[]).flatMap((batch) => {
      const row = rowsOf(results[batch], undefined, batch)
      return [
        row('node CPU per event', 'µs', (r) => r.nodeUs),
        row('server CPU per event', 'µs', (r) => r.serverUs),
        row('events per transaction', 'mean', (r) => r.perTransaction),
      ]
    }),
    notes: ['store-pg: server CPU counts every local postgres process (a shared server: every client counts)'],
  }),
})
