/** NIP-01 event as it travels on the wire. */
export interface NostrEvent {
  id: string
  pubkey: string
  created_at: number
  kind: number
  tags: string[][]
  content: string
  sig: string
}

declare const verifiedBrand: unique symbol
/** An event whose id hash and Schnorr signature have been checked (only the verifier creates these). */
export type VerifiedEvent = NostrEvent & { readonly [verifiedBrand]: true }

/** Only the verifier (and tests building fixtures) may call this. */
export const asVerified = (e: NostrEvent): VerifiedEvent => e as VerifiedEvent
