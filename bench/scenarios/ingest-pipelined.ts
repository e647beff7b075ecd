// `ingest-pipelined`: the ingest corpus from 4 connections with 16, then 200 EVENTs in flight each (rates read
// against the verifier ceiling), then an open loop at half the higher of those two rates, where the OK latency
// is what a relay at half its capacity answers in. Each on a fresh relay, Apiary beside the baseline and strfry.
import { type CorpusIngestResult, corpusFigures, corpusRun, prepareCorpus } from '../lib/corpus-ingest'
import { pick } from '../lib/figures'
import type { BenchEvent } from '../lib/fixtures'
import type { RelayName } from '../lib/relay-process'
import { type Context, defineScenario, type Report, type Results } from '../lib/scenario'
import { comparedRelays } from '../lib/strfry-relay'

interface Shapes {
  shallow: CorpusIngestResult
  deep: CorpusIngestResult
  half: CorpusIngestResult
}

async function measure(side: RelayName, events: BenchEvent[], ctx: Context): Promise<Shapes> {
  const shallow = await corpusRun(side, events, { connections: 4, window: 16 }, ctx)
  const deep = await corpusRun(side, events, { connections: 4, window: 200 }, ctx)
  const ratePerSec = Math.max(1, Math.round(Math.max(shallow.eventsPerSec, deep.eventsPerSec) / 2))
  const half = await corpusRun(side, events, { connections: 4, window: 0, ratePerSec }, ctx)
  return { shallow, deep, half }
}

function report(results: Results<RelayName, Shapes>): Report {
  const groups = [
    ['4×16', 'shallow'],
    ['4×200', 'deep'],
    ['open loop at half the higher rate', 'half'],
  ] as const
  const parts = groups.map(([group, key]) =>
    corpusFigures('ingest-pipelined', group, pick(results.apiary, key), pick(results.baseline, key), pick(results.strfry, key)),
  )
  return { figures: parts.flatMap((p) => p.figures), notes: parts.flatMap((p) => p.notes) }
}

export const scenario = defineScenario({
  name: 'ingest-pipelined',
  describe: 'the ingest corpus from 4 connections, 16 and 200 in flight, then an open loop at half the rate',
  needs: ['baseline relay', 'ceiling'],
  sides: comparedRelays,
  prepare: prepareCorpus,
  measure: (side: RelayName, _round, events: BenchEvent[], ctx) => measure(side, events, ctx),
  report,
})
