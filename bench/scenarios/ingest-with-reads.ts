// `ingest-with-reads` (Apiary, embedded SQLite): pipelined ingest into a relay that already stores the `req`
// data set, with 8 reader connections running the heaviest indexed REQ shapes in a closed loop (Apiary column)
// and without them (baseline column). The figure that matters is the relay's event-loop delay over the timed
// window: a read that holds the loop delays every write behind it. Each run ingests into its own copy.
import { cpSync } from 'node:fs'
import { outcomeNotes, rowsOf } from '../lib/figures'
import { ingestEvents, reqDataset } from '../lib/fixtures'
import {
  ingestWithReads,
  READ_LOAD_VARIANTS,
  READER_SHAPES,
  type ReadersFigures,
  type ReadLoadResult,
  type ReadLoadVariant,
} from '../lib/load/readers'
import { withRelay } from '../lib/relay-process'
import { type Spanned, withRelaySpan } from '../lib/relay-span'
import { preloadOnce } from '../lib/req-preload'
import { type Context, defineScenario } from '../lib/scenario'

const sizeOf = (ctx: Context) =>
  ctx.quick
    ? { stored: 10_000, events: 3_000, connections: 4, window: 200, maxSeconds: 10, readers: 8 }
    : { stored: 100_000, events: 30_000, connections: 4, window: 200, maxSeconds: 20, readers: 8 }

const readers = (f: (x: ReadersFigures) => number) => (r: ReadLoadResult) => (r.readers ? f(r.readers) : Number.NaN)

export const scenario = defineScenario({
  name: 'ingest-with-reads',
  describe: 'pipelined ingest into a stored data set, with and without 8 closed-loop readers',
  needs: [],
  sides: () => READ_LOAD_VARIANTS,
  prepare: async (ctx) => {
    const size = sizeOf(ctx)
    return { dataset: reqDataset(size.stored), events: ingestEvents(size.events) }
  },
  measure: async (variant: ReadLoadVariant, _round, fx, ctx): Promise<Spanned<ReadLoadResult>> => {
    const loaded = await preloadOnce('apiary', fx.dataset, ctx)
    // the events a run adds must not be there already in the next round's
    const dir = ctx.freshDir('apiary-reads')
    cpSync(loaded, dir, { recursive: true })
    const opts = { ...sizeOf(ctx), ...fx }
    return withRelay('apiary', dir, (relay) => withRelaySpan(relay, (hooks) => ingestWithReads(relay.url, variant, { ...opts, ...hooks })))
  },
  report: (results, fx, ctx) => {
    const size = sizeOf(ctx)
    const row = rowsOf(
      results['ingest + readers'],
      results['ingest alone'],
      `${size.readers} readers vs none, ${fx.dataset.events.length} stored`,
    )
    const read = rowsOf(results['ingest + readers'], undefined, `${size.readers} readers vs none, ${fx.dataset.events.length} stored`)
    const refused = (results['ingest + readers'] ?? []).flatMap((o) => (o.ok && o.value.readers?.refused ? [o.value.readers.refused] : []))
    return {
      figures: [
        row('accepted', 'ev/s', (r) => r.eventsPerSec),
        row('OK latency p99', 'ms', (r) => r.okLatency.p99Ms),
        row('event-loop delay p50', 'ms', (r) => r.loopDelay.p50Ms),
        row('event-loop delay p99', 'ms', (r) => r.loopDelay.p99Ms),
        row('event-loop delay max', 'ms', (r) => r.loopDelay.maxMs),
        row('relay CPU', 'cores', (r) => r.relayCores),
        read(
          'REQs answered',
          'q/s',
          readers((x) => x.queriesPerSec),
        ),
        read(
          'REQ→EOSE p50',
          'ms',
          readers((x) => x.latency.p50Ms),
        ),
        read(
          'REQ→EOSE p99',
          'ms',
          readers((x) => x.latency.p99Ms),
        ),
        ...READER_SHAPES.map((shape) =>
          read(
            `REQ ${shape} p99`,
            'ms',
            readers((x) => x.byShape[shape].p99Ms),
          ),
        ),
        read(
          'events per REQ',
          'mean',
          readers((x) => x.meanEvents),
        ),
      ],
      notes: [
        ...READ_LOAD_VARIANTS.flatMap((v) => outcomeNotes(`ingest-with-reads ${v}`, results[v])),
        ...refused.map((n) => `ingest-with-reads: ${n} REQs refused (CLOSED)`),
      ],
    }
  },
})
