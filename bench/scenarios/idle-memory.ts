// `idle-memory`: sockets that never send anything (upgrade done, the relay's first frame received or 300 ms
// passed), then the relay process's memory after forced GC: what one idle connection holds, beside the baseline.
import { relayRowsOf } from '../lib/figures'
import { type IdleMemoryResult, idleConnectionMemory } from '../lib/load/idle'
import { type RelayName, withRelay } from '../lib/relay-process'
import { type Context, defineScenario, nothingToPrepare } from '../lib/scenario'
import { comparedRelays } from '../lib/strfry-relay'

const connectionsOf = (ctx: Context) => (ctx.quick ? 1_000 : 2_000)

export const scenario = defineScenario({
  name: 'idle-memory',
  describe: 'memory the relay holds per idle connection',
  needs: ['baseline relay'],
  sides: comparedRelays,
  prepare: nothingToPrepare,
  measure: (side: RelayName, _round, _prepared, ctx): Promise<IdleMemoryResult> =>
    withRelay(side, ctx.freshDir(side), (relay) =>
      idleConnectionMemory(relay.url, { connections: connectionsOf(ctx) }, () => relay.memory()),
    ),
  report: (results, _prepared, ctx) => {
    const row = relayRowsOf(results, `${connectionsOf(ctx)} idle connections`)
    return {
      figures: [
        row('heap+external per connection', 'KiB', (r) => r.heapPerConnection / 1024),
        row('rss per connection', 'KiB', (r) => r.rssPerConnection / 1024),
      ],
      notes: results.strfry?.length ? ['idle-memory: strfry has no managed heap; its heap+external figure is its RSS'] : [],
    }
  },
})
