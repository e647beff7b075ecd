import type { VerifiedEvent } from '../../../protocols/nip01/event.js'
import { dTagOf, KIND_DELETION, kindClass } from '../../../protocols/nip01/kinds.js'
import { deletionTargets } from '../../../protocols/nip09.js'
import { expirationOf } from '../../../protocols/nip40.js'
import { forEachIndexedTag } from '../event-store.js'
import type { JobWrite } from '../job-ledger.js'
// Extension needed: plain JS shared with the writer thread, which runs without a TypeScript loader.
import type { SavePlan } from './sqlite-write-core.mjs'

export { SAVE_SQL } from './sqlite-write-core.mjs'

/**
 * What the SQLite store's write runner (sqlite-write-core.mjs) needs of one event, worked out here, on the
 * thread that has the parsed event: its address key, expiry, indexed tags and NIP-09 targets. The decisions
 * themselves are the runner's, inside the batch transaction.
 */
export function savePlan(community: string, event: VerifiedEvent, raw: string, job?: JobWrite): SavePlan {
  const tags: string[] = []
  forEachIndexedTag(event, (name, value) => tags.push(name, value))
  return {
    type: 'save',
    community,
    id: event.id,
    pubkey: event.pubkey,
    kind: event.kind,
    created_at: event.created_at,
    dTag: addressKeyOf(event),
    expiresAt: expirationOf(event) ?? null,
    raw,
    tags,
    deletion: event.kind === KIND_DELETION ? deletionOf(event) : null,
    job: job ?? null,
  }
}

/** The `d` part of the replaceable/addressable key: '' for replaceable kinds, null for regular ones. */
function addressKeyOf(event: VerifiedEvent): string | null {
  // ephemeral kinds never get here: save() refuses them before queueing
  const cls = kindClass(event.kind)
  if (cls === 'addressable') return dTagOf(event)
  return cls === 'replaceable' ? '' : null
}

function deletionOf(event: VerifiedEvent): SavePlan['deletion'] {
  const { ids, addresses } = deletionTargets(event)
  // an `a` naming a regular kind has no versions to delete and gets no tombstone
  return { ids, addresses: addresses.filter((a) => kindClass(a.kind) === 'replaceable' || kindClass(a.kind) === 'addressable') }
}
