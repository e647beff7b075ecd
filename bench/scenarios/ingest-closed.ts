// `ingest-closed`: the ingest corpus from 16 connections with one EVENT in flight each (a closed loop): what a
// crowd of clients that each wait for their OK gets, Apiary beside the baseline and strfry.
import { type CorpusIngestResult, corpusFigures, corpusRun, prepareCorpus } from '../lib/corpus-ingest'
import type { BenchEvent } from '../lib/fixtures'
import type { RelayName } from '../lib/relay-process'
import { defineScenario } from '../lib/scenario'
import { comparedRelays } from '../lib/strfry-relay'

export const scenario = defineScenario({
  name: 'ingest-closed',
  describe: 'the ingest corpus from 16 connections, one EVENT in flight each',
  needs: ['baseline relay'],
  sides: comparedRelays,
  prepare: prepareCorpus,
  measure: (side: RelayName, _round, events: BenchEvent[], ctx): Promise<CorpusIngestResult> =>
    corpusRun(side, events, { connections: 16, window: 1 }, ctx),
  report: (results) =>
    corpusFigures('ingest-closed', '16 connections, one in flight each', results.apiary, results.baseline, results.strfry ?? []),
})
