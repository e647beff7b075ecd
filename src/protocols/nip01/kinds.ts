// Kinds by number, the NIP-01 kind ranges, and how an addressable event is addressed. Imports nothing, so the
// event parser and every NIP module can take their constants from here.

export type KindClass = 'regular' | 'replaceable' | 'ephemeral' | 'addressable'

/** NIP-01 kind ranges. */
export function kindClass(kind: number): KindClass {
  if (kind === 0 || kind === 3 || (kind >= 10_000 && kind < 20_000)) return 'replaceable'
  if (kind >= 20_000 && kind < 30_000) return 'ephemeral'
  if (kind >= 30_000 && kind < 40_000) return 'addressable'
  return 'regular'
}

/** NIP-01: the first `d` tag's value keys an addressable event; a missing `d` counts as "". */
export function dTagOf(event: { tags: string[][] }): string {
  for (const t of event.tags) if (t[0] === 'd') return t[1] ?? ''
  return ''
}

/** The `kind:pubkey:d` address of an addressable event (NIP-01 `a` tag value). */
export const addressOf = (e: { kind: number; pubkey: string; tags: string[][] }): string => `${e.kind}:${e.pubkey}:${dTagOf(e)}`

/** NIP-01: a kind is an integer from 0 to 65535. */
export const MAX_KIND = 65_535

export const KIND_DELETION = 5
export const KIND_AUTH = 22_242
export const KIND_DM = 4
export const KIND_GIFT_WRAP = 1059
/** an ephemeral presence heartbeat whose content is a short status (docs/agent-registry.md) */
export const KIND_PRESENCE = 20_001
