// `ingest-pinned`: the ingest corpus, 4 connections × 16 in flight, with every thread of the relay on CPU 0 and
// the load generator on CPU 1: what one core of the relay does, beside the baseline and strfry pinned the same
// way. Apiary runs twice: with its default durability (an acknowledged event survives a process crash) and with
// `store.durability` `power` (every acknowledged commit fsynced, as strfry's LMDB commits are).
import { type CorpusIngestResult, corpusFigures, corpusRun, prepareCorpus } from '../lib/corpus-ingest'
import type { BenchEvent } from '../lib/fixtures'
import type { RelayName } from '../lib/relay-process'
import { defineScenario } from '../lib/scenario'
import { comparedRelays } from '../lib/strfry-relay'

type Side = RelayName | 'apiary-durable'
const SHAPE = { connections: 4, window: 16, pinned: true }
const DURABLE = { store: { durability: 'power' } }

export const scenario = defineScenario({
  name: 'ingest-pinned',
  describe: 'the ingest corpus into a relay pinned to one core (taskset), 4 × 16 in flight; Apiary also at power-loss durability',
  needs: ['baseline relay'],
  sides: (): readonly Side[] => [...comparedRelays(), 'apiary-durable'],
  prepare: prepareCorpus,
  measure: (side: Side, _round, events: BenchEvent[], ctx): Promise<CorpusIngestResult> =>
    side === 'apiary-durable' ? corpusRun('apiary', events, SHAPE, ctx, DURABLE) : corpusRun(side, events, SHAPE, ctx),
  report: (results) => {
    const parts = [
      corpusFigures('ingest-pinned', '4×16, relay pinned to one core', results.apiary, results.baseline, results.strfry ?? []),
      // the Apiary column is the durable run; strfry's column is the same runs as above
      corpusFigures(
        'ingest-pinned',
        '4×16 pinned, Apiary durable to power loss',
        results['apiary-durable'],
        undefined,
        results.strfry ?? [],
      ),
    ]
    return { figures: parts.flatMap((p) => p.figures), notes: parts.flatMap((p) => p.notes) }
  },
})
