// What an AUTH and a write are checked against beyond the frame itself: the signature, the community's bans
// (architecture §8: checked at AUTH and at every write), and an owner attestation (docs/agent-attestation.md).
import { checkOwnerAttestation, type OwnerAttestation, parseOwnerAttestation } from '../../protocols/nip-oa.js'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import { reason } from '../../protocols/reasons.js'
import { err, ok, type Result } from '../../protocols/result.js'
import { ipPrincipalOf } from '../principal/principal-actor.js'
import type { ConnectionDeps } from './connection-deps.js'

/**
 * The AUTH signature, the pubkey's ban, and an owner attestation if the AUTH event carries one: a valid one
 * makes the pubkey an agent of its owner, whose ban then covers it (docs/agent-attestation.md).
 */
export async function checkAuthSignatureAndBan(event: NostrEvent, deps: ConnectionDeps): Promise<Result<OwnerAttestation | undefined>> {
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
export async function banOfPrincipal(deps: ConnectionDeps, pubkey: string): Promise<{ reason: string } | undefined> {
  const own = await deps.banOf(pubkey)
  if (own) return own
  const owner = deps.view.owners.get(pubkey)
  const ownerBan = owner === undefined ? undefined : await deps.banOf(owner)
  return ownerBan && { reason: `the owner of this agent is banned: ${ownerBan.reason}` }
}

/** The principal an unauthenticated request is charged to is its IP: an unverified pubkey can't spend a budget. */
export function principalOf(deps: ConnectionDeps, pubkey?: string): string {
  if (pubkey !== undefined && deps.view.authed.has(pubkey)) return pubkey
  const first = deps.view.authed.values().next().value
  return pubkey === undefined && first !== undefined ? first : ipPrincipalOf(deps.ip)
}
