// The give-up path: a community that gave up is down until its kind supervisor respawns it, and the kernel
// hands each message still queued to onDropped (before the asks in it fail). Nothing may vanish: what can be
// answered now is (a stored event is OK true), the results of its own I/O are offered again for after the
// respawn, a REQ that never ran is closed, a remote event's subscriptions are closed
// (docs/architecture.md §4.5, §10). It acts only on what survives the actor (CommunitySurvivors).
import { parseEventShape } from '../../protocols/nip01/event.js'
import { reason } from '../../protocols/reasons.js'
import { assertNever } from '../../protocols/result.js'
import { type TypedRef, tellUntilTaken } from '../kernel/index.js'
import { broadcastLogged } from './cluster-control.js'
import { unholdPresence } from './community-presence.js'
import type { CommunityDeps, CommunitySurvivors } from './community-state.js'
import { disconnectHere } from './disconnects.js'
import { actOnLag } from './lagged.js'
import { lose, loseMatching } from './live-feed.js'
import { lostSettled } from './membership-changes.js'
import { type CommunityMsg, REDELIVER } from './messages.js'
import { tellRegistry } from './registry-tells.js'
import { lostAnnounce } from './relay-events.js'
import { REMOTE_UNDELIVERED } from './remote-events.js'
import { DUPLICATE, NOT_PROCESSED, NOT_STORED, PRESENCE_NOT_RECORDED } from './write-answers.js'
import { lostCommand } from './write-commands.js'
import { lostCommit } from './write-effects.js'

type Msg<T extends CommunityMsg['type']> = Extract<CommunityMsg, { type: T }>
/** offers a message again for after the respawn; `onGiveUp` if it is never taken */
type Again = (m: CommunityMsg, onGiveUp?: () => void) => void

const UNAVAILABLE = reason('error', 'this community is unavailable; subscribe again shortly')

export function onDropped(msg: CommunityMsg, self: TypedRef<CommunityMsg>, s: CommunitySurvivors, deps: CommunityDeps): void {
  const again: Again = (m, onGiveUp = () => {}) => tellUntilTaken(self, m, { ...REDELIVER, onGiveUp })
  switch (msg.type) {
    case 'Prepared':
    case 'Moderated':
    case 'Commanded':
    case 'Saved':
    case 'Applied':
    case 'WriteDone':
      droppedWrite(msg, again, s, deps)
      return
    case 'PresenceWritten':
      droppedPresence(msg, again, s, deps)
      return
    case 'Announce':
      again(msg, () => lostAnnounce(s, msg, deps))
      return
    case 'MembershipSettled': {
      // its asker hears now; its events are delivered after the respawn
      msg.reply?.(msg.outcome.ok ? msg.outcome.value.answer : { accepted: false, message: NOT_PROCESSED })
      msg.done?.()
      const later = { ...msg, reply: undefined, done: undefined }
      again(later, () => lostSettled(s, later, deps))
      return
    }
    case 'MembersChanged':
      again(msg, () => msg.done?.())
      return
    case 'ReadResult':
      again(msg, () => {
        if (msg.sub) lose(s.index, [msg.sub], UNAVAILABLE)
      })
      return
    case 'Subscribe':
      // the connection believes it subscribed: it hears it is not
      msg.conn.lose(msg.subId, UNAVAILABLE)
      return
    case 'RemoteEvent':
      droppedRemoteEvent(msg, s, deps)
      return
    case 'Lagged':
      // a lost disconnect order is re-checked by the respawned community; the rest is acted on now
      if (msg.stream === 'conn-control') again(msg, () => actOnLag(s, msg.stream, msg.lag, deps))
      else actOnLag(s, msg.stream, msg.lag, deps)
      return
    case 'DisconnectPubkey':
    case 'DisconnectIp':
    case 'DisconnectCommunity':
      disconnectHere(s.conns, msg, deps)
      return
    case 'InvalidateCache':
      s.gate.invalidate(msg.op)
      if (msg.broadcast) void broadcastLogged(deps, 'cache-invalidation', msg.op)
      return
    case 'PublishChannelState':
    case 'BannedEventsRead':
      again(msg)
      return
    case 'Publish':
    case 'Count':
    case 'Stats':
      // asks: they fail with ActorDownError next
      return
    case 'Control':
      // verified again after the respawn; never taken, it is a lag of one like a payload the bridge skipped
      again(msg, () => actOnLag(s, msg.channel, { skipped: 1, missed: [msg.raw], complete: true, interrupted: false }, deps))
      return
    case 'Join':
    case 'Disconnect':
    case 'Unsubscribe':
    case 'Sweep':
    case 'AgentScan':
    case 'RecordChanged':
      // covered by the next request's registration, the sweep (or scan), the connection's own set and the next
      // revalidation
      return
    default:
      assertNever(msg)
  }
}

function droppedWrite(
  msg: Msg<'Prepared' | 'Moderated' | 'Commanded' | 'Saved' | 'Applied' | 'WriteDone'>,
  again: Again,
  s: CommunitySurvivors,
  deps: CommunityDeps,
) {
  switch (msg.type) {
    case 'Saved': {
      const o = msg.outcome
      msg.reply?.(
        o.status === 'saved'
          ? { accepted: true, message: '' }
          : o.status === 'duplicate'
            ? { accepted: true, message: DUPLICATE }
            : { accepted: false, message: NOT_STORED },
      )
      // taken after the respawn as a late commit: fan-out, the channel change, the write order
      const late = { ...msg, reply: undefined }
      again(late, () => lostCommit(s, late, deps))
      return
    }
    case 'Applied':
      msg.reply?.({ accepted: true, message: '' })
      again({ ...msg, reply: undefined }, () => lostCommit(s, msg, deps))
      return
    case 'Prepared':
      // not stored: its writer hears so now, and the channel it held goes on after the respawn
      msg.publish.reply({ accepted: false, message: NOT_PROCESSED })
      break
    case 'Moderated':
      // the owner node decided it: its writer hears the answer now
      msg.publish.reply(msg.outcome.ok ? msg.outcome.value : { accepted: false, message: NOT_PROCESSED })
      break
    case 'Commanded':
      // acted on: its writer hears the answer now, and the relay's events reach the other nodes
      lostCommand(s, msg, deps)
      break
    case 'WriteDone':
      again(msg)
      return
  }
  if (msg.ordered !== undefined) again({ type: 'WriteDone', channel: msg.ordered })
}

function droppedPresence(msg: Msg<'PresenceWritten'>, again: Again, s: CommunitySurvivors, deps: CommunityDeps) {
  const { publish, outcome, hold } = msg
  if (!outcome.ok && hold !== undefined) unholdPresence(s.presenceHolds, hold)
  publish.reply(outcome.ok ? { accepted: true, message: '' } : { accepted: false, message: PRESENCE_NOT_RECORDED })
  // a goodbye: relayed, and its departure sent, after the respawn; if never, the registry's sweep has the agent again
  if (hold === undefined) again(msg, () => tellRegistry(deps, { type: 'GoodbyeDone', pubkey: publish.event.pubkey, cleared: false }))
}

function droppedRemoteEvent(msg: Msg<'RemoteEvent'>, s: CommunitySurvivors, deps: CommunityDeps) {
  const event = parseEventShape(msg.raw)
  if (event) deps.lagged(loseMatching(s.index, event, REMOTE_UNDELIVERED))
}
