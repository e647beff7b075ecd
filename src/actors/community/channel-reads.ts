// The two fresh reads a channel write is decided on (community-channels.ts): the channel's row and the
// author's role in it. Writes are prepared beside the community actor, many in one turn; asked one by one,
// each kind 9 cost two store round trips in sequence (on PostgreSQL, two statements and a wake of the server
// per post). Here the reads asked in one turn for one channel go out together, after the turn: one `get` and
// one `rolesOf` for all their authors, side by side.
import type { ChannelRecord, ChannelRole, ChannelStore } from '../../infra/store/channel-store.js'
import { standingOf } from '../../protocols/nip29-roles.js'

export interface ChannelRows {
  /** absent when the channel is unknown (deleted ones are present, flagged) */
  channel: ChannelRecord | undefined
  /** what the author's roles let it do; absent when the author is not a member */
  role: ChannelRole | undefined
}

interface Waiter {
  pubkey: string
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
  ) {}

  read(channel: string, pubkey: string): Promise<ChannelRows> {
    return new Promise((resolve, reject) => {
      const waiters = this.pending.get(channel)
      if (waiters) waiters.push({ pubkey, resolve, reject })
      else this.pending.set(channel, [{ pubkey, resolve, reject }])
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
      // side by side: a deleted or unknown channel's roles are read for nothing, and never used
      const [found, roles] = await Promise.all([
        this.store.get(this.community, [channel]),
        this.store.rolesOf(this.community, channel, pubkeys),
      ])
      const record = found.get(channel)
      const live = record !== undefined && !record.deleted
      for (const w of waiters) {
        const held = live ? roles.get(w.pubkey) : undefined
        w.resolve({ channel: record, role: held && standingOf(held) })
      }
    } catch (error) {
      for (const w of waiters) w.reject(error)
    }
  }
}
