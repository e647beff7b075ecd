// Events other nodes accepted, as a community takes them from the bus (docs/architecture.md §6.7): parsed,
// dropped if expired, then through the same live feed and access gate as local events, their signature
// checked again beside the actor first. One the community cannot take, or a gap in the bus, closes the
// subscriptions it would have reached (lagged.ts): never a silent gap.
import { KIND_DEPARTURE } from '../../protocols/agent-registry.js'
import { type NostrEvent, parseEventShape } from '../../protocols/nip01/event.js'
import { isExpired } from '../../protocols/nip40.js'
import { reason } from '../../protocols/reasons.js'
import type { ClusterDeps, CommunityDeps, CommunityState } from './community-state.js'
import type { CommunityMsg } from './messages.js'

export const REMOTE_UNDELIVERED = reason('error', 'an event from another node could not be delivered; subscribe again to catch up')
export const LIVE_INTERRUPTED = reason('error', 'live events from other nodes were interrupted; subscribe again to catch up')

/**
 * A remote event as the live feed takes it: parsed here, its signature checked beside the actor before it is
 * delivered (Redis write access must not let anyone put words in a pubkey's mouth). Anything Redis hands us
 * that isn't a well-formed, live event is dropped and counted.
 */
export function parseRemoteEvent(raw: string, d: ClusterDeps): { event: NostrEvent; check: () => Promise<boolean> } | undefined {
  const e = parseEventShape(raw)
  if (!e) {
    d.rejected('remote-event-json')
    return undefined
  }
  if (isExpired(e, d.nowSeconds())) return undefined
  const check = async () => {
    const ok = (await d.verifier.verify(e).catch(() => 'bad-sig')) === 'ok'
    if (!ok) d.rejected('remote-event-signature')
    return ok
  }
  return { event: e, check }
}

export function onRemoteEvent(
  state: CommunityState,
  msg: Extract<CommunityMsg, { type: 'RemoteEvent' }>,
  deps: CommunityDeps,
): CommunityState {
  const remote = parseRemoteEvent(msg.raw, deps.cluster)
  if (!remote) return state
  // a departure is the relay's word (docs/agent-registry.md): from the bus too, only under the community's key
  if (remote.event.kind === KIND_DEPARTURE && remote.event.pubkey !== deps.communityPubkey) {
    deps.cluster.rejected('remote-departure-signer')
    return state
  }
  state.feed.offer(remote.event, msg.raw, remote.check)
  return state
}
