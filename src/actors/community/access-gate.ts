// The access gate (docs/architecture.md §8): one place decides what a connection may read — REQ results, COUNT, local and
// remote fan-out. Community policy, channel privacy, and (inside the store query) author-only kinds.
// A lookup error yields no delivery. Caches hold only what can over-restrict when stale, or are bounded by
// a short TTL and dropped at once by the cache-invalidation broadcast.
import type { ChannelRecord, ChannelRole, ChannelStore } from '../../infra/store/channel-store.js'
import type { CommunityRecord } from '../../infra/store/community-store.js'
import type { ChannelStateRule, QueryOptions } from '../../infra/store/event-store.js'
import type { CacheInvalidationOp } from '../../protocols/control.js'
import { AUTHOR_ONLY_KINDS, canRead, isPartyTo } from '../../protocols/dm-access.js'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import type { Filter } from '../../protocols/nip01/filter.js'
import {
  audienceOf,
  type ChannelReadFlags,
  GROUP_MANAGEMENT_KINDS,
  GROUP_STATE_KINDS,
  MEMBER_LIST_KINDS,
  readChannelOf,
} from '../../protocols/nip29.js'
import { standingOf } from '../../protocols/nip29-roles.js'
import { isRelayMemberListKind, mayAskForMemberLists, RELAY_MEMBER_LIST_KINDS } from '../../protocols/nip43.js'
import { type Reason, reason } from '../../protocols/reasons.js'
import { readPolicyOf } from './community-policy.js'
import type { ConnView, Subscription } from './subscription-index.js'

export interface AccessGateDeps {
  community: string
  channels: ChannelStore
  /** the community's current record (settings, roster, admins) */
  record: () => CommunityRecord
  /** those of `pubkeys` on the community's allowed list (NIP-86 allowpubkey) */
  allowedAmong: (pubkeys: readonly string[]) => Promise<Set<string>>
  /** how long a membership answer may be reused: the bound on staleness when a broadcast is lost */
  ttlMs: number
  nowMs: () => number
}

const SWEEP_EVERY_WRITES = 4_096

interface Cached<T> {
  value: T
  expiresAt: number
}

/** A channel as the gate sees it; 'unknown' is "no such channel" (its events are not secret). */
type Visibility = ChannelReadFlags | 'unknown'

const visibilityOf = (c: ChannelReadFlags | undefined): Visibility =>
  c ? { private: c.private, hidden: c.hidden, deleted: c.deleted } : 'unknown'

export class AccessGate {
  // Every channel's visibility is cached for fan-out (a read per event was the hot path's cost); an edit drops
  // the key here and, by broadcast, on every node; a lost broadcast is bounded by the TTL (docs/architecture.md §8).
  private readonly visible = new Map<string, Cached<Visibility>>()
  private readonly roles = new Map<string, Map<string, Cached<ChannelRole | null>>>()
  private readonly members = new Map<string, Cached<boolean>>()
  private writes = 0
  // Bumped by every invalidation: a lookup that was in flight across one read the rows before the change, so
  // its answer is returned but never cached (else a channel just made private stays "public" for a TTL).
  private epoch = 0

  constructor(private readonly d: AccessGateDeps) {}

  /** REQ/COUNT refusal under the community's read policy, or null. */
  async checkRead(conn: ConnView): Promise<Reason | null> {
    const policy = readPolicyOf(this.d.record().settings, false)
    if (policy === 'public') return null
    if (conn.authed.size === 0) return reason('auth-required', 'this community is readable only after authentication')
    if (policy === 'members' && !(await this.isMember([...conn.authed])))
      return reason('restricted', 'this community is readable by its members only')
    return null
  }

  /**
   * The store options for this reader: author-only kinds and hidden channels decided inside the query.
   * `filters`: what the reader asks for (the reader's community membership is looked up only when it matters).
   */
  async readOptions(conn: ConnView, nowSeconds: number, filters: readonly Filter[] = [{}]): Promise<QueryOptions> {
    const readers = [...conn.authed]
    const epoch = this.epoch
    const channels = await this.d.channels.restricted(this.d.community)
    const expiresAt = this.d.nowMs() + this.d.ttlMs
    if (epoch === this.epoch) for (const c of channels) this.visible.set(c.id, { value: visibilityOf(c), expiresAt })
    // one fresh read of the reader's channels per REQ (never the cache): community admins read them all
    const admin = readers.some((p) => this.d.record().admins.includes(p))
    const mine =
      channels.length > 0 && readers.length > 0 && !admin
        ? await this.d.channels.memberChannels(this.d.community, readers)
        : new Set<string>()
    const outside = channels.filter((c) => c.deleted || (!admin && !mine.has(c.id)))
    // NIP-43's lists to a non-member only where they are public; the 8000/8001 naming the reader always
    const lists = this.d.record().settings.publicMemberLists || !mayAskForMemberLists(filters) || (await this.isMember(readers))
    return {
      now: nowSeconds,
      authorOnly: { kinds: lists ? AUTHOR_ONLY_KINDS : [...AUTHOR_ONLY_KINDS, ...RELAY_MEMBER_LIST_KINDS], readers },
      hiddenChannels: outside.filter((c) => c.deleted || c.private).map((c) => c.id),
      hiddenChannelState: this.stateRules(outside),
    }
  }

