// `channel-fanout` (Apiary only: the baseline has no NIP-29): live fan-out through the channel access gate,
// with the `fanout` counts and every subscriber authenticated (NIP-42) as its own key in all three variants,
// so they differ only in what the gate does: `plain` (kind 1, no `h` tag: the baseline column), a public
// channel, a private one (kind 9 with an `h` tag; every subscriber and author a member, put in by 9000 before
// the clock). The ratios are the cost of the NIP-29 write check per post and of the access gate per delivery.
import { connectAuthed, setUpChannel } from '../lib/channel-setup'
import { cpuPerUnitUs, median, outcomeNotes, rowsOf } from '../lib/figures'
import { type BenchEvent, benchKeys, ingestEvents, PRESIGNED_CHANNEL_CONFIG, signEvent } from '../lib/fixtures'
import { type FanoutResult, fanout } from '../lib/load/fanout'
import { withRelay } from '../lib/relay-process'
import { type SpanHooks, type Spanned, withRelaySpan } from '../lib/relay-span'
import { type Context, defineScenario, type Report, type Results } from '../lib/scenario'

const CHANNEL_VARIANTS = ['plain', 'public channel', 'private channel'] as const
type ChannelVariant = (typeof CHANNEL_VARIANTS)[number]
type ChannelName = Exclude<ChannelVariant, 'plain'>

type Key = ReturnType<typeof benchKeys>[number]

interface ChannelSet {
  id: string
  /** the creator's 9007, then one 9000 put-user per other author and per subscriber */
  setup: BenchEvent[]
  /** kind 9 posts to the channel, shaped like the plain events */
  posts: BenchEvent[]
}

interface ChannelFixtures {
  subscribers: Key[]
  plain: BenchEvent[]
  channels: Record<ChannelName, ChannelSet>
}

type ChannelFanoutResult = FanoutResult & {
  /** 9007 + put-users over the wire, before the clock (0 for plain) */
  setupMs: number
  members: number
}

const AUTHORS = 16

/** Every key and event the scenario sends, except the AUTH events (they name each connection's challenge). */
function channelFixtures(opts: { subscribers: number; events: number }): ChannelFixtures {
  const subscribers = benchKeys(opts.subscribers, 'channel-subscriber')
  const authors = benchKeys(AUTHORS, 'channel-author')
  const now = Math.floor(Date.now() / 1000)
  const channel = (id: string, flags: string[][]): ChannelSet => {
    const creator = authors[0]!
    const create = signEvent({ kind: 9007, created_at: now - 3_600, tags: [['h', id], ['name', id], ...flags], content: '' }, creator)
    const members = [...authors.slice(1), ...subscribers]
    const puts = members.map((m) =>
      signEvent(
        {
          kind: 9000,
          created_at: now - 3_600,
          tags: [
            ['h', id],
            ['p', m.pubkey],
          ],
          content: '',
        },
        creator,
      ),
    )
    const posts = Array.from({ length: opts.events }, (_, i) =>
      signEvent(
        {
          kind: 9,
          created_at: now - 1_800 + Math.floor((i * 1_700) / opts.events),
          tags: [['h', id]],
          content: `bench event ${i} `.repeat(14),
        },
        authors[i % AUTHORS]!,
      ),
    )
    return { id, setup: [create, ...puts], posts }
  }
  return {
    subscribers,
    plain: ingestEvents(opts.events),
    channels: { 'public channel': channel('bench-pub', []), 'private channel': channel('bench-priv', [['private']]) },
  }
}

/** One variant on a fresh relay at `url`: set the channel up (not timed), then `fanout` with authenticated subscribers. */
async function channelFanout(url: string, variant: ChannelVariant, fx: ChannelFixtures, hooks: SpanHooks): Promise<ChannelFanoutResult> {
  let events = fx.plain
  let filter: Record<string, unknown> = { kinds: [1], '#t': ['bench'] }
  let setupMs = 0
  let members = 0
  if (variant !== 'plain') {
    const ch = fx.channels[variant]
    const t0 = performance.now()
    await setUpChannel(url, ch.setup)
    setupMs = Math.round(performance.now() - t0)
    members = ch.setup.length // the creator (admin) and everyone put in
    events = ch.posts
    filter = { kinds: [9], '#h': [ch.id] }
  }
  const r = await fanout(url, {
    subscribers: fx.subscribers.length,
    events,
    filter,
    openSubscriber: (i) => connectAuthed(url, [fx.subscribers[i]!]),
    ...hooks,
  })
  return { ...r, setupMs, members }
}

const sizeOf = (ctx: Context) => ({ subscribers: 1_000, events: ctx.quick ? 100 : 500 })

function report(results: Results<ChannelVariant, Spanned<ChannelFanoutResult>>, fx: ChannelFixtures): Report {
  const figures = (['public channel', 'private channel'] as const).flatMap((v) => {
    const row = rowsOf(results[v], results.plain, `${v} vs plain, ${fx.subscribers.length} authenticated subscribers`)
    return [
      row('deliveries', '/s', (r) => r.deliveriesPerSec),
      row('relay CPU per delivery', 'µs', (r) => cpuPerUnitUs(r.relayCores, r.deliveriesPerSec)),
      row('publish→delivery p50', 'ms', (r) => r.delivery.p50Ms),
      row('publish→delivery p99', 'ms', (r) => r.delivery.p99Ms),
      row('deliveries received', 'count', (r) => r.deliveries),
      row('relay CPU', 'cores', (r) => r.relayCores),
    ]
  })
  const setupS = median((results['private channel'] ?? []).flatMap((o) => (o.ok ? [o.value.setupMs / 1000] : [])))
  const notes = [`channel-fanout: channel set-up (9007 + put-users, not timed) took ${setupS.toFixed(1)} s`]
  for (const v of CHANNEL_VARIANTS) {
    notes.push(...outcomeNotes(`channel-fanout ${v}`, results[v]))
    results[v]?.forEach((o, i) => {
      if (o.ok && o.value.closedSubscribers)
        notes.push(`channel-fanout ${v} r${i + 1}: ${o.value.closedSubscribers} subscribers closed by the relay`)
    })
  }
  return { figures, notes }
}

export const scenario = defineScenario({
  name: 'channel-fanout',
  describe: 'live fan-out to authenticated subscribers: plain events, a public and a private NIP-29 channel',
  needs: [],
  sides: () => CHANNEL_VARIANTS,
  prepare: async (ctx) => channelFixtures(sizeOf(ctx)),
  measure: (variant: ChannelVariant, _round, fx, ctx): Promise<Spanned<ChannelFanoutResult>> =>
    withRelay(
      'apiary',
      ctx.freshDir('apiary'),
      (relay) => withRelaySpan(relay, (hooks) => channelFanout(relay.url, variant, fx, hooks)),
      PRESIGNED_CHANNEL_CONFIG,
    ),
  report: (results, fx) => report(results, fx),
})
