import { isHex64 } from './ids.js'
import type { NostrEvent } from './nip01/event.js'
import { KIND_DELETION } from './nip01/kinds.js'

export interface AddressRef {
  kind: number
  pubkey: string
  d: string
}

export interface DeletionTargets {
  /** `e` tags: event ids */
  ids: string[]
  /** `a` tags: kind:pubkey:d; NIP-09 deletes versions with created_at <= the deletion's created_at */
  addresses: AddressRef[]
}

/**
 * NIP-09: what a kind-5 event asks to delete. Only references to the deleter's own events may take effect;
 * `a` tags naming another pubkey are dropped here, `e` tags are checked against the stored author by the store.
 */
export function deletionTargets(e: NostrEvent): DeletionTargets {
  const out: DeletionTargets = { ids: [], addresses: [] }
  if (e.kind !== KIND_DELETION) return out
  for (const t of e.tags) {
    const v = t[1]
    if (v === undefined) continue
    if (t[0] === 'e' && isHex64(v)) out.ids.push(v)
    else if (t[0] === 'a') {
      const m = /^(\d{1,5}):([^:]*):(.*)$/s.exec(v)
      if (m && isHex64(m[2]) && m[2] === e.pubkey) out.addresses.push({ kind: Number(m[1]), pubkey: m[2], d: m[3] ?? '' })
    }
  }
  return out
}
