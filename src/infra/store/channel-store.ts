/**
 * NIP-29 channels of a community (architecture §1): the state that moderation events (9000–9022) change, kept in
 * rows every node reads, so a membership decision holds on every node. The moderation events themselves are
 * stored as ordinary events in the EventStore; these rows are what the access gate consults.
 */
import type { ChannelRole } from '../../protocols/nip29.js'
import type { SessionFence } from './session-fence.js'

export type { ChannelRole }

export interface ChannelRecord {
  id: string
  name: string
  about: string
  picture: string
  /** NIP-29 `private`: only members read its events */
  private: boolean
  /** NIP-29 `closed`: join requests wait for an admin instead of being accepted */
  closed: boolean
  /** NIP-29 `hidden`: its relay-signed state (39000–39005) is served to its members only */
  hidden: boolean
  /** deleted channels keep their row (an id is never reused) but serve nothing and accept nothing */
  deleted: boolean
  createdAt: number
}

export type ChannelInit = Omit<ChannelRecord, 'deleted'>

/** What an edit-metadata (9002) may change; absent fields stay as they are. */
export type ChannelPatch = Partial<Pick<ChannelRecord, 'name' | 'about' | 'picture' | 'private' | 'closed' | 'hidden'>>

export interface ChannelMember {
  pubkey: string
  role: ChannelRole
}

export type ChannelWrites = Pick<ChannelStore, 'create' | 'update' | 'remove' | 'putMember' | 'removeMember'>

export interface ChannelStore {
  /** a new channel with `creator` as its admin, in one transaction; 'exists' for any used id, deleted ones too */
  create(community: string, channel: ChannelInit, creator: string): Promise<'created' | 'exists'>
  /** the channels among `ids` that exist (deleted ones included, flagged); unknown ids are absent */
  get(community: string, ids: readonly string[]): Promise<Map<string, ChannelRecord>>
  /** the community's channels that are not deleted, by id */
  list(community: string): Promise<ChannelRecord[]>
  /** the channels not everyone may read all of: private, hidden or deleted ones (the access gate hides them) */
  restricted(community: string): Promise<ChannelRecord[]>
  /** the updated record; undefined when the channel is unknown or deleted */
  update(community: string, id: string, patch: ChannelPatch): Promise<ChannelRecord | undefined>
  /** marks the channel deleted and drops its members; false when unknown or already deleted */
  remove(community: string, id: string): Promise<boolean>
  /** adds a member or changes its role */
  putMember(community: string, channel: string, pubkey: string, role: ChannelRole): Promise<'added' | 'updated' | 'unchanged'>
  /** false when `pubkey` was not a member */
  removeMember(community: string, channel: string, pubkey: string): Promise<boolean>
  /** the roles of those among `pubkeys` who are members of `channel`; non-members are absent */
  rolesOf(community: string, channel: string, pubkeys: readonly string[]): Promise<Map<string, ChannelRole>>
  /** the channels (of any kind) in which one of `pubkeys` is a member */
  memberChannels(community: string, pubkeys: readonly string[]): Promise<Set<string>>
  /** every member, admins first, then by pubkey */
  members(community: string, channel: string): Promise<ChannelMember[]>
  /**
   * The same mutations, each in one transaction fenced for a mesh session (session-fence.ts): a stale
   * generation rejects with FencedError and changes nothing.
   */
  fencedWrites(fence: SessionFence): ChannelWrites
  /** the highest generation that has written for a mesh session; 0 when none has */
  storedGeneration(community: string, session: string): Promise<number>
  close(): Promise<void>
}
