// State: this socket's open subscription ids; AUTH state lives in the shared ConnView.
// Messages: Frame (one client message), AuthChecked (NIP-42 verification came back).
// Crash policy: temporary — a crash ends the connection (afterStop closes the socket); clients reconnect.
import type { WebSocket } from 'ws'
import type { Logger } from '../../infra/log.js'
import type { Metrics } from '../../infra/metrics.js'
import type { Verifier } from '../../infra/verify/verifier.js'
import type { Limits } from '../../protocols/limits.js'
import { checkOwnerAttestation, conditionsAllowKind, type OwnerAttestation, parseOwnerAttestation } from '../../protocols/nip-oa.js'
import { type ClientMessage, parseClientMessage } from '../../protocols/nip01/client-message.js'
import { asVerified, type NostrEvent } from '../../protocols/nip01/event.js'
import { closedFrame, countFrame, noticeFrame, okFrame } from '../../protocols/nip01/relay-message.js'
import { checkAuthEvent } from '../../protocols/nip42.js'
import { checkProtected } from '../../protocols/nip70.js'
import { prefixOf, type Reason, reason } from '../../protocols/reasons.js'
import { assertNever, err, ok, type Result } from '../../protocols/result.js'
import type { CommunityMsg } from '../community/messages.js'
import type { ConnView } from '../community/subscription-index.js'
import { type ActorContext, type ActorDef, ask, type TypedRef, tell } from '../kernel/index.js'
import type { AdmissionAnswer, LimitType } from '../principal/principal-actor.js'
import type { ConnectionMsg } from './messages.js'
import { admissionReason, isAuthorOnlyRequest } from './refusals.js'

export interface MutableConnView extends ConnView {
  readonly authed: Set<string>
  readonly owners: Map<string, string>
  /** the attestation each attested agent authenticated with: its `kind=` clauses bind every write */
  readonly attestations: Map<string, OwnerAttestation>
}

export interface ConnectionDeps {
  view: MutableConnView
  ws: WebSocket
  ip: string
  /** NIP-42: the URL this client connected to (scheme + normalized host with non-default port) */
  relayUrl: string
  challenge: string
  community: { id: string; ref: TypedRef<CommunityMsg> }
  verifier: Verifier
  /** `attested`: an agent by owner attestation, charged to the agent-standard tier unless the roster says more */
  admit: (principal: string, limit: LimitType, attested: boolean) => Promise<AdmissionAnswer>
  /** the community's ban row for this pubkey, if any (DESIGN §6: checked at AUTH and at every write) */
  banOf: (pubkey: string) => Promise<{ reason: string } | undefined>
  limits: Limits
  authRequired: boolean
  authWindowSeconds: number
  nowSeconds: () => number
  metrics: Metrics
  log: Logger
  /** tells the edge how many subscriptions are open (an idle socket with subscriptions is not idle) */
  onSubscriptionCount: (n: number) => void
}

interface ConnectionState {
  subs: Set<string>
}

type Ctx = ActorContext<ConnectionMsg>

export const connectionPath = (id: string) => `connection/${id}`

/** Enough to keep both verifier threads busy from one pipelining client without unbounded promises. */
const MAX_IN_FLIGHT_EVENTS = 256
const ASK_TIMEOUT_MS = 30_000

export function connectionActor(deps: ConnectionDeps): ActorDef<ConnectionState, ConnectionMsg> {
  const slots = new SlotGate(MAX_IN_FLIGHT_EVENTS)
  return {
    kind: 'connection',
    init: () => ({ subs: new Set() }),
    handle: (state, msg, ctx) => handle(state, msg, ctx, deps, slots),
    // the socket closed, the actor crashed, or the relay is shutting down: the community forgets this connection
    afterStop: () => {
      tell(deps.community.ref, { type: 'Disconnect', connId: deps.view.id })
      if (deps.ws.readyState === deps.ws.OPEN) deps.ws.close(1011, 'error: internal')
    },
    mailboxCapacity: 10_000,
    policy: { mode: 'temporary' },
  }
}

async function handle(state: ConnectionState, msg: ConnectionMsg, ctx: Ctx, deps: ConnectionDeps, slots: SlotGate) {
  switch (msg.type) {
    case 'Frame':
      return onFrame(state, msg.text, ctx, deps, slots)
    case 'AuthChecked':
      if (msg.result.ok) {
        const agent = msg.event.pubkey
        deps.view.authed.add(agent)
        const att = msg.result.value
        if (att) {
          deps.view.owners.set(agent, att.owner)
          deps.view.attestations.set(agent, att)
        } else {
          deps.view.owners.delete(agent)
          deps.view.attestations.delete(agent)
        }
      }
      sendOk(deps, msg.event.id, msg.result.ok ? '' : msg.result.error, msg.result.ok)
      return state
    default:
      return assertNever(msg)
  }
}

