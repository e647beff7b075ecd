// `ingest-pinned`: the ingest corpus, 4 connections × 16 in flight, with every thread of the relay on CPU 0 and
// the load generator on CPU 1: what one core of the relay does, Apiary beside the baseline pinned the same way.

import { type CorpusIngestResult, corpusFigures, corpusRun, prepareCorpus } from '../lib/corpus-ingest'
import type { BenchEvent } from '../lib/fixtures'
import type { RelayName } from '../lib/relay-process'
import { defineScenario } from '../lib/scenario'

export const scenario = defineScenario({
  name: 'ingest-pinned',
  describe: 'the ingest corpus into a relay pinned to one core (taskset), 4 × 16 in flight',
  needs: ['baseline relay'],
  sides: () => ['apiary', 'baseline'] as const,
  prepare: prepareCorpus,
  measure: (side: RelayName, _round, events: BenchEvent[], ctx): Promise<CorpusIngestResult> =>
    corpusRun(side, events, { connections: 4, window: 16, pinned: true }, ctx),
  report: (results) => corpusFigures('ingest-pinned', '4×16, relay pinned to one core', results.apiary, results.baseline),
})
