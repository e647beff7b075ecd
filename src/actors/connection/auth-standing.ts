// What an authenticated pubkey is to its community, decided once at its AUTH (architecture §8): an owner
// attestation lifts the agent's tier only when the community knows the owner, and a key nobody there knows
// spends its IP's budget too for its first writes, so one client minting keys gains no budget by it.
import type { OwnerAttestation } from '../../protocols/nip-oa.js'
import type { ConnectionDeps } from './connection-deps.js'
import type { AuthStanding } from './messages.js'

/** One lookup for the key and its owner: admins and the roster from the record, the allowed list from the store. */
export async function standingOf(pubkey: string, attestation: OwnerAttestation | undefined, deps: ConnectionDeps): Promise<AuthStanding> {
  const owner = attestation?.owner
  const known = await deps.knownAmong(owner === undefined ? [pubkey] : [pubkey, owner])
  const lifted = owner !== undefined && known.has(owner)
  return { ...(attestation && { attestation }), lifted, fresh: !lifted && !known.has(pubkey) }
}

/** The key's writes are charged to its IP's budget as well as its own: it was fresh at its AUTH, and not long ago. */
export function isFresh(deps: ConnectionDeps, pubkey: string): boolean {
  const until = deps.view.freshUntilMs.get(pubkey)
  return until !== undefined && deps.nowMs() < until && !deps.named(pubkey)
}

/** An applied AUTH: the pubkey joins the connection with what it is to the community. */
export function recordStanding(deps: ConnectionDeps, pubkey: string, standing: AuthStanding): void {
  const { view } = deps
  view.authed.add(pubkey)
  if (standing.attestation) {
    view.owners.set(pubkey, standing.attestation.owner)
    view.attestations.set(pubkey, standing.attestation)
  } else {
    view.owners.delete(pubkey)
    view.attestations.delete(pubkey)
  }
  if (standing.lifted) view.lifted.add(pubkey)
  else view.lifted.delete(pubkey)
  if (standing.fresh && deps.freshKeyMs > 0) view.freshUntilMs.set(pubkey, deps.nowMs() + deps.freshKeyMs)
  else view.freshUntilMs.delete(pubkey)
}
