import { randomBytes } from 'node:crypto'

/**
 * NIP-43 invite codes (docs/nip43.md): made by a community's admins and operators (NIP-86 createinvite, a
 * 28935 request) and used by a 28934 join. The store decides a code's use, so two nodes redeeming its last
 * use at once admit one user; a redeemed code and the member it admits are one transaction.
 */
export interface NewInvite {
  code: string
  /** who made it: its allowed-list entry names them */
  createdBy: string
  /** unix seconds; the code is refused from then on */
  expiresAtSeconds: number
  uses: number
}

/**
 * A join's answer. `admitted`: one use taken, the pubkey is on the allowed list now; `member`: it was on the
 * list already and no use was taken; `unknown`, `expired`, `used`: refused, nothing changed.
 */
export type Redemption = 'admitted' | 'member' | 'unknown' | 'expired' | 'used'

export interface InviteStore {
  /**
   * Stores a new code (and drops the community's expired ones). With `maxOpen`, refused (false, nothing
   * written) while its creator already has that many unexpired codes with uses left.
   */
  create(community: string, invite: NewInvite, nowSeconds: number, maxOpen?: number): Promise<boolean>
  /** Takes one use of `code` and puts `pubkey` on the community's allowed list, atomically. */
  redeem(community: string, code: string, pubkey: string, nowSeconds: number): Promise<Redemption>
  close(): Promise<void>
}

/** The allowed-list reason of a member who joined with a code (NIP-86 listallowedpubkeys shows it). */
export const joinedReason = (createdBy: string) => `joined with an invite from ${createdBy}`

/** 128 random bits, base64url: 22 characters a person can paste and no one can guess (protocols/nip43.ts isPlausibleClaim). */
export const newInviteCode = () => randomBytes(16).toString('base64url')
