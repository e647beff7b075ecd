// `req-burst`: a reconnect storm on the REQ data set. 4,000 sockets (quick 1,000) open at once and each sends
// one REQ for an author's latest notes the moment it is open: REQ → EOSE per socket, refusals by reason, and,
// with every REQ still open, what the relay holds per connection. Apiary beside the baseline and strfry.
import { outcomeNotes, relayRowsOf } from '../lib/figures'
import { type Dataset, reqDataset } from '../lib/fixtures'
import { makeQueries } from '../lib/load/req'
import { type ReqBurstResult, reqBurst } from '../lib/load/req-burst'
import { type RelayName, withRelay } from '../lib/relay-process'
import { preloadOnce } from '../lib/req-preload'
import { type Context, defineScenario } from '../lib/scenario'
import { comparedRelays } from '../lib/strfry-relay'

const sizeOf = (ctx: Context) => (ctx.quick ? { stored: 10_000, connections: 1_000 } : { stored: 100_000, connections: 4_000 })

async function measure(side: RelayName, ds: Dataset, round: number, ctx: Context): Promise<ReqBurstResult> {
  const dir = await preloadOnce(side, ds, ctx)
  const filters = makeQueries(ds, 'authors+kinds', sizeOf(ctx).connections, 11 + round)
  return withRelay(side, dir, (relay) => reqBurst(relay.url, { filters }, () => relay.memory()))
}

export const scenario = defineScenario({
  name: 'req-burst',
  describe: 'a reconnect storm: thousands of sockets opened at once, one REQ each, on a stored data set',
  needs: ['baseline relay'],
  sides: comparedRelays,
  prepare: async (ctx) => reqDataset(sizeOf(ctx).stored),
  measure: (side: RelayName, round, ds, ctx) => measure(side, ds, round, ctx),
  report: (results, ds, ctx) => {
    const row = relayRowsOf(results, `${sizeOf(ctx).connections} sockets × one REQ (${ds.events.length} stored)`)
    return {
      figures: [
        row('REQs served (EOSE)', 'count', (r) => r.served),
        row('REQs refused (CLOSED)', 'count', (r) => Object.values(r.rejected).reduce((a, b) => a + b, 0)),
        row('REQ → EOSE p50', 'ms', (r) => r.eose.p50Ms),
        row('REQ → EOSE p99', 'ms', (r) => r.eose.p99Ms),
        row('first connect → last EOSE', 'ms', (r) => r.stormMs),
        row('heap+external per connection, REQ open', 'KiB', (r) => r.heapPerConnection / 1024),
        row('rss per connection, REQ open', 'KiB', (r) => r.rssPerConnection / 1024),
      ],
      notes: [
        ...(['apiary', 'baseline', 'strfry'] as const).flatMap((side) => outcomeNotes(`req-burst ${side}`, results[side])),
        ...(results.strfry?.length ? ['req-burst: strfry has no managed heap; its heap+external figure is its RSS'] : []),
      ],
    }
  },
})
