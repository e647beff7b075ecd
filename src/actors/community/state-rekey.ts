// Channel state (39000–39005) that a former key of the community signed: the relay key, which signs for no
// community (infra/community-key.ts), or the derived key a configured one replaced. Left stored, a
// REQ for a channel's 39000 would return a version per key and a client could not tell which is the relay's.
// On start each community signs such a channel's state again with its own key, then deletes the old versions:
// beside the actor, one page at a time, and what it stored comes back to the actor as an Announce.
import { dTagOf } from '../../protocols/nip01/kinds.js'
import { GROUP_STATE_KINDS, KIND_GROUP_ADMINS, KIND_GROUP_MEMBERS, KIND_GROUP_METADATA } from '../../protocols/nip29.js'
import { KIND_GROUP_PINS } from '../../protocols/nip29-pins.js'
import { tellUntilTaken } from '../kernel/index.js'
import { type ChannelDeps, publishState, type RelayEvent, type StateWanted } from './community-channels.js'
import type { CommunityDeps, CommunitySurvivors, Ctx } from './community-state.js'
import { type CommunityMsg, REDELIVER } from './messages.js'
import { lostAnnounce } from './relay-events.js'

// Old versions read, re-signed and deleted at a time: one page's reads and writes stay small beside the writes of
// the community's clients, and what one page stores waits in memory until its Announce.
const REKEY_PAGE_EVENTS = 100

// Per community, across its actor's restarts: a restart does not start a second pass beside the first, and a
// finished pass is not run again; one that failed (the store down) is run again by the next restart.
const passes = new WeakMap<CommunitySurvivors, 'running' | 'done'>()

/** Start the pass, unless one is running or has finished for this community. */
export function startStateRekey(ctx: Ctx, survivors: CommunitySurvivors, channels: ChannelDeps, deps: CommunityDeps): void {
  if (deps.formerPubkeys.length === 0 || passes.has(survivors)) return
  passes.set(survivors, 'running')
  const announce = (events: RelayEvent[]) => {
    const msg: CommunityMsg = { type: 'Announce', events, from: 'channel-state' }
    tellUntilTaken(ctx.self, msg, { ...REDELIVER, onGiveUp: () => lostAnnounce(survivors, msg, deps) })
  }
  rekeyChannelState(channels, deps.formerPubkeys, survivors, announce).then(
    (replaced) => {
      passes.set(survivors, 'done')
      if (replaced > 0) deps.log.info({ community: deps.record.id, replaced }, 'channel state signed again with the community key')
    },
    (error: unknown) => {
      passes.delete(survivors)
      deps.log.warn({ err: error, community: deps.record.id }, 'channel state under a former key not re-signed; the next start tries again')
    },
  )
}

/**
 * Each page: the channels whose state a former key signed get the versions their own key has not signed yet
 * (another node may have signed them already), then the old versions are deleted. Resolves to how many were.
 */
export async function rekeyChannelState(
  d: ChannelDeps,
  formerPubkeys: readonly string[],
  survivors: Pick<CommunitySurvivors, 'inflight'>,
  announce: (events: RelayEvent[]) => void,
): Promise<number> {
  let replaced = 0
  for (;;) {
    const filter = { kinds: [...GROUP_STATE_KINDS], authors: [...formerPubkeys], limit: REKEY_PAGE_EVENTS }
    const stale = (await d.events.query(d.community, [filter], { now: d.nowSeconds() })).map((s) => s.event)
    if (stale.length === 0) return replaced
    const wanted = await stateToSign(d, stale)
    // the versions are stored before their Announce is handled: reads meanwhile remember their ids (community-reads.ts)
    survivors.inflight.effects++
    const out: RelayEvent[] = []
    try {
      for (const [channel, what] of wanted) await publishState(d, channel, out, what)
      const ids = stale.map((e) => e.id)
      const deleted = await d.events.deleteEvents(d.community, ids)
      replaced += deleted.length
      // nothing deleted: the store keeps them (it failed quietly); the next start tries again rather than loop here
      if (deleted.length === 0) return replaced
    } finally {
      announce(out)
    }
  }
}

/** For each live channel among `stale`'s, what its own key has not signed yet; a deleted channel's needs nothing. */
async function stateToSign(d: ChannelDeps, stale: { kind: number; tags: string[][] }[]): Promise<Map<string, StateWanted>> {
  const ids = [...new Set(stale.map(dTagOf))]
  const rows = await d.channels.get(d.community, ids)
  const live = new Set(ids.filter((id) => rows.get(id)?.deleted === false))
  const wanted = new Map<string, StateWanted>()
  if (live.size === 0) return wanted
  const filter = {
    kinds: [...GROUP_STATE_KINDS],
    authors: [d.relayPubkey],
    tags: { d: [...live] },
    limit: live.size * GROUP_STATE_KINDS.length,
  }
  const current = await d.events.query(d.community, [filter], { now: d.nowSeconds() })
  const signed = new Set(current.map((s) => `${s.event.kind}:${dTagOf(s.event)}`))
  for (const e of stale) {
    const channel = dTagOf(e)
    if (!live.has(channel) || signed.has(`${e.kind}:${channel}`)) continue
    const what = wanted.get(channel) ?? {}
    if (e.kind === KIND_GROUP_METADATA) what.metadata = true
    if (e.kind === KIND_GROUP_ADMINS || e.kind === KIND_GROUP_MEMBERS) what.members = true
    if (e.kind === KIND_GROUP_PINS) what.pins = true
    wanted.set(channel, what)
  }
  return wanted
}