async function onFrame(state: ConnectionState, text: string, ctx: Ctx, deps: ConnectionDeps, slots: SlotGate) {
  const parsed = parseClientMessage(text, deps.limits, deps.nowSeconds())
  if (!parsed.ok) {
    const e = parsed.error
    if (e.kind === 'notice') {
      deps.metrics.notices.inc()
      deps.view.queue.pushControl(noticeFrame(e.message))
    } else if (e.kind === 'ok-false') sendOk(deps, e.eventId, e.reason, false)
    else {
      dropSubscription(state, e.subId, deps)
      deps.view.queue.pushControl(closedFrame(e.subId, e.reason))
    }
    return state
  }
  const m = parsed.value
  switch (m.type) {
    case 'EVENT':
      await slots.take()
      void onEvent(m, deps).finally(() => slots.give())
      return state
    case 'REQ':
      return onReq(state, m, deps)
    case 'COUNT':
      return onCount(state, m, deps)
    case 'CLOSE':
      dropSubscription(state, m.subId, deps)
      return state
    case 'AUTH':
      return onAuth(state, m, ctx, deps)
    default:
      return assertNever(m)
  }
}

/** CLOSED names a subscription id: one open under it is closed too, or it would go on delivering. */
function dropSubscription(state: ConnectionState, subId: string, deps: ConnectionDeps) {
  if (!state.subs.delete(subId)) return
  deps.onSubscriptionCount(state.subs.size)
  tell(deps.community.ref, { type: 'Unsubscribe', connId: deps.view.id, subId })
}

function sendOk(deps: ConnectionDeps, id: string, message: '' | Reason, accepted: boolean) {
  if (!accepted) deps.metrics.eventsRejected.inc({ reason: prefixOf(message) ?? 'unknown' })
  deps.view.queue.pushControl(okFrame(id, accepted, message))
}

/** The principal an unauthenticated request is charged to is its IP: an unverified pubkey can't spend a budget. */
function principalOf(deps: ConnectionDeps, pubkey?: string): string {
  if (pubkey !== undefined && deps.view.authed.has(pubkey)) return pubkey
  const first = deps.view.authed.values().next().value
  return pubkey === undefined && first !== undefined ? first : `ip:${deps.ip}`
}

async function onEvent(m: Extract<ClientMessage, { type: 'EVENT' }>, deps: ConnectionDeps): Promise<void> {
  const { event, raw } = m
  deps.metrics.eventsReceived.inc()
  const refuse = (r: Reason) => sendOk(deps, event.id, r, false)
  try {
    if (deps.authRequired && deps.view.authed.size === 0)
      return refuse(reason('auth-required', 'this relay requires authentication to publish'))
    const prot = checkProtected(event, deps.view.authed)
    if (!prot.ok) return refuse(prot.error)
    const principal = principalOf(deps, event.pubkey)
    const admission = await deps.admit(principal, 'events', deps.view.owners.has(principal))
    if (!admission.allowed) return refuse(admissionReason(admission, deps.metrics, 'events'))
    const att = deps.view.attestations.get(event.pubkey)
    if (att && !conditionsAllowKind(att, event.kind)) return refuse(reason('restricted', `the owner attestation does not allow kind ${event.kind}`))
    const ban = await banOfPrincipal(deps, event.pubkey)
    if (ban) return refuse(reason('blocked', ban.reason))
    const verdict = await deps.verifier.verify(event)
    if (verdict !== 'ok') return refuse(reason('invalid', verdict === 'bad-id' ? 'event id does not match its content' : 'bad signature'))
    const outcome = await ask<CommunityMsg, Parameters<Extract<CommunityMsg, { type: 'Publish' }>['reply']>[0]>(
      deps.community.ref,
      (reply) => ({ type: 'Publish', event: asVerified(event), raw, conn: deps.view, reply }),
      ASK_TIMEOUT_MS,
    )
    if (outcome.accepted) deps.metrics.eventsAccepted.inc()
    sendOk(deps, event.id, outcome.message, outcome.accepted)
  } catch (error) {
    deps.log.error({ err: error, eventId: event.id, community: deps.community.id }, 'publish failed')
    refuse(reason('error', 'could not process the event'))
  }
}

async function gateRequest(deps: ConnectionDeps, filters: { kinds?: number[] }[]): Promise<Reason | null> {
  if (deps.authRequired && deps.view.authed.size === 0) return reason('auth-required', 'this relay requires authentication to read')
  if (deps.view.authed.size === 0 && isAuthorOnlyRequest(filters))
    return reason('auth-required', 'direct messages are served only to their author or recipient')
  const principal = principalOf(deps)
  const admission = await deps.admit(principal, 'reqs', deps.view.owners.has(principal))
  if (!admission.allowed) return admissionReason(admission, deps.metrics, 'reqs')
  return null
}

