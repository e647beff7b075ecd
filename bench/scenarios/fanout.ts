// `fanout`: 1,000 subscribers REQ one filter on an empty relay, one publisher sends events pipelined; every
// event reaches every subscriber. Deliveries/s from the first publish to the last delivery, publish→delivery
// latency (send times recorded per event id, one clock), and the relay's CPU per delivery, beside the baseline
// and strfry.
import { cpuPerUnitUs, outcomeNotes, relayRowsOf } from '../lib/figures'
import { ingestEvents } from '../lib/fixtures'
import { type FanoutResult, fanout } from '../lib/load/fanout'
import { type RelayName, withRelay } from '../lib/relay-process'
import { type Spanned, withRelaySpan } from '../lib/relay-span'
import { type Context, defineScenario } from '../lib/scenario'
import { comparedRelays } from '../lib/strfry-relay'

const sizeOf = (ctx: Context) => ({ subscribers: 1_000, events: ctx.quick ? 100 : 500 })

export const scenario = defineScenario({
  name: 'fanout',
  describe: 'live fan-out: 1,000 subscribers, one publisher',
  needs: ['baseline relay'],
  sides: comparedRelays,
  prepare: async (ctx) => ingestEvents(sizeOf(ctx).events),
  measure: (side: RelayName, _round, events, ctx): Promise<Spanned<FanoutResult>> =>
    withRelay(side, ctx.freshDir(side), (relay) =>
      withRelaySpan(relay, (hooks) => fanout(relay.url, { subscribers: sizeOf(ctx).subscribers, events, ...hooks })),
    ),
  report: (results, events, ctx) => {
    const row = relayRowsOf(results, `${sizeOf(ctx).subscribers} subscribers × ${events.length} events`)
    return {
      figures: [
        row('deliveries', '/s', (r) => r.deliveriesPerSec),
        row('relay CPU per delivery', 'µs', (r) => cpuPerUnitUs(r.relayCores, r.deliveriesPerSec)),
        row('publish→delivery p50', 'ms', (r) => r.delivery.p50Ms),
        row('publish→delivery p99', 'ms', (r) => r.delivery.p99Ms),
        row('deliveries received', 'count', (r) => r.deliveries),
        row('event-loop delay p99', 'ms', (r) => r.loopDelay.p99Ms),
        row('relay CPU', 'cores', (r) => r.relayCores),
        row('load-generator CPU', 'cores', (r) => r.loadGenCores),
      ],
      notes: (['apiary', 'baseline', 'strfry'] as const).flatMap((side) => outcomeNotes(`fanout ${side}`, results[side])),
    }
  },
})
