/**
 * NIP-29 channels of a community (architecture §1): the state that moderation events (9000–9022) change, kept in
 * rows every node reads, so a membership decision holds on every node. The moderation events themselves are
 * stored as ordinary events in the EventStore; these rows are what the access gate consults.
 */
import type { ChannelRole, MemberRoles } from '../../protocols/nip29.js'
import type { InviteRequest } from '../../protocols/nip29-invites.js'
import type { SessionFence } from './session-fence.js'

export type { ChannelRole, MemberRoles }

export interface ChannelRecord {
  id: string
  name: string
  about: string
  picture: string
  banner: string
  /** NIP-29 `private`: only members read its events */
  private: boolean
  /** NIP-29 `restricted`: only members (and community admins) post to it */
  restricted: boolean
  /** NIP-29 `closed`: join requests wait for an admin instead of being accepted */
  closed: boolean
  /** NIP-29 `hidden`: its relay-signed state (39000–39005) is served to its members only */
  hidden: boolean
  /** NIP-29 `supported_kinds`: the only kinds it takes besides 9000–9022; null: every kind */
  supportedKinds: readonly number[] | null
  /** deleted channels keep their row (an id is never reused) but serve nothing and accept nothing */
  deleted: boolean
  createdAt: number
}

export type ChannelInit = Omit<ChannelRecord, 'deleted'>

/** What an edit-metadata (9002) may change; absent fields stay as they are. */
export type ChannelPatch = Partial<Omit<ChannelRecord, 'id' | 'deleted' | 'createdAt'>>

export interface ChannelMember {
  pubkey: string
  roles: MemberRoles
}

/** An invite code of a channel (NIP-29 9009), kept apart from the events: the code is a secret. */
export interface InviteInit extends InviteRequest {
  createdBy: string
  createdAt: number
}

/** full: the channel has MAX_INVITES_PER_CHANNEL codes that are not spent; no-channel: unknown or deleted */
export type InviteCreated = 'created' | 'exists' | 'full' | 'no-channel'
/** joined: one use taken and the member added; member: already one (no use taken); unknown covers a deleted channel */
export type InviteRedeemed = 'joined' | 'member' | 'unknown' | 'used-up' | 'expired'

export type ChannelWrites = Pick<
  ChannelStore,
  'create' | 'update' | 'remove' | 'putMember' | 'removeMember' | 'createInvite' | 'redeemInvite'
>

export interface ChannelStore {
  /** a new channel with `creator` as its admin, in one transaction; 'exists' for any used id, deleted ones too */
  create(community: string, channel: ChannelInit, creator: string): Promise<'created' | 'exists'>
  /** the channels among `ids` that exist (deleted ones included, flagged); unknown ids are absent */
  get(community: string, ids: readonly string[]): Promise<Map<string, ChannelRecord>>
  /** the community's channels that are not deleted, by id */
  list(community: string): Promise<ChannelRecord[]>
  /**
   * the channels not everyone may read all of: private, hidden or deleted ones (the access gate hides them);
   * the `restricted` flag, which is about writing, plays no part
   */
  restricted(community: string): Promise<ChannelRecord[]>
  /** the updated record; undefined when the channel is unknown or deleted */
  update(community: string, id: string, patch: ChannelPatch): Promise<ChannelRecord | undefined>
  /** marks the channel deleted and drops its members and invite codes; false when unknown or already deleted */
  remove(community: string, id: string): Promise<boolean>
  /** adds a member or replaces its roles */
  putMember(community: string, channel: string, pubkey: string, roles: MemberRoles): Promise<'added' | 'updated' | 'unchanged'>
  /** false when `pubkey` was not a member */
  removeMember(community: string, channel: string, pubkey: string): Promise<boolean>
  /** the roles of those among `pubkeys` who are members of `channel` (empty: a plain member); non-members are absent */
  rolesOf(community: string, channel: string, pubkeys: readonly string[]): Promise<Map<string, MemberRoles>>
  /** the channels (of any kind) in which one of `pubkeys` is a member */
  memberChannels(community: string, pubkeys: readonly string[]): Promise<Set<string>>
  /** every member: admins, then moderators, then the others, each by pubkey (compareMembers) */
  members(community: string, channel: string): Promise<ChannelMember[]>
  /**
   * A new code of a live channel, unique in it. At MAX_INVITES_PER_CHANNEL codes the spent ones (used up or
   * expired at `nowSeconds`) are dropped first.
   */
  createInvite(community: string, channel: string, invite: InviteInit, nowSeconds: number): Promise<InviteCreated>
  /**
   * Takes one use of `code` and makes `pubkey` a member (no roles), in one transaction: of two joins racing
   * for a code's last use, on any nodes, exactly one is admitted.
   */
  redeemInvite(community: string, channel: string, code: string, pubkey: string, nowSeconds: number): Promise<InviteRedeemed>
  /**
   * The same mutations, each in one transaction fenced for a mesh session (session-fence.ts): a stale
   * generation rejects with FencedError and changes nothing.
   */
  fencedWrites(fence: SessionFence): ChannelWrites
  /** the highest generation that has written for a mesh session; 0 when none has */
  storedGeneration(community: string, session: string): Promise<number>
  close(): Promise<void>
}

/** Why a code admitted nobody (redeemInvite): `row` is the code's, if it exists; an expired code says so even when used up. */
export function whyInviteRefused(row: { expiresAt: number | null } | undefined, nowSeconds: number): 'unknown' | 'used-up' | 'expired' {
  if (row === undefined) return 'unknown'
  return row.expiresAt !== null && Number(row.expiresAt) <= nowSeconds ? 'expired' : 'used-up'
}
