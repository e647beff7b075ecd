// The fresh reads a channel write is decided on (community-channels.ts): the channel's row, the author's role
// in it and, for a write with NIP-29 `previous` references, the ids of the channel's latest events. Writes are
// prepared beside the community actor, many in one turn, and a post must not cost store round trips of its
// own: the reads asked in one turn for one channel go out together, after the turn: one `get`, one `rolesOf`
// for all their authors and at most one query of the latest ids, side by side.
import type { ChannelRecord, ChannelRole, ChannelStore } from '../../infra/store/channel-store.js'
import { type EventStore, StoreError } from '../../infra/store/event-store.js'
import { standingOf } from '../../protocols/nip29-roles.js'
import { toPreviousRefs } from '../../protocols/nip29-timeline.js'

export interface ChannelRows {
  /** absent when the channel is unknown (deleted ones are present, flagged) */
  channel: ChannelRecord | undefined
  /** what the author's roles let it do; absent when the author is not a member */
  role: ChannelRole | undefined
  /**
   * what a `previous` reference may name: the first 8 characters of the channel's latest ids; absent when not
   * asked, or when the store refused that read for its cost
   */
  recent?: ReadonlySet<string>
}

/**
 * The ids of a channel's latest events, newest first: the window its `previous` references may name.
 * undefined: the store refused the read for its cost (a full read queue, the read budget), which is no outage.
 */
export type LatestIds = (channel: string) => Promise<readonly string[] | undefined>

/**
 * LatestIds from an event store: the channel's `windowEvents` newest events by its `h` tag (the tag index
 * serves it newest first, and stops at the window).
 */
export function latestIdsOf(
  events: Pick<EventStore, 'query'>,
  community: string,
  windowEvents: number,
  nowSeconds: () => number,
): LatestIds {
  return async (channel) => {
    try {
      const rows = await events.query(community, [{ tags: { h: [channel] }, limit: windowEvents }], { now: nowSeconds() })
      return rows.map((r) => r.id)
    } catch (error) {
      // a read refused for its cost answers the writes `error:`; only an outage goes on to supervision
      if (error instanceof StoreError && error.overloaded) return undefined
      throw error
    }
  }
}

interface Waiter {
  pubkey: string
  timeline: boolean
  resolve: (rows: ChannelRows) => void
  reject: (error: unknown) => void
}

/**
 * Never an answer older than its question: a batch is read after every write in it asked, and a write asked
 * during a batch's round trip waits for the next one, so "read fresh" (a removed member can't post on the
 * strength of an earlier answer) holds as it did read by read.
 */
export class ChannelReads {
  private readonly pending = new Map<string, Waiter[]>()
  private scheduled = false

  constructor(
    private readonly store: Pick<ChannelStore, 'get' | 'rolesOf'>,
    private readonly community: string,
    private readonly latestIds: LatestIds,
  ) {}

  /** `timeline`: the answer carries `recent` too (the write has `previous` references) */
  read(channel: string, pubkey: string, timeline = false): Promise<ChannelRows> {
    return new Promise((resolve, reject) => {
      const waiter = { pubkey, timeline, resolve, reject }
      const waiters = this.pending.get(channel)
      if (waiters) waiters.push(waiter)
      else this.pending.set(channel, [waiter])
      if (!this.scheduled) {
        this.scheduled = true
        queueMicrotask(() => this.flush())
      }
    })
  }

  private flush(): void {
    this.scheduled = false
    const batches = [...this.pending]
    this.pending.clear()
    for (const [channel, waiters] of batches) void this.readBatch(channel, waiters)
  }

  private async readBatch(channel: string, waiters: Waiter[]): Promise<void> {
    try {
      const pubkeys = [...new Set(waiters.map((w) => w.pubkey))]
      // side by side: a deleted or unknown channel's roles (and latest ids) are read for nothing, and never used
      const [found, roles, latest] = await Promise.all([
        this.store.get(this.community, [channel]),
        this.store.rolesOf(this.community, channel, pubkeys),
        waiters.some((w) => w.timeline) ? this.latestIds(channel) : undefined,
      ])
      const record = found.get(channel)
      const live = record !== undefined && !record.deleted
      const recent = latest && toPreviousRefs(latest)
      for (const w of waiters) {
        const held = live ? roles.get(w.pubkey) : undefined
        const rows: ChannelRows = { channel: record, role: held && standingOf(held) }
        w.resolve(w.timeline && recent ? { ...rows, recent } : rows)
      }
    } catch (error) {
      for (const w of waiters) w.reject(error)
    }
  }
}