  /** The state of `outside` (channels this reader is not in) that audienceOf keeps from them. */
  private stateRules(outside: readonly ChannelRecord[]): ChannelStateRule[] {
    const ids = (cs: readonly ChannelRecord[]) => cs.map((c) => c.id)
    const live = outside.filter((c) => !c.deleted)
    const hidden = live.filter((c) => c.hidden)
    // a private channel's h-tagged events are all left out already (hiddenChannels)
    const management = hidden.filter((c) => !c.private)
    const lists = this.d.record().settings.publicMemberLists ? [] : live.filter((c) => !c.hidden && c.private)
    const rules: ChannelStateRule[] = []
    if (hidden.length > 0) rules.push({ tag: 'd', kinds: GROUP_STATE_KINDS, channels: ids(hidden) })
    if (management.length > 0) rules.push({ tag: 'h', kinds: GROUP_MANAGEMENT_KINDS, channels: ids(management) })
    if (lists.length > 0) rules.push({ tag: 'd', kinds: MEMBER_LIST_KINDS, channels: ids(lists) })
    return rules
  }

  /**
   * Live delivery decided from the caches alone: the subscriptions that may receive `event`, or undefined
   * when a lookup is needed (then `deliverable` decides, beside the actor).
   */
  deliverableNow(event: NostrEvent, subs: Subscription[]): Subscription[] | undefined {
    const channel = readChannelOf(event)
    const policy = readPolicyOf(this.d.record().settings, false)
    const visibility = channel === undefined ? 'unknown' : this.cached(this.visible, channel)
    if (visibility === undefined) return undefined
    const audience = this.audience(event, visibility)
    const out: Subscription[] = []
    if (audience === 'none') return out
    const membersOnly = this.isMembersOnly(event)
    for (const sub of subs) {
      const authed = sub.conn.authed
      if (!canRead(event, authed)) continue
      if (policy !== 'public' && authed.size === 0) continue
      if (policy === 'members' || (membersOnly && !isPartyTo(event, authed))) {
        const member = this.isMemberNow([...authed])
        if (member === undefined) return undefined
        if (!member) continue
      }
      if (audience === 'members') {
        const inChannel = this.isChannelMemberNow(channel as string, [...authed])
        if (inChannel === undefined) return undefined
        if (!inChannel) continue
      }
      out.push(sub)
    }
    return out
  }

  /** Live delivery: the subscriptions that may receive `event`. Any lookup error ⇒ none of them. */
  async deliverable(event: NostrEvent, subs: Subscription[]): Promise<Subscription[]> {
    const channel = readChannelOf(event)
    const policy = readPolicyOf(this.d.record().settings, false)
    const out: Subscription[] = []
    const audience = this.audience(event, channel === undefined ? 'unknown' : await this.visibility(channel))
    if (audience === 'none') return out
    const membersOnly = this.isMembersOnly(event)
    for (const sub of subs) {
      const authed = sub.conn.authed
      if (!canRead(event, authed)) continue
      if (policy !== 'public' && authed.size === 0) continue
      if ((policy === 'members' || (membersOnly && !isPartyTo(event, authed))) && !(await this.isMember([...authed]))) continue
      if (audience === 'members' && !(await this.isChannelMember(channel as string, [...authed]))) continue
      out.push(sub)
    }
    return out
  }

  /** A NIP-43 list (13534, 8000, 8001) in a community that keeps its member lists to its members. */
  private isMembersOnly(event: NostrEvent): boolean {
    return isRelayMemberListKind(event.kind) && !this.d.record().settings.publicMemberLists
  }

  /**
   * NIP-43: the first of `pubkeys` who may be given an invite (kind 28935): a community admin, or a member
   * where the community lets its members invite (`membersInvite`).
   */
  async inviterAmong(pubkeys: readonly string[]): Promise<string | undefined> {
    const r = this.d.record()
    const admin = pubkeys.find((p) => r.admins.includes(p))
    if (admin !== undefined || !r.settings.membersInvite) return admin
    for (const p of pubkeys) if (await this.isMember([p])) return p
    return undefined
  }

  private audience(event: NostrEvent, v: Visibility): ReturnType<typeof audienceOf> {
    return audienceOf(event.kind, v === 'unknown' ? undefined : v, this.d.record().settings.publicMemberLists)
  }

  /** isMember from the roster and the cache alone; undefined when a lookup is needed */
  isMemberNow(pubkeys: readonly string[]): boolean | undefined {
    const r = this.d.record()
    if (pubkeys.some((p) => r.admins.includes(p) || r.agents.some((a) => a.pubkey === p))) return true
    let all = true
    for (const p of pubkeys) {
      const hit = this.cached(this.members, p)
      if (hit === true) return true
      if (hit === undefined) all = false
    }
    return all ? false : undefined
  }

