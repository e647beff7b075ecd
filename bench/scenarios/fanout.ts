// `fanout`: subscribers REQ one filter on an empty relay, one publisher sends events; every event reaches every
// subscriber. Two loads: at saturation (1,000 subscribers, events pipelined 200 in flight: deliveries/s from the
// first publish to the last delivery) and at a fixed rate both relays sustain (500 subscribers × 200 events/s,
// 100,000 deliveries/s offered: publish→delivery latency, send times recorded per event id on one clock). Relay
// CPU per delivery beside each, for Apiary, the baseline and strfry.
import { cpuPerUnitUs, outcomeNotes, pick, relayRowsOf } from '../lib/figures'
import { type BenchEvent, ingestEvents } from '../lib/fixtures'
import { type FanoutResult, fanout } from '../lib/load/fanout'
import { type RelayName, withRelay } from '../lib/relay-process'
import { type Spanned, withRelaySpan } from '../lib/relay-span'
import { type Context, defineScenario, type Figure } from '../lib/scenario'
import { comparedRelays } from '../lib/strfry-relay'

const SATURATION = { subscribers: 1_000, window: 200 }
const PACED = { subscribers: 500, ratePerSec: 200 }
export const SATURATION_GROUP = 'saturation: 1,000 subscribers, 200 events in flight'
export const PACED_GROUP = 'fixed rate: 500 subscribers × 200 events/s'
const sizeOf = (ctx: Context) => ({ burstEvents: ctx.quick ? 100 : 500, pacedEvents: ctx.quick ? 600 : 2_000 })

interface Loads {
  burst: Spanned<FanoutResult>
  paced: Spanned<FanoutResult>
}

async function measure(side: RelayName, events: BenchEvent[], ctx: Context): Promise<Loads> {
  const { burstEvents, pacedEvents } = sizeOf(ctx)
  const run = (opts: { subscribers: number; events: BenchEvent[]; window?: number; ratePerSec?: number }) =>
    withRelay(side, ctx.freshDir(side), (relay) => withRelaySpan(relay, (hooks) => fanout(relay.url, { ...opts, ...hooks })))
  const burst = await run({ ...SATURATION, events: events.slice(0, burstEvents) })
  const paced = await run({ ...PACED, events: events.slice(0, pacedEvents) })
  return { burst, paced }
}

const figuresOf = (row: ReturnType<typeof relayRowsOf<Spanned<FanoutResult>>>): Figure[] => [
  row('deliveries', '/s', (r) => r.deliveriesPerSec),
  row('relay CPU per delivery', 'µs', (r) => cpuPerUnitUs(r.relayCores, r.deliveriesPerSec)),
  row('publish→delivery p50', 'ms', (r) => r.delivery.p50Ms),
  row('publish→delivery p99', 'ms', (r) => r.delivery.p99Ms),
  row('deliveries received', 'count', (r) => r.deliveries),
  row('event-loop delay p99', 'ms', (r) => r.loopDelay.p99Ms),
  row('relay CPU', 'cores', (r) => r.relayCores),
  row('load-generator CPU', 'cores', (r) => r.loadGenCores),
]

export const scenario = defineScenario({
  name: 'fanout',
  describe: 'live fan-out: 1,000 subscribers at saturation, 500 subscribers × 200 events/s',
  needs: ['baseline relay'],
  sides: comparedRelays,
  prepare: async (ctx) => ingestEvents(Math.max(sizeOf(ctx).burstEvents, sizeOf(ctx).pacedEvents)),
  measure: (side: RelayName, _round, events, ctx) => measure(side, events, ctx),
  report: (results, _events, ctx) => {
    const { burstEvents, pacedEvents } = sizeOf(ctx)
    const groups = [
      ['burst', SATURATION_GROUP],
      ['paced', PACED_GROUP],
    ] as const
    const sides = ['apiary', 'baseline', 'strfry'] as const
    return {
      figures: groups.flatMap(([key, group]) =>
        figuresOf(
          relayRowsOf(
            { apiary: pick(results.apiary, key), baseline: pick(results.baseline, key), strfry: pick(results.strfry, key) },
            group,
          ),
        ),
      ),
      notes: [
        `fanout: ${burstEvents} events at saturation, ${pacedEvents} at the fixed rate`,
        ...groups.flatMap(([key, group]) => sides.flatMap((side) => outcomeNotes(`fanout ${group}, ${side}`, pick(results[side], key)))),
      ],
    }
  },
})
