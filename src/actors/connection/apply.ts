// A frame's turn, in arrival order, inside the connection actor: the outcome of its preparation becomes an
// answer (OK, CLOSED, NOTICE) or is handed to the community. Nothing here awaits: a publish's or a count's
// answer comes back through its ask and is written to the socket from there.
import type { ClientMessage, ClientMessageError } from '../../protocols/nip01/client-message.js'
import { asVerified } from '../../protocols/nip01/event.js'
import { closedFrame, countFrame, noticeFrame, okFrame } from '../../protocols/nip01/relay-message.js'
import { prefixOf, type Reason, reason } from '../../protocols/reasons.js'
import type { CommunityMsg, PublishOutcome } from '../community/messages.js'
import { ask, tell } from '../kernel/index.js'
import { recordStanding } from './auth-standing.js'
import type { ConnectionDeps } from './connection-deps.js'
import type { Prepared } from './messages.js'

const ASK_TIMEOUT_MS = 30_000

export function sendOk(deps: ConnectionDeps, id: string, message: '' | Reason, accepted: boolean): void {
  if (!accepted) {
    const prefix = prefixOf(message) ?? 'unknown'
    deps.metrics.eventsRejected.inc({ reason: prefix })
    deps.counters?.refused(prefix)
  }
  deps.view.queue.pushControl(okFrame(id, accepted, message))
}

/** a CLOSED that refuses a REQ or COUNT, counted by its prefix for the console */
function sendClosed(deps: ConnectionDeps, subId: string, why: Reason): void {
  deps.counters?.refused(prefixOf(why) ?? 'unknown')
  deps.view.queue.pushControl(closedFrame(subId, why))
}

/** CLOSED names a subscription id: one open under it is closed too, or it would go on delivering. */
export function dropSubscription(subId: string, deps: ConnectionDeps): void {
  if (!deps.view.subs.delete(subId)) return
  deps.onSubscriptionCount(deps.view.subs.size)
  tell(deps.community.ref, { type: 'Unsubscribe', connId: deps.view.id, subId })
}

export function applyMalformed(e: ClientMessageError, deps: ConnectionDeps): void {
  if (e.kind === 'notice') {
    deps.metrics.notices.inc()
    deps.view.queue.pushControl(noticeFrame(e.message))
  } else if (e.kind === 'ok-false') sendOk(deps, e.eventId, e.reason, false)
  else {
    if (e.refusal) deps.metrics.readsRefused.inc({ reason: e.refusal })
    dropSubscription(e.subId, deps)
    sendClosed(deps, e.subId, e.reason)
  }
}

/** `done` runs once the event's answer is out (its bytes stop counting against the inbound bound). */
export function applyEvent(m: Extract<ClientMessage, { type: 'EVENT' }>, p: Prepared, deps: ConnectionDeps, done: () => void): void {
  const { event, raw } = m
  if (p.kind !== 'go') {
    if (p.kind === 'refused') sendOk(deps, event.id, p.reason, false)
    done()
    return
  }
  ask<CommunityMsg, PublishOutcome>(
    deps.community.ref,
    (reply) => ({ type: 'Publish', event: asVerified(event), raw, conn: deps.view, reply }),
    ASK_TIMEOUT_MS,
  )
    .then(
      (outcome) => {
        if (outcome.accepted) {
          deps.metrics.eventsAccepted.inc()
          deps.counters?.accepted(event.kind)
        }
        sendOk(deps, event.id, outcome.message, outcome.accepted)
      },
      (error: unknown) => {
        deps.log.error({ err: error, eventId: event.id, community: deps.community.id }, 'publish failed')
        sendOk(deps, event.id, reason('error', 'could not process the event'), false)
      },
    )
    .finally(done)
}

export function applyReq(m: Extract<ClientMessage, { type: 'REQ' }>, p: Prepared, deps: ConnectionDeps): void {
  const { subs, queue } = deps.view
  if (!subs.has(m.subId) && subs.size >= deps.limits.maxSubscriptions) {
    sendClosed(deps, m.subId, reason('blocked', `too many subscriptions (max ${deps.limits.maxSubscriptions})`))
    return
  }
  if (p.kind === 'refused') {
    dropSubscription(m.subId, deps)
    sendClosed(deps, m.subId, p.reason)
    return
  }
  subs.add(m.subId)
  deps.onSubscriptionCount(subs.size)
  if (!tell(deps.community.ref, { type: 'Subscribe', conn: deps.view, subId: m.subId, filters: m.filters })) {
    // the community is down or its mailbox is full: say so now rather than leave a REQ with no answer
    subs.delete(m.subId)
    deps.onSubscriptionCount(subs.size)
    queue.pushControl(closedFrame(m.subId, reason('error', 'this community is unavailable, retry shortly')))
  }
}

export function applyCount(m: Extract<ClientMessage, { type: 'COUNT' }>, p: Prepared, deps: ConnectionDeps): void {
  const { queue } = deps.view
  if (p.kind === 'refused') {
    sendClosed(deps, m.subId, p.reason)
    return
  }
  void ask<CommunityMsg, number | Reason>(
    deps.community.ref,
    (reply) => ({ type: 'Count', conn: deps.view, subId: m.subId, filters: m.filters, reply }),
    ASK_TIMEOUT_MS,
  ).then(
    (n) => queue.pushControl(typeof n === 'number' ? countFrame(m.subId, n) : closedFrame(m.subId, n)),
    (error: unknown) => {
      deps.log.error({ err: error, community: deps.community.id }, 'count failed')
      queue.pushControl(closedFrame(m.subId, reason('error', 'could not count')))
    },
  )
}

export function applyAuth(m: Extract<ClientMessage, { type: 'AUTH' }>, p: Prepared, deps: ConnectionDeps): void {
  if (p.kind !== 'auth') {
    sendOk(deps, m.event.id, p.kind === 'refused' ? p.reason : reason('error', 'could not verify'), false)
    return
  }
  const { result } = p
  if (result.ok) {
    if (deps.view.authed.size === 0) deps.metrics.handshakeSeconds.observe((deps.nowMs() - deps.openedAtMs) / 1000)
    recordStanding(deps, m.event.pubkey, result.value)
  } else deps.metrics.authRejected.inc({ prefix: prefixOf(result.error) ?? 'unknown' })
  sendOk(deps, m.event.id, result.ok ? '' : result.error, result.ok)
}