  private isChannelMemberNow(channel: string, pubkeys: readonly string[]): boolean | undefined {
    if (pubkeys.length === 0) return false
    const r = this.d.record()
    if (pubkeys.some((p) => r.admins.includes(p))) return true
    const byPubkey = this.roles.get(channel)
    if (!byPubkey) return undefined
    let all = true
    for (const p of pubkeys) {
      const hit = this.cached(byPubkey, p)
      if (hit) return true
      if (hit === undefined) all = false
    }
    return all ? false : undefined
  }

  private cached<T>(m: Map<string, Cached<T>>, key: string): T | undefined {
    const hit = m.get(key)
    return hit && hit.expiresAt > this.d.nowMs() ? hit.value : undefined
  }

  /** Community members: admins, roster agents and allowed pubkeys (the `members` policies). */
  async isMember(pubkeys: readonly string[]): Promise<boolean> {
    const r = this.d.record()
    if (pubkeys.some((p) => r.admins.includes(p) || r.agents.some((a) => a.pubkey === p))) return true
    const now = this.d.nowMs()
    const missing: string[] = []
    for (const p of pubkeys) {
      const hit = this.members.get(p)
      if (hit && hit.expiresAt > now) {
        if (hit.value) return true
      } else missing.push(p)
    }
    if (missing.length === 0) return false
    const epoch = this.epoch
    const allowed = await this.d.allowedAmong(missing)
    if (epoch !== this.epoch) return allowed.size > 0
    for (const p of missing) this.members.set(p, { value: allowed.has(p), expiresAt: now + this.d.ttlMs })
    this.sweepEvery(missing.length)
    return allowed.size > 0
  }

  /** The cache-invalidation channel's ops (and this node's own changes): drop the keys at once. */
  invalidate(op: CacheInvalidationOp): void {
    this.epoch++
    switch (op.op) {
      case 'InvalidateMembership':
        if (op.pubkey === undefined) this.roles.delete(op.channel)
        else this.roles.get(op.channel)?.delete(op.pubkey)
        return
      case 'InvalidateVisibility':
      case 'ChannelDeleted':
        this.visible.delete(op.channel)
        this.roles.delete(op.channel)
        return
      case 'InvalidateMembers':
        this.members.clear()
        return
      case 'InvalidateAll':
        this.visible.clear()
        this.roles.clear()
        this.members.clear()
        return
    }
  }

  private async isChannelMember(channel: string, pubkeys: readonly string[]): Promise<boolean> {
    if (pubkeys.length === 0) return false
    const r = this.d.record()
    // community admins moderate every channel, private ones included
    if (pubkeys.some((p) => r.admins.includes(p))) return true
    return (await this.rolesOf(channel, pubkeys)).length > 0
  }

  private async rolesOf(channel: string, pubkeys: readonly string[]): Promise<ChannelRole[]> {
    const now = this.d.nowMs()
    let byPubkey = this.roles.get(channel)
    if (!byPubkey) {
      byPubkey = new Map()
      this.roles.set(channel, byPubkey)
    }
    const found: ChannelRole[] = []
    const missing: string[] = []
    for (const p of pubkeys) {
      const hit = byPubkey.get(p)
      if (hit && hit.expiresAt > now) {
        if (hit.value) found.push(hit.value)
      } else missing.push(p)
    }
    if (missing.length === 0) return found
    const epoch = this.epoch
    const fresh = await this.d.channels.rolesOf(this.d.community, channel, missing)
    // the map itself may have been dropped meanwhile: write to the current one, or nowhere
    const caching = epoch === this.epoch ? this.roles.get(channel) : undefined
    for (const p of missing) {
      const held = fresh.get(p)
      const role = held ? standingOf(held) : null
      caching?.set(p, { value: role, expiresAt: now + this.d.ttlMs })
      if (role) found.push(role)
    }
    this.sweepEvery(missing.length)
    return found
  }

  private async visibility(channel: string): Promise<Visibility> {
    const hit = this.cached(this.visible, channel)
    if (hit !== undefined) return hit
    const epoch = this.epoch
    const v = visibilityOf((await this.d.channels.get(this.d.community, [channel])).get(channel))
    if (epoch === this.epoch) this.visible.set(channel, { value: v, expiresAt: this.d.nowMs() + this.d.ttlMs })
    return v
  }

  /** Expired entries are dropped every few thousand writes, so the caches hold about one TTL's worth of readers. */
  private sweepEvery(n: number) {
    this.writes += n
    if (this.writes < SWEEP_EVERY_WRITES) return
    this.writes = 0
    const now = this.d.nowMs()
    const drop = <T>(m: Map<string, Cached<T>>) => {
      for (const [k, v] of m) if (v.expiresAt <= now) m.delete(k)
    }
    drop(this.members)
    drop(this.visible)
    for (const [channel, byPubkey] of this.roles) {
      drop(byPubkey)
      if (byPubkey.size === 0) this.roles.delete(channel)
    }
  }
}
