// A frame's preparation, beside the connection actor: everything that takes I/O or CPU elsewhere (admission
// in the principal actor, ban lookups in the store, the signature in the verifier: the pool for bulk events, the
// event loop for AUTH, presence and announcements, control-lane.ts). It reads the
// connection's AUTH state, which only an applied AUTH changes (a barrier: see frame-sequence.ts), and
// changes nothing; the actor applies the outcome in arrival order.
import { conditionsAllowKind } from '../../protocols/nip-oa.js'
import type { ClientMessage } from '../../protocols/nip01/client-message.js'
import { checkAuthEvent } from '../../protocols/nip42.js'
import { asksForInvite } from '../../protocols/nip43.js'
import { checkProtected } from '../../protocols/nip70.js'
import { type Reason, reason } from '../../protocols/reasons.js'
import { err, ok } from '../../protocols/result.js'
import { type AdmissionAnswer, ipPrincipalOf } from '../principal/principal-actor.js'
import { banOfPrincipal, checkAuthSignatureAndBan, principalOf } from './auth-check.js'
import { shapedRetrySeconds } from './auth-slots.js'
import { isFresh, standingOf } from './auth-standing.js'
import type { ConnectionDeps } from './connection-deps.js'
import type { Prepared } from './messages.js'
import { admissionReason, isAuthorOnlyRequest } from './refusals.js'

const GO: Prepared = { kind: 'go' }
const refused = (r: Reason): Prepared => ({ kind: 'refused', reason: r })

/** Cheap checks first, then admission (before the costly ones, so a flood is limited before it is verified). */
export async function prepareEvent(m: Extract<ClientMessage, { type: 'EVENT' }>, deps: ConnectionDeps): Promise<Prepared> {
  const { event } = m
  deps.metrics.eventsReceived.inc()
  if (deps.authRequired && deps.view.authed.size === 0)
    return refused(reason('auth-required', 'this relay requires authentication to publish'))
  const prot = checkProtected(event, deps.view.authed)
  if (!prot.ok) return refused(prot.error)
  const att = deps.view.attestations.get(event.pubkey)
  if (att && !conditionsAllowKind(att, event.kind))
    return refused(reason('restricted', `the owner attestation does not allow kind ${event.kind}`))
  const principal = principalOf(deps, event.pubkey)
  const admission = await admitEvent(principal, deps)
  if (!admission.allowed) return refused(admissionReason(admission, deps.metrics, 'events'))
  const ban = await banOfPrincipal(deps, event.pubkey)
  if (ban) return refused(reason('blocked', ban.reason))
  const verdict = await deps.verifier.verify(event)
  if (verdict !== 'ok') return refused(reason('invalid', verdict === 'bad-id' ? 'event id does not match its content' : 'bad signature'))
  return GO
}

/**
 * A fresh key's EVENT spends its own budget and its IP's, and needs both: the keys one client mints write no
 * more than it could unauthenticated (auth-standing.ts). Both are charged, so neither is spent for free.
 */
async function admitEvent(principal: string, deps: ConnectionDeps): Promise<AdmissionAnswer> {
  const own = deps.admit(principal, 'events', deps.view.lifted.has(principal))
  if (!isFresh(deps, principal)) return own
  const answers = await Promise.all([own, deps.admit(ipPrincipalOf(deps.ip), 'events', false)])
  return answers.find((a) => !a.allowed) ?? answers[0]
}

/** REQ and COUNT: who may read what, then the reader's `reqs` budget (and `events`, for a REQ that may mint an invite). */
export async function prepareRead(filters: { kinds?: number[] }[], deps: ConnectionDeps, req = false): Promise<Prepared> {
  if (deps.authRequired && deps.view.authed.size === 0)
    return refused(reason('auth-required', 'this relay requires authentication to read'))
  if (deps.view.authed.size === 0 && isAuthorOnlyRequest(filters))
    return refused(reason('auth-required', 'direct messages are served only to their author or recipient'))
  const principal = principalOf(deps)
  const lifted = deps.view.lifted.has(principal)
  const admission = await deps.admit(principal, 'reqs', lifted)
  if (!admission.allowed) return refused(admissionReason(admission, deps.metrics, 'reqs'))
  // a NIP-43 invite is a stored code and a signature: its REQ also spends what an EVENT does
  if (!req || !asksForInvite(filters)) return GO
  const minting = await deps.admit(principal, 'events', lifted)
  return minting.allowed ? GO : refused(admissionReason(minting, deps.metrics, 'events'))
}

export async function prepareAuth(m: Extract<ClientMessage, { type: 'AUTH' }>, deps: ConnectionDeps): Promise<Prepared> {
  // shaped first: a storm is turned away before it costs an admission call or a signature check
  if (!deps.authSlots.take()) {
    deps.metrics.authShaped.inc()
    return { kind: 'auth', result: err(reason('rate-limited', `retry in ${shapedRetrySeconds()}s`)) }
  }
  try {
    return await prepareAuthInSlot(m, deps)
  } finally {
    deps.authSlots.release()
  }
}

async function prepareAuthInSlot(m: Extract<ClientMessage, { type: 'AUTH' }>, deps: ConnectionDeps): Promise<Prepared> {
  const { event } = m
  // every AUTH, whatever its verdict, costs a signature check and may bring a new key's budget: it spends from
  // its IP's AUTH budget on this node (no pubkey is proven yet, and a socket per community would multiply it)
  const admission = await deps.admitAuth()
  if (!admission.allowed) return { kind: 'auth', result: err(admissionReason(admission, deps.metrics, 'auth')) }
  const max = deps.maxPubkeysPerConnection
  if (!deps.view.authed.has(event.pubkey) && deps.view.authed.size >= max) {
    deps.metrics.authRefused.inc({ reason: 'pubkeys-per-connection' })
    return { kind: 'auth', result: err(reason('restricted', `this connection is authenticated as ${max} pubkeys already (max ${max})`)) }
  }
  const checked = checkAuthEvent(event, {
    challenge: deps.challenge,
    relayUrl: deps.relayUrl,
    nowSeconds: deps.nowSeconds(),
    windowSeconds: deps.authWindowSeconds,
  })
  if (!checked.ok) return { kind: 'auth', result: checked }
  const verdict = await checkAuthSignatureAndBan(event, deps)
  if (!verdict.ok) return { kind: 'auth', result: verdict }
  return { kind: 'auth', result: ok(await standingOf(event.pubkey, verdict.value, deps)) }
}

/** What a preparation that threw (an outage: the gate, the store, the verifier) answers: our fault, said so. */
export function failedPreparation(m: ClientMessage): Prepared {
  if (m.type === 'AUTH') return { kind: 'auth', result: err(reason('error', 'could not verify')) }
  return refused(reason('error', m.type === 'EVENT' ? 'could not process the event' : 'could not check access'))
}