async function onReq(state: ConnectionState, m: Extract<ClientMessage, { type: 'REQ' }>, deps: ConnectionDeps) {
  if (!state.subs.has(m.subId) && state.subs.size >= deps.limits.maxSubscriptions) {
    deps.view.queue.pushControl(closedFrame(m.subId, reason('blocked', `too many subscriptions (max ${deps.limits.maxSubscriptions})`)))
    return state
  }
  const refused = await gateRequest(deps, m.filters)
  if (refused) {
    dropSubscription(state, m.subId, deps)
    deps.view.queue.pushControl(closedFrame(m.subId, refused))
    return state
  }
  state.subs.add(m.subId)
  deps.onSubscriptionCount(state.subs.size)
  tell(deps.community.ref, { type: 'Subscribe', conn: deps.view, subId: m.subId, filters: m.filters })
  return state
}

async function onCount(state: ConnectionState, m: Extract<ClientMessage, { type: 'COUNT' }>, deps: ConnectionDeps) {
  const refused = await gateRequest(deps, m.filters)
  if (refused) {
    deps.view.queue.pushControl(closedFrame(m.subId, refused))
    return state
  }
  const view = deps.view
  void ask<CommunityMsg, number | Reason>(
    deps.community.ref,
    (reply) => ({ type: 'Count', conn: view, subId: m.subId, filters: m.filters, reply }),
    ASK_TIMEOUT_MS,
  ).then(
    (n) => view.queue.pushControl(typeof n === 'number' ? countFrame(m.subId, n) : closedFrame(m.subId, n)),
    (error: unknown) => {
      deps.log.error({ err: error, community: deps.community.id }, 'count failed')
      view.queue.pushControl(closedFrame(m.subId, reason('error', 'could not count')))
    },
  )
  return state
}

async function onAuth(state: ConnectionState, m: Extract<ClientMessage, { type: 'AUTH' }>, ctx: Ctx, deps: ConnectionDeps) {
  const { event } = m
  // each AUTH costs us a signature check: it spends from the REQ budget of the IP (no pubkey is proven yet)
  const admission = await deps.admit(`ip:${deps.ip}`, 'reqs', false)
  if (!admission.allowed) {
    sendOk(deps, event.id, admissionReason(admission, deps.metrics, 'reqs'), false)
    return state
  }
  const checked = checkAuthEvent(event, {
    challenge: deps.challenge,
    relayUrl: deps.relayUrl,
    nowSeconds: deps.nowSeconds(),
    windowSeconds: deps.authWindowSeconds,
  })
  if (!checked.ok) {
    sendOk(deps, event.id, checked.error, false)
    return state
  }
  void checkAuthSignatureAndBan(event, deps).then(
    (result) => tell(ctx.self, { type: 'AuthChecked', event, result }),
    (error: unknown) => {
      deps.log.error({ err: error, community: deps.community.id }, 'AUTH check failed')
      tell(ctx.self, { type: 'AuthChecked', event, result: { ok: false, error: reason('error', 'could not verify') } })
    },
  )
  return state
}

/**
 * The AUTH signature, the pubkey's ban, and an owner attestation if the AUTH event carries one: a valid one
 * makes the pubkey an agent of its owner, whose ban then covers it (docs/agent-attestation.md).
 */
async function checkAuthSignatureAndBan(event: NostrEvent, deps: ConnectionDeps): Promise<Result<OwnerAttestation | undefined>> {
  if ((await deps.verifier.verify(event)) !== 'ok') return err(reason('invalid', 'bad AUTH signature'))
  const ban = await deps.banOf(event.pubkey)
  if (ban) return err(reason('blocked', ban.reason))
  const parsed = parseOwnerAttestation(event.tags)
  if (!parsed.ok || parsed.value === undefined) return parsed
  // NIP-AA: time conditions are judged at the AUTH's own created_at (kept within the AUTH window of now)
  const checked = checkOwnerAttestation(parsed.value, { agentPubkey: event.pubkey, nowSeconds: event.created_at })
  if (!checked.ok) return checked
  const ownerBan = await deps.banOf(checked.value.owner)
  if (ownerBan) return err(reason('blocked', `the owner of this agent is banned: ${ownerBan.reason}`))
  return ok(parsed.value)
}

/** A pubkey's own ban, or the ban of the owner it authenticated under. */
async function banOfPrincipal(deps: ConnectionDeps, pubkey: string): Promise<{ reason: string } | undefined> {
  const own = await deps.banOf(pubkey)
  if (own) return own
  const owner = deps.view.owners.get(pubkey)
  const ownerBan = owner === undefined ? undefined : await deps.banOf(owner)
  return ownerBan && { reason: `the owner of this agent is banned: ${ownerBan.reason}` }
}

/** A counting semaphore: the connection waits (and so stops reading its mailbox) instead of buffering promises. */
class SlotGate {
  private free: number
  private readonly waiters: (() => void)[] = []
  constructor(n: number) {
    this.free = n
  }
  take(): Promise<void> | void {
    if (this.free > 0) {
      this.free--
      return
    }
    return new Promise((resolve) => this.waiters.push(resolve))
  }
  give(): void {
    const next = this.waiters.shift()
    if (next) next()
    else this.free++
  }
}
